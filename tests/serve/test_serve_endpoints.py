#!/usr/bin/env python3
"""llama-server's small endpoints in vkformer serve: POST /apply-template, POST /completion
with n_probs, and POST /slots/{id}?action=save|restore|erase.

Usage: test_serve_endpoints.py VKFORMER MODEL (a model without a chat template: ChatML applies)

- /apply-template: {"prompt"} equals the ChatML template (llama.cpp's default, the template text
  below) rendered by jinja2, and tokenizes to the prompt /v1/chat/completions evaluates (its
  usage.prompt_tokens); a body without messages is 400.
- /completion, greedy with n_probs 5 (and /v1/completions with logprobs 5): the probabilities
  (completion_probabilities: id, token, bytes, logprob, top_logprobs) checked against the softmax computed here with numpy from the CPU reference
  backend's logits (the vkformer Python package on backend "cpu", the prompt and the generated
  tokens evaluated in one pass); the streamed events carry the same tokens and probabilities
  and end with stop: true, no [DONE]; n_probs out of [0, 20] and a list of prompts are 400.
- slots (--slot-save-path): a slot saved after a request, the slots erased, the request that
  extends that prompt made afresh (nothing cached) gives the reference answer; restored into
  another slot, the same request takes the restored tokens from the cache (tokens_cached =
  the common prefix, prompt_n only the new tokens) and gives the same answer; llama-server's
  response fields; filenames that leave the directory (empty, .., ../x, /abs, a/b, .hidden)
  are 400 and create nothing; a file of another model (its header's vocabulary changed) is 400,
  a missing one 404, an unknown slot or action 400, a busy slot 400, no --slot-save-path 501.
"""
import glob
import tempfile
import threading
import time
import http.client
import json
import shutil
import os
import sys

import jinja2
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import pyhelpers  # noqa: E402
from pyhelpers import check, finish, request  # noqa: E402

# llama.cpp's chatml template (the one its llm_chat_apply_template uses when a model has none)
CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
          "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"
          "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")



def stream(port, path, body):
    """(status, events, saw [DONE])"""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    c.request("POST", path, body=json.dumps(dict(body, stream=True)),
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    evs, done = [], False
    for line in r:
        line = line.decode("utf-8").rstrip("\n")
        if line == "data: [DONE]":
            done = True
        elif line.startswith("data: "):
            evs.append(json.loads(line[6:]))
    c.close()
    return r.status, evs, done


def cpu_logprobs(root, model, ids):
    """log-softmax rows of the CPU reference's logits after every token of ids (numpy)"""
    sys.path.insert(0, os.path.join(root, "python", "src"))
    import vkformer
    m = vkformer.Model(model, backend="cpu")
    s = vkformer.Session(m)
    logits = np.zeros((len(ids), m.n_vocab), dtype=np.float32)
    s.eval(ids, logits, all_rows=True)
    x = logits.astype(np.float64)
    x -= x.max(axis=1, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=1, keepdims=True))


