"""Completion shapes: streaming against one piece, stop strings, echo, logprobs (against a
log-softmax of the logits computed here), stopping criteria and logits processors."""

from __future__ import annotations

import numpy as np
import pytest
import vkformer

PROMPT = "And God said"


def _text(llm, **kw):
    return llm(PROMPT, **kw)["choices"][0]["text"]


def test_stream_equals_one_piece(kjv):
    whole = kjv(PROMPT, max_tokens=30, seed=9)
    chunks = list(kjv(PROMPT, max_tokens=30, seed=9, stream=True))
    assert "".join(c["choices"][0]["text"] for c in chunks) == whole["choices"][0]["text"]
    for c in chunks:
        assert c["object"] == "text_completion" and c["id"] == chunks[0]["id"]
        assert set(c) == {"id", "object", "created", "model", "choices"}
        assert set(c["choices"][0]) == {"text", "index", "logprobs", "finish_reason"}
    assert [c["choices"][0]["finish_reason"] for c in chunks][-1] == "length"
    assert all(c["choices"][0]["finish_reason"] is None for c in chunks[:-1])
    assert whole["object"] == "text_completion" and whole["id"].startswith("cmpl-")
    assert whole["model"] == kjv.model_path


def test_stop_strings(kjv):
    free = _text(kjv, max_tokens=60, seed=4)
    stop = free[8:11]  # a string the free generation contains
    cut = free[: free.index(stop)]
    r = kjv(PROMPT, max_tokens=60, seed=4, stop=[stop, "never there"])
    assert r["choices"][0]["text"] == cut
    assert r["choices"][0]["finish_reason"] == "stop"
    streamed = list(kjv(PROMPT, max_tokens=60, seed=4, stop=stop, stream=True))
    assert "".join(c["choices"][0]["text"] for c in streamed) == cut
    assert streamed[-1]["choices"][0]["finish_reason"] == "stop"


def test_echo_and_empty_prompt(kjv):
    r = kjv(PROMPT, max_tokens=5, seed=1, echo=True)
    assert r["choices"][0]["text"] == PROMPT + _text(kjv, max_tokens=5, seed=1)
    r = kjv("", max_tokens=5, seed=1)  # starts from BOS, as the CLI
    assert r["usage"]["prompt_tokens"] == 1


def test_logprobs_are_the_log_softmax_of_the_logits(kjv):
    r = kjv(PROMPT, max_tokens=6, temperature=0, logprobs=3)
    lp = r["choices"][0]["logprobs"]
    text = r["choices"][0]["text"]
    assert "".join(lp["tokens"]) == text
    assert len(lp["token_logprobs"]) == 6 and all(len(t) >= 3 for t in lp["top_logprobs"])
    assert lp["text_offset"][0] == len(PROMPT)
    # replay: the logits before each generated token, scored here in float64
    kjv.reset()
    ids = kjv.tokenize(PROMPT.encode(), special=True)
    gen = kjv.tokenize(text.encode(), add_bos=False)
    kjv.eval(ids)
    for i, tok in enumerate(gen):
        x = kjv.logits().astype(np.float64)
        ref = x - (x.max() + np.log(np.exp(x - x.max()).sum()))
        # float64 log-softmaxes of logits that may differ in float32's last place (the replay
        # evaluates the prompt in another pass than the cached one): 1e-6 is ~10 float32 ulps
        # of these log-probs; a wrong row or token is off by > 1e-2
        assert abs(lp["token_logprobs"][i] - ref[tok]) < 1e-6
        assert tok == int(np.argmax(x))  # greedy: the top token
        assert max(lp["top_logprobs"][i].values()) == pytest.approx(ref.max(), abs=1e-6)
        kjv.eval([tok])


def test_stopping_criteria_and_logits_processor(kjv):
    seen = []

    def stop_after_5(input_ids, logits):
        seen.append(len(input_ids))
        return len(seen) >= 5

    r = kjv(PROMPT, max_tokens=30, seed=2, stopping_criteria=vkformer.StoppingCriteriaList(
        [stop_after_5]))
    assert r["usage"]["completion_tokens"] == 5
    assert r["choices"][0]["finish_reason"] == "stop"
    only_e = kjv.tokenize(b"e", add_bos=False)[0]

    def force_e(input_ids, scores):
        out = np.full_like(scores, -np.inf)
        out[only_e] = 0.0
        return out

    r = kjv(PROMPT, max_tokens=8, seed=2,
            logits_processor=vkformer.LogitsProcessorList([force_e]))
    assert r["choices"][0]["text"] == "e" * 8
    r = kjv(PROMPT, max_tokens=8, seed=2, logit_bias={only_e: 100.0})
    assert r["choices"][0]["text"] == "e" * 8


def test_refused_sampling_options(kjv):
    with pytest.raises(ValueError, match="mirostat"):
        kjv(PROMPT, max_tokens=2, mirostat_mode=2)
    with pytest.raises(ValueError, match="suffix"):
        kjv(PROMPT, max_tokens=2, suffix="x")
    with pytest.raises(ValueError, match="logits_all"):
        kjv(PROMPT, max_tokens=2, logprobs=2, echo=True)
