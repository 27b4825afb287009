"""Chat: templates rendered through the binding against transformers' renders (the shared
chat-template fixtures), create_chat_completion's shapes, streaming, and the prompt it sends."""

from __future__ import annotations

import json

import pytest
import vkformer

from conftest import FIXTURES, KJV, need

MESSAGES = [{"role": "system", "content": "Answer in the words of the King James Bible."},
            {"role": "user", "content": "In the beginning"}]


def _template_cases():
    p = FIXTURES / "chat-templates" / "cases.json"
    need(p)
    return json.loads(p.read_text())


def test_render_template_equals_transformers():
    cases = _template_cases()
    done = 0
    for c in cases:
        if c["error"] or c.get("extra_context"):
            continue
        tmpl = (FIXTURES / "chat-templates" / c["template_file"]).read_text()
        got = vkformer.render_template(tmpl, c["messages"], c["tools"], None, c["bos_token"],
                                       c["eos_token"], c["add_generation_prompt"])
        assert got == c["expected"], c["name"]
        done += 1
    assert done >= 50  # the bulk of the fixture set went through the binding


def test_template_errors_carry_the_library_message():
    with pytest.raises(vkformer.FormatError, match="line 1"):
        vkformer.render_template("{% for m in messages %}{{ m.content }", [{"role": "user",
                                                                           "content": "x"}])
    with pytest.raises(vkformer.FormatError, match="no system messages"):
        vkformer.render_template("{{ raise_exception('no system messages') }}", [])


def test_chat_completion_uses_chatml_without_a_template(kjv):
    assert kjv.model.chat_template is None
    prompt, default = kjv.model.apply_chat_template(MESSAGES)
    assert default
    # llama.cpp's ChatML, written out here
    assert prompt == ("<|im_start|>system\nAnswer in the words of the King James Bible."
                      "<|im_end|>\n<|im_start|>user\nIn the beginning<|im_end|>\n"
                      "<|im_start|>assistant\n")
    r = kjv.create_chat_completion(MESSAGES, max_tokens=20, seed=3)
    # the same as a completion of that prompt (ChatML's end of turn as a stop string)
    c = kjv(prompt, max_tokens=20, seed=3, temperature=0.2, stop=["<|im_end|>"])
    assert r["choices"][0]["message"] == {"role": "assistant",
                                          "content": c["choices"][0]["text"]}
    assert r["object"] == "chat.completion" and r["id"].startswith("chatcmpl-")
    assert r["usage"] == c["usage"]
    assert r["choices"][0]["finish_reason"] == c["choices"][0]["finish_reason"]


def test_chat_stream_equals_one_piece(kjv):
    whole = kjv.create_chat_completion(MESSAGES, max_tokens=16, seed=5)
    chunks = list(kjv.create_chat_completion(MESSAGES, max_tokens=16, seed=5, stream=True))
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant"}
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks)
    assert text == whole["choices"][0]["message"]["content"]
    assert chunks[-1]["choices"][0]["finish_reason"] == whole["choices"][0]["finish_reason"]
    assert chunks[-1]["choices"][0]["delta"] == {}


def test_chat_content_parts_and_chatml_format():
    with vkformer.Llama(str(KJV), chat_format="chatml", verbose=False) as llm:
        parts = [{"role": "user", "content": [{"type": "text", "text": "In the "},
                                              {"type": "text", "text": "beginning"}]}]
        a = llm.create_chat_completion(parts, max_tokens=8, seed=1)
        b = llm.create_chat_completion([{"role": "user", "content": "In the beginning"}],
                                       max_tokens=8, seed=1)
        assert a["choices"][0]["message"] == b["choices"][0]["message"]
        with pytest.raises(ValueError, match="text parts"):
            llm.create_chat_completion([{"role": "user", "content": 5}])
    with pytest.raises(ValueError, match="chat_format"):
        vkformer.Llama(str(KJV), chat_format="llama-2", verbose=False)


def test_chat_logprobs_shape(kjv):
    r = kjv.create_chat_completion(MESSAGES, max_tokens=3, temperature=0, logprobs=True,
                                   top_logprobs=2)
    content = r["choices"][0]["logprobs"]["content"]
    assert len(content) == 3
    assert "".join(t["token"] for t in content) == r["choices"][0]["message"]["content"]
    for t in content:
        assert set(t) == {"token", "bytes", "logprob", "top_logprobs"}
        assert t["logprob"] == max(x["logprob"] for x in t["top_logprobs"])  # greedy

