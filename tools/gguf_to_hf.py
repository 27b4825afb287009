#!/usr/bin/env python3
"""Writes a Hugging Face checkpoint directory with the same weights as a GGUF file.

Usage: gguf_to_hf.py MODEL.gguf OUT_DIR [--shards N]

Architectures: llama (LlamaForCausalLM; MixtralForCausalLM with llama.expert_count), qwen2, qwen3,
gemma2, gemma3 (Gemma3ForCausalLM, text), phi3, and the mixtures of experts qwen3moe
(Qwen3MoeForCausalLM), qwen2moe (Qwen2MoeForCausalLM) and olmoe (OlmoeForCausalLM). Writes config.json and model.safetensors, or N shards with model.safetensors.index.json.
No tokenizer is written (tests feed token ids).

The inverse of llama.cpp's converter, from the GGUF metadata alone:
  - llama (adjacent-pair rope in GGUF): q/k rows are un-permuted to HF's half-split layout;
    a rope_freqs tensor becomes rope_scaling {"rope_type": "llama3", ...}, checked by recomputing
    the factors the way the converter does;
  - gemma2/3: RMSNorm weights are stored as w - 1 (HF's Gemma norms multiply by 1 + w);
  - phi3: the LongRoPE factor tensors become rope_scaling short_factor / long_factor lists;
  - experts: the 3-D ffn_{gate,up,down}_exps are split into one 2-D tensor per expert
    (mlp.experts.E.{gate,up,down}_proj, Mixtral's block_sparse_moe.experts.E.w1 / w3 / w2), the
    router ffn_gate_inp is mlp.gate (block_sparse_moe.gate), Qwen2-MoE's shared expert
    mlp.shared_expert.* and its gate ffn_gate_inp_shexp [d] mlp.shared_expert_gate [1, d].
Needs numpy only (Debian python3-numpy; run it with /usr/bin/python3 if another python shadows it).
"""
import json
import math
import os
import struct
import sys

import numpy as np

GGML_F32, GGML_F16 = 0, 1


# ------------------------------------------------------------------ GGUF reading

def read_gguf(path):
    data = open(path, "rb").read()
    off = 0

    def take(fmt):
        nonlocal off
        v = struct.unpack_from("<" + fmt, data, off)
        off += struct.calcsize("<" + fmt)
        return v[0]

    def string():
        nonlocal off
        n = take("Q")
        s = data[off:off + n].decode("utf-8")
        off += n
        return s

    scalar = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}

    def value(t):
        if t in scalar:
            return take(scalar[t])
        if t == 8:
            return string()
        if t == 9:
            et, n = take("I"), take("Q")
            return [value(et) for _ in range(n)]
        raise ValueError(f"{path}: unknown GGUF value type {t}")

    if data[:4] != b"GGUF":
        raise ValueError(f"{path}: not a GGUF file")
    off = 4
    version, n_tensors, n_kv = take("I"), take("Q"), take("Q")
    if version < 2:
        raise ValueError(f"{path}: GGUF version {version} is not supported")
    kv = {}
    for _ in range(n_kv):
        k = string()
        kv[k] = value(take("I"))
    infos = []
    for _ in range(n_tensors):
        name = string()
        nd = take("I")
        ne = [take("Q") for _ in range(nd)]
        typ, toff = take("I"), take("Q")
        infos.append((name, ne, typ, toff))
    align = kv.get("general.alignment", 32)
    base = (off + align - 1) // align * align
    tensors = {}
    for name, ne, typ, toff in infos:
        n = int(np.prod(ne))
        if typ == GGML_F32:
            arr = np.frombuffer(data, dtype="<f4", count=n, offset=base + toff)
        elif typ == GGML_F16:
            arr = np.frombuffer(data, dtype="<f2", count=n, offset=base + toff).astype(np.float32)
        else:
            raise ValueError(f"{path}: tensor {name} has ggml type {typ}; only F32/F16 are converted")
        tensors[name] = arr.reshape(list(reversed(ne))).copy()  # numpy order: [rows, cols]
    return kv, tensors