def main():
    exe, model = sys.argv[1], sys.argv[2]
    root = os.path.dirname(os.path.dirname(HERE))
    os.environ.setdefault("VKFORMER_LIBRARY",
                          os.path.join(os.path.dirname(os.path.abspath(exe)), "libvkformer.so"))
    slot_dir = tempfile.mkdtemp(prefix="vkf-slots-")
    srv = pyhelpers.Server(exe, model, ["-np", "2", "--slot-save-path", slot_dir], timeout=300)
    port = srv.port

    # ---------------------------------------------------------------- /apply-template
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "In the beginning"},
            {"role": "assistant", "content": "God created"}, {"role": "user", "content": "what?"}]
    st, js = request(port, "POST", "/apply-template", {"messages": msgs})
    want = jinja2.Environment().from_string(CHATML).render(messages=msgs, add_generation_prompt=True)
    check(st == 200 and js == {"prompt": want}, "/apply-template: %s %r, want %r" % (st, js, want))
    if st == 200:
        st2, tok = request(port, "POST", "/tokenize", {"content": js["prompt"], "add_special": True})
        st3, chat = request(port, "POST", "/v1/chat/completions",
                            {"messages": msgs, "max_tokens": 1, "temperature": 0})
        check(st2 == 200 and st3 == 200 and
              len(tok["tokens"]) == chat["usage"]["prompt_tokens"],
              "/apply-template's prompt is what chat evaluates: %s tokens vs %s" %
              (st2 == 200 and len(tok["tokens"]), st3 == 200 and chat["usage"]))
    for bad in ({}, {"messages": []}, {"messages": [{"role": "wizard", "content": "x"}]}):
        st, js = request(port, "POST", "/apply-template", bad)
        check(st == 400 and "messages" in js["error"]["message"], "/apply-template %s: %s %s" % (bad, st, js))

    # ---------------------------------------------------------------- /completion n_probs
    prompt = "In the beginning God created"
    body = {"prompt": prompt, "n_predict": 8, "n_probs": 5, "temperature": 0}
    st, js = request(port, "POST", "/completion", body)
    check(st == 200, "/completion: %s %s" % (st, js))
    if st == 200:
        probs = js["completion_probabilities"]
        gen = js["tokens"]
        check(js["stop"] is True and js["tokens_predicted"] == 8 and len(gen) == 8 and
              len(probs) == 8 and js["stop_type"] == "limit",
              "/completion shape: %s" % {k: js[k] for k in js if k != "completion_probabilities"})
        _, tk = request(port, "POST", "/tokenize", {"content": prompt, "add_special": True})
        ids = tk["tokens"]
        check(js["tokens_evaluated"] == len(ids), "tokens_evaluated %s = %d" % (js["tokens_evaluated"], len(ids)))
        lp = cpu_logprobs(root, model, ids + gen)
        for i, p in enumerate(probs):
            row = lp[len(ids) - 1 + i]
            order = np.argsort(-row, kind="stable")
            # Vulkan (lavapipe) against the CPU reference: the same float32 math summed in
            # another order, a few ulps in the logits; 2e-3 in a log-probability is far below
            # the gaps between the tokens ranked here (checked: a near tie is not ranked)
            check(p["id"] == gen[i] and abs(p["logprob"] - row[gen[i]]) < 2e-3,
                  "token %d: %s vs CPU %.6f" % (i, p["logprob"], row[gen[i]]))
            check(gen[i] == int(order[0]), "greedy token %d is the CPU's argmax" % i)
            check(p["bytes"] == list(p["token"].encode("utf-8")), "bytes of %r" % p["token"])
            tops = p["top_logprobs"]
            check(len(tops) == 5, "5 top_logprobs at %d" % i)
            for k, t in enumerate(tops):
                if k + 1 < len(order) and row[order[k]] - row[order[k + 1]] < 4e-3 and k < 4:
                    continue  # a near tie: either order is right
                check(t["id"] == int(order[k]) and abs(t["logprob"] - row[order[k]]) < 2e-3,
                      "token %d top %d: %s vs CPU id %d %.6f" % (i, k, t, order[k], row[order[k]]))
        # the stream: one event per token with its probabilities, then stop: true, no [DONE]
        st, evs, done = stream(port, "/completion", body)
        check(st == 200 and not done and evs and evs[-1]["stop"] is True and
              all(e["stop"] is False for e in evs[:-1]), "/completion stream ends with stop: true")
        sp = [p for e in evs[:-1] for p in e.get("completion_probabilities", [])]
        check([p["id"] for p in sp] == gen and
              all(abs(a["logprob"] - b["logprob"]) < 1e-6 for a, b in zip(sp, probs)),
              "streamed probabilities = whole ones")
        check("".join(e["content"] for e in evs) == js["content"], "streamed content = whole")
        # the OpenAI endpoint's logprobs (its "logprobs": 5) for the same request: the same
        # tokens, log-probabilities against the CPU's as above
        st, oc = request(port, "POST", "/v1/completions",
                         {"prompt": prompt, "max_tokens": 8, "temperature": 0, "logprobs": 5})
        lpo = oc["choices"][0]["logprobs"] if st == 200 else {}
        check(st == 200 and len(lpo["token_logprobs"]) == 8 and
              all(abs(v - lp[len(ids) - 1 + i][gen[i]]) < 2e-3
                  for i, v in enumerate(lpo["token_logprobs"])) and
              all(len(t) == 5 for t in lpo["top_logprobs"]),
              "/v1/completions logprobs against the CPU: %s" % lpo)
    for bad, what in (({"prompt": "x", "n_probs": 21}, "n_probs"), ({"prompt": "x", "n_probs": -1}, "n_probs"),
                      ({"prompt": ["a", "b"]}, "prompt"), ({"prompt": "x", "n_predict": -2}, "n_predict")):
        st, js = request(port, "POST", "/completion", bad)
        check(st == 400 and what in js["error"]["message"], "/completion %s: %s %s" % (bad, st, js))
    slots(port, slot_dir)
    check(srv.stop() == 0, "SIGTERM: exit 0")
    shutil.rmtree(slot_dir, ignore_errors=True)
    srv = pyhelpers.Server(exe, model, [], timeout=300)
    st, js = request(srv.port, "POST", "/slots/0?action=save", {"filename": "x"})
    check(st == 501 and "--slot-save-path" in js["error"]["message"], "no --slot-save-path: %s" % st)
    check(srv.stop() == 0, "SIGTERM: exit 0")
    finish("test_serve_endpoints")


