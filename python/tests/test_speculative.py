"""Speculative decoding in the package (llama-cpp-python's draft_model=): the same text as
without it, greedy and seeded, the drafts counted; `vkformer generate --spec-type ngram` and
`-md` give the CLI's text unchanged; bad drafters refused."""

from __future__ import annotations

import re
import subprocess

import numpy as np
import pytest
import vkformer
from vkformer.llama_speculative import LlamaDraftModel, LlamaPromptLookupDecoding

from conftest import CLI, KJV, TINY, need

# a verse repeated: the lookup finds what follows
PROMPT = ("And God said, Let there be light: and there was light. And God saw the light, that it "
          "was good: and God divided the light from the darkness. And God said, Let there be")


@pytest.mark.parametrize("sampling", [dict(temperature=0.0),
                                      dict(temperature=0.8, top_k=40, top_p=0.95, seed=7),
                                      dict(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0,
                                           repeat_penalty=1.1, seed=3)])
def test_same_text_with_prompt_lookup(sampling):
    with vkformer.Llama(str(KJV), verbose=False) as plain, \
            vkformer.Llama(str(KJV), verbose=False,
                           draft_model=LlamaPromptLookupDecoding(num_pred_tokens=8)) as spec:
        a = plain.create_completion(PROMPT, max_tokens=96, **sampling)["choices"][0]["text"]
        b = spec.create_completion(PROMPT, max_tokens=96, **sampling)["choices"][0]["text"]
        assert a == b
        assert spec.n_drafted > 0 and 0 < spec.n_accepted <= spec.n_drafted
        # the cache holds the tokens taken, not the drafts past them: a second call reuses it
        c = spec.create_completion(PROMPT, max_tokens=96, **sampling)["choices"][0]["text"]
        assert c == a


class _Wrong(LlamaDraftModel):
    """Drafts tokens the model never draws first (every draft rejected), then the right ones
    from a plain run (every draft accepted): both paths of the check."""

    def __init__(self, right: list[int], n_prompt: int):
        self.right, self.n_prompt, self.calls = right, n_prompt, 0

    def __call__(self, input_ids, /, **kwargs):
        self.calls += 1
        done = len(input_ids) - self.n_prompt
        if self.calls % 2:
            return np.array(self.right[done: done + 5], dtype=np.intc)
        return np.array([(t + 1) % 512 for t in self.right[done: done + 5]], dtype=np.intc)


def test_tokens_equal_with_any_drafter():
    need(TINY)
    with vkformer.Llama(str(TINY), cache_type="f32", verbose=False) as plain:
        prompt = plain.tokenize(b"The quick brown fox")
        toks = []
        for t in plain.generate(prompt, temp=0.0):
            toks.append(t)
            if len(toks) == 40:
                break
    wrong = _Wrong(toks, len(prompt))
    with vkformer.Llama(str(TINY), cache_type="f32", verbose=False, draft_model=wrong) as spec:
        got = []
        for t in spec.generate(prompt, temp=0.0):
            got.append(t)
            if len(got) == 40:
                break
        assert got == toks
        assert spec.n_accepted > 0 and spec.n_accepted < spec.n_drafted


def test_bad_drafters():
    with pytest.raises(ValueError, match="num_pred_tokens"):
        LlamaPromptLookupDecoding(num_pred_tokens=0)
    with pytest.raises(TypeError, match="draft_model"):
        vkformer.Llama(str(KJV), verbose=False, draft_model=3)


def _cli(*args):
    r = subprocess.run([str(CLI), "generate", "-m", str(KJV), "-p", PROMPT, "-n", "64",
                        "--temp", "0", *args], capture_output=True, timeout=300, check=False)
    return r


