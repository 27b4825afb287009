#!/usr/bin/env python3
"""Three `vkformer serve` replicas behind nginx with deploy/nginx.conf, under load, one killed.

Usage: test_nginx.py VKFORMER MODEL DEPLOY_DIR   (run by VKF_PYTHON: the OpenAI client)

- deploy/vkformer.service passes `systemd-analyze verify` without a warning (where systemd is
  installed), and the replicas are started with its ExecStart line (its flags, the test's
  model, ports and two slots each).
- nginx runs deploy/nginx.conf and deploy/vkformer-replicas.conf as shipped, but for the
  addresses (the listen port, the replicas' ports, the log path), in a top-level configuration
  of the test's own (pid, temporary paths). The note's alternative (affinity by the body's
  "user" field) passes `nginx -t`.
- Affinity: two turns of two conversations with X-Conversation-Id: each conversation stays on
  one replica (nginx's log) and its second turn reuses the first from that replica's prompt
  cache (cached_tokens >= the first turn's prompt; another replica would hold at most the chat
  template's opening tokens).
- Load: 36 requests, 6 at a time, half streamed (chat) and half whole (completions and chat), by
  the official OpenAI client with its own retries off (max_retries=0), so that every retry is
  nginx's. Mid-run one replica is SIGKILLed while it generates a non-streamed answer, later
  another gets SIGTERM while it streams. Then: no non-streamed request failed (the killed one's
  were retried on another replica: nginx's log shows both upstreams); every stream completed
  (finish_reason and [DONE]) or raised a transport error, and only streams served by the killed
  replica did; the drained replica finished what it had (its streams all complete, its own
  access log says so) and exited 0.
"""
import concurrent.futures
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

import httpx
import openai

FAILS = []
PROCS = []
N_REQ, CONCURRENCY = 36, 6


T0 = time.time()


