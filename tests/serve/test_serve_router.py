#!/usr/bin/env python3
"""One vkformer serve for several models (llama-server's router habits), driven by the official
OpenAI Python client and the standard library.

usage: test_serve_router.py VKFORMER SOURCE_DIR FIXTURES_DIR

Three small models of three architectures (kjv-gpt: a learned-position GPT directory given by
-m; gpt2-tiny and llama-tiny: GGUF files in --models-dir, beside a file that is not GGUF and a
dangling link), served with --models-max 2:
- /v1/models lists the three and the two bad files (failed, with the reason), all unloaded;
- the reference: each model alone in a single-model server answers greedy requests; the
  router's answers must be the same text, token for token;
- 6 client threads, each cycling through the three models twice (completions and chat, whole
  and streamed) at once: every answer is the reference's, none lost; a poller of /v1/models never
  sees more than 2 models held (loaded, loading or unloading) and sees evictions and reloads
  (a model's "loads" above 1);
- a request for an unknown model is a 404 naming the available ones; none named is 400; a bad
  file's model is 400 with its reason;
- /slots and /metrics per model (?model=), 400 for a model not loaded;
- POST /models/unload during a streamed answer on that model waits for it: the stream completes
  with the reference's text before the unload answers; POST /models/load loads;
- SIGTERM: exit 0.
"""
import os
import shutil
import sys
import tempfile
import threading
import time

import openai  # a missing requirement fails the test: the suite installs it

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import pyhelpers  # noqa: E402
from pyhelpers import check, finish, request  # noqa: E402

PROMPTS = ["In the beginning", "And God said", "The quick brown fox"]
N_TOK = 10
LONG = 48  # the streamed answer an unload waits for



def client(port):
    return openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % port, api_key="unused",
                         max_retries=0, timeout=600)


def ask(c, model, kind, prompt, n=N_TOK):
    """one greedy request of kind (completion, completion_stream, chat, chat_stream): its text"""
    if kind.startswith("completion"):
        if kind.endswith("stream"):
            return "".join(ch.choices[0].text for ch in c.completions.create(
                model=model, prompt=prompt, max_tokens=n, temperature=0, stream=True) if ch.choices)
        return c.completions.create(model=model, prompt=prompt, max_tokens=n,
                                    temperature=0).choices[0].text
    msgs = [{"role": "user", "content": prompt}]
    if kind.endswith("stream"):
        return "".join(ch.choices[0].delta.content or "" for ch in c.chat.completions.create(
            model=model, messages=msgs, max_tokens=n, temperature=0, stream=True) if ch.choices)
    return c.chat.completions.create(model=model, messages=msgs, max_tokens=n,
                                     temperature=0).choices[0].message.content


KINDS = ["completion", "chat", "completion_stream", "chat_stream"]


