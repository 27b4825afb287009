"""lora: LoRA adapters of the tiny llama (make_llama_tiny.py's weights) as Hugging Face PEFT
directories and as llama.cpp GGUF adapters, with llama.cpp's logits through them.

    python3 tools/refs/make_lora.py --out DIR

PyTorch is not available to the suite, and peft (like transformers' model code) needs it, so
peft itself does not run here. What stands in: the adapter weights are drawn with numpy (seed
4321) and written the way peft's save_pretrained writes a LoRA adapter of a LlamaForCausalLM
(adapter_config.json with its keys; adapter_model.safetensors with
base_model.model.model.layers.N.<module>.lora_A.weight [r, in] and .lora_B.weight [out, r],
metadata {"format": "pt"}), and converted to GGUF following llama.cpp's convert_lora_to_gguf.py
of the pinned tree (read, not run: it imports torch): general.type "adapter", adapter.type
"lora", adapter.lora.alpha = lora_alpha, tensors "<base GGUF name>.lora_a" = A and ".lora_b" =
B, with B of q_proj / k_proj row-permuted as the llama converter permutes the base q / k weights
(LlamaModel.permute, n_head resp. n_head_kv). The pinned libllama applies them
(llama_adapter_lora_init, llama_set_adapters_lora) for the reference logits.

Adapters (B random as after training; peft initialises B to 0):
- lora-a: r 8, lora_alpha 16, every linear module (q, k, v, o, gate, up, down), F32
  (peft-a/, lora-a-f32.gguf); the same in F16 (lora-a-f16.gguf).
- lora-b: r 4, lora_alpha 8, q_proj and v_proj (peft's default targets), F16 (peft-b/,
  lora-b-f16.gguf, with adapter.lora.task_name "summarize" and prompt_prefix "Summary: ").
- lora-c: r 32, lora_alpha 32, o_proj and down_proj, Q8_0 (lora-c-q8_0.gguf: convert's --outtype
  q8_0, gguf-py's reference quantizer).
- lora-other-base.gguf: an adapter of a llama with d_model 128 (refused by the base here);
  lora-other-arch.gguf: lora-b's first pair as a qwen2 adapter; lora-alpha-nan.gguf: alpha NaN.
Merged offline: llama-tiny-{f32,f16}-merged-a.gguf = the base with lora-a at scale 1 added as
W' = W + s B A, s = float32(1 * 16) / 8, each element in float64 summed over r in order, rounded
once to float32 (then to float16 for the f16 base).
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import llama_cpp_build  # noqa: E402
import make_llama_tiny as tiny  # noqa: E402

SEED = 4321
MODULES = {  # HF module -> (GGUF base name, out, in)
    "self_attn.q_proj": ("attn_q", tiny.D, tiny.D),
    "self_attn.k_proj": ("attn_k", tiny.HKV * tiny.HD, tiny.D),
    "self_attn.v_proj": ("attn_v", tiny.HKV * tiny.HD, tiny.D),
    "self_attn.o_proj": ("attn_output", tiny.D, tiny.D),
    "mlp.gate_proj": ("ffn_gate", tiny.FF, tiny.D),
    "mlp.up_proj": ("ffn_up", tiny.FF, tiny.D),
    "mlp.down_proj": ("ffn_down", tiny.D, tiny.FF),
}
ADAPTERS = {  # name -> r, lora_alpha, target modules
    "a": (8, 16, ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]),
    "b": (4, 8, ["q_proj", "v_proj"]),
    "c": (32, 32, ["o_proj", "down_proj"]),
}
N_GREEDY = 8


def draw(rng, r, targets):
    """{(layer, HF module): (A [r, in], B [out, r])} in HF orientation, float32."""
    t = {}
    for il in range(tiny.L):
        for mod, (_, out, inp) in MODULES.items():
            if mod.split(".")[1] not in targets:
                continue
            a = (rng.standard_normal((r, inp)) / np.sqrt(inp)).astype(np.float32)
            b = (rng.standard_normal((out, r)) * np.sqrt(0.05 / r)).astype(np.float32)
            t[(il, mod)] = (a, b)
    return t


def permute(w, n_head):
    """llama.cpp's LlamaModel.permute of the rows (HF halves -> adjacent rope pairs)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def gguf_pairs(pairs):
    """GGUF names and arrays of an adapter (B of q / k permuted), in the base model's order."""
    out = {}
    for (il, mod), (a, b) in sorted(pairs.items(), key=lambda kv: (kv[0][0], list(MODULES).index(kv[0][1]))):
        base = f"blk.{il}.{MODULES[mod][0]}.weight"
        if mod == "self_attn.q_proj":
            b = permute(b, tiny.H)
        elif mod == "self_attn.k_proj":
            b = permute(b, tiny.HKV)
        out[base] = (a, b)
    return out


