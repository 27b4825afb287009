"""Llama.rerank on the tiny BERT cross-encoder of the rerank set (tools/refs/make_rerank.py)
against llama.cpp's scores of the same pairs (as llama-server's /rerank builds them), top_n,
return_documents, and the refusal on an embedding model without a classifier head."""

from __future__ import annotations

import json

import pytest
import vkformer

from conftest import FIXTURES, REPO, need

# llama.cpp computes BERT's GELU as the tanh form through an f16 table, vkformer's float path as
# Hugging Face's erf form: 1.8e-4 at most on this model (tests/test_rerank.c)
TOL = 5e-4


def test_rerank_matches_llama_cpp() -> None:
    fx = json.loads(need(FIXTURES / "rerank" / "rerank.json").read_text())
    with vkformer.Llama(str(FIXTURES / "rerank" / fx["model"]), embedding=True,
                        verbose=False) as llm:
        for q in fx["queries"]:
            docs = [r["document"] for r in q["results"]]
            want = [r["score"] for r in q["results"]]
            res = llm.rerank(q["query"], docs)
            order = sorted(range(len(docs)), key=lambda i: -want[i])
            assert [r["index"] for r in res] == order
            assert all(abs(r["relevance_score"] - want[r["index"]]) <= TOL for r in res)
            top = llm.rerank(q["query"], docs, top_n=2, return_documents=True)
            assert [r["index"] for r in top] == order[:2]
            assert all(r["document"]["text"] == docs[r["index"]] for r in top)
        with pytest.raises(TypeError):
            llm.rerank("q", "not a list")  # type: ignore[arg-type]


def test_rerank_needs_a_classifier_head() -> None:
    with vkformer.Llama(str(REPO / "tests" / "data" / "embed" / "tiny-bert"), embedding=True,
                        verbose=False) as llm:
        with pytest.raises(ValueError, match="no classifier head"):
            llm.rerank("q", ["a", "b"])
