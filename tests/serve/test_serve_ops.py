#!/usr/bin/env python3
"""vkformer serve's operational surface: readiness while the model loads, /health, /metrics,
/slots, --timeout and the JSON access log.

Usage: test_serve_ops.py VKFORMER MODEL HOLD_OPEN_SO   (run by VKF_PYTHON: prometheus_client)

- Loading: the server runs with tests/serve/hold_open.c preloaded, which holds its open() of the
  weights until the test creates a gate file. Meanwhile /health is 503 {"status": "loading
  model"} (llama-server's body), a completion 503 "Loading model", a second server on the same
  port fails at once, and SIGTERM during a load exits 0 at once.
- /metrics is parsed by prometheus_client's own text-format parser; its counters are compared
  with what the test sent and what the responses' usage said (prompt tokens evaluated =
  prompt_tokens - cached_tokens, generated = completion_tokens), the KV-cache tokens with what a
  slot holds after one request (its prompt and every generated token fed back), the throughput
  gauges with llama-server's reset at each scrape.
- /slots against the request: its sampling fields, prompt, counts and text.
- Load: two long streams on two slots: is_processing, slots_processing, requests_processing,
  "no slot available" (503 with fail_on_no_slot); their disconnects are counted as cancelled.
- --timeout 1: a client that sends half a request is cut after about a second; a request that
  generates for longer than that is not.
- --log-format json: every stderr line is a JSON object; each request's line has its method,
  path, status, duration and tokens, equal to what the client saw.
"""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pyhelpers import FAILS, SERVERS, check, kill_servers  # noqa: E402


class Server:
    """vkformer serve with stderr collected line by line."""

    def __init__(self, exe, model, extra, env=None, port=0):
        self.p = subprocess.Popen([exe, "serve", "-m", model, "--port", str(port)] + extra,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                  env=env)
        SERVERS.append(self.p)
        self.lines = []
        self.cv = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        self.key = extra[extra.index("--api-key") + 1] if "--api-key" in extra else None
        self.port = None

    def _read(self):
        for line in self.p.stderr:
            with self.cv:
                self.lines.append(line.rstrip("\n"))
                self.cv.notify_all()
        with self.cv:
            self.lines.append(None)  # end of stderr
            self.cv.notify_all()

    def wait_line(self, pattern, timeout=120):
        """The first stderr line matching pattern (a match object), or None at exit/timeout."""
        deadline = time.time() + timeout
        with self.cv:
            i = 0
            while True:
                while i < len(self.lines):
                    if self.lines[i] is None:
                        return None
                    m = re.search(pattern, self.lines[i])
                    if m:
                        return m
                    i += 1
                left = deadline - time.time()
                if left <= 0:
                    return None
                self.cv.wait(left)

    def request(self, method, path, body=None, key=True):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        h = {"Content-Type": "application/json"}
        if key and self.key:
            h["Authorization"] = "Bearer " + self.key
        c.request(method, path, body=json.dumps(body) if body is not None else None, headers=h)
        r = c.getresponse()
        text = r.read().decode()
        headers = dict(r.getheaders())
        c.close()
        try:
            js = json.loads(text)
        except ValueError:
            js = None
        return r.status, js, text, headers

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(30)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()


def metrics(srv):
    """{sample name + labels: value}, {family name: type}, and the response headers"""
    st, _, text, headers = srv.request("GET", "/metrics")
    check(st == 200, "/metrics: 200 (got %d: %s)" % (st, text[:200]))
    values, types = {}, {}
    for fam in text_string_to_metric_families(text):
        types[fam.name] = fam.type
        for s in fam.samples:
            key = s.name + ("{%s}" % ",".join("%s=%s" % kv for kv in sorted(s.labels.items()))
                            if s.labels else "")
            values[key] = s.value
    return values, types, headers