# ------------------------------------------------------------------ safetensors writing

def write_safetensors(path, named):
    header, blobs, off = {}, [], 0
    for name, arr in named:
        b = np.ascontiguousarray(arr, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def write_weights(out, named, shards):
    if shards <= 1:
        write_safetensors(os.path.join(out, "model.safetensors"), named)
        return
    per = (len(named) + shards - 1) // shards
    weight_map, total = {}, 0
    for s in range(shards):
        fn = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        part = named[s * per:(s + 1) * per]
        write_safetensors(os.path.join(out, fn), part)
        for name, arr in part:
            weight_map[name] = fn
            total += arr.size * 4
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2, sort_keys=True)
        f.write("\n")


# ------------------------------------------------------------------ conversion

HF_ARCH = {"llama": ("LlamaForCausalLM", "llama"), "qwen2": ("Qwen2ForCausalLM", "qwen2"),
           "qwen3": ("Qwen3ForCausalLM", "qwen3"), "gemma2": ("Gemma2ForCausalLM", "gemma2"),
           "gemma3": ("Gemma3ForCausalLM", "gemma3_text"), "phi3": ("Phi3ForCausalLM", "phi3"),
           "smollm3": ("SmolLM3ForCausalLM", "smollm3"), "qwen3moe": ("Qwen3MoeForCausalLM", "qwen3_moe"),
           "qwen2moe": ("Qwen2MoeForCausalLM", "qwen2_moe"), "olmoe": ("OlmoeForCausalLM", "olmoe")}
MIXTRAL = ("MixtralForCausalLM", "mixtral")
# llama.cpp fixes the renormalisation of the top-k weights per architecture (its graphs' norm_w)
NORM_TOPK = {"qwen3moe": True, "qwen2moe": False, "olmoe": False}


