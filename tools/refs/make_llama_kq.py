"""llama-kq: one F32 llama whose every matrix row is 256 long, quantized by the pinned llama.cpp to
14 files, with llama.cpp's logits for the prompts fox and mixed on every file (30 cases).

    python3 tools/refs/make_llama_kq.py --out DIR

Model: llama, 2 layers, d_model 256, 4 heads of 64, 2 KV heads, FFN 256 (SwiGLU), the 512-token
vocabulary of tools/refs/common.py, context 512, RoPE base 10000 (normal mode, all 64 dims),
RMSNorm eps 1e-5, untied output. Weights (seed 4242): token_embd ~ N(0,1); q, k, v, o, gate, up,
output ~ N(0, 1/256); ffn_down ~ N(0, 1/256); norm weights ~ 1 + N(0, 0.1^2).
Quantization: llama.cpp's llama_model_quantize with its default parameters and 1 thread (what
`llama-quantize SRC DST TYPE 1` runs: no importance matrix, no overrides), so llama.cpp's own
per-tensor type rules apply (output.weight at Q6_K, attn_v / ffn_down raised in some layers, ...).
MXFP4 twice: MXFP4_MOE by its rules (a dense model has no expert tensors, so every matrix is Q8_0)
and with --pure (llama-quantize's flag: every matrix MXFP4, the token embedding and output too),
the only way llama-quantize writes MXFP4 blocks into a dense model. BF16 (ftype 32): the one weight
type no other set holds, so that the ggml-activations mode's avx2 target is checked on all of them.
Each file is quantized twice and required byte-identical.
"""
import filecmp
import json
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import llama_cpp_build  # noqa: E402

SEED = 4242
L, D, H, HKV, FF, V, CTX = 2, 256, 4, 2, 256, 512, 512
HD = D // H
# file suffix, llama-quantize type name (and flag), enum llama_ftype (= general.file_type)
TYPES = [("q4_k_m", "Q4_K_M", 15), ("q5_k_m", "Q5_K_M", 17), ("q6_k", "Q6_K", 18), ("q3_k_m", "Q3_K_M", 12),
         ("q2_k", "Q2_K", 10), ("q4_k_s", "Q4_K_S", 14), ("q4_1", "Q4_1", 3), ("q5_0", "Q5_0", 8),
         ("q5_1", "Q5_1", 9), ("iq4_nl", "IQ4_NL", 25), ("iq4_xs", "IQ4_XS", 30),
         ("mxfp4_moe", "MXFP4_MOE", 38), ("mxfp4", "MXFP4_MOE --pure", 38), ("bf16", "BF16", 32)]
PROMPT_IDS = ("fox", "mixed")


def weights():
    rng = np.random.default_rng(SEED)
    mat = lambda rows, cols: (rng.standard_normal((rows, cols)) / np.sqrt(cols)).astype(np.float32)  # noqa: E731
    norm = lambda n: (1 + 0.1 * rng.standard_normal(n)).astype(np.float32)  # noqa: E731
    t = {"token_embd.weight": rng.standard_normal((V, D)).astype(np.float32)}
    for il in range(L):
        p = f"blk.{il}."
        t[p + "attn_norm.weight"] = norm(D)
        t[p + "attn_q.weight"] = mat(D, D)
        t[p + "attn_k.weight"] = mat(HKV * HD, D)
        t[p + "attn_v.weight"] = mat(HKV * HD, D)
        t[p + "attn_output.weight"] = mat(D, D)
        t[p + "ffn_norm.weight"] = norm(D)
        t[p + "ffn_gate.weight"] = mat(FF, D)
        t[p + "ffn_up.weight"] = mat(FF, D)
        t[p + "ffn_down.weight"] = mat(D, FF)
    t["output_norm.weight"] = norm(D)
    t["output.weight"] = mat(V, D)
    return t


