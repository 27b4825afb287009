#!/usr/bin/env python3
"""vkformer serve, driven by real clients: Python's standard library and curl.

Usage: test_serve.py VKFORMER MODEL [--cpu]

Starts the server on a free loopback port (--port 0, the address is read from its stderr) and
checks: health and models; completions and chat, whole and streamed (server-sent events ending
with [DONE], usage in the last chunk, the streamed text equal to the whole one); 8 concurrent
clients over 4 slots, each result identical to the same request made alone with the same seed;
stop strings and logprobs against the server's own unconstrained answer; a client that
disconnects frees its slot; 400/401/404/405/413/503 as JSON errors; SIGTERM drains the request
in flight and exits 0. Standard library only.
"""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyhelpers  # noqa: E402
from pyhelpers import FAILS, check, kill_servers  # noqa: E402


class Server(pyhelpers.Server):
    def request(self, method, path, body=None, headers=None, key=True, raw=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        h = {"Content-Type": "application/json"}
        if key and self.key:
            h["Authorization"] = "Bearer " + self.key
        h.update(headers or {})
        data = raw if raw is not None else (json.dumps(body) if body is not None else None)
        c.request(method, path, body=data, headers=h)
        r = c.getresponse()
        text = r.read().decode("utf-8", "replace")
        c.close()
        try:
            js = json.loads(text)
        except ValueError:
            js = None
        return r.status, js, text

    def stream(self, path, body):
        """returns (status, list of parsed chunks, saw [DONE])"""
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        h = {"Content-Type": "application/json"}
        if self.key:
            h["Authorization"] = "Bearer " + self.key
        c.request("POST", path, body=json.dumps(dict(body, stream=True)), headers=h)
        r = c.getresponse()
        chunks, done = [], False
        if r.status == 200:
            check(r.getheader("Content-Type", "").startswith("text/event-stream"), "SSE content type")
            for line in r:
                line = line.decode("utf-8").rstrip("\n")
                if not line.startswith("data: "):
                    continue
                if line == "data: [DONE]":
                    done = True
                    break
                chunks.append(json.loads(line[6:]))
        c.close()
        return r.status, chunks, done


def text_of(js, chat):
    ch = js["choices"][0]
    return ch["message"]["content"] if chat else ch["text"]


def stream_text(chunks, chat):
    out = ""
    for c in chunks:
        ch = c["choices"][0]
        out += (ch["delta"].get("content") or "") if chat else ch.get("text", "")
    return out


def user_gaps(s, exe, backend):
    """What a new user trips on (issue 28): /v1/models/{id} (the OpenAI SDKs' models.retrieve),
    an unknown role refused by name, "prompt" as a list (one choice per prompt, each the answer
    that prompt gets alone), a port in use said before the model loads."""
    st, js, _ = s.request("GET", "/v1/models")
    mid = js["data"][0]["id"] if st == 200 else "?"
    st, one, _ = s.request("GET", "/v1/models/" + mid)
    check(st == 200 and one == js["data"][0], "models/{id}: %s %s" % (st, one))
    st, js, _ = s.request("GET", "/v1/models/no-such-model")
    check(st == 404 and "no-such-model" in js["error"]["message"], "models/{unknown}: %s %s" % (st, js))
    st, js, _ = s.request("POST", "/v1/models/" + mid)
    check(st == 405, "POST models/{id}: %s" % st)
    st, js, _ = s.request("POST", "/v1/chat/completions",
                          {"messages": [{"role": "bogus", "content": "hi"}], "max_tokens": 2})
    check(st == 400 and "'bogus'" in js["error"]["message"] and "user" in js["error"]["message"],
          "role bogus: %s %s" % (st, js))
    # a list of prompts: each choice is what that prompt gets alone (greedy), usage summed
    prompts = ["In the beginning", "And God said", "Blessed are"]
    alone = []
    for p in prompts:
        st, js, _ = s.request("POST", "/v1/completions", {"prompt": p, "max_tokens": 6, "temperature": 0})
        alone.append((text_of(js, False), js["usage"]) if st == 200 else (None, None))
    body = {"prompt": prompts, "max_tokens": 6, "temperature": 0}
    st, js, text = s.request("POST", "/v1/completions", body)
    ok = st == 200 and [c["index"] for c in js["choices"]] == [0, 1, 2]
    check(ok, "prompt list: %s %s" % (st, text[:300]))
    if ok:
        check([c["text"] for c in js["choices"]] == [a[0] for a in alone],
              "prompt list: choices %r != alone %r" % ([c["text"] for c in js["choices"]], [a[0] for a in alone]))
        want = sum(a[1]["prompt_tokens"] for a in alone if a[1])
        check(js["usage"]["prompt_tokens"] == want and js["usage"]["completion_tokens"] == 18,
              "prompt list usage: %s (prompt tokens alone: %d)" % (js["usage"], want))
    st, chunks, done = s.stream("/v1/completions", body)
    per = ["", "", ""]
    for c in chunks:
        for ch in c["choices"]:
            per[ch["index"]] += ch.get("text", "")
    check(st == 200 and done and per == [a[0] for a in alone], "prompt list streamed: %r" % per)
    check(chunks and chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 18,
          "prompt list stream: usage last, summed: %s" % (chunks[-1] if chunks else None))
    # lists of token ids, one per prompt: the same as the strings (tokenized by /tokenize, which
    # adds no BOS; completions add it to a string prompt)
    ids = []
    for p in prompts[:2]:
        st, js, _ = s.request("POST", "/tokenize", {"content": p, "add_special": True})
        ids.append(js["tokens"] if st == 200 else [])
    st, js, _ = s.request("POST", "/v1/completions", dict(body, prompt=ids))
    check(st == 200 and [c["text"] for c in js["choices"]] == [a[0] for a in alone[:2]],
          "prompt list of token ids: %s" % (js if st != 200 else [c["text"] for c in js["choices"]]))
    st, js, _ = s.request("POST", "/v1/completions", dict(body, prompt=["ok", 5]))
    check(st == 400 and "prompt[1]" in js["error"]["message"], "prompt list with a number: %s" % js)
    # a port in use: said before the model loads (a model path that does not exist is not reached)
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    t = time.time()
    r = subprocess.run([exe, "serve", "-m", "/nonexistent/model", "--port", str(port)] + backend,
                       capture_output=True, text=True, timeout=60)
    busy.close()
    check(r.returncode == 1 and ("port %d" % port) in r.stderr and "in use" in r.stderr
          and "nonexistent" not in r.stderr,
          "port in use: exit %d, %.1f s, %s" % (r.returncode, time.time() - t, r.stderr))


def main():
    exe, model = sys.argv[1], sys.argv[2]
    backend = sys.argv[3:]
    t0 = time.time()
    # 4 slots of at most 256 tokens (-c is the total, as llama-server's)
    s = Server(exe, model, backend + ["-np", "4", "-c", "1024", "--queue", "8", "--api-key", "sekret",
                                      "--max-body", "4"])
    try:
        # ---------------------------------------------------------------- basics
        st, js, _ = s.request("GET", "/health", key=False)
        check(st == 200 and js["status"] == "ok", "health: %s %s" % (st, js))
        st, js, _ = s.request("GET", "/v1/models")
        check(st == 200 and js["object"] == "list" and js["data"][0]["id"], "models: %s" % js)
        base = {"prompt": "In the beginning", "max_tokens": 12, "seed": 7, "temperature": 0.9}
        st, js, _ = s.request("POST", "/v1/completions", base)
        check(st == 200, "completion status %s" % st)
        whole = text_of(js, False)
        u = js["usage"]
        check(js["object"] == "text_completion" and js["choices"][0]["finish_reason"] == "length"
              and u["completion_tokens"] == 12 and u["total_tokens"] == u["prompt_tokens"] + 12,
              "completion shape/usage: %s" % js)
        st, chunks, done = s.stream("/v1/completions", base)
        check(st == 200 and done, "stream ends with [DONE]")
        check(stream_text(chunks, False) == whole, "streamed text %r != whole %r"
              % (stream_text(chunks, False), whole))
        check(chunks and chunks[-1].get("usage", {}).get("completion_tokens") == 12
              and chunks[-1]["choices"][0]["finish_reason"] == "length", "last chunk usage")
        chat = {"messages": [{"role": "system", "content": "Answer briefly."},
                             {"role": "user", "content": "Who made the heaven?"}],
                "max_completion_tokens": 10, "seed": 3}
        st, js, _ = s.request("POST", "/v1/chat/completions", chat)
        check(st == 200 and js["object"] == "chat.completion"
              and js["choices"][0]["message"]["role"] == "assistant", "chat: %s" % js)
        cwhole = text_of(js, True)
        st, chunks, done = s.stream("/v1/chat/completions", chat)
        check(done and chunks[0]["object"] == "chat.completion.chunk"
              and chunks[0]["choices"][0]["delta"].get("role") == "assistant", "chat stream role")
        check(stream_text(chunks, True) == cwhole, "chat stream %r != %r" % (stream_text(chunks, True), cwhole))
        check("usage" in chunks[-1], "chat: usage in the last chunk")

        # ---------------------------------------------------------------- stop strings, logprobs
        long = dict(base, max_tokens=40)
        st, js, _ = s.request("POST", "/v1/completions", long)
        free_text = text_of(js, False)
        # a stop string of 3 ASCII letters/spaces from the free answer (a random model's text
        # may hold bytes that are not UTF-8; stop strings match the generated bytes)
        m = re.search(r"[A-Za-z ]{3}", free_text[5:])
        stop = m.group(0) if m else None
        if stop:
            st, js, _ = s.request("POST", "/v1/completions", dict(long, stop=[stop, "\u00ff\u00ff"]))
            want = free_text[:free_text.index(stop)]
            check(st == 200 and text_of(js, False) == want
                  and js["choices"][0]["finish_reason"] == "stop",
                  "stop %r: got %r, want %r" % (stop, js and text_of(js, False), want))
            st, chunks, _ = s.stream("/v1/completions", dict(long, stop=stop))
            check(stream_text(chunks, False) == want, "streamed stop: %r" % stream_text(chunks, False))
        # a completion continues its prompt: the leading space of its first token stays (a
        # SentencePiece "▁God" on llama-tiny, a byte-level BPE "ĠGod" on kjv-gpt; the
        # grammar makes the text known beforehand), whole and streamed
        forced = {"prompt": "And God said", "max_tokens": 8, "temperature": 0,
                  "grammar": 'root ::= " God"'}
        st, js, _ = s.request("POST", "/v1/completions", forced)
        check(st == 200 and text_of(js, False) == " God",
              "a completion's leading space: %r" % (js and text_of(js, False)))
        st, chunks, _ = s.stream("/v1/completions", forced)
        check(stream_text(chunks, False) == " God",
              "a streamed completion's leading space: %r" % stream_text(chunks, False))
        greedy = {"messages": [{"role": "user", "content": "And God said"}], "max_tokens": 6,
                  "temperature": 0, "logprobs": True, "top_logprobs": 3}
        st, js, _ = s.request("POST", "/v1/chat/completions", greedy)
        lp = js["choices"][0]["logprobs"]["content"] if st == 200 else []
        check(len(lp) >= 1, "logprobs present")
        for e in lp:
            tops = e["top_logprobs"]
            ok = (len(tops) == 3 and e["logprob"] <= 0 and tops[0]["logprob"] >= tops[1]["logprob"] >= tops[2]["logprob"]
                  and abs(e["logprob"] - tops[0]["logprob"]) < 1e-6)  # greedy picks the top-1
            check(ok, "greedy logprobs: %s" % e)
        st, js, _ = s.request("POST", "/v1/completions", dict(base, temperature=0, logprobs=2))
        check(st == 200 and len(js["choices"][0]["logprobs"]["tokens"]) == 12, "completions logprobs")

        # ---------------------------------------------------------------- 8 concurrent = alone
        reqs = [{"prompt": p, "max_tokens": 16 + 2 * i, "seed": 100 + i, "temperature": 1.0,
                 "top_k": 0, "top_p": 1.0, "min_p": 0.0}
                for i, p in enumerate(["In the beginning", "And the LORD", "Blessed are", "Let there be",
                                       "The earth was", "And it came to pass", "Thou shalt", "Unto thee"])]
        alone = []
        for r in reqs:
            st, js, _ = s.request("POST", "/v1/completions", r)
            alone.append(text_of(js, False) if st == 200 else None)
        together = [None] * 8

        def run(i):
            if i % 2:
                st, chunks, _ = s.stream("/v1/completions", reqs[i])
                together[i] = stream_text(chunks, False)
            else:
                st, js, _ = s.request("POST", "/v1/completions", reqs[i])
                together[i] = text_of(js, False) if st == 200 else None
        th = [threading.Thread(target=run, args=(i,)) for i in range(8)]
        for t in th:
            t.start()
        for t in th:
            t.join()
        for i in range(8):
            check(alone[i] is not None and together[i] == alone[i],
                  "client %d: together %r != alone %r" % (i, together[i], alone[i]))

        # ------------------------------------------------ greedy: alone = beside others, token for token
        # A step computes only the busy slots (issue 42.4): the request alone, then beside three
        # others that start before it and finish while it decodes (so the steps it takes part in
        # have 4, 3, 2 and 1 busy slots, in other slots than alone), gives the same tokens and
        # the same log-probabilities (the JSON text of each: the logits bit for bit). Without the
        # prompt cache: a prompt partly cached is evaluated in other chunks, which may round
        # differently.
        g = {"prompt": "And God said", "max_tokens": 24, "temperature": 0, "logprobs": 1,
             "cache_prompt": False}
        st, js, _ = s.request("POST", "/v1/completions", g)
        check(st == 200 and js["usage"]["completion_tokens"] == 24, "greedy alone: %s %s" % (st, js))
        lp_alone = js["choices"][0]["logprobs"] if st == 200 else None
        beside = [None] * 4

        def greedy(i, body):
            st, js, _ = s.request("POST", "/v1/completions", body)
            beside[i] = js["choices"][0]["logprobs"] if st == 200 else None
        th = [threading.Thread(target=greedy, args=(i, {"prompt": p, "max_tokens": n, "temperature": 0,
                                                         "logprobs": 1}))
              for i, (p, n) in enumerate([("Blessed are", 6), ("Let there be light", 12),
                                          ("The earth was", 30)])]
        for t in th:
            t.start()
        time.sleep(0.2)
        greedy(3, g)
        for t in th:
            t.join()
        check(beside[3] is not None and beside[3]["tokens"] == lp_alone["tokens"],
              "greedy beside others: tokens %r != alone %r"
              % (beside[3] and beside[3]["tokens"], lp_alone and lp_alone["tokens"]))
        check(beside[3] == lp_alone, "greedy beside others: log-probabilities %r != alone %r"
              % (beside[3] and beside[3]["token_logprobs"], lp_alone and lp_alone["token_logprobs"]))

        # ---------------------------------------------------------------- disconnect frees the slot
        c = socket.create_connection(("127.0.0.1", s.port))
        body = json.dumps({"prompt": "In the beginning", "max_tokens": 4000, "stream": True})
        c.sendall(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sekret\r\n"
                   "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)).encode())
        got = c.recv(4096)
        check(b"200" in got.split(b"\r\n")[0], "disconnect: stream started")
        c.close()
        freed = False
        for _ in range(100):
            st, js, _ = s.request("GET", "/health", key=False)
            if js["slots_processing"] == 0 and js["queued"] == 0 and js["requests_cancelled"] >= 1:
                freed = True
                break
            time.sleep(0.1)
        check(freed, "a disconnected client's request is cancelled and its slot freed: %s" % js)

        # ---------------------------------------------------------------- errors
        def err(st_want, method, path, body=None, raw=None, key=True):
            st, js, text = s.request(method, path, body, raw=raw, key=key)
            ok = st == st_want and js and "error" in js and js["error"]["code"] == st_want and js["error"]["message"]
            check(ok, "%s %s: want %d, got %d %s" % (method, path, st_want, st, text[:200]))
        err(400, "POST", "/v1/completions", raw="{not json")
        err(400, "POST", "/v1/completions", {"prompt": "x", "temperature": "hot"})
        err(400, "POST", "/v1/completions", {"prompt": "x", "n": 2})
        err(400, "POST", "/v1/completions", {"prompt": "x", "max_tokens": 0})
        err(400, "POST", "/v1/completions", {"prompt": 5})
        err(400, "POST", "/v1/chat/completions", {"messages": []})
        err(400, "POST", "/v1/chat/completions", {"messages": [{"content": "no role"}]})
        err(400, "POST", "/v1/completions", {"prompt": "x", "stop": [1]})
        err(400, "POST", "/v1/completions", {"prompt": "x " * 1000})  # longer than a slot's 256 tokens
        err(401, "POST", "/v1/completions", {"prompt": "x"}, key=False)
        err(401, "GET", "/v1/models", key=False)
        err(404, "GET", "/v1/nothing")
        err(405, "GET", "/v1/completions")
        err(413, "POST", "/v1/completions", raw=json.dumps({"prompt": "y" * 8000}))
        st, js, _ = s.request("POST", "/tokenize", {"content": "In the beginning"})
        st2, js2, _ = s.request("POST", "/detokenize", {"tokens": js["tokens"]})
        check(st == 200 and st2 == 200 and js2["content"] == "In the beginning", "tokenize round trip: %s" % js2)
        err(400, "POST", "/detokenize", {"tokens": [-1]})
        user_gaps(s, exe, backend)

        # ---------------------------------------------------------------- curl
        out = subprocess.run(["curl", "-sS", "-H", "Authorization: Bearer sekret", "-d", json.dumps(base),
                              "http://127.0.0.1:%d/v1/completions" % s.port], capture_output=True, text=True)
        check(out.returncode == 0 and text_of(json.loads(out.stdout), False) == whole, "curl: %s" % out.stdout[:200])
        out = subprocess.run(["curl", "-sS", "-N", "-H", "Authorization: Bearer sekret", "-d",
                              json.dumps(dict(base, stream=True)), "http://127.0.0.1:%d/v1/completions" % s.port],
                             capture_output=True, text=True)
        check(out.stdout.rstrip().endswith("data: [DONE]"), "curl stream ends with [DONE]")
    finally:
        rc = s.stop()
    check(rc == 0, "SIGTERM exit %s: %s" % (rc, "".join(s.log[-5:])))

    # ---------------------------------------------------------------- 503, drain on SIGTERM
    s = Server(exe, model, backend + ["-np", "1", "--queue", "0"])
    # two prompts on one slot and no queue: the second cannot wait, so the request is a 503 and
    # the first prompt's work is cancelled (the slot is free again)
    st, js, _ = s.request("POST", "/v1/completions", {"prompt": ["In the", "And"], "max_tokens": 50})
    check(st == 503 and "prompts" in js["error"]["message"], "a prompt list beyond the slots: %s %s" % (st, js))
    for _ in range(100):
        st, js, _ = s.request("GET", "/health")
        if js["slots_processing"] == 0 and js["queued"] == 0:
            break
        time.sleep(0.05)
    check(js["slots_processing"] == 0, "a refused prompt list leaves its slot free: %s" % js)
    res = {}

    def busy():
        res["busy"] = s.stream("/v1/completions", {"prompt": "In the beginning", "max_tokens": 120})
    t = threading.Thread(target=busy)
    t.start()
    for _ in range(200):
        st, js, _ = s.request("GET", "/health")
        if js["slots_processing"] == 1:
            break
        time.sleep(0.02)
    st, js, _ = s.request("POST", "/v1/completions", {"prompt": "x", "max_tokens": 2})
    check(st == 503 and js["error"]["code"] == 503, "all slots and queue full: want 503, got %d" % st)
    s.p.send_signal(signal.SIGTERM)  # drain: the request in flight completes
    t.join()
    st, chunks, done = res["busy"]
    check(st == 200 and done and chunks[-1]["usage"]["completion_tokens"] > 0, "drained request completed")
    try:
        rc = s.p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        s.p.kill()
        rc = -999
    check(rc == 0, "drain exit %s" % rc)
    # ---------------------------------------------------------------- a client leaves during its prompt
    # (issue 28.4) The prompt is evaluated in passes and the engine hears the disconnect between
    # two: the prompt stops there and the slot's cache keeps none of it, so the same prompt's
    # start gets no cached tokens afterwards (had the prompt run to its end, it would: the prompt
    # cache). llama-tiny (RoPE: a 4096-token slot) on a CPU device, where 2000 tokens take seconds.
    devs = subprocess.run([exe, "devices", "--json"], capture_output=True, text=True).stdout
    try:
        cpu_device = "--cpu" in backend or any(d.get("default") and d.get("type") == "cpu"
                                               for d in json.loads(devs)["devices"])
    except (ValueError, KeyError):
        cpu_device = "--cpu" in backend
    if model.endswith(".gguf") and cpu_device:
        s = Server(exe, model, backend + ["-np", "1", "-c", "4096"])
        words = "the quick brown fox jumps over the lazy dog"
        body = json.dumps({"prompt": " ".join([words] * 74), "max_tokens": 4, "stream": True})
        c = socket.create_connection(("127.0.0.1", s.port))
        c.sendall(("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   "Content-Length: %d\r\n\r\n%s" % (len(body), body)).encode())
        time.sleep(0.3)
        c.close()
        js = {}
        for _ in range(600):
            st, js, _ = s.request("GET", "/health")
            if js["requests_cancelled"] >= 1 and js["slots_processing"] == 0:
                break
            time.sleep(0.1)
        st, js, _ = s.request("POST", "/v1/completions",
                              {"prompt": " ".join([words] * 4), "max_tokens": 1, "temperature": 0})
        cached = js["usage"]["prompt_tokens_details"]["cached_tokens"] if st == 200 else -1
        check(cached == 0, "a prompt whose client left stopped between passes: %d of its tokens "
              "still cached (status %s)" % (cached, st))
        s.stop()
    # ---------------------------------------------------------------- the model's own template
    # An HF directory with chat_template.jinja (links to the model's files): the rendered prompt's
    # length shows in usage.prompt_tokens for a character-level model (kjv-gpt: one token per
    # character, after BOS), so tools and chat_template_kwargs are seen to reach the template.
    if os.path.isdir(model) and os.path.exists(os.path.join(model, "char_vocab.json")):
        import tempfile
        d = tempfile.mkdtemp()
        for f in os.listdir(model):
            os.symlink(os.path.abspath(os.path.join(model, f)), os.path.join(d, f))
        with open(os.path.join(d, "chat_template.jinja"), "w") as f:
            f.write("{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}"
                    "{% if tools %}[{{ tools | length }} tools]{% endif %}{% if flag %}!{% endif %}"
                    "{% if add_generation_prompt %}>{% endif %}")
        s = Server(exe, d, backend)
        check(not any("no chat template" in l for l in s.log), "the directory's template is used")
        msgs = [{"role": "user", "content": "abc"}]
        usage = []
        for extra_body in ({}, {"tools": [{"type": "function", "function": {"name": "f"}}] * 2},
                           {"chat_template_kwargs": {"flag": True}}):
            try:
                st, js, _ = s.request("POST", "/v1/chat/completions", dict(messages=msgs, max_tokens=1, **extra_body))
            except OSError as e:
                st, js = 0, None
                check(False, "template request %s: %s; server log: %s" % (extra_body, e, "".join(s.log[-10:])))
            usage.append(js["usage"]["prompt_tokens"] if st == 200 else -1)
        # "<user>abc>" = 10 characters; "[2 tools]" adds 9, "!" adds 1
        check(usage[1] - usage[0] == 9 and usage[2] - usage[0] == 1, "template variables: %s" % usage)
        st, js, _ = s.request("POST", "/v1/chat/completions", dict(messages=msgs, tools={"a": 1}))
        check(st == 400 and "tools" in js["error"]["message"], "tools must be an array")
        check(s.stop() == 0, "template server exit")

    print("test_serve: %d failures, %.1f s" % (len(FAILS), time.time() - t0))
    return 1 if FAILS else 0


if __name__ == "__main__":
    import atexit
    atexit.register(kill_servers)
    sys.exit(main())
