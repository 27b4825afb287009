"""moe: tiny random-weight mixture-of-experts models of six llama.cpp architectures (qwen3moe,
qwen2moe with its shared expert, olmoe, Mixtral as `llama` with experts, gpt-oss, granitemoe with
and without a shared expert) with llama.cpp's logits for the prompts fox and mixed; qwen3moe also
quantized by the pinned llama.cpp to Q8_0 and Q4_0, a 256-wide qwen3moe to Q4_K_M (experts in
those block types), gpt-oss to MXFP4_MOE (MXFP4 experts) (24 cases). The F32 qwen3moe, qwen2moe, olmoe
and Mixtral are also written as Hugging Face directories (`<model>-hf/`, tools/gguf_to_hf.py: the same
weights under transformers' names, one tensor per expert, Mixtral's q/k rows un-permuted), which each
of their cases names as "hf_model".

    python3 tools/refs/make_moe.py --out DIR

Every model uses the 512-token vocabulary of tools/refs/common.py. Expert tensors are 3-D
(`blk.N.ffn_{gate,up,down}_exps.weight`, numpy [n_expert, out, in], ggml ne [in, out, n_expert]),
the router `blk.N.ffn_gate_inp.weight` [n_expert, d]; llama.cpp's names and keys throughout.
"""
import filecmp
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import llama_cpp_build  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import gguf_to_hf  # noqa: E402

V = 512
N_CTX = 4096

# name: (GGUF arch, general.name, layers, d_model, heads, head_dim, KV heads, FFN, experts, used,
#        expert FFN, shared-expert FFN, RMSNorm eps, seed)
MODELS = {
    "qwen3moe": ("qwen3moe", "Tiny Random Qwen3 MoE", 2, 64, 4, 32, 2, 64, 8, 2, 32, 0, 1e-6, 401),
    "qwen2moe": ("qwen2moe", "Tiny Random Qwen2 MoE", 2, 64, 4, 16, 2, 64, 8, 2, 32, 48, 1e-6, 402),
    "olmoe": ("olmoe", "Tiny Random OLMoE", 2, 64, 4, 16, 4, 32, 8, 3, 32, 0, 1e-5, 403),
    "mixtral": ("llama", "Tiny Random Mixtral", 2, 64, 2, 32, 1, 48, 4, 2, 48, 0, 1e-5, 404),
    # rows of 256: K-quant experts once quantized (QUANT)
    "qwen3moe256": ("qwen3moe", "Tiny Random Qwen3 MoE 256", 2, 256, 4, 64, 2, 512, 8, 2, 256, 0, 1e-6, 405),
    # gpt-oss: layer 0 sliding-window (GPTOSS_WINDOW), layer 1 full; YaRN, sinks, biases
    "gptoss": ("gpt-oss", "Tiny Random gpt-oss", 2, 64, 4, 16, 2, 64, 8, 3, 32, 0, 1e-5, 406),
    # granitemoe: Granite's multipliers (GRANITE_SCALES); experts of feed_forward_length; the
    # shared-expert variant (Granite MoE Shared, the same architecture) with an ungated shared FFN
    "granitemoe": ("granitemoe", "Tiny Random Granite MoE", 2, 64, 4, 16, 2, 32, 8, 2, 32, 0, 1e-6, 407),
    "granitemoeshared": ("granitemoe", "Tiny Random Granite MoE Shared", 2, 64, 4, 16, 2, 32, 8, 2, 32, 48, 1e-6,
                         408),
}
# granitemoe's multipliers, as make_arch.py's granite: each one shows (the attention scale far from
# 1/sqrt(head_dim) = 0.25, logits divided by 2.5, embeddings N(0, 1/d) times 6)
GRANITE_SCALES = {"embedding": 6.0, "residual": 0.25, "attention": 0.0625, "logit": 2.5}
# gpt-oss's keys: the sliding window (shorter than the prompts with their greedy tokens), rope
# base 150000 with YaRN factor 32 over an original context of 4096 (gpt-oss-20b's values)
GPTOSS_WINDOW = 8
GPTOSS_YARN = (150000.0, 32.0, 4096)
PROMPT_IDS = ("fox", "mixed")
# the models also written as Hugging Face directories (Qwen3MoeForCausalLM, Qwen2MoeForCausalLM,
# OlmoeForCausalLM, MixtralForCausalLM)
HF_MODELS = ("qwen3moe", "qwen2moe", "olmoe", "mixtral")
# quantized copies by llama_model_quantize (default parameters, 1 thread): (model, suffix, enum
# llama_ftype); Q4_K_M gives the 256-wide model Q4_K and Q6_K experts
# gpt-oss to MXFP4_MOE (ftype 38): MXFP4 experts, the way gpt-oss's files come
QUANT = (("qwen3moe", "q8_0", 7), ("qwen3moe", "q4_0", 2), ("qwen3moe256", "q4_k_m", 15),
         ("gptoss", "mxfp4_moe", 38))