def fill(w):
    common.add_llama_hparams(w, "llama-kq", CTX, D, L, FF, H, HKV, HD, V, 0)


def tensor_types(path):
    g = common.gguf()
    r = g.GGUFReader(path)
    return {"file_type": int(r.fields["general.file_type"].contents()),
            "tensors": [{"name": t.name, "type": t.tensor_type.name, "ne": [int(x) for x in t.shape]}
                        for t in r.tensors]}


def main():
    out = common.out_dir(__doc__)
    src = os.path.join(out, "llama-kq-f32.gguf")
    common.write_gguf(src, "llama", fill, weights())
    ref = llama_cpp_build.runner(common.ISA)
    files = [("llama-kq-f32", "(source)", 0)] + [(f"llama-kq-{s}", n, ft) for s, n, ft in TYPES]
    with tempfile.TemporaryDirectory() as tmp:
        for stem, _, ft in files[1:]:
            dst = os.path.join(out, stem + ".gguf")
            pure = stem.endswith("-mxfp4")  # the --pure file (see TYPES)
            ref.quantize(src, dst, ft, pure=pure)
            again = os.path.join(tmp, stem + ".gguf")
            ref.quantize(src, again, ft, pure=pure)
            if not filecmp.cmp(dst, again, shallow=False):
                raise SystemExit(f"refs: {stem}: two quantizations differ")
    types = {stem + ".gguf": tensor_types(os.path.join(out, stem + ".gguf")) for stem, _, _ in files}
    with open(os.path.join(out, "tensor_types.json"), "w") as f:
        json.dump(types, f, indent=1)
        f.write("\n")
    cases = []
    for stem, _, _ in files:
        for pid in PROMPT_IDS:
            c, _ = common.write_case(out, stem, pid, common.PROMPTS[pid], CTX)
            cases.append(c)
            print(f"{c['name']}: {len(c['tokens'])} tokens, greedy {c['greedy_tokens'][:6]}...", flush=True)
    common.write_cases(out, cases)
    sizes = "\n".join(f"| `{s}.gguf` | {n} | {ft} | {os.path.getsize(os.path.join(out, s + '.gguf')) / 1e6:.2f} MB |"
                      for s, n, ft in files)
    head = "| tensor | ne | " + " | ".join(s for s, _, _ in TYPES) + " |\n|---|---|" + "---|" * len(TYPES) + "\n"
    body = ""
    for i, t in enumerate(types["llama-kq-f32.gguf"]["tensors"]):
        body += (f"| {t['name']} | {'x'.join(map(str, t['ne']))} | "
                 + " | ".join(types[f"llama-kq-{s}.gguf"]["tensors"][i]["type"] for s, _, _ in TYPES) + " |\n")
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(f"""# llama-kq: one F32 llama quantized by llama.cpp to 14 files

{common.provenance("make_llama_kq.py")}- n_ctx = {CTX} (the model's context).
{__doc__.split(chr(10), 4)[4]}
Every row is exactly 256 long, i.e. one K-quant super-block per row; rows of several super-blocks are
not covered here (cover them in op tests). The F32 source is included, so a quantizer can be checked
for bit-identical files against these. `tensor_types.json` lists, per file, every tensor with its GGML
type and ggml `ne`. `cases.json`: the fields of the suite's llama.cpp cases (name, model, prompt,
add_bos, tokens, n_vocab, prompt_logits, greedy_tokens, greedy_logits, llama_cpp, ggml_isa).

llama.cpp quantizes the matmul activations (q8_K for K-quant and IQ4_XS weights, q8_0 for Q5_0,
IQ4_NL, MXFP4 and Q8_0, q8_1 for Q4_1 and Q5_1): compare each file only with its own cases, and teacher-force where
the greedy gap is below that noise.

## Files

| file | llama-quantize type | general.file_type | size |
|---|---|---|---|
{sizes}

## Tensor types per file

{head}{body}""")


if __name__ == "__main__":
    main()
