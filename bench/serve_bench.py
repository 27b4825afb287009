#!/usr/bin/env python3
"""Aggregate throughput of `vkformer serve` for 1, 4 and 8 concurrent streams.

Usage: bench/serve_bench.py VKFORMER MODEL [-np 8] [-n 64] [-r 3] [--cache | --replicas | --lone [--base VKFORMER]]
       [-- extra serve flags]

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

--replicas instead: 1, 2 and 3 replicas of -np slots each (default 2) behind nginx with
deploy/nginx.conf (and deploy/vkformer-replicas.conf, their ports put in), against one replica
with as many slots as the three (behind nginx, and alone); each configuration gets 3 x np
concurrent streams of -n tokens, -r times, the configurations in turns; best and median.
Needs Debian's nginx.

--lone instead: a lone request's speed against -np (issue 42). Servers with 1 and with -np
slots (default 4), and with --base OTHER_VKFORMER the same two for that build (a baseline):
all started first, then the -r repetitions go round them in turns. Each repetition sends one
lone streamed request of -n tokens to every server (decode t/s = tokens after the first / the
time after the first; server CPU ms per token = the process's user + system time over the
request / its tokens, the steadier figure on a loaded machine), then -np concurrent streams to
each -np server (aggregate t/s, CPU ms per token). Medians of the repetitions, and the lone
request's -np : 1 ratio per build.
"""
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
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