def write_adapter_gguf(path, alpha, pairs, kind, name, arch="llama", meta=None):
    g = common.gguf()

    def fill(w):
        w.add_type(g.GGUFType.ADAPTER)
        w.add_string(g.Keys.Adapter.TYPE, "lora")
        w.add_name(name)
        w.add_float32(g.Keys.Adapter.LORA_ALPHA, float(alpha))
        for k, v in (meta or {}).items():  # llama-server shows them in GET /lora-adapters
            w.add_string(k, v)

    tensors, raw = {}, {}
    for base, (a, b) in pairs.items():
        for suffix, x in ((".lora_a", a), (".lora_b", b)):
            n = base + suffix
            if kind == "f32":
                tensors[n] = x
            elif kind == "f16":
                tensors[n] = x.astype(np.float16)
            else:
                tensors[n], raw[n] = g.quants.quantize(x, g.GGMLQuantizationType.Q8_0), g.GGMLQuantizationType.Q8_0
    common.write_gguf(path, arch, fill, tensors, raw)


def write_peft(d, r, alpha, targets, pairs, dtype):
    from safetensors.numpy import save_file

    os.makedirs(d, exist_ok=True)
    st = {}
    for (il, mod), (a, b) in pairs.items():
        p = f"base_model.model.model.layers.{il}.{mod}"
        st[p + ".lora_A.weight"] = a.astype(dtype)
        st[p + ".lora_B.weight"] = b.astype(dtype)
    save_file(st, os.path.join(d, "adapter_model.safetensors"), metadata={"format": "pt"})
    cfg = {  # peft's LoraConfig as save_pretrained writes it (keys sorted, indent 2)
        "alpha_pattern": {}, "auto_mapping": None, "base_model_name_or_path": "llama-tiny",
        "bias": "none", "fan_in_fan_out": False, "inference_mode": True, "init_lora_weights": True,
        "layers_pattern": None, "layers_to_transform": None, "loftq_config": {}, "lora_alpha": alpha,
        "lora_dropout": 0.0, "megatron_config": None, "megatron_core": "megatron.core",
        "modules_to_save": None, "peft_type": "LORA", "r": r, "rank_pattern": {}, "revision": None,
        "target_modules": sorted(targets), "task_type": "CAUSAL_LM", "use_dora": False, "use_rslora": False,
    }
    with open(os.path.join(d, "adapter_config.json"), "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")


def merge(base, pairs, scale32):
    """W + s B A per element in float64, summed over r in order, rounded once to float32."""
    out = dict(base)
    s = float(scale32)
    for name, (a, b) in pairs.items():
        acc = np.zeros((b.shape[0], a.shape[1]), dtype=np.float64)
        for k in range(a.shape[0]):
            acc = acc + b[:, k, None].astype(np.float64) * a[None, k, :].astype(np.float64)
        out[name] = (base[name].astype(np.float64) + s * acc).astype(np.float32)
    return out


def run(out, model, loras, text, name, extra):
    ref = llama_cpp_build.runner(common.ISA)
    mp = os.path.join(out, model)
    toks = ref.tokenize(mp, text)
    lp = [(os.path.join(out, f), s) for f, s in loras]
    lg, greedy = ref.logits(mp, toks, n_greedy=N_GREEDY, n_ctx=tiny.CTX, loras=lp)
    again, _ = ref.logits(mp, toks, greedy=greedy, n_ctx=tiny.CTX, loras=lp)
    if not np.array_equal(lg, again):
        raise SystemExit(f"refs: {name}: llama.cpp's logits differ between two runs")
    n = len(toks)
    stem = name.replace("/", ".")
    lg[:n].astype("<f4").tofile(os.path.join(out, stem + ".prompt.f32"))
    lg[n:].astype("<f4").tofile(os.path.join(out, stem + ".greedy.f32"))
    c = dict(name=name, model=model, adapters=[{"file": f, "scale": s} for f, s in loras])
    c.update(extra)
    c.update(prompt=text, tokens=toks, n_vocab=int(lg.shape[1]), prompt_logits=stem + ".prompt.f32",
             greedy_tokens=greedy, greedy_logits=stem + ".greedy.f32")
    c.update(common.case_fields())
    print(f"{name}: {n} tokens, greedy {greedy}", flush=True)
    return c


