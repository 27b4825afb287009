"""The official OpenAI Python SDK against `vkformer serve` (what SDK users point at it), and the
server's answers beside the Python package's for the same request."""

from __future__ import annotations

import re
import subprocess
import time

import openai
import pytest
import vkformer

from conftest import CLI, KJV


@pytest.fixture(scope="module")
def client():
    p = subprocess.Popen([str(CLI), "serve", "-m", str(KJV), "--port", "0", "-np", "2",
                          "--api-key", "sk-test"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        port = None
        t0 = time.monotonic()
        assert p.stderr is not None
        while port is None and time.monotonic() - t0 < 60:
            line = p.stderr.readline()
            if not line and p.poll() is not None:
                break
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
            if m:
                port = int(m.group(1))
        assert port, "the server did not start"
        yield openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="sk-test",
                            max_retries=0, timeout=60)
    finally:
        p.terminate()
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()


MESSAGES = [{"role": "user", "content": "In the beginning"}]


def test_models_and_auth(client):
    assert [m.id for m in client.models.list().data] == ["kjv-gpt"]
    bad = openai.OpenAI(base_url=client.base_url, api_key="wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        bad.models.list()


def test_embeddings_on_a_generation_model_is_a_400(client):
    # a 4xx naming the reason: the SDKs retry a 5xx (twice by default) and a 501 said nothing
    # the client could change
    with pytest.raises(openai.BadRequestError,
                       match="this server generates text; embeddings need an encoder-only model"):
        client.embeddings.create(model="kjv-gpt", input="In the beginning")


def test_max_tokens_minus_one_is_the_context(client):
    # llama-server's n_predict -1: no limit but the server's and the slot's context (256 tokens
    # for kjv-gpt, which never ends a text on its own)
    r = client.completions.create(model="kjv-gpt", prompt="And God said", max_tokens=-1,
                                  temperature=0)
    assert r.choices[0].finish_reason == "length"
    assert r.usage.prompt_tokens + r.usage.completion_tokens == 256


def test_range_errors_print_integers(client):
    with pytest.raises(openai.BadRequestError,
                       match=r"max_tokens: 100000000 is outside \[-1, \d+\]"):
        client.completions.create(model="kjv-gpt", prompt="x", max_tokens=100000000)


def test_chat_completion_and_stream(client):
    r = client.chat.completions.create(model="kjv-gpt", messages=MESSAGES, max_tokens=16,
                                       seed=3, temperature=0.8)
    msg = r.choices[0].message
    assert msg.role == "assistant" and isinstance(msg.content, str)
    assert r.usage.completion_tokens <= 16 and r.choices[0].finish_reason in ("stop", "length")
    stream = client.chat.completions.create(model="kjv-gpt", messages=MESSAGES, max_tokens=16,
                                            seed=3, temperature=0.8, stream=True)
    parts, finish = [], None
    for chunk in stream:
        if chunk.choices:
            parts.append(chunk.choices[0].delta.content or "")
            finish = chunk.choices[0].finish_reason or finish
    assert "".join(parts) == msg.content and finish == r.choices[0].finish_reason


def test_completion_equals_the_python_package(client):
    params = dict(max_tokens=24, seed=42, temperature=0.8, top_p=0.95)
    extra = {"top_k": 40, "min_p": 0.05}
    r = client.completions.create(model="kjv-gpt", prompt="And God said", extra_body=extra,
                                  **params)
    with vkformer.Llama(str(KJV), verbose=False) as llm:
        mine = llm("And God said", **params, **extra)
    # the server decodes its slots in one batched graph, the package one sequence: the same
    # sampler chain and seed give the same text
    assert r.choices[0].text == mine["choices"][0]["text"]
    assert r.usage.prompt_tokens == mine["usage"]["prompt_tokens"]


def test_bad_request_names_the_field(client):
    with pytest.raises(openai.BadRequestError, match="temperature"):
        client.chat.completions.create(model="kjv-gpt", messages=MESSAGES, temperature=-1)
