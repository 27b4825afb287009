"""Llama(lora_path=..., lora_scale=...) (llama-cpp-python's arguments) on the lora set
(tools/refs/make_lora.py): the logits through an adapter are llama.cpp's (within f32 rounding:
the float path), a PEFT directory gives the GGUF adapter's, lora_scale 0 the base's; another
base's adapter and a scale that is not finite are refused."""

from __future__ import annotations

import json

import numpy as np
import pytest
import vkformer

from conftest import FIXTURES, need

LORA = FIXTURES / "lora"


def _case(name):
    for c in json.loads(need(LORA / "cases.json").read_text()):
        if c["name"] == name:
            return c
    raise AssertionError(f"no case {name}")


def _prompt_logits(c, **kw):
    with vkformer.Llama(str(LORA / c["model"]), cache_type="f32", backend="cpu", logits_all=True,
                        verbose=False, **kw) as llm:
        llm.eval(c["tokens"])
        return np.array(llm.scores[:len(c["tokens"])], dtype=np.float32)


def test_lora_path_matches_llama_cpp():
    c = _case("a/fox")
    ref = np.fromfile(LORA / c["prompt_logits"], dtype="<f4").reshape(len(c["tokens"]), -1)
    got = _prompt_logits(c, lora_path=str(LORA / "lora-a-f32.gguf"))
    # f32 rounding only (the float path; tests/test_lora.c measures 5.6e-6)
    assert np.abs(got - ref).max() <= 1e-4
    base = _prompt_logits(c)
    assert np.abs(base - ref).max() > 0.1  # the adapter matters
    peft = _prompt_logits(c, lora_path=str(LORA / "peft-a"))
    assert np.array_equal(peft, got)
    assert np.array_equal(_prompt_logits(c, lora_path=str(LORA / "lora-a-f32.gguf"), lora_scale=0.0),
                          base)


def test_lora_refusals():
    c = _case("a/fox")
    with pytest.raises(vkformer.VkformerError, match=r"blk\.0\.attn_q\.weight.*\[8, 128\]"):
        vkformer.Llama(str(LORA / c["model"]), backend="cpu", verbose=False,
                       lora_path=str(LORA / "lora-other-base.gguf"))
    with pytest.raises(ValueError, match="lora_scale"):
        vkformer.Llama(str(LORA / c["model"]), backend="cpu", verbose=False,
                       lora_path=str(LORA / "lora-a-f32.gguf"), lora_scale=float("nan"))
    with pytest.raises(ValueError, match="lora_base"):
        vkformer.Llama(str(LORA / c["model"]), backend="cpu", verbose=False, lora_base="x.gguf")
