#!/usr/bin/env python3
"""vkformer serve on an encoder-only model (all-MiniLM-L6-v2), driven by the official OpenAI
Python client (tests/requirements.txt): POST /v1/embeddings with a string, a list of strings and
token ids; the client's default base64 encoding and encoding_format="float"; usage; dimensions
refused; 4 concurrent clients equal to one; the completion endpoints refused on this server.
Vectors are compared with sentence-transformers' (tests/data/embed/all-minilm-l6-v2.json).

usage: test_embeddings.py VKFORMER SOURCE_DIR [extra serve flags]
Exit 77 (skipped) when the model cannot be fetched (tests/real/fetch_model.sh)."""
import json
import math
import os
import signal
import subprocess
import sys
import threading

import openai  # a missing requirement fails the test: the suite installs it

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyhelpers  # noqa: E402

# same bound as tests/test_embed_real.c: f32 in another summation order agrees to ~1e-7
COS = 0.9999


def check(cond, msg):  # FAIL lines on stderr, among the server's log
    pyhelpers.check(cond, msg, file=sys.stderr)


def cos(a, b):
    ab = sum(x * y for x, y in zip(a, b))
    return ab / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


def main():
    exe, src = sys.argv[1], sys.argv[2]
    extra = sys.argv[3:]
    f = subprocess.run(["sh", os.path.join(src, "tests/real/fetch_model.sh"), "all-minilm-l6-v2"],
                       capture_output=True, text=True)
    if f.returncode == 77:
        print("all-MiniLM-L6-v2 not available: skipped", file=sys.stderr)
        return 77
    if f.returncode != 0:
        print(f.stderr, file=sys.stderr)
        return 1
    model = f.stdout.strip()
    with open(os.path.join(src, "tests/data/embed/all-minilm-l6-v2.json")) as fh:
        fx = json.load(fh)
    texts, ref, ids = fx["texts"], fx["embedding"], fx["ids"]

    p, port, _ = pyhelpers.serve(exe, model, extra, stdout=None, sink=sys.stderr.write)
    if port is None:
        p.kill()
        print("the server did not start", file=sys.stderr)
        return 1
    try:
        c = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % port, api_key="unused",
                          max_retries=0, timeout=300)
        # one string, the client's default encoding (base64)
        r = c.embeddings.create(model="all-minilm", input=texts[0])
        check(len(r.data) == 1 and len(r.data[0].embedding) == 384, "one string: shape")
        check(cos(r.data[0].embedding, ref[0]) >= COS, "one string: cosine")
        check(r.usage.prompt_tokens == len(ids[0]) == r.usage.total_tokens,
              "usage %s, expected %d tokens" % (r.usage, len(ids[0])))
        # every text, floats
        r = c.embeddings.create(model="all-minilm", input=texts, encoding_format="float")
        check([d.index for d in r.data] == list(range(len(texts))), "indices")
        worst = min(cos(d.embedding, v) for d, v in zip(r.data, ref))
        check(worst >= COS, "list of strings: worst cosine %.9f" % worst)
        check(r.usage.prompt_tokens == sum(len(i) for i in ids), "usage of the list")
        print("list of %d strings: worst cosine %.9f" % (len(texts), worst), file=sys.stderr)
        # token ids: one list, and a list of lists
        r = c.embeddings.create(model="all-minilm", input=ids[3])
        check(cos(r.data[0].embedding, ref[3]) >= COS, "token ids: cosine")
        r = c.embeddings.create(model="all-minilm", input=[ids[1], ids[2]],
                                encoding_format="float")
        check(cos(r.data[0].embedding, ref[1]) >= COS and cos(r.data[1].embedding, ref[2]) >= COS,
              "lists of token ids: cosine")
        # dimensions: the model's own width is fine, another is refused clearly
        r = c.embeddings.create(model="all-minilm", input="hello", dimensions=384)
        check(len(r.data[0].embedding) == 384, "dimensions=384")
        try:
            c.embeddings.create(model="all-minilm", input="hello", dimensions=128)
            check(False, "dimensions=128 was accepted")
        except openai.BadRequestError as e:
            check("cannot shorten" in str(e), "dimensions refusal: %s" % e)
        for bad in ([], [[]], [1, "x"], [[1, 2], "x"], [10 ** 9]):
            try:
                c.embeddings.create(model="all-minilm", input=bad)
                check(False, "input %r was accepted" % (bad,))
            except openai.BadRequestError:
                pass
        # 4 concurrent clients get what one gets
        alone = [c.embeddings.create(model="m", input=t, encoding_format="float").data[0].embedding
                 for t in texts[:4]]
        got = [None] * 4

        def one(i):
            got[i] = c.embeddings.create(model="m", input=texts[i],
                                         encoding_format="float").data[0].embedding
        th = [threading.Thread(target=one, args=(i,)) for i in range(4)]
        [x.start() for x in th]
        [x.join() for x in th]
        check(got == alone, "concurrent requests differ from sequential ones")
        # no completions on an embedding server
        try:
            c.completions.create(model="m", prompt="hello", max_tokens=4)
            check(False, "completions accepted on an embedding server")
        except openai.APIStatusError as e:
            check(e.status_code == 400 and "/v1/embeddings" in str(e), "completions: %s" % e)
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
    check(p.returncode == 0, "server exit status %s" % p.returncode)
    print("%d failed" % len(pyhelpers.FAILS), file=sys.stderr)
    return 1 if pyhelpers.FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
