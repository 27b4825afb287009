"""llama-perplexity's perplexity of a text, computed through the pinned llama.cpp (libllama built
by tools/refs/llama_cpp_build.py, driven by tools/llamacpp_ref.py) and numpy: the reference
`vkformer perplexity` is checked against (tests/tools/test_perplexity.py) and the llama.cpp
column of bench/RESULTS.md.

The procedure is perplexity() of llama.cpp's tools/perplexity/perplexity.cpp (0c1e570): the text
tokenized once (add_special = true, parse_special = false), cut into chunks of n_ctx tokens (the
tail dropped), each chunk evaluated from an empty cache with its first token replaced by BOS
where the vocabulary adds one, the rows n_ctx/2 .. n_ctx-2 scored against the token after each;
PPL = exp(mean NLL), error = PPL * sqrt((mean(NLL^2) - mean(NLL)^2) / (count - 1)). The logits
come from llamacpp_ref.logits (CPU backend, one thread, F32 K/V cache, flash attention off, the
whole chunk in one llama_decode), the log-softmax in float64. -ctk / -ctv choose the K and V
cache types by llama.cpp's names (llama-perplexity's flags); a type other than f32 turns flash
attention on (-fa: llama.cpp needs it for a quantized V cache, and one setting for every type
keeps the kernels the same across a comparison). For a quantized type at a head_dim that is a
multiple of 64, libllama rotates q, k and v by a Walsh-Hadamard matrix unless the environment
has LLAMA_ATTN_ROT_DISABLE=1 (read by libllama itself).

    python3 tools/perplexity_ref.py MODEL.gguf TEXT [-c 512] [--chunks N] [-ctk T] [-ctv T]
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "refs"))
import llama_cpp_build  # noqa: E402


def add_bos(ref, model_path):
    """llama_vocab_get_add_bos and llama_vocab_bos of the model's vocabulary"""
    L = ref.L
    ref._quiet()
    mp = L.llama_model_default_params()
    mp.vocab_only = True
    m = L.llama_model_load_from_file(model_path.encode(), mp)
    if not m:
        sys.exit(f"llama.cpp cannot load {model_path}")
    v = L.llama_model_get_vocab(m)
    r = bool(L.llama_vocab_get_add_bos(v)), int(L.llama_vocab_bos(v))
    L.llama_model_free(m)
    return r


# llama.cpp's KV cache type names -> ggml_type (ggml.h)
CACHE_TYPES = {"f32": 0, "f16": 1, "bf16": 30, "q8_0": 8, "q4_0": 2, "q4_1": 3, "iq4_nl": 20,
               "q5_0": 6, "q5_1": 7}


def perplexity(model_path, text, n_ctx=512, n_chunks=-1, ctk="f32", ctv="f32", fa=None):
    ref = llama_cpp_build.runner("avx2")
    tokens = ref.tokenize(model_path, text, add_special=True, parse_special=False)
    if len(tokens) < 2 * n_ctx:
        sys.exit(f"the text tokenizes to {len(tokens)} tokens; -c {n_ctx} needs {2 * n_ctx}")
    n_chunk = len(tokens) // n_ctx
    if n_chunks >= 0:
        n_chunk = min(n_chunk, n_chunks)
    bos, bos_id = add_bos(ref, model_path)
    if fa is None:
        fa = ctk != "f32" or ctv != "f32"
    first = n_ctx // 2
    nll = []
    running = []
    for c in range(n_chunk):
        chunk = list(tokens[c * n_ctx:(c + 1) * n_ctx])
        if bos:
            chunk[0] = bos_id
        logits, _ = ref.logits(model_path, chunk, n_greedy=0, n_ctx=n_ctx,
                               type_k=CACHE_TYPES[ctk], type_v=CACHE_TYPES[ctv], flash_attn=fa)
        rows = logits[first:n_ctx - 1].astype(np.float64)
        mx = rows.max(axis=1, keepdims=True)
        lse = np.log(np.exp(rows - mx).sum(axis=1)) + mx[:, 0]
        targets = np.array(tokens[c * n_ctx + first + 1:(c + 1) * n_ctx])
        nll.extend((lse - rows[np.arange(len(targets)), targets]).tolist())
        running.append(float(np.exp(np.mean(nll))))
    v = np.array(nll)
    ppl = float(np.exp(v.mean()))
    var = float((v * v).mean() - v.mean() ** 2)
    err = ppl * float(np.sqrt(var / (len(v) - 1))) if var > 0 else 0.0
    return {"ppl": ppl, "ppl_error": err, "n_tokens": len(tokens), "n_chunks": n_chunk,
            "n_scored": len(v), "add_bos": bos, "ctk": ctk, "ctv": ctv, "flash_attn": fa, "chunks": running, "tokens": tokens}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("text")
    ap.add_argument("-c", type=int, default=512)
    ap.add_argument("--chunks", type=int, default=-1)
    ap.add_argument("-ctk", "--cache-type-k", dest="ctk", default="f32", choices=CACHE_TYPES)
    ap.add_argument("-ctv", "--cache-type-v", dest="ctv", default="f32", choices=CACHE_TYPES)
    ap.add_argument("-fa", "--flash-attn", dest="fa", choices=("on", "off"), default=None,
                    help="flash attention (default: on for any type but f32)")
    a = ap.parse_args()
    with open(a.text, encoding="utf-8") as f:
        r = perplexity(a.model, f.read(), a.c, a.chunks, a.ctk, a.ctv,
                       None if a.fa is None else a.fa == "on")
    del r["tokens"]
    print(json.dumps(r))


if __name__ == "__main__":
    main()