def open_stream(port, prompt, n, seed):
    """A streamed completion left open: the connection and its response (first event read)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request("POST", "/v1/completions",
              body=json.dumps({"prompt": prompt, "max_tokens": n, "seed": seed, "stream": True}),
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    r.readline()  # the first event: the slot is decoding
    return c, r


def check_timings(resp, usage, wall, what):
    """llama-server's timings object: its counts equal the usage (the prompt past its cached
    prefix; the tokens generated), its rates follow from counts and times by llama-server's
    formulas, its times fit in what the client waited."""
    t = resp.get("timings") if resp else None
    keys = {"prompt_n", "prompt_ms", "prompt_per_token_ms", "prompt_per_second", "predicted_n",
            "predicted_ms", "predicted_per_token_ms", "predicted_per_second"}
    if not (t and usage and set(t) >= keys):
        check(False, "%s: no timings object with %s: %s" % (what, sorted(keys), resp))
        return
    pn = usage["prompt_tokens"] - usage.get("prompt_tokens_details", {}).get("cached_tokens", 0)
    check(t["prompt_n"] == pn and t["predicted_n"] == usage["completion_tokens"],
          "%s: timings counts = usage (%d, %d): %s" % (what, pn, usage["completion_tokens"], t))
    check(0 < t["prompt_ms"] and 0 <= t["predicted_ms"]
          and t["prompt_ms"] + t["predicted_ms"] <= wall * 1000 + 1,
          "%s: timings within the client's %.1f ms: %s" % (what, wall * 1000, t))
    rel = lambda a, b: abs(a - b) <= 1e-9 * max(1.0, abs(b))  # the same doubles, printed by cJSON (%1.15g, then %1.17g if it does not read back)
    check(rel(t["prompt_per_token_ms"], t["prompt_ms"] / t["prompt_n"])
          and rel(t["prompt_per_second"], 1e3 / t["prompt_ms"] * t["prompt_n"]),
          "%s: prompt rates: %s" % (what, t))
    if t["predicted_ms"] > 0:
        check(rel(t["predicted_per_token_ms"], t["predicted_ms"] / t["predicted_n"])
              and rel(t["predicted_per_second"], 1e3 / t["predicted_ms"] * t["predicted_n"]),
              "%s: predicted rates: %s" % (what, t))


def main():
    exe, model, shim = sys.argv[1], sys.argv[2], sys.argv[3]
    t_begin = time.time()
    tmp = tempfile.mkdtemp(prefix="vkf-ops-")
    gate = os.path.join(tmp, "gate")
    env = dict(os.environ)
    env["LD_PRELOAD"] = (env["LD_PRELOAD"] + ":" if env.get("LD_PRELOAD") else "") + shim
    env["VKT_HOLD_PATH"] = "/model.safetensors"
    env["VKT_HOLD_GATE"] = gate

    # ---------------------------------------------------------------- while the model loads
    srv = Server(exe, model, ["-np", "2", "--metrics", "--log-format", "json", "--timeout", "1"],
                 env=env)
    m = srv.wait_line(r"http://127\.0\.0\.1:(\d+)/health answers 503")
    if not m:
        raise SystemExit("no loading notice: %s" % srv.lines)
    srv.port = int(m.group(1))
    st, js, text, _ = srv.request("GET", "/health")
    check(st == 503 and js == {"status": "loading model"},
          "/health while loading: 503 {'status': 'loading model'} (got %d %s)" % (st, text))
    st, js, _, _ = srv.request("POST", "/v1/completions", {"prompt": "In", "max_tokens": 1})
    check(st == 503 and js["error"]["message"] == "Loading model",
          "a completion while loading: 503 Loading model (got %d %s)" % (st, js))
    st, _, _, _ = srv.request("GET", "/metrics")
    check(st == 503, "/metrics while loading: 503 (got %d)" % st)
    check(srv.wait_line(r"listening on", timeout=0.5) is None, "not ready while the load is held")
    # the port is bound before the model loads: a second server on it fails at once
    t0 = time.time()
    second = subprocess.run([exe, "serve", "-m", model, "--port", str(srv.port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=60)
    check(second.returncode == 1 and "cannot listen" in second.stderr and "loading" not in second.stderr,
          "a second server on a bound port: exit 1 before loading (%d: %s)" % (second.returncode, second.stderr))
    check(time.time() - t0 < 10, "the port in use is reported at once (%.1f s)" % (time.time() - t0))
    # SIGTERM while loading: nothing is in flight, so it exits 0 at once
    held = Server(exe, model, [], env=env)
    if held.wait_line(r"answers 503 until it is ready"):
        held.p.send_signal(signal.SIGTERM)
        try:
            rc = held.p.wait(10)
        except subprocess.TimeoutExpired:
            rc = None
        check(rc == 0, "SIGTERM while loading: exit 0 within 10 s (got %s)" % rc)
        check(held.wait_line(r"SIGTERM while loading the model: stopping", 5) is not None,
              "SIGTERM while loading: says so")
    else:
        check(False, "second held server did not start: %s" % held.lines)
    check(not any(l and "listening on" in l for l in srv.lines),
          "still loading until the gate opens (the preloaded hold_open works)")
    open(gate, "w").close()  # release the load
    check(srv.wait_line(r"listening on http://127\.0\.0\.1:%d" % srv.port) is not None,
          "ready after the load: %s" % srv.lines[-3:])

    # ---------------------------------------------------------------- ready and idle
    st, js, text, _ = srv.request("GET", "/health")
    check(st == 200 and js["status"] == "ok" and js["slots_idle"] == 2 and js["slots_processing"] == 0,
          "/health ready: 200 ok, 2 idle (got %d %s)" % (st, text))
    st, slots, text, _ = srv.request("GET", "/slots")
    check(st == 200 and [s["id"] for s in slots] == [0, 1] and not any(s["is_processing"] for s in slots)
          and all("id_task" not in s for s in slots), "/slots before any request: %s" % text)
    n_ctx = slots[0]["n_ctx"]

    # one request on a fresh server: what the metrics and its slot say
    req1 = {"prompt": "And God said", "max_tokens": 8, "seed": 5, "temperature": 0.7, "top_k": 30,
            "stop": ["zzz"]}
    t0 = time.time()
    st, r1, text, _ = srv.request("POST", "/v1/completions", req1)
    wall1 = time.time() - t0
    check(st == 200, "request 1: %d %s" % (st, text))
    u1 = r1["usage"]
    fin1 = r1["choices"][0]["finish_reason"]
    check_timings(r1, u1, wall1, "request 1")
    vals, types, headers = metrics(srv)
    # a slot's cache holds the prompt and every token fed back: all generated ones but the last
    # when max_tokens ended it (the last is sampled, never fed), all when a stop did
    kv = u1["prompt_tokens"] + u1["completion_tokens"] - (1 if fin1 == "length" else 0)
    check(vals.get("llamacpp:kv_cache_tokens") == kv,
          "kv_cache_tokens %s = prompt + generated fed back %d" % (vals.get("llamacpp:kv_cache_tokens"), kv))
    check(abs(vals.get("llamacpp:kv_cache_usage_ratio", -1) - kv / (2 * n_ctx)) < 1e-9,
          "kv_cache_usage_ratio = %d / (2 slots x %d)" % (kv, n_ctx))
    check(vals.get("llamacpp:prompt_tokens_seconds", 0) > 0 and vals.get("llamacpp:predicted_tokens_seconds", 0) > 0,
          "throughput gauges after a request: %s" % vals)
    check(headers.get("Content-Type", "").startswith("text/plain; version=0.0.4"),
          "/metrics Content-Type: %s" % headers.get("Content-Type"))
    check(abs(float(headers.get("Process-Start-Time-Unix", 0)) - vals.get("process_start_time_seconds", 0)) < 1
          and t_begin - 2 <= vals.get("process_start_time_seconds", 0) <= time.time(),
          "process start time: %s" % vals.get("process_start_time_seconds"))
    vals, _, _ = metrics(srv)  # llama-server resets the throughput bucket at every scrape
    check(vals["llamacpp:prompt_tokens_seconds"] == 0 and vals["llamacpp:predicted_tokens_seconds"] == 0,
          "throughput gauges 0 on a scrape with no work since the previous one")

    st, slots, text, _ = srv.request("GET", "/slots")
    held_slot = [s for s in slots if "id_task" in s]
    check(len(held_slot) == 1, "/slots: one slot held request 1: %s" % text)
    if held_slot:
        s = held_slot[0]
        p = s["params"]
        check(not s["is_processing"] and p["seed"] == 5 and abs(p["temperature"] - 0.7) < 1e-6
              and p["top_k"] == 30 and p["stop"] == ["zzz"] and p["n_predict"] == 8 and p["stream"] is False,
              "/slots params = request 1's: %s" % p)
        check(s["n_prompt_tokens"] == u1["prompt_tokens"] and s["n_prompt_tokens_cache"] == 0
              and s["n_prompt_tokens_processed"] == u1["prompt_tokens"],
              "/slots prompt counts = usage: %s %s" % (s, u1))
        check(s["next_token"][0]["n_decoded"] == u1["completion_tokens"]
              and s["next_token"][0]["has_next_token"] is False
              and s["next_token"][0]["n_remain"] == 8 - u1["completion_tokens"],
              "/slots next_token: %s" % s["next_token"])
        check(s["prompt"].endswith("And God said") and s["generated"] == r1["choices"][0]["text"],
              "/slots prompt and generated text: %r %r" % (s["prompt"], s["generated"]))

    # two more: the same prompt again (from the cache), and a stream
    st, r2, _, _ = srv.request("POST", "/v1/completions", dict(req1, seed=6))
    check(st == 200 and r2["usage"]["prompt_tokens_details"]["cached_tokens"] > 0,
          "request 2 reuses request 1's prompt: %s" % r2["usage"])
    c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=120)
    c.request("POST", "/v1/completions", body=json.dumps(
        {"prompt": "In the beginning", "max_tokens": 6, "seed": 7, "stream": True}),
        headers={"Content-Type": "application/json"})
    u3, fin3 = None, None
    for line in c.getresponse().read().decode().split("\n"):
        if line.startswith("data: {"):
            ev = json.loads(line[6:])
            u3 = ev.get("usage") or u3
            fin3 = ev["choices"][0]["finish_reason"] or fin3
    c.close()
    check(u3 is not None and fin3 is not None, "the stream's usage and finish reason")
    usages = [u1, r2["usage"], u3 or u1]
    finishes = [fin1, r2["choices"][0]["finish_reason"], fin3]
    vals, types, _ = metrics(srv)
    evaluated = sum(u["prompt_tokens"] - u["prompt_tokens_details"]["cached_tokens"] for u in usages)
    generated = sum(u["completion_tokens"] for u in usages)
    check(vals.get("llamacpp:prompt_tokens_total") == evaluated,
          "prompt_tokens_total %s = sum(prompt_tokens - cached_tokens) %d" % (vals.get("llamacpp:prompt_tokens_total"), evaluated))
    check(vals.get("llamacpp:tokens_predicted_total") == generated,
          "tokens_predicted_total %s = sum(completion_tokens) %d" % (vals.get("llamacpp:tokens_predicted_total"), generated))
    # one request at a time: a batched step per token fed back (the first token comes from the
    # prompt's evaluation; max_tokens leaves the last one unfed, an end-of-generation token is
    # drawn by a step of its own), with one busy slot each
    steps = sum(u["completion_tokens"] - (1 if f == "length" else 0) for u, f in zip(usages, finishes))
    check(vals.get("llamacpp:n_decode_total") == steps and vals.get("llamacpp:n_busy_slots_per_decode") == 1,
          "decode steps %s = tokens fed back %d, 1 busy slot per step (%s)" %
          (vals.get("llamacpp:n_decode_total"), steps, vals.get("llamacpp:n_busy_slots_per_decode")))
    check(vals.get("vkformer:requests_total{code=200,endpoint=/v1/completions}") == 3
          and vals.get("vkformer:requests_total{code=503,endpoint=/v1/completions}") == 1
          and vals.get("vkformer:requests_total{code=503,endpoint=/health}") == 1,
          "requests_total by endpoint and code: %s" % {k: v for k, v in vals.items() if "requests_total" in k})
    check(sum(vals.get("vkformer:requests_finished_total{reason=%s}" % r, 0) for r in ("stop", "length")) == 3,
          "requests_finished_total: 3 ended by stop or length")
    want_types = {"llamacpp:prompt_tokens": "counter", "llamacpp:prompt_seconds": "counter",
                  "llamacpp:tokens_predicted": "counter", "llamacpp:tokens_predicted_seconds": "counter",
                  "llamacpp:n_decode": "counter", "llamacpp:prompt_tokens_seconds": "gauge",
                  "llamacpp:predicted_tokens_seconds": "gauge", "llamacpp:kv_cache_usage_ratio": "gauge",
                  "llamacpp:kv_cache_tokens": "gauge", "llamacpp:requests_processing": "gauge",
                  "llamacpp:requests_deferred": "gauge", "vkformer:requests": "counter"}
    for name, typ in want_types.items():
        check(types.get(name) == typ, "metric family %s is a %s (got %s)" % (name, typ, types.get(name)))

    # ---------------------------------------------------------------- load: both slots busy
    s1 = open_stream(srv.port, "Blessed are the", 200, 11)
    st, js, _, _ = srv.request("GET", "/health")
    check(st == 200 and js["slots_processing"] == 1 and js["slots_idle"] == 1 and js["status"] == "ok",
          "/health with one stream: %s" % js)
    vals, _, _ = metrics(srv)
    check(vals.get("llamacpp:requests_processing") == 1, "requests_processing 1 with one stream")
    s2 = open_stream(srv.port, "Let there be light", 200, 12)
    st, js, _, _ = srv.request("GET", "/health")
    check(st == 200 and js["status"] == "no slot available" and js["slots_idle"] == 0,
          "/health with every slot busy: 200 no slot available (got %d %s)" % (st, js))
    st, js, _, _ = srv.request("GET", "/health?fail_on_no_slot=1")
    check(st == 503 and js["status"] == "no slot available", "/health?fail_on_no_slot: 503 (got %d)" % st)
    st, js, _, _ = srv.request("GET", "/slots?fail_on_no_slot=1")
    check(st == 503 and js["error"]["message"] == "no slot available", "/slots?fail_on_no_slot: 503")
    st, slots, _, _ = srv.request("GET", "/slots")
    check(st == 200 and all(s["is_processing"] and s["next_token"][0]["has_next_token"] for s in slots),
          "/slots: both processing")
    for conn, resp in (s1, s2):  # the clients leave
        conn.sock.shutdown(socket.SHUT_RDWR)
        conn.close()
    deadline = time.time() + 30
    while time.time() < deadline:
        st, js, _, _ = srv.request("GET", "/health")
        if js["slots_processing"] == 0:
            break
        time.sleep(0.05)
    vals, _, _ = metrics(srv)
    check(vals.get("vkformer:requests_finished_total{reason=cancelled}") == 2
          and vals.get("llamacpp:requests_processing") == 0,
          "two streams left: cancelled 2, none processing (%s)" %
          vals.get("vkformer:requests_finished_total{reason=cancelled}"))

    # ---------------------------------------------------------------- --timeout 1
    sock = socket.create_connection(("127.0.0.1", srv.port))
    sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n")  # and nothing more
    sock.settimeout(30)
    t0 = time.time()
    try:
        got = sock.recv(4096)
    except OSError:
        got = b""
    idle = time.time() - t0
    sock.close()
    # libmicrohttpd checks the timeout on its own clock: closed after 1 s, well before 10
    check(got == b"" and 0.5 <= idle < 10, "a half request is closed after --timeout 1 (%.2f s, %r)" % (idle, got[:80]))
    t0 = time.time()
    st, r4, _, _ = srv.request("POST", "/v1/completions",
                               {"prompt": "And", "max_tokens": 240, "seed": 9, "temperature": 0.8})
    busy = time.time() - t0
    check(st == 200, "a request generating for %.1f s under --timeout 1: %d" % (busy, st))

    # a list of prompts (one choice each), whole and streamed: each one access line, its tokens
    # summed as in the usage; counted in /metrics by the time the client has the answer (the
    # stream is counted at its end of stream, before its last chunk is sent)
    ok_key = "vkformer:requests_total{code=200,endpoint=/v1/completions}"
    before = metrics(srv)[0].get(ok_key, 0)
    reqm = {"prompt": ["In the beginning", "And God said"], "max_tokens": 3, "seed": 11}
    st, rm, text, _ = srv.request("POST", "/v1/completions", reqm)
    check(st == 200 and len(rm.get("choices", [])) == 2, "two prompts: %d %s" % (st, text[:200]))
    c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=120)
    c.request("POST", "/v1/completions", body=json.dumps(dict(reqm, stream=True)),
              headers={"Content-Type": "application/json"})
    ums, ms_id = None, None
    for line in c.getresponse().read().decode().split("\n"):
        if line.startswith("data: {"):
            ev = json.loads(line[6:])
            ums = ev.get("usage") or ums
            ms_id = ev.get("id") or ms_id
    c.close()
    after = metrics(srv)[0].get(ok_key, 0)
    check(after - before == 2, "both two-prompt requests counted once each in /metrics (%s -> %s)" % (before, after))

    # every endpoint, under every spelling, counted under its own label: the endpoint's path as
    # the OpenAI and llama-server documentation spell it (aliases and /v1/models/{id} under the
    # path they stand for), "other" only for a path that is no endpoint. On this text server
    # /v1/embeddings answers 501, counted under /v1/embeddings all the same.
    st, js, _, _ = srv.request("GET", "/v1/models")
    model_id = js["data"][0]["id"] if st == 200 else "kjv-gpt"
    one_token = {"prompt": "In", "max_tokens": 1, "seed": 1}
    chat_one = {"messages": [{"role": "user", "content": "In"}], "max_tokens": 1, "seed": 1}
    calls = [("GET", "/health", None, "/health"), ("GET", "/v1/health", None, "/health"),
             ("GET", "/slots", None, "/slots"),
             ("GET", "/v1/models", None, "/v1/models"), ("GET", "/models", None, "/v1/models"),
             ("GET", "/v1/models/" + model_id, None, "/v1/models"),
             ("GET", "/models/" + model_id, None, "/v1/models"),
             ("POST", "/v1/completions", one_token, "/v1/completions"),
             ("POST", "/completions", one_token, "/v1/completions"),
             ("POST", "/v1/chat/completions", chat_one, "/v1/chat/completions"),
             ("POST", "/chat/completions", chat_one, "/v1/chat/completions"),
             ("POST", "/tokenize", {"content": "In the beginning"}, "/tokenize"),
             ("POST", "/detokenize", {"tokens": [1, 2]}, "/detokenize"),
             ("POST", "/v1/embeddings", {"input": "In"}, "/v1/embeddings"),
             ("POST", "/embeddings", {"input": "In"}, "/v1/embeddings"),
             ("GET", "/v1/completions", None, "/v1/completions"),  # 405
             ("GET", "/no/such/endpoint", None, "other")]
    base = metrics(srv)[0]
    want = {("/metrics", 200): 1}  # the scrape just above, counted once answered
    for method, path, body, label in calls:
        st, _, text, _ = srv.request(method, path, body)
        check(st != 500, "%s %s: %d %s" % (method, path, st, text[:200]))
        want[(label, st)] = want.get((label, st), 0) + 1
    got = {}
    for k, v in metrics(srv)[0].items():
        m = re.match(r"vkformer:requests_total\{code=(\d+),endpoint=(.*)\}$", k)
        if m and v != base.get(k, 0):
            got[(m.group(2), int(m.group(1)))] = v - base.get(k, 0)
    check(got == want, "requests_total by endpoint: each request under its own endpoint's label\n"
          "  expected %s\n  got      %s" % (sorted(want.items()), sorted(got.items())))

    # ---------------------------------------------------------------- timings, memory, errors
    # a chat completion, whole and streamed (the timings ride on the last chunk, as llama-server's)
    chat = {"messages": [{"role": "user", "content": "And God said"}], "max_tokens": 6, "seed": 3}
    t0 = time.time()
    st, rc, text, _ = srv.request("POST", "/v1/chat/completions", chat)
    check(st == 200, "chat completion: %d %s" % (st, text))
    if st == 200:
        check_timings(rc, rc["usage"], time.time() - t0, "chat completion")
    t0 = time.time()
    st, _, text, _ = srv.request("POST", "/v1/chat/completions", dict(chat, stream=True))
    events = [json.loads(l[6:]) for l in text.splitlines() if l.startswith("data: {")]
    check(st == 200 and events and all("timings" not in e for e in events[:-1]),
          "streamed chat: timings on the last chunk only: %s" % text[-400:])
    if st == 200 and events:
        check_timings(events[-1], events[-1].get("usage"), time.time() - t0, "streamed chat")
    # the memory line: the slots' KV cache in closed form: K and V, 4 layers of kjv-gpt, 192
    # floats a token each, 2 slots of n_ctx tokens, f16 (the Vulkan default; 4 bytes with --cpu)
    mem = [l for l in srv.lines if l and "memory: weights" in l]
    kv_mib = 2 * 4 * 192 * 2 * 256 * 2 / 1048576.0
    check(len(mem) == 1 and re.search(r"KV cache %.1f MiB \(2 slots x 256 tokens\)" % kv_mib,
                                      mem[0]),
          "the start-up memory line, KV cache %.1f MiB: %s" % (kv_mib, mem))
    # an error: its access line carries the reason the client got
    st, bad, _, _ = srv.request("POST", "/v1/completions", {"prompt": "In", "max_tokens": 100000000})
    bad_msg = bad["error"]["message"] if bad and "error" in bad else None
    check(st == 400 and bad_msg and "max_tokens" in bad_msg, "max_tokens out of range: 400 (%d %s)"
          % (st, bad))
    # ---------------------------------------------------------------- the access log
    t0 = time.time()
    srv.stop()
    check(srv.p.returncode == 0, "SIGTERM: exit 0")
    # nothing in flight: it stops in its drain's 0.2 s, not seconds (a held keep-alive connection
    # and the test's own waits stay far below 2 s)
    check(time.time() - t0 < 2, "SIGTERM to exit: %.2f s" % (time.time() - t0))
    srv.wait_line(r"stopped", 5)
    logs = []
    for line in srv.lines:
        if line is None:
            continue
        try:
            logs.append(json.loads(line))
        except ValueError:
            check(False, "--log-format json: a line that is not JSON: %r" % line)
    acc = [o for o in logs if "path" in o]
    line1 = [o for o in acc if o.get("id") == r1["id"]]
    check(len(line1) == 1, "request 1 has one access line")
    if line1:
        o = line1[0]
        check(o["method"] == "POST" and o["path"] == "/v1/completions" and o["status"] == 200
              and o["prompt_tokens"] == u1["prompt_tokens"] and o["completion_tokens"] == u1["completion_tokens"]
              and o["cached_tokens"] == 0 and o["finish_reason"] == fin1 and o["stream"] is False
              and re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$", o["time"]),
              "request 1's access line: %s" % o)
        check(0 < o["duration_ms"] <= wall1 * 1000 + 1, "its duration %s ms <= the client's %.1f ms" % (o["duration_ms"], wall1 * 1000))
    for rid, u, streamed in ((rm.get("id"), rm.get("usage"), False), (ms_id, ums, True)):
        lines = [o for o in acc if o.get("id") == rid]
        check(len(lines) == 1 and u is not None and lines[0]["status"] == 200
              and lines[0]["stream"] is streamed
              and lines[0]["prompt_tokens"] == u["prompt_tokens"]
              and lines[0]["completion_tokens"] == u["completion_tokens"]
              and lines[0]["finish_reason"] != "cancelled",
              "two prompts (stream %s): one access line, tokens summed as the usage %s: %s" % (streamed, u, lines))
    cancelled = [o for o in acc if o.get("finish_reason") == "cancelled"]
    check(len(cancelled) == 2 and all(o["stream"] and o["status"] == 200 for o in cancelled),
          "the two streams that were left: access lines with finish_reason cancelled: %s" % cancelled)
    check(any(o["path"] == "/health" and o["status"] == 503 for o in acc), "the /health 503 while loading is logged")
    # a 4xx / 5xx line carries the reason the client got
    check(any(o["path"] == "/v1/completions" and o["status"] == 503 and o.get("error") == "Loading model"
              for o in acc), "the completion refused while loading: its reason logged: %s"
          % [o for o in acc if o["status"] == 503])
    check(any(o["status"] == 400 and o.get("error") == bad_msg for o in acc),
          "the 400's access line carries its message %r: %s" % (bad_msg, [o for o in acc if o["status"] == 400]))
    check(all("error" not in o for o in acc if o["status"] < 400), "no error on a success line")
    check(all(set(o) >= {"time", "method", "path", "status", "duration_ms", "prompt_tokens", "completion_tokens"}
              for o in acc), "every access line has time, method, path, status, duration, tokens")
    check(any(o.get("msg", "").startswith("SIGTERM") for o in logs), "notices are JSON too")

    # ---------------------------------------------------------------- endpoints turned off, API key
    off = Server(exe, model, ["--no-slots", "--api-key", "k3y"])
    m = off.wait_line(r"listening on http://[^:]+:(\d+)")
    if m:
        off.port = int(m.group(1))
        st, js, _, _ = off.request("GET", "/metrics", key=False)
        check(st == 401, "/metrics needs the API key (got %d)" % st)
        st, js, _, _ = off.request("GET", "/metrics")
        check(st == 501 and "--metrics" in js["error"]["message"] and js["error"]["type"] == "not_supported_error",
              "/metrics without --metrics: 501 naming the flag (got %d %s)" % (st, js))
        st, js, _, _ = off.request("GET", "/slots")
        check(st == 501, "/slots with --no-slots: 501 (got %d)" % st)
        st, js, _, _ = off.request("GET", "/health?include_slots", key=False)
        check(st == 200 and "slots" not in js, "/health is public; no slots with --no-slots")
        st, js, _, _ = off.request("POST", "/metrics")
        check(st in (405, 501), "POST /metrics refused (%d)" % st)
    else:
        check(False, "the third server did not start: %s" % off.lines)
    off.stop()

    # ---------------------------------------------------------------- KV cache types
    # -ctk q8_0 -ctv q4_0 on the CPU backend: /v1/models and /slots count the cache in its types.
    # kjv-gpt: 4 layers, 6 heads of 32 (config.json) -> 6 blocks of 32 a row, 256 rows a slot;
    # ggml's blocks of 32 take 34 bytes (q8_0) and 18 (q4_0)
    kv = Server(exe, model, ["--cpu", "-np", "2", "-ctk", "q8_0", "-ctv", "q4_0"])
    m = kv.wait_line(r"listening on http://[^:]+:(\d+)")
    if m:
        kv.port = int(m.group(1))
        want = 4 * 256 * 6 * (34 + 18)
        st, js, text, _ = kv.request("GET", "/v1/models")
        meta = js["data"][0]["meta"] if st == 200 else {}
        check(meta.get("cache_type_k") == "Q8_0" and meta.get("cache_type_v") == "Q4_0"
              and meta.get("kv_bytes_per_slot") == want,
              "/v1/models meta with -ctk q8_0 -ctv q4_0: %d bytes a slot expected: %s" % (want, text))
        st, slots, text, _ = kv.request("GET", "/slots")
        check(st == 200 and len(slots) == 2
              and all(s.get("kv_cache_bytes") == want and s.get("cache_type_k") == "Q8_0"
                      and s.get("cache_type_v") == "Q4_0" for s in slots),
              "/slots with -ctk q8_0 -ctv q4_0: %d bytes a slot expected: %s" % (want, text))
        st, js, _, _ = kv.request("POST", "/v1/completions", {"prompt": "In the", "max_tokens": 4})
        check(st == 200 and js["usage"]["completion_tokens"] >= 1,
              "a completion through a q8_0 / q4_0 cache: %d %s" % (st, js))
    else:
        check(False, "the server with -ctk q8_0 -ctv q4_0 did not start: %s" % kv.lines)
    kv.stop()
    # a pair the device cannot use (Vulkan reads K and V in one type): the load fails naming it
    bad = subprocess.run([exe, "serve", "-m", model, "--port", "0", "-ctk", "q8_0", "-ctv", "q4_0"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=120)
    check(bad.returncode != 0 and "K cache type Q8_0 and V cache type Q4_0" in bad.stderr,
          "serve -ctk q8_0 -ctv q4_0 on the Vulkan device: refused by name (%d: %s)"
          % (bad.returncode, bad.stderr))

    if FAILS:
        print("%d check(s) failed" % len(FAILS))
        return 1
    print("serve ops: all checks passed (%.1f s)" % (time.time() - t_begin))
    return 0


if __name__ == "__main__":
    try:
        rc = main()
    finally:
        kill_servers()
    sys.exit(rc)