def main():
    exe, src, fx = sys.argv[1], sys.argv[2], sys.argv[3]
    kjv = os.path.join(src, "models", "kjv-gpt")
    tmp = tempfile.mkdtemp(prefix="vkf-router-")
    try:
        run(exe, kjv, fx, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish("test_serve_router")


def run(exe, kjv, fx, tmp):
    d = os.path.join(tmp, "models")
    os.mkdir(d)
    files = {"gpt2-tiny": os.path.join(fx, "gpt2-tiny", "gpt2-tiny-f32.gguf"),
             "llama-tiny": os.path.join(fx, "llama-tiny", "llama-tiny-f32.gguf")}
    for name, path in files.items():  # copies under names of their own
        shutil.copyfile(path, os.path.join(d, name + ".gguf"))
    with open(os.path.join(d, "notes.txt"), "w") as f:
        f.write("not a model\n")
    os.symlink(os.path.join(tmp, "nowhere.gguf"), os.path.join(d, "gone.gguf"))
    paths = dict(files, **{"kjv-gpt": kjv})
    models = ["kjv-gpt", "gpt2-tiny", "llama-tiny"]

    # ------------------------------------------------------------ the reference: one model each
    ref = {}
    for m in models:
        srv = pyhelpers.Server(exe, paths[m], ["-np", "2"], timeout=300)
        c = client(srv.port)
        mid = c.models.list().data[0].id
        for p in PROMPTS:
            for kind in ("completion", "chat"):
                ref[(m, kind, p)] = ask(c, mid, kind, p)
        ref[(m, "long")] = ask(c, mid, "completion", PROMPTS[0], LONG)
        check(srv.stop() == 0, "reference server %s: exit 0" % m)

    # ------------------------------------------------------------ the router
    srv = pyhelpers.Server(exe, kjv, ["--models-dir", d, "--models-max", "2", "-np", "2",
                                      "--metrics"], timeout=300)
    port = srv.port
    c = client(port)
    check(sorted(x.id for x in c.models.list().data) ==
          sorted(models + ["notes.txt", "gone"]), "/v1/models lists every model")
    st, js = request(port, "GET", "/v1/models")
    byid = {x["id"]: x for x in js["data"]}
    check(all(byid[m]["status"]["value"] == "unloaded" and not byid[m]["status"].get("failed")
              for m in models), "the models start unloaded: %s" % js)
    check(byid["notes.txt"]["status"].get("failed") and
          "not a GGUF" in byid["notes.txt"]["status"]["error"], "notes.txt: %s" % byid["notes.txt"])
    check(byid["gone"]["status"].get("failed") and
          "cannot read" in byid["gone"]["status"]["error"], "gone.gguf: %s" % byid["gone"])
    check(any("skipping" in x and "notes.txt" in x for x in srv.log), "a warning for notes.txt")

    # bad requests
    try:
        c.completions.create(model="nope", prompt="x", max_tokens=1)
        check(False, "unknown model: no error")
    except openai.NotFoundError as e:
        check(all(m in str(e) for m in models), "404 names the available models: %s" % e)
    st, js = request(port, "POST", "/v1/completions", {"prompt": "x", "max_tokens": 1})
    check(st == 400 and "model" in js["error"]["message"], "no model named: %s %s" % (st, js))
    st, js = request(port, "POST", "/v1/completions", {"model": "notes.txt", "prompt": "x"})
    check(st == 400 and "not a GGUF" in js["error"]["message"], "a bad file's model: %s %s" % (st, js))
    st, js = request(port, "GET", "/slots?model=kjv-gpt")
    check(st == 400 and "not loaded" in js["error"]["message"], "/slots of a model not loaded: %s" % js)

    # ------------------------------------------------------------ concurrent clients
    seen_live, stop_poll, states = [0], threading.Event(), []

    def poll():
        while not stop_poll.is_set():
            st, js = request(port, "GET", "/v1/models")
            if st == 200:
                s = {x["id"]: (x["status"]["value"], x["status"]["loads"]) for x in js["data"]}
                states.append(s)
                seen_live[0] = max(seen_live[0], sum(1 for m in models if s[m][0] != "unloaded"))
            time.sleep(0.02)

    results, errors = {}, []

    def worker(i):
        cl = client(port)
        for rnd in range(2):
            for k in range(3):
                m = models[(i + k + rnd) % 3]
                kind = KINDS[(i + k) % 4]
                p = PROMPTS[(i + rnd) % 3]
                try:
                    results[(i, rnd, k)] = (m, kind, p, ask(cl, m, kind, p))
                except Exception as e:  # noqa: BLE001 - any failure is a lost request
                    errors.append("%s %s %r: %r" % (m, kind, p, e))

    poller = threading.Thread(target=poll)
    poller.start()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(6)]
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop_poll.set()
    poller.join()
    check(not errors, "every request answered: %s" % errors)
    check(len(results) == 36, "36 answers: %d" % len(results))
    for key, (m, kind, p, text) in sorted(results.items()):
        want = ref[(m, kind.replace("_stream", ""), p)]
        check(text == want, "%s %s %r: %r, alone %r" % (m, kind, p, text, want))
    check(seen_live[0] <= 2, "at most 2 models held at once (seen %d)" % seen_live[0])
    st, js = request(port, "GET", "/v1/models")
    loads = {x["id"]: x["status"]["loads"] for x in js["data"]}
    check(sum(loads[m] for m in models) > 3 and all(loads[m] >= 1 for m in models),
          "evictions and reloads happened: %s" % loads)
    check(any(s[m][0] == "loading" for s in states for m in models), "a load was seen in /v1/models")
    print("36 requests over 3 models in %.1f s, loads %s" % (time.time() - t0, loads), flush=True)

    # ------------------------------------------------------------ per-model /slots and /metrics
    loaded = [m for m in models if loads and js and
              {x["id"]: x for x in js["data"]}[m]["status"]["value"] == "loaded"]
    check(len(loaded) == 2, "two models loaded after the run: %s" % loaded)
    for m in loaded:
        st, sl = request(port, "GET", "/slots?model=" + m)
        check(st == 200 and isinstance(sl, list) and len(sl) == 2, "/slots?model=%s: %s" % (m, st))
        st, text = request(port, "GET", "/metrics?model=" + m)
        check(st == 200 and "llamacpp:prompt_tokens_total" in text, "/metrics?model=%s" % m)
    st, js = request(port, "GET", "/slots")
    check(st == 400, "/slots without a model: %s" % st)

    # ------------------------------------------------------------ unload waits for its requests
    m = loaded[0]
    got, unload_done = {}, {}

    def long_stream():
        got["text"] = ask(client(port), m, "completion_stream", PROMPTS[0], LONG)
        got["t"] = time.time()

    t = threading.Thread(target=long_stream)
    t.start()
    time.sleep(0.3)  # the stream is under way
    st, js = request(port, "POST", "/models/unload", {"model": m})
    unload_done["t"] = time.time()
    t.join()
    check(st == 200 and js == {"success": True}, "/models/unload: %s %s" % (st, js))
    check(got.get("text") == ref[(m, "long")], "the stream across the unload is whole: %r vs %r"
          % (got.get("text"), ref[(m, "long")]))
    check(got.get("t", 1e18) <= unload_done["t"], "the unload waited for the stream")
    st, js = request(port, "GET", "/v1/models/" + m)
    check(st == 200 and js["status"]["value"] == "unloaded", "unloaded: %s" % js)
    st, js = request(port, "POST", "/models/unload", {"model": m})
    check(st == 400, "unloading a model not loaded: %s %s" % (st, js))
    st, js = request(port, "POST", "/models/load", {"model": m})
    check(st == 200 and request(port, "GET", "/v1/models/" + m)[1]["status"]["value"] == "loaded",
          "/models/load: %s %s" % (st, js))
    st, js = request(port, "POST", "/models/load", {"model": "nope"})
    check(st == 404, "/models/load of an unknown model: %s" % st)
    check(ask(c, m, "completion", PROMPTS[1]) == ref[(m, "completion", PROMPTS[1])],
          "after the reload: the reference's answer")
    check(srv.stop() == 0, "SIGTERM: exit 0")


if __name__ == "__main__":
    main()