def weights(key):
    arch, _, L, d, H, hd, HKV, FF, E, K, FFE, FFS, _, seed = MODELS[key]
    rng = np.random.default_rng(seed)
    f32 = lambda a: a.astype(np.float32)  # noqa: E731
    mat = lambda *shape: f32(rng.standard_normal(shape) / np.sqrt(shape[-1]))  # noqa: E731
    norm = lambda n: f32(1 + 0.1 * rng.standard_normal(n))  # noqa: E731
    qw, kvw = H * hd, HKV * hd
    emb = rng.standard_normal((V, d))
    t = {"token_embd.weight": f32(emb / np.sqrt(d) if arch == "granitemoe" else emb)}
    for il in range(L):
        p = f"blk.{il}."
        t[p + "attn_norm.weight"] = norm(d)
        t[p + "attn_q.weight"] = mat(qw, d)
        t[p + "attn_k.weight"] = mat(kvw, d)
        t[p + "attn_v.weight"] = mat(kvw, d)
        if arch == "qwen2moe":
            t[p + "attn_q.bias"] = f32(0.5 * rng.standard_normal(qw))
            t[p + "attn_k.bias"] = f32(0.5 * rng.standard_normal(kvw))
            t[p + "attn_v.bias"] = f32(0.1 * rng.standard_normal(kvw))
        if arch == "qwen3moe":
            t[p + "attn_q_norm.weight"] = norm(hd)
            t[p + "attn_k_norm.weight"] = norm(hd)
        if arch == "olmoe":  # over the whole projection
            t[p + "attn_q_norm.weight"] = norm(qw)
            t[p + "attn_k_norm.weight"] = norm(kvw)
        t[p + "attn_output.weight"] = mat(d, qw)
        if arch == "gpt-oss":
            t[p + "attn_q.bias"] = f32(0.5 * rng.standard_normal(qw))
            t[p + "attn_k.bias"] = f32(0.5 * rng.standard_normal(kvw))
            t[p + "attn_v.bias"] = f32(0.1 * rng.standard_normal(kvw))
            t[p + "attn_output.bias"] = f32(0.1 * rng.standard_normal(d))
            t[p + "attn_sinks.weight"] = f32(rng.standard_normal(H))
            t[p + "post_attention_norm.weight"] = norm(d)  # llama.cpp's name of its pre-FFN norm
        else:
            t[p + "ffn_norm.weight"] = norm(d)
        # the router at 3x the usual scale: routing probabilities far from uniform, so the top-k
        # choice has clear margins (a near tie would let f32 rounding pick another expert)
        t[p + "ffn_gate_inp.weight"] = f32(3 * mat(E, d))
        # gpt-oss: gate and up at 4x, so that swiglu_oai's clamp at 7 is reached
        xs = 4 if arch == "gpt-oss" else 1
        t[p + "ffn_gate_exps.weight"] = f32(xs * mat(E, FFE, d))
        t[p + "ffn_up_exps.weight"] = f32(xs * mat(E, FFE, d))
        t[p + "ffn_down_exps.weight"] = mat(E, d, FFE)
        if arch == "gpt-oss":
            t[p + "ffn_gate_inp.bias"] = f32(0.5 * rng.standard_normal(E))
            t[p + "ffn_gate_exps.bias"] = f32(0.5 * rng.standard_normal((E, FFE)))
            t[p + "ffn_up_exps.bias"] = f32(0.5 * rng.standard_normal((E, FFE)))
            t[p + "ffn_down_exps.bias"] = f32(0.1 * rng.standard_normal((E, d)))
        if FFS and arch != "granitemoe":  # Granite MoE Shared: no gate on the shared expert
            t[p + "ffn_gate_inp_shexp.weight"] = f32(rng.standard_normal(d) / np.sqrt(d))
        if FFS:
            t[p + "ffn_gate_shexp.weight"] = mat(FFS, d)
            t[p + "ffn_up_shexp.weight"] = mat(FFS, d)
            t[p + "ffn_down_shexp.weight"] = mat(d, FFS)
    t["output_norm.weight"] = norm(d)
    t["output.weight"] = mat(V, d)
    return t


