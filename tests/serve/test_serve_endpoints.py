#!/usr/bin/env python3
"""llama-server's small endpoints in vkformer serve: POST /apply-template and POST /completion
with n_probs.

Usage: test_serve_endpoints.py VKFORMER MODEL (a model without a chat template: ChatML applies)

- /apply-template: {"prompt"} equals the ChatML template (llama.cpp's default, the template text
  below) rendered by jinja2, and tokenizes to the prompt /v1/chat/completions evaluates (its
  usage.prompt_tokens); a body without messages is 400.
- /completion, greedy with n_probs 5: completion_probabilities (id, token, bytes, logprob,
  top_logprobs) checked against the softmax computed here with numpy from the CPU reference
  backend's logits (the vkformer Python package on backend "cpu", the prompt and the generated
  tokens evaluated in one pass); the streamed events carry the same tokens and probabilities
  and end with stop: true, no [DONE]; n_probs out of [0, 20] and a list of prompts are 400.
"""
import http.client
import json
import os
import sys

import jinja2
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import pyhelpers  # noqa: E402
from pyhelpers import check, finish  # noqa: E402

# llama.cpp's chatml template (the one its llm_chat_apply_template uses when a model has none)
CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
          "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"
          "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")


def request(port, method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    c.request(method, path, body=json.dumps(body) if body is not None else None,
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    text = r.read().decode("utf-8", "replace")
    c.close()
    try:
        return r.status, json.loads(text)
    except ValueError:
        return r.status, text


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
    srv = pyhelpers.Server(exe, model, ["-np", "2"], timeout=300)
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
    for bad, what in (({"prompt": "x", "n_probs": 21}, "n_probs"), ({"prompt": "x", "n_probs": -1}, "n_probs"),
                      ({"prompt": ["a", "b"]}, "prompt"), ({"prompt": "x", "n_predict": -2}, "n_predict")):
        st, js = request(port, "POST", "/completion", bad)
        check(st == 400 and what in js["error"]["message"], "/completion %s: %s %s" % (bad, st, js))
    check(srv.stop() == 0, "SIGTERM: exit 0")
    finish("test_serve_endpoints")


if __name__ == "__main__":
    main()
