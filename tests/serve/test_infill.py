#!/usr/bin/env python3
"""vkformer serve's POST /infill (llama-server's fill-in-the-middle endpoint).

Usage: test_infill.py VKFORMER INFILL_DIR LLAMA_TINY_GGUF [--cpu]

On llama-tiny-fim.gguf (the infill set, tools/refs/make_infill.py: llama-tiny with FIM token
keys) and the set's serve case:
  - the prompt the server builds from input_prefix / input_suffix / input_extra / prompt has
    the length of llama.cpp's (tokens_evaluated), and the greedy answer is llama.cpp's greedy
    continuation of llama-server's format_prompt_infill sequence (its text, through /detokenize);
  - the same answer streamed: llama-server's objects, "content" pieces, the last with "stop";
  - the answer's shape: content, stop, stop_type "limit", tokens_predicted, timings;
  - bad fields (no input_prefix, a prompt that is not a string, input_extra not an array, a
    chunk without text) are 400 and the server keeps answering;
  - llama-tiny (no FIM tokens) answers 400 naming the missing tokens;
  - `vkformer generate --fim-prefix --fim-suffix -p` builds the same prompt (--verbose-prompt)
    and prints llama.cpp's greedy middle, with --spm-infill llama-server --spm-infill's prompt;
    serve --spm-infill evaluates a prompt of that length; on llama-tiny generate fails naming
    the missing tokens.
Standard library only.
"""
import http.client
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pyhelpers import check, finish, serve  # noqa: E402