def test_cli_speculation_same_text_and_errors():
    base = _cli()
    assert base.returncode == 0, base.stderr
    for extra in (["--spec-type", "ngram"], ["-md", str(KJV), "--draft-max", "4"]):
        r = _cli(*extra)
        assert r.returncode == 0, r.stderr
        assert r.stdout == base.stdout
        assert b"speculative: drafted" in r.stderr
    for n in ("0", "-3"):
        r = _cli("--spec-type", "ngram", "--draft-max", n)
        assert r.returncode == 2 and b"--draft-max " + n.encode() in r.stderr
    need(TINY)
    r = _cli("-md", str(TINY))
    assert r.returncode == 1 and b"llama-tiny-f32.gguf" in r.stderr, r.stderr


def _serve(*extra):
    import re
    import time
    p = subprocess.Popen([str(CLI), "serve", "-m", str(KJV), "--port", "0", "-np", "2",
                          "--metrics", *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    t0 = time.monotonic()
    while time.monotonic() - t0 < 120:
        line = p.stderr.readline()
        if not line and p.poll() is not None:
            break
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if m:
            return p, f"http://127.0.0.1:{m.group(1)}"
    p.kill()
    raise AssertionError("the server did not start")


def _post(url, body):
    import json
    import urllib.request
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.loads(r.read())


def test_serve_slots_speculate_same_text():
    """Two requests at once on two slots (greedy and seeded): the same texts with n-gram
    drafts as without; /slots and /metrics count the drafts."""
    import json
    import threading
    import urllib.request
    bodies = [dict(prompt=PROMPT, max_tokens=64, temperature=0),
              dict(prompt=PROMPT[40:], max_tokens=64, temperature=0.8, seed=11)]
    texts = {}
    for name, extra in (("plain", ()), ("spec", ("--spec-type", "ngram", "--draft-max", "8"))):
        p, base = _serve(*extra)
        try:
            out = [None, None]

            def one(i):
                out[i] = _post(base + "/v1/completions", bodies[i])["choices"][0]["text"]

            ts = [threading.Thread(target=one, args=(i,)) for i in range(2)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            texts[name] = out
            if name == "spec":
                with urllib.request.urlopen(base + "/slots", timeout=60) as r:
                    slots = json.loads(r.read())
                assert all(s["speculative"] for s in slots)
                nt = [s["next_token"][0] for s in slots]
                assert sum(n["n_draft_total"] for n in nt) > 0
                assert sum(n["n_draft_accepted"] for n in nt) > 0
                with urllib.request.urlopen(base + "/metrics", timeout=60) as r:
                    metrics = r.read().decode()
                drafted = float(re.search(r"^vkformer:draft_tokens_total (\S+)$", metrics,
                                          re.M).group(1))
                accepted = float(re.search(r"^vkformer:draft_tokens_accepted_total (\S+)$",
                                           metrics, re.M).group(1))
                assert drafted >= accepted > 0
        finally:
            p.terminate()
            p.wait(timeout=60)
    assert texts["spec"] == texts["plain"]
    r = subprocess.run([str(CLI), "serve", "-m", str(KJV), "--spec-type", "ngram",
                        "--draft-max", "0"], capture_output=True, timeout=60, check=False)
    assert r.returncode == 2 and b"--draft-max 0" in r.stderr


def test_chat_two_turns_same_text():
    """`vkformer chat` with n-gram lookup and with a draft model: the answers of two turns (the
    second reusing the cache the first left) are those without speculation."""
    turns = ("And God said, Let there be light: and there was light. And God said\n"
             "And God said, Let there be\n")
    outs = []
    for extra in ([], ["--spec-type", "ngram"], ["-md", str(KJV)]):
        r = subprocess.run([str(CLI), "chat", "-m", str(KJV), "--temp", "0", "-n", "60",
                            "--show-timings", *extra], input=turns.encode(), capture_output=True,
                           timeout=300, check=False)
        assert r.returncode == 0, r.stderr
        outs.append(r.stdout)
        if extra:
            m = re.findall(rb"\[speculative: drafted (\d+), accepted (\d+)\]", r.stderr)
            assert len(m) == 2 and sum(int(a) for _, a in m) > 0, r.stderr
    assert outs[1] == outs[0] and outs[2] == outs[0]
