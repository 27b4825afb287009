#!/usr/bin/env python3
"""vkformer serve's LoRA adapters in llama-server's shapes, on the lora set
(tools/refs/make_lora.py): --lora / --lora-scaled / --lora-init-without-apply, GET and POST
/lora-adapters, a request's "lora": [{"id", "scale"}].

Usage: test_lora.py VKFORMER LORA_DIR

- Greedy text through adapter 0 at scale 1 (per request, then as the server's scale after POST)
  equals the text of the model the adapter was merged into offline (numpy), served alone.
- One slot (-np 1), so every request reuses the same slot's prompt cache: requests alternating
  between the base and the adapter each give their own text, and a request never takes cached
  rows computed with another adapter set (cached_tokens 0 after a change, > 0 for the same set):
  no leak between sets.
- An unknown id (request or POST) is a 400 naming it, a scale that is not finite a 400, and the
  server keeps answering.
"""
import http.client
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pyhelpers import Server, check, finish  # noqa: E402

EXE, LORA = sys.argv[1], sys.argv[2]
BASE = os.path.join(LORA, "llama-tiny-f32.gguf")
MERGED = os.path.join(LORA, "llama-tiny-f32-merged-a.gguf")
A, B = os.path.join(LORA, "lora-a-f32.gguf"), os.path.join(LORA, "lora-b-f16.gguf")
PROMPT = "The quick brown fox jumps over"


def call(port, method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    c.request(method, path, None if body is None else json.dumps(body) if not isinstance(body, str) else body,
              {"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read().decode()
    c.close()
    try:
        return r.status, json.loads(data)
    except ValueError:
        return r.status, data


def complete(port, **extra):
    body = {"prompt": PROMPT, "max_tokens": 10, "temperature": 0}
    body.update(extra)
    st, js = call(port, "POST", "/v1/completions", body)
    check(st == 200, f"completion {extra}: {st} {js}")
    if st != 200:
        return None, None
    return js["choices"][0]["text"], js["usage"].get("prompt_tokens_details", {}).get("cached_tokens")


# the offline merge's text
m = Server(EXE, MERGED, ["--cpu", "-np", "1"])
merged, _ = complete(m.port)
m.stop()

s = Server(EXE, BASE, ["--cpu", "-np", "1", "--lora", A, "--lora-scaled", B + ":0.5",
                       "--lora-init-without-apply"])
st, js = call(s.port, "GET", "/lora-adapters")
check(st == 200 and js == [{"id": 0, "path": A, "scale": 0, "task_name": "", "prompt_prefix": ""},
                          {"id": 1, "path": B, "scale": 0, "task_name": "summarize",
                           "prompt_prefix": "Summary: "}],
      f"GET /lora-adapters after --lora-init-without-apply: {st} {js}")
base, _ = complete(s.port)
check(base != merged, "the adapter changes the text (else nothing below would be shown)")
texts = []
for i, lora in enumerate([[{"id": 0, "scale": 1.0}], None, [{"id": 0, "scale": 1.0}], None]):
    t, cached = complete(s.port, **({"lora": lora} if lora else {}))
    want = merged if lora else base
    check(t == want, f"request {i} ({'adapter 0' if lora else 'base'}): {t!r}, expected {want!r}")
    check(cached == 0, f"request {i}: {cached} cached tokens from a slot filled with another set")
    t2, cached2 = complete(s.port, **({"lora": lora} if lora else {}))
    check(t2 == want and cached2 and cached2 > 0,
          f"request {i} again: {t2!r}, cached {cached2} (the same set reuses the cache)")
# the server's scales
st, js = call(s.port, "POST", "/lora-adapters", [{"id": 0, "scale": 1.0}])
check(st == 200 and js == {"success": True}, f"POST /lora-adapters: {st} {js}")
st, js = call(s.port, "GET", "/lora-adapters")
check(st == 200 and [x["scale"] for x in js] == [1, 0], f"GET after POST: {js}")
t, _ = complete(s.port)
check(t == merged, f"after POST, a request without lora: {t!r}, expected {merged!r}")
t, _ = complete(s.port, lora=[])
check(t == base, f"lora [] (every adapter at 0): {t!r}, expected the base's")
# mistakes
st, js = call(s.port, "POST", "/v1/completions", {"prompt": PROMPT, "max_tokens": 2,
                                                  "lora": [{"id": 5, "scale": 1}]})
check(st == 400 and "id 5" in json.dumps(js), f"unknown id in a request: {st} {js}")
st, js = call(s.port, "POST", "/lora-adapters", [{"id": 7, "scale": 1}])
check(st == 400 and "id 7" in json.dumps(js), f"unknown id in POST: {st} {js}")
st, js = call(s.port, "POST", "/v1/completions",
              '{"prompt": "x", "max_tokens": 2, "lora": [{"id": 0, "scale": 1e999}]}')
check(st == 400 and "finite" in json.dumps(js), f"a scale that is not finite: {st} {js}")
st, js = call(s.port, "POST", "/lora-adapters", {"id": 0})
check(st == 400, f"POST with an object: {st} {js}")
st, js = call(s.port, "GET", "/health")
check(st == 200, f"/health after the mistakes: {st} {js}")
check(s.stop() == 0, "SIGTERM exits 0")
finish("serve_lora")
