"""A script written for llama-cpp-python runs unchanged: `llama_cpp` resolves to vkformer
(a one-line alias module on the path), and its results are checked against vkformer's own."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import vkformer

from conftest import KJV, REPO

HERE = os.path.dirname(__file__)


def test_llama_cpp_script_runs_unchanged(tmp_path):
    (tmp_path / "llama_cpp.py").write_text("from vkformer import *  # noqa: F401,F403\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(REPO / "python" / "src")])
    r = subprocess.run([sys.executable, os.path.join(HERE, "scripts", "llama_cpp_example.py"),
                        str(KJV)], capture_output=True, text=True, env=env, timeout=180)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    # the same calls here, on vkformer directly: the same answers (seed 1337 on the object)
    with vkformer.Llama(str(KJV), n_ctx=256, seed=1337, verbose=False) as llm:
        q = "Q: Name the planets in the solar system? A: "
        want = llm(q, max_tokens=32, stop=["Q:", "\n"])["choices"][0]["text"]
        assert got["completion"] == q + want
        assert got["tokens"] == llm.tokenize(b"Hello, world!")
        assert got["streamed"] == llm("The quick brown fox", max_tokens=16)["choices"][0]["text"]
        assert got["n_ctx"] == 256 and got["n_vocab"] == llm.n_vocab()
        assert (got["eos"], got["bos"]) == (llm.token_eos(), llm.token_bos())
        g = vkformer.LlamaGrammar.from_string('root ::= ("Yea" | "Nay") ", " [a-z]+ "."')
        assert got["constrained"] == llm("And he said, ", grammar=g,
                                         max_tokens=24)["choices"][0]["text"]
        assert re.fullmatch(r"(Yea|Nay), [a-z]+\.", got["constrained"])
        llm.reset()
        llm.eval(llm.tokenize(b"In the beginning"))
        assert got["sampled"] == int(np.argmax(llm.logits()))
    assert got["chat_finish"] in ("stop", "length") and isinstance(got["chat"], str)
