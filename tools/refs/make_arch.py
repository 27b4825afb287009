"""arch: tiny random-weight models of seven llama.cpp architectures (llama with Llama-3 rope_freqs,
qwen2, qwen3, gemma2, gemma3, phi3, granite) with llama.cpp's logits for the prompts fox and mixed
(14 cases).

    python3 tools/refs/make_arch.py --out DIR

Every model uses the 512-token vocabulary of tools/refs/common.py; the models differ in their
blocks and metadata only. The semantics each one tests are in the README this writes.
"""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

V = 512
N_CTX = 4096  # llama-cli's default -c: phi3 then runs on its short rope factors

# name: (GGUF arch, general.name, layers, d_model, heads, head_dim, KV heads, FFN, context_length,
#        RMSNorm eps, seed, tied)
MODELS = {
    "llama3": ("llama", "Tiny Random Llama 3", 2, 64, 2, 32, 1, 192, 131072, 1e-5, 301, True),
    "qwen2": ("qwen2", "Tiny Random Qwen2", 2, 64, 4, 16, 2, 160, 32768, 1e-6, 302, True),
    "qwen3": ("qwen3", "Tiny Random Qwen3", 2, 64, 4, 32, 2, 128, 40960, 1e-6, 303, False),
    "gemma2": ("gemma2", "Tiny Random Gemma 2", 4, 64, 2, 48, 1, 128, 8192, 1e-6, 314, True),
    "gemma3": ("gemma3", "Tiny Random Gemma 3", 6, 64, 4, 32, 1, 96, 131072, 1e-6, 332, True),
    "phi3": ("phi3", "Tiny Random Phi 3", 2, 64, 2, 32, 2, 128, 131072, 1e-5, 306, False),
    "granite": ("granite", "Tiny Random Granite", 2, 64, 2, 32, 1, 128, 4096, 1e-6, 307, False),
}
PROMPT_IDS = ("fox", "mixed")
SLIDING_WINDOW = 8
GEMMA2_SOFTCAP = (4.0, 10.0)  # attention, final: smaller than the real 50 / 30 so that they matter
# granite's multipliers (Granite 3.0 2B: 12, 0.22, 0.015625, 8), chosen so that each one shows:
# the attention scale far from 1/sqrt(head_dim) = 0.177, logits divided by 2.5
GRANITE_SCALES = {"embedding": 6.0, "residual": 0.25, "attention": 0.0625, "logit": 2.5}


def llama3_rope_freqs(base, dim, factor=32.0, low=1.0, high=4.0, orig=8192):
    """What llama.cpp's converter writes as rope_freqs.weight for rope_type llama3 (its float32
    tensor arithmetic, here in numpy float32 scalars)."""
    f = np.float32
    freqs = f(1.0) / (f(base) ** (np.arange(0, dim, 2, dtype=np.float32) / f(dim)))
    out = []
    for freq in freqs:
        wavelen = f(2 * math.pi) / freq
        if wavelen < orig / high:
            out.append(1.0)
        elif wavelen > orig / low:
            out.append(factor)
        else:
            smooth = (f(orig) / wavelen - f(low)) / f(high - low)
            out.append(f(1) / ((f(1) - smooth) / f(factor) + smooth))
    return np.array(out, dtype=np.float32)


