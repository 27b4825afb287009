"""serve -md: speculative decoding with a draft model in every slot, inside continuous batching.

At temperature 0 a server with a draft model gives, for several concurrent requests (-np 2,
three requests at once), exactly the text of a server without speculation: the drafts only
change how many tokens one pass checks, never which token is kept (the reference is the
non-speculative server, whose greedy text the llama-tiny fixtures check against llama.cpp in
serve_llama_tiny). Drafts: the target itself (every draft accepted up to --draft-p-min) and
the q8_0 file of the same model (a compatible vocabulary, other weights: some drafts rejected,
so the rollback of both caches is exercised). drafted/accepted are counted in the timings,
/slots and /metrics. A draft with another vocabulary (gpt2-tiny) is refused at startup with
the difference named.

usage: test_serve_spec_draft.py VKFORMER FIXTURES_DIR"""
import json
import os
import sys
import threading
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from pyhelpers import Server, check, finish, serve  # noqa: E402

EXE, FIX = sys.argv[1], sys.argv[2]
TARGET = os.path.join(FIX, "llama-tiny", "llama-tiny-f32.gguf")
DRAFTS = {"self": TARGET, "q8_0": os.path.join(FIX, "llama-tiny", "llama-tiny-q8_0.gguf")}
OTHER = os.path.join(FIX, "gpt2-tiny", "gpt2-tiny-f32.gguf")
PROMPTS = ["The quick brown fox", "In the beginning God created", "one two three one two three"]
COMMON = ["-np", "2", "-c", "512", "--cpu"]


def post(port, path, body):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.loads(r.read())


def get(port, path):
    with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=60) as r:
        return r.read().decode()


def run_all(port):
    """the three prompts at once (two slots: one waits in the queue), greedy, 32 tokens"""
    out = [None] * len(PROMPTS)

    def one(i):
        out[i] = post(port, "/completion", {"prompt": PROMPTS[i], "n_predict": 32,
                                            "temperature": 0, "cache_prompt": False})

    th = [threading.Thread(target=one, args=(i,)) for i in range(len(PROMPTS))]
    for t in th:
        t.start()
    for t in th:
        t.join()
    return out


base = Server(EXE, TARGET, COMMON)
ref = [r["content"] for r in run_all(base.port)]
base.stop()
check(all(ref), "the server without speculation gave an empty text: %r" % ref)

for name, path in DRAFTS.items():
    s = Server(EXE, TARGET, COMMON + ["-md", path, "--draft-max", "8", "--metrics"])
    res = run_all(s.port)
    drafted = accepted = 0
    for i, r in enumerate(res):
        check(r["content"] == ref[i], "%s draft, prompt %d: %r != %r without speculation" %
              (name, i, r["content"], ref[i]))
        t = r.get("timings", {})
        drafted += t.get("draft_n", 0)
        accepted += t.get("draft_n_accepted", 0)
        check(t.get("draft_n_accepted", 0) <= t.get("draft_n", 0),
              "%s draft: accepted more than drafted: %r" % (name, t))
    print("%s draft: drafted %d accepted %d" % (name, drafted, accepted))
    check(drafted > 0 and accepted > 0, "%s draft: drafted %d accepted %d" % (name, drafted,
                                                                              accepted))
    met = {}
    for line in get(s.port, "/metrics").splitlines():
        if line.startswith("vkformer:draft_tokens"):
            k, v = line.split()
            met[k] = float(v)
    check(met.get("vkformer:draft_tokens_total") == drafted and
          met.get("vkformer:draft_tokens_accepted_total") == accepted,
          "%s draft: /metrics %r, the timings %d/%d" % (name, met, drafted, accepted))
    slots = json.loads(get(s.port, "/slots"))
    sd = sum(x["next_token"][0]["n_draft_total"] if isinstance(x["next_token"], list)
             else x["next_token"]["n_draft_total"] for x in slots)
    check(0 < sd <= drafted, "%s draft: /slots n_draft_total %d (drafted %d)" % (name, sd,
                                                                                drafted))
    check(s.stop() == 0, "%s draft: the server did not stop cleanly" % name)

# another vocabulary: refused at startup, the difference named (here the tokenizer kind)
p, port, log = serve(EXE, TARGET, COMMON + ["-md", OTHER])
rc = p.wait(timeout=120) if port is None else None
text = "".join(log) + (p.stderr.read() if port is None else "")
check(port is None and rc != 0, "a draft with another vocabulary was taken")
check("gpt2-tiny-f32.gguf" in text and "vocabulary" in text,
      "the refusal names no draft or difference: %s" % text)
print("other vocabulary:", text.strip().splitlines()[-1] if text.strip() else "")
# --draft-max 0 with -md: a usage error
p, port, log = serve(EXE, TARGET, COMMON + ["-md", TARGET, "--draft-max", "0"])
check(port is None and p.wait(timeout=60) != 0, "--draft-max 0 was taken")
finish("serve_spec_draft")