def slots(port, d):
    p1 = "In the beginning God created the heaven"
    # (the restored slot is chosen when it caches at least half of the prompt: pick_slot)
    p2 = p1 + " and the earth. And"
    greedy = {"n_predict": 8, "temperature": 0}
    st, a = request(port, "POST", "/completion", dict(greedy, prompt=p1))
    check(st == 200, "slot request: %s" % st)
    sid = a["id_slot"]
    st, sv = request(port, "POST", "/slots/%d?action=save" % sid, {"filename": "a.bin"})
    # the cache holds the prompt and every generated token but the last (never fed back)
    n_saved = a["tokens_evaluated"] + a["tokens_predicted"] - 1
    check(st == 200 and sv["id_slot"] == sid and sv["filename"] == "a.bin" and
          sv["n_saved"] == n_saved and sv["n_written"] == os.path.getsize(os.path.join(d, "a.bin"))
          and "save_ms" in sv["timings"], "save: %s %s" % (st, sv))
    for k in (0, 1):
        st, er = request(port, "POST", "/slots/%d?action=erase" % k)
        check(st == 200 and er["id_slot"] == k and "n_erased" in er, "erase %d: %s" % (k, er))
    st, ref = request(port, "POST", "/completion", dict(greedy, prompt=p2))
    check(st == 200 and ref["tokens_cached"] == 0,
          "after the erase nothing is cached: %s" % ref.get("tokens_cached"))
    # both slots' cache rows overwritten by another text (two requests at once), then emptied:
    # what the restored slot holds can only come from the file
    th = [threading.Thread(target=request, args=(port, "POST", "/completion",
                                                 {"prompt": "Zebras x%d" % i, "n_predict": 60,
                                                  "temperature": 0})) for i in range(2)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    for k in (0, 1):
        request(port, "POST", "/slots/%d?action=erase" % k)
    other = 1 - sid
    st, rs = request(port, "POST", "/slots/%d?action=restore" % other, {"filename": "a.bin"})
    check(st == 200 and rs["id_slot"] == other and rs["n_restored"] == n_saved and
          rs["n_read"] == sv["n_written"] and "restore_ms" in rs["timings"],
          "restore: %s %s" % (st, rs))
    st, b = request(port, "POST", "/completion", dict(greedy, prompt=p2))
    _, t1 = request(port, "POST", "/tokenize", {"content": p1, "add_special": True})
    _, t2 = request(port, "POST", "/tokenize", {"content": p2, "add_special": True})
    held = t1["tokens"] + a["tokens"][:-1]
    common = 0
    while common < min(len(held), len(t2["tokens"]) - 1) and held[common] == t2["tokens"][common]:
        common += 1
    check(st == 200 and b["id_slot"] == other and b["tokens_cached"] == common and
          b["timings"]["prompt_n"] == len(t2["tokens"]) - common,
          "the restored cache serves the prefix: slot %s cached %s, prompt_n %s (want %d, %d, %d)"
          % (b.get("id_slot"), b.get("tokens_cached"), b.get("timings", {}).get("prompt_n"),
             other, common, len(t2["tokens"]) - common))
    check(st == 200 and b["content"] == ref["content"] and b["tokens"] == ref["tokens"],
          "restored = afresh: %r vs %r" % (b.get("content"), ref["content"]))
    before = set(os.listdir(d))
    outside = os.path.join(os.path.dirname(d), "x")
    for bad in ("", "..", "../x", outside, "a/b", ".hidden", "a\\b"):
        st, js = request(port, "POST", "/slots/0?action=save", {"filename": bad})
        check(st == 400 and "filename" in js["error"]["message"], "filename %r: %s %s" % (bad, st, js))
    check(set(os.listdir(d)) == before and not os.path.exists(outside),
          "no file made by a refused name")
    with open(os.path.join(d, "a.bin"), "rb") as f:
        raw = bytearray(f.read())
    raw[12] ^= 1  # the header's vocabulary size (after "VKFSLOT1" and the u32 header size)
    with open(os.path.join(d, "other.bin"), "wb") as f:
        f.write(raw)
    st, js = request(port, "POST", "/slots/0?action=restore", {"filename": "other.bin"})
    check(st == 400 and "another model" in js["error"]["message"],
          "another model's file: %s %s" % (st, js))
    st, js = request(port, "POST", "/slots/0?action=restore", {"filename": "none.bin"})
    check(st == 404, "a missing file: %s %s" % (st, js))
    for path in ("/slots/7?action=erase", "/slots/x?action=erase", "/slots/0?action=dance",
                 "/slots/0"):
        st, js = request(port, "POST", path, {"filename": "a.bin"})
        check(st == 400, "%s: %s %s" % (path, st, js))
    # a busy slot: a long request on each slot, then a save while they run
    th = [threading.Thread(target=request, args=(port, "POST", "/completion",
                                                 {"prompt": "And God said", "n_predict": 200,
                                                  "temperature": 0})) for _ in range(2)]
    for t in th:
        t.start()
    deadline = time.time() + 60
    while time.time() < deadline:  # both slots busy (GET /slots)
        st, sl = request(port, "GET", "/slots")
        if st == 200 and all(x["is_processing"] for x in sl):
            break
        time.sleep(0.05)
    st, js = request(port, "POST", "/slots/0?action=save", {"filename": "busy.bin"})
    check(st == 400 and "processing" in js["error"]["message"], "a busy slot: %s %s" % (st, js))
    for t in th:
        t.join()



if __name__ == "__main__":
    main()
