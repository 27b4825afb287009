#!/usr/bin/env python3
"""The arm64 pass's serve check (tests/arm64.sh): `vkformer serve` built for aarch64 and run under
qemu-aarch64 on the CPU backend, driven by the official OpenAI Python client running on this
(x86-64) machine's Python. On the shipped model models/kjv-gpt, for two prompts of its
expected.json: /v1/completions at temperature 0 for the reference's n_greedy tokens, the text's
token ids (the server's /tokenize) equal to the reference's greedy_tokens (PyTorch, made when the
model was trained: an independent reference), and usage counting them. Then /v1/models names the
model and a bad request is refused with 400.

usage: arm64_serve.py SERVE_EXE SOURCE_DIR
SERVE_EXE: a program that runs the aarch64 CLI with its arguments (tests/arm64.sh writes one:
exec qemu-aarch64-static build-arm64/vkformer "$@")."""
import json
import os
import sys
import urllib.request

import openai  # tests/requirements.txt

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pyhelpers  # noqa: E402


def check(cond, msg):
    pyhelpers.check(cond, msg, file=sys.stderr)


def post(port, path, body):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path),
                                 data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.load(r)


def main():
    exe, src = sys.argv[1], sys.argv[2]
    model = os.path.join(src, "models", "kjv-gpt")
    with open(os.path.join(model, "expected.json")) as f:
        ref = json.load(f)
    # the CPU backend (tests/arm64.sh: arm64 lavapipe cannot compile the kernels); everything
    # runs emulated, so a generous start-up time
    p, port, log = pyhelpers.serve(exe, model, ["--cpu"], timeout=600,
                                   sink=sys.stderr.write)
    if port is None:
        p.kill()
        print("the server did not start:\n" + "".join(log), file=sys.stderr)
        return 1
    try:
        c = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % port, api_key="unused",
                          max_retries=0, timeout=600)
        models = c.models.list()
        check(len(models.data) == 1, "/v1/models: %s" % models)
        n = ref["n_greedy"]
        # two of the prompts (verify_kjv-gpt checks all four's greedy ids on the CPU backend;
        # here the server's code is under test, at emulated speed)
        for case in ref["cases"][:2]:
            r = c.completions.create(model=models.data[0].id, prompt=case["prompt"],
                                     max_tokens=n, temperature=0)
            text = r.choices[0].text
            ids = post(port, "/tokenize", {"content": text, "add_special": False})["tokens"]
            want = case["greedy_tokens"][:n]
            check(ids == want, "%r: greedy ids %s, the reference's %s" % (case["prompt"], ids, want))
            check(r.usage.completion_tokens == n, "%r: usage %s" % (case["prompt"], r.usage))
            print("%r -> %r (%d tokens)" % (case["prompt"], text, len(ids)), file=sys.stderr)
        try:
            c.completions.create(model=models.data[0].id, prompt="The", max_tokens=-3)
            check(False, "max_tokens -3 was accepted")
        except openai.BadRequestError as e:
            check(e.status_code == 400, "max_tokens -3: %s" % e)
    finally:
        p.terminate()
    return pyhelpers.finish("arm64_serve")


if __name__ == "__main__":
    sys.exit(main())