def fill(key):
    arch, name, L, d, H, hd, HKV, FF, E, K, FFE, FFS, eps, _ = MODELS[key]

    def f(w):
        w.add_name(name)
        w.add_context_length(32768)
        w.add_embedding_length(d)
        w.add_block_count(L)
        w.add_feed_forward_length(FF)
        w.add_head_count(H)
        w.add_head_count_kv(HKV)
        w.add_layer_norm_rms_eps(eps)
        w.add_rope_freq_base(1e6 if arch.startswith("qwen") else GPTOSS_YARN[0] if arch == "gpt-oss"
                             else 10000.0)
        w.add_expert_count(E)
        w.add_expert_used_count(K)
        if arch == "qwen3moe":
            w.add_key_length(hd)
            w.add_value_length(hd)
        if arch in ("qwen3moe", "qwen2moe", "gpt-oss"):
            w.add_expert_feed_forward_length(FFE)
        if arch == "gpt-oss":
            w.add_uint32(f"{arch}.attention.sliding_window", GPTOSS_WINDOW)
            w.add_string(f"{arch}.rope.scaling.type", "yarn")
            w.add_float32(f"{arch}.rope.scaling.factor", GPTOSS_YARN[1])
            w.add_uint32(f"{arch}.rope.scaling.original_context_length", GPTOSS_YARN[2])
        if FFS:
            w.add_expert_shared_feed_forward_length(FFS)
        if arch == "llama":
            w.add_vocab_size(V)
            w.add_rope_dimension_count(hd)
        if arch == "granitemoe":
            w.add_embedding_scale(GRANITE_SCALES["embedding"])
            w.add_residual_scale(GRANITE_SCALES["residual"])
            w.add_attention_scale(GRANITE_SCALES["attention"])
            w.add_logit_scale(GRANITE_SCALES["logit"])
        w.add_file_type(0)
        common.add_tiny_tokenizer(w)
    return f


