#!/usr/bin/env python3
"""vkformer serve on a sliding-window model (gemma2, gemma3): batched decoding with each
sequence's window at its own position.

Usage: test_serve_swa.py VKFORMER CASES_JSON MODEL_GGUF [--cpu]

For the fixture's cases of MODEL (fixtures/arch: prompts of 30 and 46 tokens, window 8, 24
greedy tokens from llama.cpp, an independent reference), through /v1/completions with the
prompt as token ids:
  - alone: each case's greedy answer is llama.cpp's greedy continuation (its text, through the
    server's /detokenize); every step after the first is the server's batched decode, so a
    window placed anywhere but at the sequence's own position changes the tokens;
  - together: the greedy cases and two sampled requests (seeded, temperature 1, different
    lengths so the sequences sit at different positions) sent at once over 4 slots, each
    result identical to the same request made alone;
  - prompt cache: a repeated prompt, a follow-up turn (prompt + generated tokens + a new one)
    and a shared prefix take those rows from a slot's cache (usage.prompt_tokens_details.
    cached_tokens) and answer as a fresh evaluation (cache_prompt false) does.
Standard library only.
"""
import http.client
import json
import os
import subprocess
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pyhelpers import FAILS, check, serve  # noqa: E402


def main():
    exe, cases_path, model = sys.argv[1], sys.argv[2], sys.argv[3]
    backend = sys.argv[4:]
    with open(cases_path) as f:
        cases = json.load(f)
    if isinstance(cases, dict):
        cases = cases.get("cases", [])
    name = os.path.basename(model)
    cases = [c for c in cases if c["model"] == name]
    if not cases:
        raise SystemExit("no cases for %s in %s" % (name, cases_path))
    # 4 slots of 128 tokens: a prompt of 46 tokens and 24 more fit
    p, port, log = serve(exe, model, ["-np", "4", "-c", "512"] + backend)
    try:
        if port is None:
            raise SystemExit("server did not start: " + "".join(log))

        def post(path, body):
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            c.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
            r = c.getresponse()
            js = json.loads(r.read().decode("utf-8", "replace"))
            c.close()
            return r.status, js

        def text(body):
            st, js = post("/v1/completions", body)
            return js["choices"][0]["text"] if st == 200 else "<status %d: %s>" % (st, js)

        reqs, want = [], []
        for c in cases:
            reqs.append({"prompt": c["tokens"], "max_tokens": len(c["greedy_tokens"]), "temperature": 0})
            st, js = post("/detokenize", {"tokens": c["greedy_tokens"]})
            want.append(js["content"] if st == 200 else None)
        for i, c in enumerate(cases[:2]):
            reqs.append({"prompt": c["tokens"], "max_tokens": 10 + 7 * i, "seed": 41 + i,
                         "temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0})
        alone = [text(r) for r in reqs]
        for i, c in enumerate(cases):
            check(want[i] is not None and alone[i] == want[i],
                  "%s alone: %r, llama.cpp's greedy %r" % (c["name"], alone[i], want[i]))
        together = [None] * len(reqs)

        def run(i):
            together[i] = text(reqs[i])
        th = [threading.Thread(target=run, args=(i,)) for i in range(len(reqs))]
        for t in th:
            t.start()
        for t in th:
            t.join()
        for i in range(len(reqs)):
            check(together[i] == alone[i], "request %d: together %r != alone %r" % (i, together[i], alone[i]))

        # prompt cache: a slot holds the last prompt and the generated tokens fed back
        def cached(body):
            st, js = post("/v1/completions", body)
            if st != 200:
                return None, -1
            return js["choices"][0]["text"], js["usage"]["prompt_tokens_details"]["cached_tokens"]
        c0 = cases[0]
        n0 = len(c0["tokens"])
        # the same prompt again: everything but its last token from the cache, llama.cpp's answer
        got, nc = cached(reqs[0])
        check(got == want[0] and nc == n0 - 1, "cached repeat: %d cached, %r" % (nc, got))
        # an unrelated request in between (only BOS in common) takes another slot
        cached({"prompt": c0["tokens"][:1] + [5, 6, 7, 8], "max_tokens": 2, "temperature": 0})
        # a follow-up turn: the prompt, 10 generated tokens, then a token the model did not
        # choose: prompt + 10 rows come from the cache; the answer equals a fresh evaluation
        g = c0["greedy_tokens"]
        turn = c0["tokens"] + g[:10] + [(g[10] + 1) % 512]
        body = {"prompt": turn, "max_tokens": 12, "temperature": 0}
        fresh, nf = cached(dict(body, cache_prompt=False))
        got, nc = cached(body)
        check(nf == 0 and nc == n0 + 10 and got == fresh,
              "follow-up: %d cached (want %d; %d without the cache), %r vs fresh %r"
              % (nc, n0 + 10, nf, got, fresh))
        # a shared prefix of 20 tokens (at least half the prompt: the slot is reused) with
        # another request in flight
        pre = c0["tokens"][:20] + cases[-1]["tokens"][20:30]
        body = {"prompt": pre, "max_tokens": 16, "temperature": 0}
        out = [None, None]

        def busy():
            out[0] = text(reqs[-1])
        t = threading.Thread(target=busy)
        t.start()
        got, nc = cached(body)
        t.join()
        fresh, _ = cached(dict(body, cache_prompt=False))
        check(20 <= nc < len(pre) - 1 and got == fresh and out[0] == alone[-1],
              "shared prefix: %d cached, %r vs fresh %r" % (nc, got, fresh))
    finally:
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
    if FAILS:
        print("".join(log[-10:]))
        sys.exit(1)
    print("ok: %d requests alone and together (%s)" % (len(reqs), name))


if __name__ == "__main__":
    main()
