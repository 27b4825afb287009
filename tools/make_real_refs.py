#!/usr/bin/env python3
"""Writes tests/data/real/<model>/: llama.cpp's references for the real models of `vkformer pull`
(src/cli/pull_models.c), and the chat-template renders of jinja2 as transformers configures it.

    python3 tools/make_real_refs.py --llama-src DIR --llama-build DIR [--vkformer build/vkformer]

Needs a llama.cpp build at commit 0c1e570 (the version llama-cpp-python 0.3.36 vendors; a CPU
build with its default GGML_NATIVE, libllama.so in BUILD/bin) and jinja2 (3.1.6). The models come
from the cache through `vkformer pull`. CI only reads what this writes.

Per model:
  cases.json   `vkformer verify`'s llama.cpp format (tests/test_models_*.c, fixtures/README.md):
               per prompt, llama.cpp's tokens, the logits of every prompt position, then
               N_GREEDY greedy steps of one token each and their logits (tools/real_refs/
               llama_refs.c: CPU backend, 1 thread, F32 KV cache, flash attention off). A real
               vocabulary's full rows would not fit the fixture budget, so each case keeps the
               entries "logit_ids" of every row: every STRIDE-th id of the vocabulary plus the
               reference's top 16 of every row (so each row's argmax is among them).
               "pull" names the registry entry; "model" is the GGUF's file name in the cache;
               "ggml_isa" the SIMD kernels llama.cpp's CPU build ran (avx2, avx512).
  tokenize.json  texts and llama.cpp's ids (add_special + parse_special, and neither).
  templates.json conversations and the model's chat template (tokenizer.chat_template of the
               GGUF, i.e. its tokenizer_config.json's) rendered by jinja2 with transformers'
               settings (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks,
               loopcontrols, its tojson), with and without the generation prompt.
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from array import array
from heapq import nlargest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "data", "real")

MODELS = ["smollm2-135m", "gemma3-270m"]
N_GREEDY = 8
TARGET_IDS = 2048  # sampled vocabulary entries per row (the stride follows the vocabulary)
TOP = 16

PROMPTS = [
    ("fox", "The quick brown fox jumps over the lazy dog."),
    ("capital", "The capital of France is"),
    ("mixed", "Vulkan 1.3 runs on AMD, Intel & NVIDIA \u2014 42 tokens/s! def f(x):\n    return x * 2"),
]

TOKENIZE_TEXTS = [
    "Hello world",
    " leading space and  double  spaces",
    "Numbers: 1234567890, 3.14159, -42",
    "Caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00fcber \u00df",
    "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8 \u4e2d\u6587 \ud55c\uad6d\uc5b4",
    "emoji \U0001f642\U0001f1eb\U0001f1f7 and \u2014 dashes \u2013",
    "tabs\tand\nnewlines\n\n\nend",
    "    indented code\n        more();",
    "<|im_start|>user\nHi<|im_end|>\n<start_of_turn>model\n",
    "URL https://example.com/a?b=c&d=e#f",
]

CONVERSATIONS = [
    ("user_only", [{"role": "user", "content": "What is the capital of France?"}]),
    ("system_user", [{"role": "system", "content": "You are a terse assistant."},
                     {"role": "user", "content": "Name three colours."}]),
    ("multi_turn", [{"role": "user", "content": "Hi!"},
                    {"role": "assistant", "content": "Hello! How can I help?"},
                    {"role": "user", "content": "Tell me a joke about \u00e9clairs."}]),
]


# ------------------------------------------------------------------ a minimal GGUF key reader

def gguf_meta(path):
    """A GGUF's scalar and string metadata, and tokenizer.ggml.tokens (other arrays skipped)."""
    with open(path, "rb") as f:
        head = f.read(64 << 20)
    if head[:4] != b"GGUF":
        raise SystemExit(f"{path}: not a GGUF")
    n_kv = struct.unpack_from("<Q", head, 16)[0]
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    fmt = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
    vals, tokens, o = {}, [], 24

    def rstr(o):
        n = struct.unpack_from("<Q", head, o)[0]
        return head[o + 8:o + 8 + n].decode("utf-8", "replace"), o + 8 + n

    for _ in range(n_kv):
        k, o = rstr(o)
        t = struct.unpack_from("<I", head, o)[0]
        o += 4
        if t == 8:
            vals[k], o = rstr(o)
        elif t == 9:
            at, n = struct.unpack_from("<IQ", head, o)
            o += 12
            if at == 8:
                arr = []
                for _ in range(n):
                    s, o = rstr(o)
                    arr.append(s)
                if k == "tokenizer.ggml.tokens":
                    tokens = arr
            else:
                o += n * sizes[at]
        else:
            vals[k] = struct.unpack_from("<" + fmt[t], head, o)[0]
            o += sizes[t]
    return vals, tokens


# ------------------------------------------------------------------ jinja2 as transformers

def transformers_env():
    import datetime

    import jinja2  # noqa: F401
    from jinja2.exceptions import TemplateError
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message):
        raise TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                          sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.datetime.now().strftime(fmt)
    return env