def main():
    out = common.out_dir(__doc__)
    cases, table, checks = [], [], []
    for key, (arch, _, L, d, H, hd, HKV, FF, E, K, FFE, FFS, eps, seed) in MODELS.items():
        stem = f"{key}-f32"
        path = os.path.join(out, stem + ".gguf")
        common.write_gguf(path, arch, fill(key), weights(key))
        extra = None
        if key in HF_MODELS:
            gguf_to_hf.convert(path, os.path.join(out, f"{key}-hf"), 1)
            extra = {"hf_model": f"{key}-hf"}
        gaps = []
        for pid in PROMPT_IDS:
            c, lg = common.write_case(out, stem, pid, common.PROMPTS[pid], N_CTX, extra=extra)
            cases.append(c)
            n = len(c["tokens"])
            gaps.append(common.min_gap(lg[n - 1:-1]))
            print(f"{c['name']}: {n} tokens, greedy {c['greedy_tokens'][:6]}..., min gap {gaps[-1]:.4f}", flush=True)
        table.append(f"| `{stem}.gguf` | {arch} | {L} layers, d_model {d}, {H} heads of head_dim {hd}, {HKV} KV "
                     f"head(s), {E} experts, {K} used, expert FFN {FFE}"
                     f"{f', shared expert FFN {FFS}' if FFS else ''}, RMSNorm eps {eps:g}, seed {seed} | "
                     f"{os.path.getsize(path) / 1e6:.2f} MB |")
        checks.append(f"| `{stem}` | {min(gaps):.4f} |")
    ref = llama_cpp_build.runner(common.ISA)
    with tempfile.TemporaryDirectory() as tmp:
        for base, suffix, ft in QUANT:
            stem = f"{base}-{suffix}"
            src, dst = os.path.join(out, f"{base}-f32.gguf"), os.path.join(out, stem + ".gguf")
            ref.quantize(src, dst, ft)
            again = os.path.join(tmp, stem + ".gguf")
            ref.quantize(src, again, ft)
            if not filecmp.cmp(dst, again, shallow=False):
                raise SystemExit(f"refs: {stem}: two quantizations differ")
            for pid in PROMPT_IDS:
                c, lg = common.write_case(out, stem, pid, common.PROMPTS[pid], N_CTX)
                cases.append(c)
                print(f"{c['name']}: greedy {c['greedy_tokens'][:6]}...", flush=True)
            table.append(f"| `{stem}.gguf` | {MODELS[base][0]} | `{base}-f32.gguf` quantized by llama_model_quantize "
                         f"(ftype {ft}, default parameters, 1 thread; twice, byte-identical) | "
                         f"{os.path.getsize(dst) / 1e6:.2f} MB |")
    common.write_cases(out, cases)
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(f"""# moe: tiny random-weight mixture-of-experts models

{common.provenance("make_moe.py")}- n_ctx = {N_CTX}.

Format: `cases.json` as the arch set (name, model, prompt, add_bos, tokens, n_vocab, prompt_logits,
greedy_tokens, greedy_logits, llama_cpp, ggml_isa), prompts `fox` and `mixed`, BOS added; the cases of
{", ".join(HF_MODELS)} also name `hf_model`: `<model>-hf/`, the same F32 weights as a Hugging Face
directory (config.json and model.safetensors, no tokenizer: the cases' token ids are fed) written by
tools/gguf_to_hf.py, the inverse of llama.cpp's convert_hf_to_gguf.py (experts split into one tensor
each, Mixtral's q/k rows back in HF's half-split layout), held to the same expected logits.

Init (numpy default_rng(seed)): token_embd ~ N(0, 1); matrices ~ N(0, 1/fan_in), the router
`ffn_gate_inp` ~ N(0, 9/d) (3x: routing far from uniform, clear top-k margins); norms ~ 1 + N(0, 0.1^2);
qwen2moe q/k biases ~ N(0, 0.5^2), v bias ~ N(0, 0.1^2), `ffn_gate_inp_shexp` ~ N(0, 1/d); untied output.

## Models

| file | architecture | configuration | size |
|---|---|---|---|
{chr(10).join(table)}

- **qwen3moe**: Qwen3's block (per-head q/k RMSNorm, NEOX RoPE base 1e6, `key_length` {MODELS['qwen3moe'][5]});
  softmax router, top-k, the k weights renormalised (llama.cpp's `norm_w` true).
- **qwen2moe**: q/k/v biases, NEOX RoPE base 1e6; softmax router, top-k, weights not renormalised; a shared
  expert scaled by sigmoid(`ffn_gate_inp_shexp` . x) (llama.cpp computes silu(g) / g).
- **olmoe**: q/k RMSNorm over the whole projection (not per head), NEOX RoPE base 10000; softmax, top-3,
  not renormalised; experts of `feed_forward_length`.
- **qwen3moe256**: as qwen3moe with d_model 256 and experts of FFN 256: rows whole K-quant super-blocks, so
  its Q4_K_M copy has Q4_K and Q6_K experts (llama.cpp repacks Q4_K on AVX2; Q6_K takes its tiled kernel where 8
  or more tokens choose an expert).
- **gptoss**: architecture `gpt-oss`: q/k/v/o biases, a learned attention sink per head (N(0, 1)),
  layer 0 on a sliding window of {GPTOSS_WINDOW} keys and layer 1 full, NEOX RoPE base {GPTOSS_YARN[0]:g} with
  YaRN factor {GPTOSS_YARN[1]:g} over an original context of {GPTOSS_YARN[2]}; router bias, top-{MODELS['gptoss'][9]} of the logits then a
  softmax over them, expert biases (gate / up N(0, 0.5^2), down N(0, 0.1^2)), gate and up experts at 4x scale
  so that swiglu_oai's clamp (limit 7) is reached; its MXFP4_MOE copy has MXFP4 experts.
- **granitemoe**, **granitemoeshared**: architecture `granitemoe`: Granite's multipliers (`embedding_scale`
  {GRANITE_SCALES["embedding"]:g} with token_embd ~ N(0, 1/d), `residual_scale` {GRANITE_SCALES["residual"]:g}, `attention.scale`
  {GRANITE_SCALES["attention"]:g}, `logit_scale` {GRANITE_SCALES["logit"]:g}), normal RoPE base 10000; softmax, top-2 renormalised, experts
  of `feed_forward_length`; the shared variant (Granite MoE Shared) adds an ungated shared expert of FFN
  {MODELS['granitemoeshared'][11]} (`expert_shared_feed_forward_length`).
- **mixtral**: architecture `llama` with `llama.expert_count` {MODELS['mixtral'][8]}: normal RoPE, softmax, top-2
  renormalised; experts of `feed_forward_length` (no dense ffn_gate/up/down tensors).

The quantized files' logits carry llama.cpp's quantization of every matmul input (q8_0 rows for Q8_0
and Q4_0 weights), which can change an expert choice: an engine that keeps activations in float is
not close to them in general (the suite checks them in its ggml-activations mode, bit for bit).

## Greedy margins (F32 models)

| model | min top-1/top-2 gap of the greedy rows |
|---|---|
{chr(10).join(checks)}
""")


if __name__ == "__main__":
    main()