def unpermute(w, n_head):
    """GGUF adjacent-pair rows -> HF half-split rows (the inverse of the converter's permute)."""
    rows = w.shape[0]
    return w.reshape(n_head, rows // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def llama3_factors(base, dim, factor, low, high, old_ctx):
    freqs = 1.0 / (base ** (np.arange(0, dim, 2, dtype=np.float32) / dim))
    lo_wl, hi_wl = old_ctx / low, old_ctx / high
    out = []
    for f in freqs:
        wl = 2 * math.pi / f
        if wl < hi_wl:
            out.append(1.0)
        elif wl > lo_wl:
            out.append(factor)
        else:
            s = (old_ctx / wl - low) / (high - low)
            out.append(1 / ((1 - s) / factor + s))
    return np.array(out, dtype=np.float32)


def moe_tensors(t, l, p, arch):
    """Layer l's router, per-expert and shared-expert tensors under HF's names."""
    g = lambda n: t[f"blk.{l}.{n}"]
    mix = arch == "llama"
    base = p + ("block_sparse_moe." if mix else "mlp.")
    parts = (("gate", "w1"), ("up", "w3"), ("down", "w2")) if mix else \
        (("gate", "gate_proj"), ("up", "up_proj"), ("down", "down_proj"))
    named = [(base + "gate.weight", g("ffn_gate_inp.weight"))]
    n_expert = g("ffn_gate_inp.weight").shape[0]
    for e in range(n_expert):
        named += [(base + f"experts.{e}.{hf}.weight", g(f"ffn_{gg}_exps.weight")[e]) for gg, hf in parts]
    if f"blk.{l}.ffn_gate_shexp.weight" in t:
        named.append((base + "shared_expert_gate.weight", g("ffn_gate_inp_shexp.weight").reshape(1, -1)))
        named += [(base + f"shared_expert.{x}_proj.weight", g(f"ffn_{x}_shexp.weight")) for x in ("gate", "up", "down")]
    return named


def convert(gguf_path, out, shards):
    kv, t = read_gguf(gguf_path)
    arch = kv["general.architecture"]
    if arch not in HF_ARCH:
        raise SystemExit(f"{gguf_path}: architecture {arch} is not converted ({', '.join(HF_ARCH)})")
    k = lambda key, default=None: kv.get(f"{arch}.{key}", default)
    d, n_head = k("embedding_length"), k("attention.head_count")
    n_kv = k("attention.head_count_kv", n_head)
    head_dim = k("attention.key_length", d // n_head)
    n_layer = k("block_count")
    gemma = arch.startswith("gemma")
    tied = "output.weight" not in t
    n_expert = k("expert_count", 0)
    hf_arch = MIXTRAL if arch == "llama" and n_expert else HF_ARCH[arch]
    cfg = {
        "architectures": [hf_arch[0]], "model_type": hf_arch[1],
        "hidden_size": d, "intermediate_size": k("feed_forward_length"), "num_hidden_layers": n_layer,
        "num_attention_heads": n_head, "num_key_value_heads": n_kv, "head_dim": head_dim,
        "max_position_embeddings": k("context_length"), "rms_norm_eps": k("attention.layer_norm_rms_epsilon"),
        "rope_theta": k("rope.freq_base", 10000.0), "vocab_size": t["token_embd.weight"].shape[0],
        "tie_word_embeddings": tied, "torch_dtype": "float32",
        "bos_token_id": kv.get("tokenizer.ggml.bos_token_id"), "eos_token_id": kv.get("tokenizer.ggml.eos_token_id"),
        "hidden_act": "gelu_pytorch_tanh" if gemma else "silu",
    }
    if arch == "qwen2":
        cfg["use_sliding_window"] = False
    if n_expert:
        cfg["num_local_experts" if arch == "llama" else "num_experts"] = n_expert
        cfg["num_experts_per_tok"] = k("expert_used_count")
        if arch in ("qwen3moe", "qwen2moe"):
            cfg["moe_intermediate_size"] = k("expert_feed_forward_length")
            cfg["decoder_sparse_step"] = 1
            cfg["mlp_only_layers"] = []
        if arch in NORM_TOPK:
            cfg["norm_topk_prob"] = NORM_TOPK[arch]
        if arch == "qwen2moe":
            cfg["shared_expert_intermediate_size"] = k("expert_shared_feed_forward_length")
        if arch == "llama":
            cfg["sliding_window"] = None
    if arch == "smollm3":  # llama.cpp's fixed NoPE step: no rope where (il + 1) % 4 == 0
        cfg["no_rope_layer_interval"] = 4
        cfg["no_rope_layers"] = [int((il + 1) % 4 != 0) for il in range(n_layer)]
    if gemma:
        cfg["hidden_activation"] = "gelu_pytorch_tanh"
        cfg["query_pre_attn_scalar"] = head_dim  # llama.cpp scales by 1/sqrt(head_dim) for these sizes
        cfg["sliding_window"] = k("attention.sliding_window")
    if arch == "gemma2":
        cfg["attn_logit_softcapping"] = k("attn_logit_softcapping")
        cfg["final_logit_softcapping"] = k("final_logit_softcapping")
    if arch == "gemma3":
        cfg["rope_local_base_freq"] = k("rope.freq_base_swa", 10000.0)
        cfg["sliding_window_pattern"] = 6
        cfg["attn_logit_softcapping"] = None
        cfg["final_logit_softcapping"] = None
        if k("rope.scaling.type") == "linear":
            cfg["rope_scaling"] = {"rope_type": "linear", "factor": k("rope.scaling.factor")}
    if arch == "llama" and "rope_freqs.weight" in t:
        rf = t["rope_freqs.weight"]
        scaling = {"rope_type": "llama3", "factor": float(rf.max()), "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                   "original_max_position_embeddings": 8192}
        again = llama3_factors(cfg["rope_theta"], head_dim, scaling["factor"], 1.0, 4.0, 8192)
        if not np.allclose(again, rf, rtol=1e-6, atol=0):
            raise SystemExit(f"{gguf_path}: rope_freqs are not llama3 factors with low 1, high 4, original 8192")
        cfg["rope_scaling"] = scaling
    if arch == "phi3":
        orig = k("rope.scaling.original_context_length")
        cfg["original_max_position_embeddings"] = orig
        cfg["sliding_window"] = k("attention.sliding_window")
        if "rope_factors_short.weight" in t:
            cfg["rope_scaling"] = {"type": "longrope",
                                   "short_factor": [float(x) for x in t["rope_factors_short.weight"]],
                                   "long_factor": [float(x) for x in t["rope_factors_long.weight"]]}
        af = k("rope.scaling.attn_factor")
        want = math.sqrt(1 + math.log(cfg["max_position_embeddings"] / orig) / math.log(orig))
        if af is not None and abs(af - want) > 1e-6:
            raise SystemExit(f"{gguf_path}: attn_factor {af} is not HF's sqrt(1 + ln(max/orig) / ln(orig)) = {want}")

    norm = (lambda w: w - np.float32(1)) if gemma else (lambda w: w)
    named = [("model.embed_tokens.weight", t["token_embd.weight"])]
    for l in range(n_layer):
        g = lambda n: t[f"blk.{l}.{n}"]
        p = f"model.layers.{l}."
        named.append((p + "input_layernorm.weight", norm(g("attn_norm.weight"))))
        if arch == "phi3":
            named.append((p + "self_attn.qkv_proj.weight", g("attn_qkv.weight")))
        else:
            q, kk = g("attn_q.weight"), g("attn_k.weight")
            if arch in ("llama", "smollm3"):
                q, kk = unpermute(q, n_head), unpermute(kk, n_kv)
            named += [(p + "self_attn.q_proj.weight", q), (p + "self_attn.k_proj.weight", kk),
                      (p + "self_attn.v_proj.weight", g("attn_v.weight"))]
            for b in ("q", "k", "v"):
                if f"blk.{l}.attn_{b}.bias" in t:
                    bias = g(f"attn_{b}.bias")
                    if arch in ("llama", "smollm3") and b != "v":
                        bias = unpermute(bias, n_head if b == "q" else n_kv)
                    named.append((p + f"self_attn.{b}_proj.bias", bias))
        if f"blk.{l}.attn_q_norm.weight" in t:
            named += [(p + "self_attn.q_norm.weight", norm(g("attn_q_norm.weight"))),
                      (p + "self_attn.k_norm.weight", norm(g("attn_k_norm.weight")))]
        named.append((p + "self_attn.o_proj.weight", g("attn_output.weight")))
        if gemma:
            named += [(p + "post_attention_layernorm.weight", norm(g("post_attention_norm.weight"))),
                      (p + "pre_feedforward_layernorm.weight", norm(g("ffn_norm.weight"))),
                      (p + "post_feedforward_layernorm.weight", norm(g("post_ffw_norm.weight")))]
        else:
            named.append((p + "post_attention_layernorm.weight", g("ffn_norm.weight")))
        if f"blk.{l}.ffn_gate_inp.weight" in t:
            named += moe_tensors(t, l, p, arch)
            continue
        if arch == "phi3":
            named.append((p + "mlp.gate_up_proj.weight", g("ffn_up.weight")))
        else:
            named += [(p + "mlp.gate_proj.weight", g("ffn_gate.weight")), (p + "mlp.up_proj.weight", g("ffn_up.weight"))]
        named.append((p + "mlp.down_proj.weight", g("ffn_down.weight")))
    named.append(("model.norm.weight", norm(t["output_norm.weight"])))
    if not tied:
        named.append(("lm_head.weight", t["output.weight"]))

    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    write_weights(out, named, shards)


def main(argv):
    if len(argv) < 3:
        raise SystemExit(__doc__)
    shards = 1
    if "--shards" in argv:
        i = argv.index("--shards")
        shards = int(argv[i + 1])
        del argv[i:i + 2]
    convert(argv[1], argv[2], shards)


if __name__ == "__main__":
    main(sys.argv)
