"""Embeddings through the package (llama-cpp-python's create_embedding / embed) on the tiny
random encoder-only models of tests/data/embed (tools/make_embed_tiny.py): vectors against
sentence-transformers' (tiny-bert, a sentence-transformers directory: CLS pooling, no Normalize,
max_seq_length 24) and llama.cpp's llama-embedding (tiny-nomic.gguf), the same vectors as
`vkformer embed`, OpenAI's shapes, truncation, per-token vectors, token-id inputs and the
refusals; and all-MiniLM-L6-v2 against sentence-transformers (label real)."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest
import vkformer

from conftest import KJV, REPO, run_cli

DATA = REPO / "tests" / "data" / "embed"
TINY_BERT = DATA / "tiny-bert"
TINY_NOMIC = DATA / "tiny-nomic.gguf"
FX = json.loads((DATA / "tiny.json").read_text())
# f32 sums in another order than torch / ggml: cosines agree to ~1e-7 (tests/test_embed.c); a
# wrong pooling row, norm or position gives < 0.99 on these random models
COS_MIN = 0.9999
# norms to 1e-5 relative: the references print 7 significant digits, f32 sums
NORM_RTOL = 1e-5


def _cos(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(a @ b / np.sqrt((a @ a) * (b @ b)))


def _same(a, b):
    # one input alone vs in a batch: bit for bit on the CPU; on a Vulkan device within 1e-5
    # of the largest component (f32 sums whose order may follow the batch's shape;
    # tests/test_embed.c's bound)
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert a.shape == b.shape and np.max(np.abs(a - b)) <= 1e-5 * np.max(np.abs(b))


def _close(got, ref, scale=True):
    for i, (g, r) in enumerate(zip(got, ref)):
        if r is None:
            continue
        assert _cos(g, r) >= COS_MIN, f"input {i}: cosine {_cos(g, r)}"
        if scale:
            ratio = np.linalg.norm(g) / np.linalg.norm(np.asarray(r, np.float64))
            assert abs(ratio - 1) < NORM_RTOL, f"input {i}: norm ratio {ratio}"


@pytest.fixture(scope="module")
def bert():
    with vkformer.Llama(str(TINY_BERT), embedding=True, verbose=False) as llm:
        yield llm


def test_vectors_equal_sentence_transformers(bert):
    texts = FX["texts"]
    # the model's own pipeline (normalize=None): CLS pooling, no Normalize module
    got, n = bert.embed(texts, normalize=None, return_count=True)
    assert len(got) == len(texts) and all(len(v) == 32 for v in got)
    _close(got, FX["embedding"])
    # the tokens embedded: sentence-transformers' tokenizer's ids, the long text cut at 24
    assert n == sum(len(i) for i in FX["ids"])
    # llama-cpp-python's default (normalize=False) leaves them as pooled; True: unit vectors
    _same(bert.embed(texts[0]), got[0])
    unit = bert.embed(texts[:3], normalize=True)
    for u, v in zip(unit, got):
        assert abs(np.linalg.norm(u) - 1) < 1e-6
        assert _cos(u, v) > 1 - 1e-6
    # token ids are used as given: sentence-transformers' ids give the same vectors
    by_ids = bert.embed(FX["ids"], normalize=None)
    _close(by_ids, FX["embedding"])


def test_create_embedding_shapes(bert):
    r = bert.create_embedding(FX["texts"][:3], model="tiny")
    assert r["object"] == "list" and r["model"] == "tiny"
    assert [d["index"] for d in r["data"]] == [0, 1, 2]
    assert all(d["object"] == "embedding" and len(d["embedding"]) == 32 for d in r["data"])
    n = sum(len(i) for i in FX["ids"][:3])
    assert r["usage"] == {"prompt_tokens": n, "total_tokens": n}
    one = bert.create_embedding(FX["texts"][0])
    assert len(one["data"]) == 1
    _same(one["data"][0]["embedding"], r["data"][0]["embedding"])
    assert one["model"] == str(TINY_BERT)
    ids = bert.create_embedding(FX["ids"][0])  # one input as token ids (OpenAI's form)
    _close([ids["data"][0]["embedding"]], [FX["embedding"][0]])


def test_truncation_and_per_token_vectors(bert):
    long = FX["texts"][8]
    with pytest.raises(ValueError, match="exceed the model's 24"):
        bert.embed(long, truncate=False)
    assert bert.embed(long, normalize=None) == bert.embed([long], normalize=None)[0]
    with vkformer.Llama(str(TINY_BERT), embedding=True, pooling_type=0, verbose=False) as tok:
        rows = tok.embed(FX["texts"][:2], normalize=None)
        assert [len(r) for r in rows] == [len(i) for i in FX["ids"][:2]]
        for i in range(2):
            _close(rows[i], FX["tokens"][i])
    with pytest.raises(ValueError, match="pooling_type"):
        vkformer.Llama(str(TINY_BERT), embedding=True, pooling_type=5, verbose=False)
    with pytest.raises(ValueError, match="pooling_type=4 .rank.*no classifier head"):
        vkformer.Llama(str(TINY_BERT), embedding=True, pooling_type=4, verbose=False)


def test_nomic_gguf_equals_llama_cpp():
    with vkformer.Llama(str(TINY_NOMIC), embedding=True, verbose=False) as llm:
        # a GGUF is normalized by default (llama-embedding's default), mean pooling
        got = llm.embed(FX["texts"][:8], normalize=None)
        _close(got, FX["nomic_llama_cpp"])
        # llama-cpp-python's default: the pooled vectors as they are, the same direction
        raw = llm.create_embedding(FX["texts"][:2])["data"]
        for d, v in zip(raw, got):
            assert _cos(d["embedding"], v) > 1 - 1e-6


def test_same_vectors_as_the_cli(bert, tmp_path):
    texts = FX["texts"][:4]
    f = tmp_path / "in.txt"
    f.write_text("\n".join(texts) + "\n")
    r = run_cli("embed", "-m", str(TINY_BERT), "-f", str(f), "-o", "json")
    assert r.returncode == 0, r.stderr
    cli = json.loads(r.stdout)
    mine = bert.create_embedding(texts)
    assert cli["usage"]["prompt_tokens"] == mine["usage"]["prompt_tokens"]
    # one library, one batch on the same device: the CLI's printed floats read back as ours
    a = np.array([d["embedding"] for d in cli["data"]], np.float32)
    b = np.array([d["embedding"] for d in mine["data"]], np.float32)
    assert np.array_equal(a, b)


def test_embedding_refusals(bert):
    with vkformer.Llama(str(TINY_BERT), verbose=False) as no:
        with pytest.raises(RuntimeError, match="embedding=True"):
            no.embed("x")
        with pytest.raises(ValueError, match="encoder-only"):
            no("x", max_tokens=2)
    # a decoder is refused at construction, not at the first create_embedding
    with pytest.raises(vkformer.UnsupportedError, match="encoder-only"):
        vkformer.Llama(str(KJV), embedding=True, verbose=False)
    with pytest.raises(TypeError, match="input"):
        bert.embed([1, "a"])
    with pytest.raises(ValueError, match="empty list"):
        bert.embed([])
    with pytest.raises(vkformer.TokenError):
        bert.embed([[2, 10 ** 6, 3]])


# ---------------------------------------------------------------- a real model


@pytest.mark.real
def test_all_minilm_equals_sentence_transformers():
    fetch = REPO / "tests" / "real" / "fetch_model.sh"
    r = subprocess.run(["sh", str(fetch), "all-minilm-l6-v2"], capture_output=True, text=True,
                       timeout=900, check=False)
    if r.returncode == 77:
        pytest.skip("all-MiniLM-L6-v2 is not in the model cache and cannot be fetched")
    assert r.returncode == 0, r.stderr
    fx = json.loads((DATA / "all-minilm-l6-v2.json").read_text())
    with vkformer.Llama(r.stdout.strip(), embedding=True, verbose=False) as llm:
        # its Normalize module (normalize=None): sentence-transformers' unit vectors
        got, n = llm.embed(fx["texts"], normalize=None, return_count=True)
        _close(got, fx["embedding"])
        assert n == sum(len(i) for i in fx["ids"])
