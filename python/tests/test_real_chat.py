"""A real chat model through the package (label real): SmolLM2-135M-Instruct Q4_1 from the model
cache (`vkformer pull smollm2-135m`; skipped when the cache does not hold it). Greedy tokens
against llama.cpp's (tests/data/real, tools/make_real_refs.py), the chat prompt against
jinja2's render of its template, and the chat answer against `vkformer chat`. A few tokens
each: lavapipe runs a 135M model."""

from __future__ import annotations

import itertools
import json

import pytest
import vkformer

from conftest import REPO, run_cli

REF = REPO / "tests" / "data" / "real" / "smollm2-135m"
QUESTION = "What is the capital of France?"

pytestmark = pytest.mark.real


@pytest.fixture(scope="module")
def smol():
    r = run_cli("pull", "--offline", "-q", "smollm2-135m")
    if r.returncode != 0:
        pytest.skip("SmolLM2-135M-Instruct is not in the model cache (vkformer pull "
                    "smollm2-135m)")
    path = r.stdout.strip()
    with vkformer.Llama(path, n_ctx=512, verbose=False) as llm:
        llm.path = path
        yield llm


def test_greedy_tokens_equal_llama_cpp(smol):
    case = next(c for c in json.loads((REF / "cases.json").read_text())
                if c["name"].endswith("/capital"))
    prompt = smol.tokenize(case["prompt"].encode())
    assert prompt == case["tokens"]  # llama.cpp's ids (SmolLM2 adds no BOS)
    want = case["greedy_tokens"]
    got = list(itertools.islice(smol.generate(prompt, temp=0), len(want)))
    assert got == want
    r = smol(case["prompt"], max_tokens=len(want), temperature=0)
    assert r["choices"][0]["text"] == smol.detokenize(want).decode()


def test_chat_equals_the_cli_and_jinja2(smol):
    msgs = [{"role": "user", "content": QUESTION}]
    r = smol.create_chat_completion(msgs, max_tokens=16, temperature=0)
    # the prompt: jinja2's render of SmolLM2's template (transformers' settings)
    render = next(x for x in json.loads((REF / "templates.json").read_text())["renders"]
                  if x["messages"] == msgs and x["add_generation_prompt"])
    n_prompt = len(smol.tokenize(render["expected"].encode(), special=True))
    assert r["usage"]["prompt_tokens"] == n_prompt
    answer = r["choices"][0]["message"]["content"]
    cli = run_cli("chat", "-m", smol.path, "--temp", "0", "-n", "16", timeout=600,
                  input=QUESTION + "\n")
    assert cli.returncode == 0, cli.stderr
    assert cli.stdout.rstrip("\n") == answer
    assert r["choices"][0]["finish_reason"] == "stop"  # ended at <|im_end|> before 16 tokens
    # streamed: the same answer in pieces
    chunks = list(smol.create_chat_completion(msgs, max_tokens=16, temperature=0, stream=True))
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in chunks) == answer
