#!/usr/bin/env python3
"""Aggregate throughput of `vkformer serve` for 1, 4 and 8 concurrent streams.

Usage: bench/serve_bench.py VKFORMER MODEL [-np 8] [-n 64] [-r 3] [--cache] [-- extra serve flags]

Starts the server (-np slots, --port 0), warms it up (graph building, pipeline compilation),
then for each stream count S in 1, 4, 8 (those <= -np) sends S streaming /v1/completions
requests at once, each asking for exactly n tokens (ignore_eos is not needed: the stop token is
avoided by counting what came back), and reports per run: aggregate generated tokens / wall
time from the first request to the last [DONE], mean time to first token, and tokens/s per
stream. The best of -r repetitions is reported (the VM is shared: the best is the least
disturbed). Standard library only.

--cache instead: the prompt cache. Requests that share all but their last few characters with
the previous one (a long prompt, then " 0", " 1", ...; one token generated), with cache_prompt
false and true: the median time of 2*r+1 requests and the prompt tokens taken from the cache.
"""
import http.client
import json
import re
import subprocess
import sys
import threading
import time

PROMPTS = ["In the beginning", "And the LORD said", "Blessed are the", "Let there be light",
           "The earth was without form", "And it came to pass", "Thou shalt not", "Unto thee O LORD"]


def start(exe, model, np, extra):
    p = subprocess.Popen([exe, "serve", "-m", model, "--port", "0", "-np", str(np)] + extra,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    info = ""
    while True:
        line = p.stderr.readline()
        if not line:
            raise SystemExit("server did not start")
        m = re.search(r"serve: (.*) on (.*): listening on http://[^:]+:(\d+)", line)
        if m:
            info = m.group(2)
            threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()
            return p, int(m.group(3)), info


def one(port, prompt, n, seed, out):
    t0 = time.time()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    body = {"prompt": prompt, "max_tokens": n, "stream": True, "seed": seed, "temperature": 0.8}
    c.request("POST", "/v1/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
    r = c.getresponse()
    first, toks = None, 0
    for line in r:
        line = line.decode().strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        js = json.loads(line[6:])
        if first is None:
            first = time.time() - t0
        if "usage" in js:
            toks = js["usage"]["completion_tokens"]
    c.close()
    out.append((t0, time.time(), first or 0.0, toks))


def run(port, streams, n, seed):
    out, th = [], []
    for i in range(streams):
        th.append(threading.Thread(target=one, args=(port, PROMPTS[i % len(PROMPTS)], n, seed + i, out)))
    t0 = time.time()
    for t in th:
        t.start()
    for t in th:
        t.join()
    wall = max(o[1] for o in out) - t0
    toks = sum(o[3] for o in out)
    return toks / wall, sum(o[2] for o in out) / len(out), [o[3] / (o[1] - o[0]) for o in out], toks


def cache_run(port, reps):
    text = " ".join(PROMPTS) + ". "
    prompt = (text * (1 + 200 // len(text)))[:200]
    print("| cache_prompt | prompt tokens | cached tokens | median time ms |")
    print("|---|---:|---:|---:|")
    for cp in (False, True):
        ts, u = [], None
        for i in range(2 * reps + 2):
            body = {"prompt": prompt + " %d" % i, "max_tokens": 1, "temperature": 0, "cache_prompt": cp}
            t0 = time.time()
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
            c.request("POST", "/v1/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
            u = json.loads(c.getresponse().read())["usage"]
            c.close()
            if i > 0:  # the first fills the cache
                ts.append(time.time() - t0)
        print("| %s | %d | %d | %.1f |" % ("true" if cp else "false", u["prompt_tokens"],
                                          u["prompt_tokens_details"]["cached_tokens"], sorted(ts)[reps] * 1000))


def main():
    args = sys.argv[1:]
    extra = []
    if "--" in args:
        extra = args[args.index("--") + 1:]
        args = args[:args.index("--")]
    exe, model = args[0], args[1]
    opt = {"-np": 8, "-n": 64, "-r": 3}
    for k in opt:
        if k in args:
            opt[k] = int(args[args.index(k) + 1])
    p, port, dev = start(exe, model, opt["-np"], extra)
    try:
        run(port, min(opt["-np"], 8), 8, 0)  # warm-up: every graph shape built once
        if "--cache" in args:
            print("model %s, device %s, -np %d, prompt cache" % (model, dev, opt["-np"]))
            cache_run(port, opt["-r"])
            return
        print("model %s, device %s, -np %d, %d tokens per stream, best of %d" % (model, dev, opt["-np"], opt["-n"], opt["-r"]))
        print("| streams | aggregate t/s | per stream t/s | mean time to first token ms | tokens |")
        print("|---:|---:|---:|---:|---:|")
        for s in (1, 4, 8):
            if s > opt["-np"]:
                continue
            best = None
            for r in range(opt["-r"]):
                res = run(port, s, opt["-n"], 1000 * r)
                if best is None or res[0] > best[0]:
                    best = res
            agg, ttft, per, toks = best
            print("| %d | %.1f | %.1f | %.0f | %d |" % (s, agg, sum(per) / len(per), ttft * 1000, toks))
    finally:
        p.terminate()
        p.wait()


if __name__ == "__main__":
    main()
