"""llama-tiny: a tiny random-weight llama in four weight types (F32, F16, Q8_0, Q4_0 of the same
weights) with llama.cpp's logits for three prompts (12 cases).

    python3 tools/refs/make_llama_tiny.py --out DIR

Model (as the suite's tests expect it): llama, 4 layers, d_model 256, 8 heads, 4 KV heads (head_dim
32), FFN 768 (SwiGLU), the 512-token vocabulary of tools/refs/common.py, context 512, RoPE base
10000 over all 32 dims (normal mode), RMSNorm eps 1e-5, untied output. Weights (seed 1234):
token_embd ~ N(0,1); q, k, v, o, gate, up, output ~ N(0, 1/256); down ~ N(0, 1/768); RMSNorm
weights ~ 1 + N(0, 0.1^2). In f16/q8_0/q4_0 every 2-D tensor (token_embd and output included)
has that type, quantized by the pinned gguf-py (ggml's reference quantizers); norms stay F32.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

SEED = 1234
L, D, H, HKV, FF, V, CTX = 4, 256, 8, 4, 768, 512, 512
HD = D // H
TYPES = [("f32", 0), ("f16", 1), ("q8_0", 7), ("q4_0", 2)]  # name, general.file_type


def weights():
    rng = np.random.default_rng(SEED)
    mat = lambda rows, cols, var: (rng.standard_normal((rows, cols)) * np.sqrt(var)).astype(np.float32)  # noqa: E731
    norm = lambda n: (1 + 0.1 * rng.standard_normal(n)).astype(np.float32)  # noqa: E731
    t = {"token_embd.weight": rng.standard_normal((V, D)).astype(np.float32)}
    for il in range(L):
        p = f"blk.{il}."
        t[p + "attn_norm.weight"] = norm(D)
        t[p + "attn_q.weight"] = mat(D, D, 1 / D)
        t[p + "attn_k.weight"] = mat(HKV * HD, D, 1 / D)
        t[p + "attn_v.weight"] = mat(HKV * HD, D, 1 / D)
        t[p + "attn_output.weight"] = mat(D, D, 1 / D)
        t[p + "ffn_norm.weight"] = norm(D)
        t[p + "ffn_gate.weight"] = mat(FF, D, 1 / D)
        t[p + "ffn_up.weight"] = mat(FF, D, 1 / D)
        t[p + "ffn_down.weight"] = mat(D, FF, 1 / FF)
    t["output_norm.weight"] = norm(D)
    t["output.weight"] = mat(V, D, 1 / D)
    return t


def convert(t, kind):
    """The tensors in weight type kind (2-D tensors only) and their raw GGML types."""
    g = common.gguf()
    if kind == "f32":
        return t, {}
    out, raw = {}, {}
    for name, a in t.items():
        if a.ndim != 2:
            out[name] = a
        elif kind == "f16":
            out[name] = a.astype(np.float16)
        else:
            q = {"q8_0": g.GGMLQuantizationType.Q8_0, "q4_0": g.GGMLQuantizationType.Q4_0}[kind]
            out[name], raw[name] = g.quants.quantize(a, q), q
    return out, raw


def fill(file_type):
    return lambda w: common.add_llama_hparams(w, "llama-tiny", CTX, D, L, FF, H, HKV, HD, V, file_type)


def main():
    out = common.out_dir(__doc__)
    t = weights()
    cases, stats = [], []
    for kind, ft in TYPES:
        stem = f"llama-tiny-{kind}"
        tensors, raw = convert(t, kind)
        common.write_gguf(os.path.join(out, stem + ".gguf"), "llama", fill(ft), tensors, raw)
        for pid, text in common.PROMPTS.items():
            c, lg = common.write_case(out, stem, pid, text, CTX)
            cases.append(c)
            stats.append((c["name"], len(c["tokens"]), float(np.abs(lg).max()), common.min_gap(lg[len(c["tokens"]) - 1:-1])))
            print(f"{c['name']}: {len(c['tokens'])} tokens, greedy {c['greedy_tokens'][:6]}...", flush=True)
    common.write_cases(out, cases)
    rows = "\n".join(f"| `{n}` | {k} | +-{m:.2f} | {g:.4f} |" for n, k, m, g in stats)
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(f"""# llama-tiny: one tiny random llama in F32, F16, Q8_0 and Q4_0, with llama.cpp's logits

{common.provenance("make_llama_tiny.py")}
{__doc__.split(chr(10), 4)[4]}
Files `llama-tiny-{{f32,f16,q8_0,q4_0}}.gguf`; `cases.json` (12 cases: each file with the prompts
`fox`, `genesis`, `mixed`) in the format of the suite's llama.cpp cases: name, model, prompt, add_bos,
tokens, n_vocab, prompt_logits (float32 LE `[len(tokens)][n_vocab]`), greedy_tokens (24),
greedy_logits (float32 LE `[24][n_vocab]`, row i after feeding greedy_tokens[i]), llama_cpp, ggml_isa.

Compare a quantized file only with its own cases: llama.cpp quantizes the matmul activations to q8_0
for Q8_0/Q4_0 weights and to f16 for F16 weights, so those logits differ from exact math; teacher-force
(`tokens + greedy_tokens`) where the greedy gap is below that noise.

| case | tokens | logits range | min top-1/top-2 gap of the greedy rows |
|---|---|---|---|
{rows}
""")


if __name__ == "__main__":
    main()