# ------------------------------------------------------------------ main

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llama-src", required=True, help="llama.cpp source at commit 0c1e570")
    ap.add_argument("--llama-build", required=True, help="its build (libllama.so in BIN/bin)")
    ap.add_argument("--vkformer", default=os.path.join(ROOT, "build", "vkformer"))
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="real_refs.")
    exe = os.path.join(tmp, "llama_refs")
    lib = os.path.join(args.llama_build, "bin")
    subprocess.run(["cc", "-O2", os.path.join(ROOT, "tools", "real_refs", "llama_refs.c"),
                    "-I" + os.path.join(args.llama_src, "include"),
                    "-I" + os.path.join(args.llama_src, "ggml", "include"),
                    "-L" + lib, "-lllama", "-Wl,-rpath," + lib, "-o", exe], check=True)
    env = transformers_env()
    # llama.cpp's CPU sums depend on the ISA its GGML_NATIVE build chose (vkformer's ggml mode
    # reproduces AVX-512's): recorded with each case
    flags = open("/proc/cpuinfo").read().split()
    isa = "avx512" if "avx512f" in flags else "avx2" if "avx2" in flags else "other"

    for name in MODELS:
        path = subprocess.run([args.vkformer, "pull", "-q", name], check=True, capture_output=True,
                              text=True).stdout.strip()
        d = os.path.join(OUT, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        cases = []
        for pname, prompt in PROMPTS:
            pf = os.path.join(tmp, "prompt.txt")
            with open(pf, "w", encoding="utf-8") as f:
                f.write(prompt)
            rb, rj = os.path.join(tmp, "r.bin"), os.path.join(tmp, "r.json")
            subprocess.run([exe, path, pf, str(N_GREEDY), rb, rj], check=True)
            ref = json.load(open(rj))
            V, n = ref["n_vocab"], len(ref["tokens"])
            flat = array("f")
            with open(rb, "rb") as f:
                flat.frombytes(f.read())
            if sys.byteorder != "little":
                flat.byteswap()
            rows = [flat[i * V:(i + 1) * V] for i in range(n + N_GREEDY)]
            stride = max(1, V // TARGET_IDS)
            ids = set(range(0, V, stride))
            for r in rows:
                ids.update(nlargest(TOP, range(V), key=r.__getitem__))
            ids = sorted(ids)
            fp, fg = f"{pname}.prompt.f32", f"{pname}.greedy.f32"
            for fname, part in ((fp, rows[:n]), (fg, rows[n:])):
                sub = array("f", (r[i] for r in part for i in ids))
                if sys.byteorder != "little":
                    sub.byteswap()
                with open(os.path.join(d, fname), "wb") as f:
                    sub.tofile(f)
            cases.append({"name": f"{name}/{pname}", "pull": name, "model": os.path.basename(path),
                          "prompt": prompt, "tokens": ref["tokens"],
                          "n_vocab": V, "ggml_isa": isa, "logit_ids": ids, "prompt_logits": fp,
                          "greedy_tokens": ref["greedy_tokens"], "greedy_logits": fg})
        with open(os.path.join(d, "cases.json"), "w") as f:
            json.dump(cases, f, indent=0)
            f.write("\n")

        tf = os.path.join(tmp, "texts.bin")
        with open(tf, "wb") as f:
            f.write(b"\0".join(t.encode("utf-8") for t in TOKENIZE_TEXTS))
        tj = os.path.join(tmp, "tok.json")
        subprocess.run([exe, "--tokenize", path, tf, tj], check=True)
        toks = json.load(open(tj))
        with open(os.path.join(d, "tokenize.json"), "w") as f:
            json.dump([{"text": t, **r} for t, r in zip(TOKENIZE_TEXTS, toks)], f, ensure_ascii=False, indent=0)
            f.write("\n")

        meta, vocab = gguf_meta(path)
        tmpl = meta.get("tokenizer.chat_template")
        renders = []
        if tmpl:
            bos = vocab[meta["tokenizer.ggml.bos_token_id"]]
            eos = vocab[meta["tokenizer.ggml.eos_token_id"]]
            t = env.from_string(tmpl)
            for cname, msgs in CONVERSATIONS:
                for gen in (True, False):
                    renders.append({"name": cname, "messages": msgs, "add_generation_prompt": gen,
                                    "bos_token": bos, "eos_token": eos,
                                    "expected": t.render(messages=msgs, add_generation_prompt=gen,
                                                         bos_token=bos, eos_token=eos, tools=None,
                                                         documents=None)})
        with open(os.path.join(d, "templates.json"), "w") as f:
            json.dump({"chat_template": tmpl, "renders": renders}, f, ensure_ascii=False, indent=1)
            f.write("\n")
        size = sum(os.path.getsize(os.path.join(d, x)) for x in os.listdir(d))
        print(f"{name}: {len(cases)} cases, {len(renders)} renders, {size / 1e6:.2f} MB -> {d}")
    shutil.rmtree(tmp)


if __name__ == "__main__":
    sys.exit(main())