def phase(what):
    print("[%5.1f s] %s" % (time.time() - T0, what), flush=True)


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL:", what, flush=True)


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def get(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request("GET", path)
        r = c.getresponse()
        body = r.read().decode()
        return r.status, json.loads(body) if body.startswith(("{", "[")) else body
    except OSError:
        return None, None
    finally:
        c.close()


def substitute(text, pairs, where):
    """each (old, new) must occur exactly once: a change of the shipped file fails the test"""
    for old, new in pairs:
        n = text.count(old)
        if n != 1:
            raise SystemExit("%s: expected '%s' once, found %d times" % (where, old, n))
        text = text.replace(old, new)
    return text


class Replica:
    def __init__(self, argv, port):
        self.port = port
        self.p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        PROCS.append(self.p)
        self.lines = []
        self.ready = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.p.stderr:
            self.lines.append(line.rstrip("\n"))
            if "listening on" in line:
                self.ready.set()
        self.ready.set()

    def access(self):
        out = []
        for line in self.lines:
            try:
                o = json.loads(line)
            except ValueError:
                continue
            if "path" in o:
                out.append(o)
        return out


def unit_argv(deploy, exe, model, port):
    """ExecStart of deploy/vkformer.service, with the test's binary, model, port, 2 slots"""
    unit = open(os.path.join(deploy, "vkformer.service")).read()
    line = [l for l in unit.splitlines() if l.startswith("ExecStart=")]
    if len(line) != 1:
        raise SystemExit("vkformer.service: expected one ExecStart line")
    env = {"VKF_MODEL": model, "VKF_HOST": "127.0.0.1", "VKF_PORT": str(port), "VKF_SLOTS": "2",
           "VKF_SERVE_ARGS": ""}
    argv = []
    for w in line[0][len("ExecStart="):].split():
        m = re.fullmatch(r"\$\{?(\w+)\}?", w)
        if m:
            if env[m.group(1)]:
                argv.append(env[m.group(1)])  # $VAR splits on spaces, ${VAR} is one word
            continue
        argv.append(w)
    if not argv[0].endswith("/vkformer"):
        raise SystemExit("vkformer.service: ExecStart runs %s" % argv[0])
    return [exe] + argv[1:]


def check_unit(deploy, exe, tmp):
    sa = shutil.which("systemd-analyze")
    if not sa:
        print("note: no systemd-analyze here: the unit's syntax is not verified")
        return
    text = open(os.path.join(deploy, "vkformer.service")).read()
    text = substitute(text, [("ExecStart=/usr/local/bin/vkformer ", "ExecStart=%s " % exe)], "vkformer.service")
    for name in ("vkformer.service", "vkformer@.service"):
        path = os.path.join(tmp, name)
        open(path, "w").write(text)
    for unit in ("vkformer.service", "vkformer@8081.service"):
        r = subprocess.run([sa, "verify", "--man=no", os.path.join(tmp, unit)], capture_output=True,
                           text=True, timeout=60)
        check(r.returncode == 0 and r.stderr.strip() == "",
              "systemd-analyze verify %s: rc %d, %s" % (unit, r.returncode, r.stderr.strip()))


def nginx_conf(deploy, tmp, port, replicas, user_variant=False):
    site = open(os.path.join(deploy, "nginx.conf")).read()
    site = substitute(site, [("listen 8080;", "listen 127.0.0.1:%d;" % port),
                             ("/var/log/nginx/vkformer.access.log", os.path.join(tmp, "access.log"))],
                      "nginx.conf")
    if user_variant:  # the note's map and upstream, uncommented
        note = site[site.index("# Affinity by OpenAI's \"user\" field"):]
        lines = [l[4:] for l in note.splitlines() if l.startswith("#   ") and not l.startswith("#   ...")]
        site += "\n" + "\n".join(lines) + "\n"
    open(os.path.join(tmp, "vkformer.conf"), "w").write(site)
    rep = open(os.path.join(deploy, "vkformer-replicas.conf")).read()
    rep = substitute(rep, [("127.0.0.1:%d" % (8081 + i), "127.0.0.1:%d" % p) for i, p in enumerate(replicas)],
                     "vkformer-replicas.conf")
    open(os.path.join(tmp, "vkformer-replicas.conf"), "w").write(rep)
    top = """%s
worker_processes 1;
daemon off;
pid %s/nginx.pid;
error_log %s/error.log info;
events { worker_connections 512; }
http {
    client_body_temp_path %s/body;
    proxy_temp_path %s/proxy;
    fastcgi_temp_path %s/fastcgi;
    uwsgi_temp_path %s/uwsgi;
    scgi_temp_path %s/scgi;
    access_log off;
    include vkformer.conf;
}
""" % (("user root;" if os.geteuid() == 0 else ""), tmp, tmp, tmp, tmp, tmp, tmp, tmp)
    path = os.path.join(tmp, "nginx.conf")
    open(path, "w").write(top)
    return path


def nginx_log(tmp):
    """{rid: (upstream addresses tried, upstream statuses, status)} from the shipped log format"""
    out = {}
    try:
        lines = open(os.path.join(tmp, "access.log")).read().splitlines()
    except OSError:
        return out
    for line in lines:
        m = re.search(r'"\w+ [^ ]*[?&]rid=([\w-]+)[^ ]* HTTP/[\d.]+" (\d+) .* upstream=(.*) upstream_status=(.*) conversation=', line)
        if m:
            addrs = [a.strip() for a in m.group(3).replace(" : ", ", ").split(",")]
            stats = [s.strip() for s in m.group(4).replace(" : ", ", ").split(",")]
            out[m.group(1)] = (addrs, stats, int(m.group(2)))
    return out


def busy_with(port, stream, min_remain=5):
    """whether a slot of the replica is generating a request with this stream flag, with tokens
    still to make (so that it is still in flight a moment later)"""
    st, slots = get(port, "/slots")
    return st == 200 and any(s["is_processing"] and s.get("params", {}).get("stream") == stream
                             and s["next_token"][0]["n_remain"] >= min_remain for s in slots)


def one_request(client, i):
    """request i of the load: even ones whole (completions or chat), odd ones streamed chat"""
    rid = "r%d" % i
    n = 16 + (i * 7) % 25
    out = {"rid": rid, "stream": i % 2 == 1, "error": None, "finish": None, "text": ""}
    q = {"rid": rid}
    try:
        if i % 2 == 0 and i % 4 == 0:
            r = client.completions.create(model="kjv-gpt", prompt="And it came to pass %d" % i, max_tokens=n,
                                          seed=i, temperature=0.8, extra_query=q)
            out["finish"], out["text"] = r.choices[0].finish_reason, r.choices[0].text
            out["usage"] = r.usage.completion_tokens
        elif i % 2 == 0:
            r = client.chat.completions.create(model="kjv-gpt", messages=[{"role": "user", "content": "Verse %d" % i}],
                                               max_tokens=n, seed=i, extra_query=q)
            out["finish"], out["text"] = r.choices[0].finish_reason, r.choices[0].message.content
            out["usage"] = r.usage.completion_tokens
        else:
            s = client.chat.completions.create(model="kjv-gpt", messages=[{"role": "user", "content": "Psalm %d" % i}],
                                               max_tokens=n, seed=i, stream=True, extra_query=q)
            for chunk in s:
                if chunk.choices:
                    out["text"] += chunk.choices[0].delta.content or ""
                    out["finish"] = chunk.choices[0].finish_reason or out["finish"]
    except (openai.APIError, httpx.TransportError) as e:  # a clean error: the client says what happened
        out["error"] = "%s: %s" % (type(e).__name__, e)
    return out


def main():
    exe, model, deploy = (os.path.abspath(a) for a in sys.argv[1:4])
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
    if not nginx:
        print("no nginx: ./setup.sh test installs it (nginx-light)")
        return 77
    t_begin = time.time()
    tmp = tempfile.mkdtemp(prefix="vkf-deploy-")
    os.chmod(tmp, 0o755)  # nginx's workers run as another user when the test runs as root

    check_unit(deploy, exe, tmp)
    ports = free_ports(4)
    pn, pr = ports[0], ports[1:]
    reps = [Replica(unit_argv(deploy, exe, model, p), p) for p in pr]

    conf = nginx_conf(deploy, tmp, pn, pr, user_variant=True)
    r = subprocess.run([nginx, "-t", "-p", tmp + "/", "-c", conf], capture_output=True, text=True)
    check(r.returncode == 0, "nginx -t, with the note's affinity by the user field: %s" % r.stderr)
    conf = nginx_conf(deploy, tmp, pn, pr)
    r = subprocess.run([nginx, "-t", "-p", tmp + "/", "-c", conf], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("nginx -t: %s" % r.stderr)
    ngx = subprocess.Popen([nginx, "-p", tmp + "/", "-c", conf], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    PROCS.append(ngx)
    for rep in reps:
        rep.ready.wait(120)
        check(rep.p.poll() is None and any("listening on" in l for l in rep.lines),
              "replica %d started from the unit's ExecStart: %s" % (rep.port, rep.lines[-2:]))
    deadline = time.time() + 20
    while time.time() < deadline and get(pn, "/health")[0] != 200:
        time.sleep(0.05)
    check(get(pn, "/health")[0] == 200, "nginx answers /health from a replica")
    phase("replicas and nginx up")
    check(get(pn, "/slots")[0] == 404 and get(pn, "/metrics")[0] == 404, "/slots and /metrics are not exposed by nginx")
    client = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % pn, api_key="none", max_retries=0, timeout=120)

    # ---------------------------------------------------------------- streaming passes through
    # nginx forwards what it reads from the replica as HTTP chunks of its own: unbuffered, about
    # one chunk per event (the replica writes each token's event as it is made; measured 1.5
    # events per chunk at load average 24); with proxy_buffering on, several events per chunk
    # (measured 4.9). The bound: at most 3 events per chunk.
    body = {"model": "kjv-gpt", "messages": [{"role": "user", "content": "Genesis"}], "max_tokens": 120,
            "seed": 3, "stream": True}
    chunks, events = 0, 0
    with httpx.stream("POST", "http://127.0.0.1:%d/v1/chat/completions?rid=first" % pn, json=body,
                      timeout=120) as r:
        for piece in r.iter_raw():  # one piece per HTTP chunk received
            chunks += 1
            events += piece.count(b"data: ")
    check(events >= 100 and 3 * chunks >= events,
          "a stream passes through nginx unbuffered: %d events in %d chunks (<= 3 events per chunk)" %
          (events, chunks))
    phase("streaming checked")
    # ---------------------------------------------------------------- affinity
    def conversation(conv):  # two turns, one after the other; the conversations side by side
        h = {"X-Conversation-Id": conv}
        msgs = [{"role": "user", "content": "%s: In the beginning God created" % conv}]
        r1 = client.chat.completions.create(model="kjv-gpt", messages=msgs, max_tokens=8, seed=1,
                                            extra_headers=h, extra_query={"rid": conv + "1"})
        msgs += [{"role": "assistant", "content": r1.choices[0].message.content},
                 {"role": "user", "content": "And the earth"}]
        r2 = client.chat.completions.create(model="kjv-gpt", messages=msgs, max_tokens=8, seed=2,
                                            extra_headers=h, extra_query={"rid": conv + "2"})
        return r1.usage.prompt_tokens, r2.usage.prompt_tokens_details.cached_tokens

    # two conversations: even on one replica each keeps a slot (two each), so neither evicts the
    # other's cache between its turns
    convs = ("conv-a", "conv-b")
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        for conv, (p1, cached) in zip(convs, pool.map(conversation, convs)):
            # another replica's slots would share at most the chat template's opening tokens: the
            # conversations differ from their first word
            check(cached >= p1, "%s: turn 2 reuses turn 1 from the same replica's cache (%d cached >= %d)" %
                  (conv, cached, p1))
    log = nginx_log(tmp)
    for conv in convs:
        a, b = log.get(conv + "1"), log.get(conv + "2")
        check(a and b and a[0] == b[0] and len(a[0]) == 1, "%s: both turns on one replica (%s, %s)" % (conv, a, b))

    phase("affinity checked")
    # ---------------------------------------------------------------- load, a kill, a drain
    results = []
    victim, drained, survivor = reps
    events = {}

    def chaos():
        # SIGKILL a replica while it generates a whole (non-streamed) answer, which nginx must
        # retry, and (within 10 s, else the whole one alone) a stream, which must end in an error
        deadline = time.time() + 20
        while time.time() < deadline:
            whole, stream = busy_with(victim.port, False), busy_with(victim.port, True)
            if whole and (stream or time.time() > deadline - 10):
                break
            time.sleep(0.01)
        events["killed_busy"], events["killed_stream"] = whole, stream
        victim.p.kill()
        events["killed"] = time.time()
        phase("replica %d killed" % victim.port)
        # later, SIGTERM another while it streams: it must finish what it has
        time.sleep(0.5)
        deadline = time.time() + 20
        while time.time() < deadline and not busy_with(drained.port, True):
            time.sleep(0.02)
        events["drained_busy"] = busy_with(drained.port, True)
        drained.p.send_signal(signal.SIGTERM)
        events["drained"] = time.time()
        phase("replica %d drained" % drained.port)

    chaos_thread = threading.Thread(target=chaos)
    chaos_thread.start()
    t_load = time.time()
    with concurrent.futures.ThreadPoolExecutor(CONCURRENCY) as pool:
        for res in pool.map(lambda i: one_request(client, i), range(N_REQ)):
            results.append(res)
    chaos_thread.join()
    t_load = time.time() - t_load
    try:
        drained_rc = drained.p.wait(30)
    except subprocess.TimeoutExpired:
        drained_rc = None

    phase("load done, drained replica exited")
    # ---------------------------------------------------------------- what happened
    log = nginx_log(tmp)
    va, da = "127.0.0.1:%d" % victim.port, "127.0.0.1:%d" % drained.port
    check(events.get("killed_busy"), "the killed replica was generating a whole answer when killed")
    check(events.get("drained_busy"), "the drained replica was streaming when it got SIGTERM")
    whole = [r for r in results if not r["stream"]]
    streams = [r for r in results if r["stream"]]
    for r in whole:
        check(r["error"] is None and r["finish"] in ("stop", "length") and r["usage"] >= 1,
              "whole request %s: answered (%s)" % (r["rid"], r["error"] or r["finish"]))
    retried = [rid for rid, (addrs, st, code) in log.items()
               if re.fullmatch(r"r\d+", rid) and int(rid[1:]) % 2 == 0 and len(addrs) >= 2 and addrs[0] == va
               and code == 200]
    check(len(retried) >= 1, "a whole request cut on the killed replica was retried by nginx: %s" %
          {k: v for k, v in log.items() if va in v[0]})
    for r in streams:
        ups = log.get(r["rid"], ([], [], 0))[0]
        if r["error"] is None:
            check(r["finish"] in ("stop", "length"), "stream %s completed with a finish_reason (%s)" % (r["rid"], r["finish"]))
        else:
            check(ups == [va], "stream %s failed (%s) only because its replica %s was killed (it was on %s)" %
                  (r["rid"], r["error"], va, ups))
        if ups == [da]:
            check(r["error"] is None, "stream %s on the drained replica completed" % r["rid"])
    cut = [r["rid"] for r in streams if r["error"]]
    for r in streams:
        if r["error"]:
            print("stream %s on the killed replica: %s" % (r["rid"], r["error"]))
    if events.get("killed_stream"):
        check(len(cut) >= 1, "the stream in flight on the killed replica ended with an error")
    check(drained_rc == 0, "the drained replica exited 0 after finishing its requests (rc %s)" % drained_rc)
    dlog = drained.access()
    after = [o for o in dlog if o["path"].endswith("completions") and o["status"] == 200]
    check(all(o["finish_reason"] in ("stop", "length") for o in after),
          "the drained replica's own log: every completion it took ended by stop or length: %s" %
          [o for o in after if o["finish_reason"] not in ("stop", "length")])
    sa = "127.0.0.1:%d" % survivor.port
    on_survivor = sorted(rid for rid, (addrs, st, code) in log.items() if addrs[-1] == sa and st[-1] == "200")
    check(len(on_survivor) >= 1, "the surviving replica served requests")
    print("load: %d requests (%d whole, %d streamed) in %.1f s; %d whole retried after the kill; "
          "%d streams cut by it; drained replica rc %s" %
          (N_REQ, len(whole), len(streams), t_load, len(retried), len(cut), drained_rc))

    ngx.send_signal(signal.SIGQUIT)  # nginx's graceful stop
    try:
        ngx.wait(10)
    except subprocess.TimeoutExpired:
        ngx.kill()
    survivor.p.send_signal(signal.SIGTERM)
    try:
        check(survivor.p.wait(30) == 0, "the surviving replica stops with exit 0")
    except subprocess.TimeoutExpired:
        check(False, "the surviving replica stops on SIGTERM")
    # its own JSON access log: one completion line for each request nginx says it answered
    own = [o for o in survivor.access() if o["path"].endswith("completions") and o["status"] == 200]
    check(len(own) == len(on_survivor),
          "the survivor logged %d completions answered 200, nginx says it answered %d" % (len(own), len(on_survivor)))
    if FAILS:
        print("%d check(s) failed; nginx error log:\n%s" % (len(FAILS), open(os.path.join(tmp, "error.log")).read()[-3000:]))
        return 1
    shutil.rmtree(tmp, ignore_errors=True)
    print("deploy: all checks passed (%.1f s)" % (time.time() - t_begin))
    return 0


if __name__ == "__main__":
    rc = 1
    try:
        rc = main()
    finally:
        for p in PROCS:
            if p.poll() is None:
                p.kill()
    sys.exit(rc)
