#!/usr/bin/env python3
"""vkformer serve's POST /v1/rerank (and /rerank, /reranking: llama-server's spellings) on the
tiny BERT cross-encoder of the rerank set (tools/refs/make_rerank.py), against llama.cpp's
scores of the same pairs.

Usage: test_rerank.py VKFORMER RERANK_DIR EMBED_MODEL_DIR GENERATE_MODEL [--cpu]

  - results: every document once, sorted by relevance_score (highest first), each score within
    5e-4 of llama.cpp's (tests/test_rerank.c says why: llama.cpp's tanh GELU), index naming the
    document; usage.prompt_tokens = the pairs' token counts of llama.cpp's layout;
  - top_n cuts the sorted list; return_documents adds {"document": {"text"}}; the TEI shape
    ("texts") answers a bare list of {"index", "score"} (+ "text" with return_text);
  - bad requests (no query, a query that is not a string, no documents, a document that is not
    a string, a negative top_n) are 400 and the server keeps answering;
  - an embedding model without a classifier head (EMBED_MODEL_DIR) and a generating model
    answer 400;
  - `vkformer rerank -q -f` prints the documents in llama.cpp's order with its scores (text and
    -o json, --top-n) and fails naming the missing head on EMBED_MODEL_DIR.
Standard library only.
"""
import http.client
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pyhelpers import check, finish, serve  # noqa: E402

TOL = 5e-4


def client(port):
    def post(path, body):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        c.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
        r = c.getresponse()
        data = json.loads(r.read().decode("utf-8", "replace"))
        c.close()
        return r.status, data
    return post


def refused(exe, model, backend, what, needle):
    p, port, log = serve(exe, model, backend)
    try:
        if port is None:
            raise SystemExit("server did not start: " + "".join(log))
        st, js = client(port)("/v1/rerank", {"query": "q", "documents": ["a", "b"]})
        check(st == 400 and needle in json.dumps(js), "%s: %d %s" % (what, st, js))
    finally:
        p.terminate()
        p.wait()


def main():
    exe, rdir, embed_dir, gen = sys.argv[1:5]
    backend = sys.argv[5:]
    with open(os.path.join(rdir, "rerank.json")) as f:
        fx = json.load(f)
    p, port, log = serve(exe, os.path.join(rdir, fx["model"]), backend)
    try:
        if port is None:
            raise SystemExit("server did not start: " + "".join(log))
        post = client(port)
        for q in fx["queries"]:
            docs = [r["document"] for r in q["results"]]
            want = [r["score"] for r in q["results"]]
            ntok = sum(len(r["tokens"]) for r in q["results"])
            for path in ("/v1/rerank", "/rerank", "/reranking"):
                st, js = post(path, {"query": q["query"], "documents": docs, "model": "m"})
                if not check(st == 200, "%s: %d %s" % (path, st, js)):
                    continue
                res = js.get("results", [])
                idx = [r["index"] for r in res]
                sc = [r["relevance_score"] for r in res]
                check(sorted(idx) == list(range(len(docs))), "%s: indices %s" % (path, idx))
                check(sc == sorted(sc, reverse=True), "%s: not sorted: %s" % (path, sc))
                worst = max(abs(r["relevance_score"] - want[r["index"]]) for r in res)
                check(worst <= TOL, "%s %r: worst |score - llama.cpp's| %.3g" % (path, q["query"], worst))
                order = sorted(range(len(docs)), key=lambda i: -want[i])
                check(idx == order, "%s: order %s, llama.cpp's %s" % (path, idx, order))
                check(js.get("object") == "list" and js.get("model") == "m"
                      and js.get("usage", {}).get("prompt_tokens") == ntok,
                      "%s: shape / usage %s (llama.cpp's pairs: %d tokens)" % (path, js, ntok))
            st, js = post("/v1/rerank", {"query": q["query"], "documents": docs, "top_n": 2,
                                         "return_documents": True})
            res = js.get("results", []) if st == 200 else []
            check(len(res) == 2 and all(r["document"]["text"] == docs[r["index"]] for r in res)
                  and [r["index"] for r in res] == order[:2], "top_n 2 / return_documents: %s" % js)
            st, js = post("/rerank", {"query": q["query"], "texts": docs, "return_text": True})
            check(st == 200 and isinstance(js, list) and [r["index"] for r in js] == order
                  and all(r["text"] == docs[r["index"]] and "score" in r for r in js),
                  "TEI shape: %s" % js)
        for bad in ({"documents": ["a"]}, {"query": 1, "documents": ["a"]}, {"query": "q"},
                    {"query": "q", "documents": []}, {"query": "q", "documents": ["a", 2]},
                    {"query": "q", "documents": ["a"], "top_n": -1}):
            st, js = post("/v1/rerank", bad)
            check(st == 400, "bad request %s: %d %s" % (bad, st, js))
        st, js = post("/v1/rerank", {"query": "q", "documents": ["a"]})
        check(st == 200, "after the bad requests: %d" % st)
    finally:
        p.terminate()
        p.wait()
    refused(exe, embed_dir, backend, "an embedding model without a classifier head", "no classifier head")
    refused(exe, gen, ["-c", "256"] + backend, "a generating model", "reranking needs a cross-encoder")
    # the command line
    q = fx["queries"][0]
    docs = [r["document"] for r in q["results"] if r["document"]]  # one per line: no empty one
    want = {r["document"]: r["score"] for r in q["results"]}
    order = sorted(docs, key=lambda d: -want[d])
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("\n".join(docs) + "\n")
    try:
        base = [exe, "rerank", "-m", os.path.join(rdir, fx["model"]), "-q", q["query"], "-f", f.name]
        r = subprocess.run(base + backend, capture_output=True, text=True, timeout=300)
        rows = [x.split("\t") for x in r.stdout.splitlines()]
        check(r.returncode == 0 and [x[2] for x in rows] == order
              and all(abs(float(x[0]) - want[x[2]]) <= TOL and docs[int(x[1]) - 1] == x[2] for x in rows),
              "rerank: rc %d, %s; llama.cpp's order %s\n%s" % (r.returncode, rows, order, r.stderr[-1000:]))
        r = subprocess.run(base + ["-o", "json", "--top-n", "2"] + backend, capture_output=True,
                           text=True, timeout=300)
        js = json.loads(r.stdout) if r.returncode == 0 else {}
        res = js.get("results", [])
        check(len(res) == 2 and [x["document"]["text"] for x in res] == order[:2]
              and all(docs[x["index"]] == x["document"]["text"] for x in res),
              "rerank -o json --top-n 2: %s" % r.stdout)
        r = subprocess.run([exe, "rerank", "-m", embed_dir, "-q", "q", "-f", f.name] + backend,
                           capture_output=True, text=True, timeout=300)
        check(r.returncode == 1 and "no classifier head" in r.stderr,
              "rerank on an embedding model: rc %d: %s" % (r.returncode, r.stderr))
    finally:
        os.unlink(f.name)
    return finish("test_rerank")


if __name__ == "__main__":
    sys.exit(main())