def main():
    out = common.out_dir(__doc__)
    rng = np.random.default_rng(SEED)
    base = tiny.weights()
    f16_base = {k: (v.astype(np.float16) if v.ndim == 2 else v) for k, v in base.items()}
    raw = {}
    for kind, t in (("f32", base), ("f16", f16_base)):
        common.write_gguf(os.path.join(out, f"llama-tiny-{kind}.gguf"), "llama", tiny.fill({"f32": 0, "f16": 1}[kind]), t)
    pairs = {k: draw(rng, r, tg) for k, (r, _, tg) in ADAPTERS.items()}
    g = {k: gguf_pairs(p) for k, p in pairs.items()}
    write_adapter_gguf(os.path.join(out, "lora-a-f32.gguf"), 16, g["a"], "f32", "lora-a")
    write_adapter_gguf(os.path.join(out, "lora-a-f16.gguf"), 16, g["a"], "f16", "lora-a")
    write_adapter_gguf(os.path.join(out, "lora-b-f16.gguf"), 8, g["b"], "f16", "lora-b",
                       meta={"adapter.lora.task_name": "summarize",
                             "adapter.lora.prompt_prefix": "Summary: "})
    write_adapter_gguf(os.path.join(out, "lora-c-q8_0.gguf"), 32, g["c"], "q8_0", "lora-c")
    write_peft(os.path.join(out, "peft-a"), 8, 16, ADAPTERS["a"][2], pairs["a"], np.float32)
    write_peft(os.path.join(out, "peft-b"), 4, 8, ADAPTERS["b"][2], pairs["b"], np.float16)
    other = {"blk.0.attn_q.weight": ((rng.standard_normal((8, 128)) * 0.1).astype(np.float32),
                                     (rng.standard_normal((128, 8)) * 0.1).astype(np.float32))}
    write_adapter_gguf(os.path.join(out, "lora-other-base.gguf"), 16, other, "f32", "lora-other-base")
    b0 = {k: v for k, v in list(g["b"].items())[:1]}
    write_adapter_gguf(os.path.join(out, "lora-other-arch.gguf"), 8, b0, "f32", "lora-other-arch", arch="qwen2")
    write_adapter_gguf(os.path.join(out, "lora-alpha-nan.gguf"), float("nan"), b0, "f32", "lora-alpha-nan")
    # the offline merges (lora-a at user scale 1: s = float32(1 * 16) / 8, as llama.cpp computes it)
    s32 = np.float32(np.float32(1.0) * np.float32(16)) / np.float32(8)
    common.write_gguf(os.path.join(out, "llama-tiny-f32-merged-a.gguf"), "llama", tiny.fill(0), merge(base, g["a"], s32))
    m16 = merge({k: v.astype(np.float32) for k, v in f16_base.items()}, g["a"], s32)
    m16 = {k: (v.astype(np.float16) if v.ndim == 2 else v) for k, v in m16.items()}
    common.write_gguf(os.path.join(out, "llama-tiny-f16-merged-a.gguf"), "llama", tiny.fill(1), m16)
    del raw
    P = common.PROMPTS
    cases = [
        run(out, "llama-tiny-f32.gguf", [("lora-a-f32.gguf", 1.0)], P["fox"], "a/fox", {"peft": "peft-a"}),
        run(out, "llama-tiny-f32.gguf", [("lora-a-f32.gguf", 1.0)], P["genesis"], "a/genesis", {"peft": "peft-a"}),
        run(out, "llama-tiny-f32.gguf", [("lora-a-f16.gguf", 1.0)], P["fox"], "a-f16/fox", {}),
        run(out, "llama-tiny-f32.gguf", [("lora-a-f32.gguf", 0.5), ("lora-b-f16.gguf", 1.0)], P["fox"],
            "a+b/fox", {}),
        run(out, "llama-tiny-f32.gguf", [("lora-c-q8_0.gguf", 0.75)], P["mixed"], "c-q8_0/mixed", {}),
        run(out, "llama-tiny-f32.gguf", [], P["fox"], "base/fox", {}),
        run(out, "llama-tiny-f32-merged-a.gguf", [], P["fox"], "merged-a/fox", {}),
    ]
    common.write_cases(out, cases)
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(f"""# lora: LoRA adapters of llama-tiny (PEFT directories, GGUF adapters) with llama.cpp's logits

{common.provenance("make_lora.py")}
{__doc__.split(chr(10), 3)[3]}
`cases.json`: name, model, adapters (file, user scale, set together on one context), peft (the
PEFT directory holding the same adapter, where there is one), prompt, tokens, n_vocab,
prompt_logits, greedy_tokens ({N_GREEDY}), greedy_logits (float32 LE), llama_cpp, ggml_isa.
""")


if __name__ == "__main__":
    main()
