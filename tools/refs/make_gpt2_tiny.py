"""gpt2-tiny: a tiny random-weight GPT-2 with GPT-2's real vocabulary, as a GGUF and as the same
weights in a Hugging Face GPT-2 checkpoint (hf/), with llama.cpp's logits for three prompts.

    python3 tools/refs/make_gpt2_tiny.py --out DIR

Model: gpt2, 2 layers, n_embd 64, 4 heads (head_dim 16), FFN 256, context 256, vocab 50257,
LayerNorm eps 1e-5, learned positions, pre-LayerNorm, GELU (tanh), biases everywhere, output tied
to wte. F32, seed 5: wte, wpe ~ N(0, 0.1^2); c_attn, attn c_proj, c_fc ~ N(0, 1/64); mlp c_proj ~
N(0, 1/256); biases ~ N(0, 0.1^2); LayerNorm weight ~ 1 + N(0, 0.1^2), bias ~ N(0, 0.1^2).
The vocabulary (tokens, token types, 50000 merges) is the pinned llama.cpp tree's
models/ggml-vocab-gpt-2.gguf (GPT-2's encoder.json and vocab.bpe as converted by llama.cpp).
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import common  # noqa: E402
import pins  # noqa: E402
from gguf_to_hf import write_safetensors  # noqa: E402

SEED = 5
L, D, H, FF, CTX = 2, 64, 4, 256, 256


def gpt2_vocab():
    """(tokens, token types, merges) of the pinned tree's GPT-2 vocabulary."""
    kv = common.read_gguf_kv(os.path.join(pins.llama_cpp_tree(), "models", "ggml-vocab-gpt-2.gguf"))
    toks, types, merges = kv["tokenizer.ggml.tokens"], kv["tokenizer.ggml.token_type"], kv["tokenizer.ggml.merges"]
    assert len(toks) == 50257 and len(merges) == 50000 and toks[50256] == "<|endoftext|>"
    return toks, types, merges


def hf_weights():
    """HF GPT-2 names (no `transformer.` prefix), Conv1D layout [in, out]."""
    rng = np.random.default_rng(SEED)
    f32 = lambda a: a.astype(np.float32)  # noqa: E731
    n = lambda *shape, s=0.1: f32(s * rng.standard_normal(shape))  # noqa: E731
    t = {"wte.weight": n(50257, D), "wpe.weight": n(CTX, D)}
    for il in range(L):
        p = f"h.{il}."
        t[p + "ln_1.weight"] = f32(1 + n(D))
        t[p + "ln_1.bias"] = n(D)
        t[p + "attn.c_attn.weight"] = n(D, 3 * D, s=1 / 8)
        t[p + "attn.c_attn.bias"] = n(3 * D)
        t[p + "attn.c_proj.weight"] = n(D, D, s=1 / 8)
        t[p + "attn.c_proj.bias"] = n(D)
        t[p + "ln_2.weight"] = f32(1 + n(D))
        t[p + "ln_2.bias"] = n(D)
        t[p + "mlp.c_fc.weight"] = n(D, FF, s=1 / 8)
        t[p + "mlp.c_fc.bias"] = n(FF)
        t[p + "mlp.c_proj.weight"] = n(FF, D, s=1 / 16)
        t[p + "mlp.c_proj.bias"] = n(D)
    t["ln_f.weight"] = f32(1 + n(D))
    t["ln_f.bias"] = n(D)
    return t


def gguf_tensors(hf):
    """The same weights under llama.cpp's gpt2 names ([out, in] numpy = ggml ne [in, out])."""
    t = {"token_embd.weight": hf["wte.weight"], "position_embd.weight": hf["wpe.weight"]}
    for il in range(L):
        p, q = f"blk.{il}.", f"h.{il}."
        t[p + "attn_norm.weight"] = hf[q + "ln_1.weight"]
        t[p + "attn_norm.bias"] = hf[q + "ln_1.bias"]
        t[p + "attn_qkv.weight"] = np.ascontiguousarray(hf[q + "attn.c_attn.weight"].T)
        t[p + "attn_qkv.bias"] = hf[q + "attn.c_attn.bias"]
        t[p + "attn_output.weight"] = np.ascontiguousarray(hf[q + "attn.c_proj.weight"].T)
        t[p + "attn_output.bias"] = hf[q + "attn.c_proj.bias"]
        t[p + "ffn_norm.weight"] = hf[q + "ln_2.weight"]
        t[p + "ffn_norm.bias"] = hf[q + "ln_2.bias"]
        t[p + "ffn_up.weight"] = np.ascontiguousarray(hf[q + "mlp.c_fc.weight"].T)
        t[p + "ffn_up.bias"] = hf[q + "mlp.c_fc.bias"]
        t[p + "ffn_down.weight"] = np.ascontiguousarray(hf[q + "mlp.c_proj.weight"].T)
        t[p + "ffn_down.bias"] = hf[q + "mlp.c_proj.bias"]
    t["output_norm.weight"] = hf["ln_f.weight"]
    t["output_norm.bias"] = hf["ln_f.bias"]
    t["output.weight"] = hf["wte.weight"]  # llama.cpp's gpt2 loader requires output.weight
    return t