def client(port):
    def post(path, body, raw=False):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        c.request("POST", path, body=json.dumps(body), headers={"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read().decode("utf-8", "replace")
        c.close()
        return r.status, (data if raw else json.loads(data))
    return post


def main():
    exe, fdir, tiny = sys.argv[1], sys.argv[2], sys.argv[3]
    backend = sys.argv[4:]
    with open(os.path.join(fdir, "infill.json")) as f:
        case = json.load(f)["serve"]
    model = os.path.join(fdir, case["model"])
    p, port, log = serve(exe, model, ["-np", "2", "-c", "1024"] + backend)
    try:
        if port is None:
            raise SystemExit("server did not start: " + "".join(log))
        post = client(port)
        body = {k: case[k] for k in ("input_prefix", "input_suffix", "input_extra", "prompt")}
        body.update(n_predict=len(case["greedy_tokens"]), temperature=0)
        st, want = post("/detokenize", {"tokens": case["greedy_tokens"]})
        want = want.get("content") if st == 200 else None
        st, js = post("/infill", body)
        check(st == 200, "/infill: status %d: %s" % (st, js))
        if st == 200:
            check(js.get("content") == want,
                  "/infill: %r, llama.cpp's greedy continuation %r" % (js.get("content"), want))
            check(js.get("tokens_evaluated") == len(case["tokens"]),
                  "/infill: %s prompt tokens, llama.cpp's format_prompt_infill has %d"
                  % (js.get("tokens_evaluated"), len(case["tokens"])))
            check(js.get("stop") is True and js.get("stop_type") == "limit"
                  and js.get("tokens_predicted") == len(case["greedy_tokens"])
                  and isinstance(js.get("timings"), dict) and "model" in js,
                  "/infill: not llama-server's shape: %s" % js)
        # the same prompt as the token list llama.cpp built, through /v1/completions
        st, cj = post("/v1/completions", {"prompt": case["tokens"], "temperature": 0,
                                          "max_tokens": len(case["greedy_tokens"])})
        check(st == 200 and cj["choices"][0]["text"] == want,
              "/v1/completions of llama.cpp's infill tokens: %s" % cj)
        # streamed
        st, raw = post("/infill", dict(body, stream=True), raw=True)
        events = [json.loads(x[6:]) for x in raw.split("\n\n") if x.startswith("data: {")]
        text = "".join(e.get("content", "") for e in events)
        check(st == 200 and text == want and events and events[-1].get("stop") is True
              and all(e.get("stop") is False for e in events[:-1]),
              "/infill stream: %d, %r, %s" % (st, text, events[-1:] if events else raw))
        # bad fields
        for bad, what in (({"input_suffix": "x"}, "input_prefix"),
                          (dict(body, prompt=[1, 2]), "prompt"),
                          (dict(body, input_extra={"text": "x"}), "input_extra"),
                          (dict(body, input_extra=[{"filename": "a"}]), "text")):
            st, js = post("/infill", bad)
            msg = json.dumps(js)
            check(st == 400 and what in msg, "/infill without a good %s: %d %s" % (what, st, msg))
        st, js = post("/infill", body)
        check(st == 200 and js.get("content") == want, "/infill after the bad requests: %d" % st)
    finally:
        p.terminate()
        p.wait()
    # a model without FIM tokens
    p, port, log = serve(exe, tiny, ["-np", "1", "-c", "256"] + backend)
    try:
        if port is None:
            raise SystemExit("server did not start: " + "".join(log))
        st, js = client(port)("/infill", {"input_prefix": "a", "input_suffix": "b"})
        msg = json.dumps(js)
        check(st == 400 and "infill is not supported" in msg and "prefix suffix middle" in msg,
              "/infill on a model without FIM tokens: %d %s" % (st, msg))
    finally:
        p.terminate()
        p.wait()
    # the command line (the case's extra context does not fit llama-server's budget at this
    # context: n_ctx - 2048 + 2 < 0, so the prompts agree without it)
    cmd = [exe, "generate", "-m", model, "-c", "1024", "--temp", "0", "-n",
           str(len(case["greedy_tokens"])), "--fim-prefix", case["input_prefix"], "--fim-suffix",
           case["input_suffix"], "-p", case["prompt"], "--verbose-prompt"] + backend
    r = subprocess.run(cmd, capture_output=True, timeout=300)
    r.stdout, r.stderr = r.stdout.decode("utf-8", "replace"), r.stderr.decode("utf-8", "replace")
    line = [x for x in r.stderr.splitlines() if "prompt tokens:" in x]
    toks = [int(t) for t in line[0].split("prompt tokens:")[1].split()] if line else None
    check(r.returncode == 0 and toks == case["tokens"],
          "generate --fim-prefix: rc %d, prompt %s, llama.cpp's %s\n%s"
          % (r.returncode, toks, case["tokens"], r.stderr[-2000:]))
    check(r.stdout == want, "generate --fim-prefix: printed %r, llama.cpp's middle %r" % (r.stdout, want))
    r = subprocess.run(cmd + ["--spm-infill", "-n", "1"], capture_output=True, timeout=300)
    err = r.stderr.decode("utf-8", "replace")
    line = [x for x in err.splitlines() if "prompt tokens:" in x]
    toks = [int(t) for t in line[0].split("prompt tokens:")[1].split()] if line else None
    check(r.returncode == 0 and toks == case["spm_tokens"],
          "generate --spm-infill: prompt %s, llama-server --spm-infill's %s" % (toks, case["spm_tokens"]))
    # serve --spm-infill: a prompt of llama-server's length (the order is vkf_model_infill's,
    # checked above and in tests/test_infill.c)
    p, port, log = serve(exe, model, ["-np", "1", "-c", "1024", "--spm-infill"] + backend)
    try:
        if port is None:
            raise SystemExit("server did not start: " + "".join(log))
        body = {k: case[k] for k in ("input_prefix", "input_suffix", "input_extra", "prompt")}
        st, js = client(port)("/infill", dict(body, n_predict=1, temperature=0))
        check(st == 200 and js.get("tokens_evaluated") == len(case["spm_tokens"]),
              "serve --spm-infill: %d %s" % (st, js))
    finally:
        p.terminate()
        p.wait()
    r = subprocess.run([exe, "generate", "-m", tiny, "--fim-prefix", "a", "--fim-suffix", "b", "-n", "4"]
                       + backend, capture_output=True, text=True, timeout=300)
    check(r.returncode != 0 and "prefix suffix middle" in r.stderr,
          "generate --fim-prefix on a model without FIM tokens: rc %d: %s" % (r.returncode, r.stderr[-1000:]))
    return finish("test_infill")


if __name__ == "__main__":
    sys.exit(main())