def nginx_start(replica_ports, tmp):
    """nginx with deploy/nginx.conf in front of the replicas; returns (process, port)"""
    deploy = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "deploy")
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    site = open(os.path.join(deploy, "nginx.conf")).read()
    sk = socket.socket()
    sk.bind(("127.0.0.1", 0))
    port = sk.getsockname()[1]
    sk.close()
    site = site.replace("listen 8080;", "listen 127.0.0.1:%d;" % port)
    site = site.replace("/var/log/nginx/vkformer.access.log", os.path.join(tmp, "access.log"))
    open(os.path.join(tmp, "vkformer.conf"), "w").write(site)
    servers = open(os.path.join(deploy, "vkformer-replicas.conf")).read()
    servers = "\n".join(l for l in servers.splitlines() if not l.startswith("server "))
    servers += "\n" + "".join("server 127.0.0.1:%d max_fails=1 fail_timeout=10s;\n" % p for p in replica_ports)
    open(os.path.join(tmp, "vkformer-replicas.conf"), "w").write(servers)
    conf = os.path.join(tmp, "nginx.conf")
    open(conf, "w").write(
        "%sworker_processes 1;\ndaemon off;\npid %s/nginx.pid;\nerror_log %s/error.log;\n"
        "events { worker_connections 1024; }\nhttp { client_body_temp_path %s/body; proxy_temp_path %s/proxy; "
        "access_log off; include vkformer.conf; }\n" % ("user root;\n" if os.geteuid() == 0 else "", tmp, tmp, tmp, tmp))
    p = subprocess.Popen([nginx, "-p", tmp + "/", "-c", conf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            c.request("GET", "/health")
            if c.getresponse().status == 200:
                return p, port
        except OSError:
            pass
        time.sleep(0.05)
    raise SystemExit("nginx did not start (%s)" % tmp)


def replicas_run(exe, model, np, n, reps, extra):
    """1, 2, 3 replicas of np slots behind nginx; one replica of 3*np slots behind it and alone.
    Every configuration is started first (idle servers cost nothing), then the repetitions go
    round the configurations, so that a busy moment of the shared machine falls on all of them."""
    streams = 3 * np
    configs = [(k, np, True) for k in (1, 2, 3)] + [(1, 3 * np, True), (1, 3 * np, False)]
    procs, ngxs, tmps, ports, dev = [], [], [], [], None
    try:
        for k, slots, behind in configs:
            rp = []
            for _ in range(k):
                p, port, dev = start(exe, model, slots, extra)
                procs.append(p)
                rp.append(port)
            port = rp[0]
            if behind:
                tmp = tempfile.mkdtemp(prefix="vkf-bench-")
                os.chmod(tmp, 0o755)
                tmps.append(tmp)
                ngx, port = nginx_start(rp, tmp)
                ngxs.append(ngx)
            ports.append(port)
            run(port, streams, 8, 0)  # warm-up: every graph shape built once on every replica
        res = [[] for _ in configs]
        for r in range(reps):
            for i, port in enumerate(ports):
                res[i].append(run(port, streams, n, 1000 * r))
        print("model %s, device %s, %d tokens per stream, %d concurrent streams, %d runs each (in turns)" %
              (model, dev, n, streams, reps))
        print("| setup | replicas x slots | best aggregate t/s | median aggregate t/s | per stream t/s (best run) "
              "| mean time to first token ms (best run) |")
        print("|---|---:|---:|---:|---:|---:|")
        for (k, slots, behind), rr in zip(configs, res):
            rr.sort(key=lambda x: x[0])
            agg, ttft, per, toks = rr[-1]
            print("| %s | %d x %d | %.1f | %.1f | %.1f | %.0f |" % ("nginx" if behind else "direct", k, slots, agg,
                                                                  rr[len(rr) // 2][0], sum(per) / len(per), ttft * 1000))
    finally:
        for ngx in ngxs:
            ngx.send_signal(signal.SIGQUIT)
            ngx.wait()
        for p in procs:
            p.terminate()
            p.wait()
        for tmp in tmps:
            shutil.rmtree(tmp, ignore_errors=True)


def cpu_s(pid):
    """user + system CPU seconds of process pid (all its threads)"""
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def lone_run(exes, model, np, n, reps, extra):
    configs = [(exe, k) for exe in exes for k in (1, np)]
    procs, ports, dev = [], [], None
    try:
        for exe, k in configs:
            p, port, dev = start(exe, model, k, extra)
            procs.append(p)
            ports.append(port)
            run(port, k, 8, 0)  # warm-up
            one(port, PROMPTS[0], 8, 0, [])
        lone = [[] for _ in configs]
        multi = [[] for _ in configs]
        for r in range(reps):
            for i, (exe, k) in enumerate(configs):
                out = []
                c0 = cpu_s(procs[i].pid)
                one(ports[i], PROMPTS[r % len(PROMPTS)], n, 1000 * r, out)
                c1 = cpu_s(procs[i].pid)
                t0, t1, first, toks = out[0]
                lone[i].append(((toks - 1) / (t1 - t0 - first), 1000 * (c1 - c0) / toks))
                if k > 1:
                    c0 = cpu_s(procs[i].pid)
                    agg, _, _, toks = run(ports[i], k, n, 1000 * r)
                    multi[i].append((agg, 1000 * (cpu_s(procs[i].pid) - c0) / toks))
        med = lambda xs, j: sorted(x[j] for x in xs)[len(xs) // 2]
        print("model %s, device %s, %d tokens per request, medians of %d runs (in turns)" % (model, dev, n, reps))
        print("| build | -np | lone decode t/s | lone CPU ms / token | lone vs -np 1 | %d streams aggregate t/s "
              "| %d streams CPU ms / token |" % (np, np))
        print("|---|---:|---:|---:|---:|---:|---:|")
        for i, (exe, k) in enumerate(configs):
            one_np = configs.index((exe, 1))
            ratio = med(lone[i], 0) / med(lone[one_np], 0)
            ms = ("%.1f | %.1f" % (med(multi[i], 0), med(multi[i], 1))) if multi[i] else "- | -"
            print("| %s | %d | %.1f | %.1f | %.2f | %s |" % (exe, k, med(lone[i], 0), med(lone[i], 1), ratio, ms))
    finally:
        for p in procs:
            p.terminate()
            p.wait()


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
    if "--lone" in args:
        exes = [exe] + ([args[args.index("--base") + 1]] if "--base" in args else [])
        lone_run(exes, model, opt["-np"] if "-np" in args else 4, opt["-n"], opt["-r"], extra)
        return
    if "--replicas" in args:
        replicas_run(exe, model, opt["-np"] if "-np" in args else 2, opt["-n"], opt["-r"], extra)
        return
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