def fill(vocab):
    toks, types, merges = vocab

    def f(w):
        w.add_name("gpt2-tiny")
        w.add_context_length(CTX)
        w.add_embedding_length(D)
        w.add_feed_forward_length(FF)
        w.add_block_count(L)
        w.add_head_count(H)
        w.add_layer_norm_eps(1e-5)
        w.add_file_type(0)
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre("gpt-2")
        w.add_token_list(toks)
        w.add_token_types(types)
        w.add_token_merges(merges)
        w.add_bos_token_id(50256)
        w.add_eos_token_id(50256)
        w.add_unk_token_id(50256)
    return f


HF_CONFIG = {
    "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "activation_function": "gelu_new",
    "vocab_size": 50257, "n_positions": CTX, "n_ctx": CTX, "n_embd": D, "n_layer": L, "n_head": H,
    "n_inner": None, "layer_norm_epsilon": 1e-05, "bos_token_id": 50256, "eos_token_id": 50256,
    "scale_attn_weights": True, "tie_word_embeddings": True, "attn_pdrop": 0.0, "embd_pdrop": 0.0,
    "resid_pdrop": 0.0, "initializer_range": 0.02, "torch_dtype": "float32",
}


def write_hf(out, hf, vocab):
    toks, _, merges = vocab
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(HF_CONFIG, f, indent=2)
        f.write("\n")
    write_safetensors(os.path.join(out, "model.safetensors"), list(hf.items()))
    with open(os.path.join(out, "vocab.json"), "w") as f:  # encoder.json: token -> id
        json.dump({t: i for i, t in enumerate(toks)}, f)
    with open(os.path.join(out, "merges.txt"), "w", encoding="utf-8") as f:  # vocab.bpe
        f.write("#version: 0.2\n" + "\n".join(merges) + "\n")


def main():
    out = common.out_dir(__doc__)
    vocab = gpt2_vocab()
    hf = hf_weights()
    stem = "gpt2-tiny-f32"
    common.write_gguf(os.path.join(out, stem + ".gguf"), "gpt2", fill(vocab), gguf_tensors(hf))
    write_hf(os.path.join(out, "hf"), hf, vocab)
    cases, stats = [], []
    for pid, text in common.PROMPTS.items():
        c, lg = common.write_case(out, stem, pid, text, CTX, add_bos=False, extra={"hf_model": "hf"})
        cases.append(c)
        n = len(c["tokens"])
        stats.append(f"| `{pid}` | {n} | +-{np.abs(lg).max():.2f} | {common.min_gap(lg[n - 1:-1]):.4f} |")
        print(f"{c['name']}: {n} tokens, greedy {c['greedy_tokens'][:6]}...", flush=True)
    common.write_cases(out, cases)
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(f"""# gpt2-tiny: a tiny random GPT-2 (GGUF and Hugging Face) with llama.cpp's logits

{common.provenance("make_gpt2_tiny.py")}- n_ctx = {CTX} (the model's context); no BOS (llama.cpp's default for this vocabulary).
{__doc__.split(chr(10), 4)[4]}
Files:
- `gpt2-tiny-f32.gguf`: `token_embd`, `position_embd`, `blk.N.attn_norm.{{weight,bias}}`,
  `blk.N.attn_qkv.{{weight,bias}}` (fused Q|K|V, ggml ne `[64, 192]`), `blk.N.attn_output.*`,
  `blk.N.ffn_norm.*`, `blk.N.ffn_up.*`, `blk.N.ffn_down.*`, `output_norm.{{weight,bias}}`, `output.weight`
  (a copy of token_embd: llama.cpp's gpt2 loader requires it); `tokenizer.ggml.model` gpt2, pre gpt-2,
  50257 tokens, 50000 merges, `<|endoftext|>` = 50256 (bos = eos = unk), no `add_bos_token` key.
- `hf/`: `model.safetensors` in HF GPT-2 names without the `transformer.` prefix, Conv1D layout `[in, out]`,
  no `lm_head.weight` (tied), no `attn.bias` buffers; `config.json` (`gelu_new`, `n_inner: null`);
  `vocab.json` and `merges.txt` (with the `#version: 0.2` line) from the same vocabulary. The GGUF and
  safetensors tensors are bitwise equal after the Conv1D transpose.
- `cases.json` (each case also names `hf_model`: the same expected output from `hf/`).

llama.cpp's gpt2 graph uses ggml_gelu, the tanh approximation, which its CPU backend evaluates through an
f16 table (`y = f16(gelu(f16(x)))` for |x| < 10): that rounding is in these logits.

| prompt | tokens | logits range | min top-1/top-2 gap of the greedy rows |
|---|---|---|---|
{chr(10).join(stats)}
""")


if __name__ == "__main__":
    main()