def weights(key):
    arch, _, L, d, H, hd, HKV, FF, _, _, seed, tied = MODELS[key]
    rng = np.random.default_rng(seed)
    f32 = lambda a: a.astype(np.float32)  # noqa: E731
    mat = lambda rows, cols, fan=None: f32(rng.standard_normal((rows, cols)) / np.sqrt(fan or cols))  # noqa: E731
    norm = lambda n: f32(1 + 0.1 * rng.standard_normal(n))  # noqa: E731
    gemma = arch.startswith("gemma")
    s, k = (0.15, 10.0) if gemma else (1.0, 1.5)
    t = {}
    if key == "llama3":
        t["rope_freqs.weight"] = llama3_rope_freqs(500000.0, hd)
    if tied:
        t["token_embd.weight"] = f32(rng.standard_normal((V, d)) * s / np.sqrt(d))
    elif arch == "granite":  # N(0, 1/d): times the embedding scale 6, O(1)
        t["token_embd.weight"] = f32(rng.standard_normal((V, d)) / np.sqrt(d))
    else:
        t["token_embd.weight"] = f32(rng.standard_normal((V, d)))
    qw, kvw = H * hd, HKV * hd
    for il in range(L):
        p = f"blk.{il}."
        t[p + "attn_norm.weight"] = norm(d)
        if arch == "phi3":
            t[p + "attn_qkv.weight"] = mat(qw + 2 * kvw, d)
        else:
            t[p + "attn_q.weight"] = mat(qw, d)
            t[p + "attn_k.weight"] = mat(kvw, d)
            t[p + "attn_v.weight"] = mat(kvw, d)
        if arch == "qwen2":
            t[p + "attn_q.bias"] = f32(0.5 * rng.standard_normal(qw))
            t[p + "attn_k.bias"] = f32(0.5 * rng.standard_normal(kvw))
            t[p + "attn_v.bias"] = f32(0.1 * rng.standard_normal(kvw))
        if arch in ("qwen3", "gemma3"):
            t[p + "attn_q_norm.weight"] = norm(hd)
            t[p + "attn_k_norm.weight"] = norm(hd)
        t[p + "attn_output.weight"] = mat(d, qw)
        if gemma:
            t[p + "post_attention_norm.weight"] = norm(d)
        t[p + "ffn_norm.weight"] = norm(d)
        if arch == "phi3":
            t[p + "ffn_up.weight"] = mat(2 * FF, d)
        else:
            t[p + "ffn_gate.weight"] = mat(FF, d)
            t[p + "ffn_up.weight"] = mat(FF, d)
        t[p + "ffn_down.weight"] = mat(d, FF)
        if gemma:
            t[p + "post_ffw_norm.weight"] = norm(d)
    t["output_norm.weight"] = f32(k * norm(d)) if tied else norm(d)
    if not tied:
        t["output.weight"] = mat(V, d)
    if arch == "phi3":
        t["rope_factors_long.weight"] = f32(np.sort(rng.uniform(10, 40, hd // 2)))
        t["rope_factors_short.weight"] = f32(np.sort(rng.uniform(1, 4, hd // 2)))
    return t


def fill(key):
    arch, name, L, d, H, hd, HKV, FF, ctx, eps, _, _ = MODELS[key]

    def f(w):
        w.add_name(name)
        w.add_context_length(ctx)
        w.add_embedding_length(d)
        w.add_block_count(L)
        w.add_feed_forward_length(FF)
        w.add_head_count(H)
        w.add_head_count_kv(HKV)
        w.add_layer_norm_rms_eps(eps)
        if arch == "llama":
            w.add_rope_freq_base(500000.0)
            w.add_vocab_size(V)
            w.add_rope_dimension_count(hd)
        elif arch == "qwen2":
            w.add_rope_freq_base(1e6)
        elif arch == "qwen3":
            w.add_rope_freq_base(1e6)
            w.add_key_length(hd)
            w.add_value_length(hd)
        elif arch == "gemma2":
            w.add_key_length(hd)
            w.add_value_length(hd)
            w.add_attn_logit_softcapping(GEMMA2_SOFTCAP[0])
            w.add_final_logit_softcapping(GEMMA2_SOFTCAP[1])
            w.add_sliding_window(SLIDING_WINDOW)
        elif arch == "gemma3":
            w.add_rope_freq_base(1e6)
            w.add_key_length(hd)
            w.add_value_length(hd)
            w.add_float32(f"{arch}.rope.freq_base_swa", 10000.0)
            w.add_sliding_window(SLIDING_WINDOW)
            w.add_rope_scaling_type(common.gguf().RopeScalingType.LINEAR)
            w.add_rope_scaling_factor(8.0)
        elif arch == "phi3":
            w.add_rope_freq_base(10000.0)
            w.add_rope_scaling_orig_ctx_len(4096)
            w.add_rope_dimension_count(hd)
            w.add_sliding_window(262144)
            w.add_rope_scaling_attn_factors(math.sqrt(1 + math.log(ctx / 4096) / math.log(4096)))
        elif arch == "granite":
            w.add_rope_freq_base(10000.0)
            w.add_vocab_size(V)
            w.add_rope_dimension_count(hd)
            w.add_embedding_scale(GRANITE_SCALES["embedding"])
            w.add_residual_scale(GRANITE_SCALES["residual"])
            w.add_attention_scale(GRANITE_SCALES["attention"])
            w.add_logit_scale(GRANITE_SCALES["logit"])
        w.add_file_type(0)
        common.add_tiny_tokenizer(w, space_prefix=False if arch.startswith("gemma") else None)
    return f


GEMMA_MIN_GAP = 0.005


def main():
    out = common.out_dir(__doc__)
    cases, table, checks = [], [], []
    for key, (arch, _, L, d, H, hd, HKV, FF, ctx, eps, seed, tied) in MODELS.items():
        stem = f"{key}-f32"
        path = os.path.join(out, stem + ".gguf")
        common.write_gguf(path, arch, fill(key), weights(key))
        gaps, distinct, rng_ = [], [], 0.0
        for pid in PROMPT_IDS:
            c, lg = common.write_case(out, stem, pid, common.PROMPTS[pid], N_CTX)
            cases.append(c)
            n = len(c["tokens"])
            gaps.append(common.min_gap(lg[n - 1:-1]))
            distinct.append(len(set(c["greedy_tokens"])))
            rng_ = max(rng_, float(np.abs(lg).max()))
            print(f"{c['name']}: {n} tokens, greedy {c['greedy_tokens'][:6]}..., min gap {gaps[-1]:.4f}", flush=True)
        table.append(f"| `{stem}.gguf` | {arch} | {L} layers, d_model {d}, {H} heads of head_dim {hd}, {HKV} KV head(s), "
                     f"FFN {FF}, context_length {ctx}, RMSNorm eps {eps:g}, seed {seed}, "
                     f"{'tied (no output.weight)' if tied else 'untied'} output | {os.path.getsize(path) / 1e6:.2f} MB |")
        # an engine that computes GELU exactly differs from ggml's f16 GELU table by up to 0.0035
        # in gemma's logits (measured on the earlier arch sets): free-running greedy tokens are
        # comparable only where the greedy rows' top-1/top-2 gaps clear that noise with room
        if arch.startswith("gemma") and min(gaps) < GEMMA_MIN_GAP:
            raise SystemExit(f"make_arch: {stem}: min greedy gap {min(gaps):.4f} < {GEMMA_MIN_GAP} (pick another seed)")
        checks.append(f"| `{stem}` | +-{rng_:.1f} | {min(gaps):.4f} | {', '.join(map(str, distinct))} |")
    common.write_cases(out, cases)
    rf = ", ".join(f"{x:.4g}" for x in llama3_rope_freqs(500000.0, 32))
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(f"""# arch: tiny random-weight models of seven llama.cpp architectures

{common.provenance("make_arch.py")}- n_ctx = {N_CTX} for every model (llama-cli's default `-c 4096`; the models' context_length keys
  have realistic values). It matters for phi3 only (short vs long rope factors).

Format: `cases.json` (name, model, prompt, add_bos, tokens, n_vocab, prompt_logits, greedy_tokens,
greedy_logits, llama_cpp, ggml_isa; float32 little-endian logits `[len(tokens)][512]` and `[24][512]`),
prompts `fox` and `mixed`, BOS added.

Init (numpy default_rng(seed); activations O(1), so every op shows in the logits): untied token_embd ~
N(0,1) and output ~ N(0, 1/d); tied token_embd ~ N(0, s^2/d) with output_norm ~ k (1 + N(0, 0.1^2)), s = 1,
k = 1.5 (gemma, whose input is scaled by sqrt(d): s = 0.15, k = 10); q, k, v, o, gate, up (and fused qkv,
gate|up) ~ N(0, 1/fan_in); down ~ N(0, 1/FFN); every other norm weight (q/k norms and post norms too) ~
1 + N(0, 0.1^2); qwen2 q/k biases ~ N(0, 0.5^2), v bias ~ N(0, 0.1^2); phi3's rope factors sorted
U(1, 4) (short) and U(10, 40) (long). Norm weights are stored as used (Gemma's converter adds the HF
`1 +` offset; here the values are already the multipliers).

## Models

| file | architecture | configuration | size |
|---|---|---|---|
{chr(10).join(table)}

- **llama (Llama-3.x style)**: normal (adjacent-pair) RoPE, base 500000 over head_dim dims; the global
  tensor `rope_freqs.weight` (head_dim/2 values) divides the rotation frequencies: what llama.cpp's converter
  computes for `rope_type: llama3` (factor 32, low_freq_factor 1, high_freq_factor 4,
  original_max_position_embeddings 8192): [{rf}]. No rope-scaling keys (as the converter writes). Tied output.
- **qwen2**: NEOX RoPE base 1e6; q/k/v biases after the projections; tied output.
- **qwen3**: head_dim from `qwen3.attention.key_length` (n_head * head_dim != d_model); per-head RMSNorm on q
  and k before NEOX RoPE (base 1e6); untied output.
- **gemma2**: input scaled by sqrt(d_model); post-attention and post-FFN norms; FFN down(GELU_tanh(gate(x)) *
  up(x)); attention soft-cap {GEMMA2_SOFTCAP[0]:g}, final soft-cap {GEMMA2_SOFTCAP[1]:g}; no rope.freq_base key
  (llama.cpp's default 10000); sliding window {SLIDING_WINDOW} on layers 0, 2, ... (no sliding_window_pattern
  key: llama.cpp's default pattern 2); `tokenizer.ggml.add_space_prefix` = false.
- **gemma3**: as gemma2 without soft-caps, plus q/k norms; layer il is local iff il % 6 < 5 (llama.cpp's
  default pattern 6); local layers: window {SLIDING_WINDOW}, RoPE base `rope.freq_base_swa` 10000; global
  layers: RoPE base 1e6 with linear scaling factor 8.
- **phi3**: fused attn_qkv (Q, K, V rows) and ffn_up (gate then up); NEOX RoPE base 10000 with
  `rope_factors_short` / `rope_factors_long` (long only when n_ctx > original_context_length 4096: here the
  short ones apply); `rope.scaling.attn_factor` = sqrt(1 + ln(131072/4096)/ln(4096)); sliding_window 262144
  (llama.cpp ignores it for phi3).
- **granite**: llama's block with IBM Granite's four multipliers: `granite.embedding_scale`
  {GRANITE_SCALES["embedding"]:g} (token_embd ~ N(0, 1/d) here), `granite.residual_scale` {GRANITE_SCALES["residual"]:g}
  (each attention and FFN output before its residual add), `granite.attention.scale` {GRANITE_SCALES["attention"]:g}
  (the softmax scale, not 1/sqrt(head_dim)), `granite.logit_scale` {GRANITE_SCALES["logit"]:g} (logits divided by it);
  normal RoPE base 10000; untied output.

GELU: llama.cpp's CPU backend evaluates GELU-tanh through an f16 table (`y = f16(gelu(f16(x)))` for
|x| < 10), so gemma logits carry that rounding.

## Greedy margins

| model | logits range | min top-1/top-2 gap of the greedy rows | distinct greedy tokens (fox, mixed) |
|---|---|---|---|
{chr(10).join(checks)}
""")


if __name__ == "__main__":
    main()
