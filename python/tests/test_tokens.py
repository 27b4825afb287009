"""Tokenization through the binding against llama.cpp's own ids (the llama-tiny fixtures were
tokenized by llama.cpp) and the CLI."""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES, need, run_cli, TINY


def _cases():
    p = FIXTURES / "llama-tiny" / "cases.json"
    need(p)
    return [c for c in json.loads(p.read_text()) if c["model"] == TINY.name]


def test_tokenize_equals_llama_cpp(tiny):
    cases = _cases()
    assert cases
    for c in cases:
        assert c["add_bos"]
        assert tiny.tokenize(c["prompt"].encode()) == c["tokens"], c["name"]
        assert tiny.tokenize(c["prompt"].encode(), add_bos=False) == c["tokens"][1:], c["name"]
        assert tiny.n_vocab() == c["n_vocab"]
        assert tiny.token_bos() == c["tokens"][0]
        # back to the text: BOS dropped with the space SentencePiece put in front
        assert tiny.detokenize(c["tokens"]).decode() == c["prompt"], c["name"]


def test_special_tokens_flag(tiny):
    bos_text = tiny.detokenize([tiny.token_bos()], special=True)
    assert bos_text == b"<s>"
    # special=True reads control-token text as the token; False keeps it as plain text
    assert tiny.tokenize(b"<s>", add_bos=False, special=True) == [tiny.token_bos()]
    plain = tiny.tokenize(b"<s>", add_bos=False, special=False)
    assert tiny.token_bos() not in plain and len(plain) > 1
    assert tiny.detokenize(plain) == b" <s>"  # a continuation keeps SentencePiece's space


def test_tokenize_equals_cli(kjv):
    text = "In the beginning God created"
    r = run_cli("tokenize", "-m", str(kjv.model_path), "-p", text, "--json")
    assert r.returncode == 0, r.stderr
    ids = json.loads(r.stdout)
    ids = ids["ids"] if isinstance(ids, dict) else ids
    ids = [t["id"] if isinstance(t, dict) else t for t in ids]
    assert kjv.tokenize(text.encode(), special=True) == ids


def test_tokenize_wants_bytes_and_refuses_nul(kjv):
    with pytest.raises(TypeError):
        kjv.tokenize("text")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="NUL"):
        kjv.tokenize(b"a\0b")


def test_detokenize_out_of_range_names_the_token(kjv):
    import vkformer

    with pytest.raises(vkformer.TokenError, match="99999") as e:
        kjv.detokenize([5, 99999])
    assert isinstance(e.value, ValueError) and e.value.status == "VKF_ERROR_TOKEN"
