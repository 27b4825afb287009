"""tests/data/smollm3: a tiny random-weight SmolLM3 GGUF and llama.cpp's logits for it.

The model is written with llama.cpp's own `gguf` package, the logits come from llama.cpp through
llama-cpp-python (tools/llamacpp_ref.py: llama-cpp-python 0.3.36 = llama.cpp 0c1e570), in the
format of ../shared/fixtures/arch (cases.json + float32 logits files), for the prompts `fox`
and `mixed`. The tokenizer is the 512-token SentencePiece-style vocabulary of the shared arch
fixtures, copied from ../shared/fixtures/arch/llama3-f32.gguf.

    python3 -m venv /tmp/v && /tmp/v/bin/pip install gguf==0.19.0 numpy llama-cpp-python==0.3.36
    /tmp/v/bin/python tools/make_smollm3_fixture.py [--shared FIXTURES_DIR]

SmolLM3 is llama's block with NoPE layers: llama.cpp gives layer il no rotary positions when
(il + 1) % 4 == 0. With 4 layers, layer 3 is one. The script also runs the same weights as a
`llama` GGUF (RoPE on every layer) and writes the difference into README.md: what an engine that
ignored the NoPE layers would be off by.

Init (as the shared arch fixtures, so every op shows in the logits): tied token_embd ~
N(0, 1/d) with output_norm ~ 1.5 (1 + N(0, 0.1^2)); q, k, v, o, gate, up ~ N(0, 1/fan_in);
down ~ N(0, 1/FFN); other norm weights ~ 1 + N(0, 0.1^2). A run writes the same bytes again
(fixed seed; llama.cpp's logits were byte-identical over two runs).
"""
import argparse
import json
import os
import sys
import tempfile

import numpy as np
import gguf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llamacpp_ref  # noqa: E402

PROMPTS = {
    "fox": "The quick brown fox jumps over the lazy dog.",
    "mixed": "Vulkan 1.3 runs on AMD, Intel & NVIDIA \u2014 42 tokens/s!",
}
CFG = dict(n_layer=4, d=64, n_head=4, n_kv=2, ff=128, ctx=65536, eps=1e-6, rope_base=5e6)
SEED = 330


def tokenizer_fields(shared):
    """The tokenizer.ggml.* keys of the shared arch fixtures' vocabulary."""
    r = gguf.GGUFReader(os.path.join(shared, "arch", "llama3-f32.gguf"))
    out = {}
    for k, f in r.fields.items():
        if k.startswith("tokenizer."):
            out[k] = (f.contents(), f.types)
    return out


def weights(rng):
    c = CFG
    d, hd, ff = c["d"], c["d"] // c["n_head"], c["ff"]
    kvd = c["n_kv"] * hd
    norm = lambda n: (1 + 0.1 * rng.standard_normal(n)).astype(np.float32)  # noqa: E731
    mat = lambda rows, cols: (rng.standard_normal((rows, cols)) / np.sqrt(cols)).astype(np.float32)  # noqa: E731
    t = {"token_embd.weight": (rng.standard_normal((512, d)) / np.sqrt(d)).astype(np.float32)}
    for il in range(c["n_layer"]):
        p = f"blk.{il}."
        t[p + "attn_norm.weight"] = norm(d)
        t[p + "attn_q.weight"] = mat(d, d)
        t[p + "attn_k.weight"] = mat(kvd, d)
        t[p + "attn_v.weight"] = mat(kvd, d)
        t[p + "attn_output.weight"] = mat(d, d)
        t[p + "ffn_norm.weight"] = norm(d)
        t[p + "ffn_gate.weight"] = mat(ff, d)
        t[p + "ffn_up.weight"] = mat(ff, d)
        t[p + "ffn_down.weight"] = mat(d, ff)
    t["output_norm.weight"] = 1.5 * norm(d)
    return t


def write_gguf(path, arch, tensors, tok):
    c = CFG
    w = gguf.GGUFWriter(path, arch)
    w.add_name("Tiny Random SmolLM3")
    w.add_context_length(c["ctx"])
    w.add_embedding_length(c["d"])
    w.add_block_count(c["n_layer"])
    w.add_feed_forward_length(c["ff"])
    w.add_head_count(c["n_head"])
    w.add_head_count_kv(c["n_kv"])
    w.add_layer_norm_rms_eps(c["eps"])
    w.add_rope_freq_base(c["rope_base"])
    w.add_rope_dimension_count(c["d"] // c["n_head"])
    w.add_vocab_size(512)
    w.add_file_type(0)
    for k, (v, types) in tok.items():
        if types[0] == gguf.GGUFValueType.ARRAY:
            w.add_array(k, v)
        elif types[0] == gguf.GGUFValueType.STRING:
            w.add_string(k, v)
        elif types[0] == gguf.GGUFValueType.BOOL:
            w.add_bool(k, v)
        else:
            w.add_uint32(k, v)
    for name, a in tensors.items():
        w.add_tensor(name, a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def made_fixtures(repo):
    """The directory of tools/refs/make_all.py's sets."""
    sys.path.insert(0, os.path.join(repo, "tools", "refs"))
    import make_all

    return make_all.fixtures_dir()


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--shared", default=os.environ.get("VKF_FIXTURES") or made_fixtures(here),
                    help="the fixtures directory (default: VKF_FIXTURES, else tools/refs/make_all.py's)")
    ap.add_argument("--out", default=os.path.join(here, "tests", "data", "smollm3"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    tok = tokenizer_fields(a.shared)
    t = weights(np.random.default_rng(SEED))
    model = os.path.join(a.out, "smollm3-f32.gguf")
    write_gguf(model, "smollm3", t, tok)
    with tempfile.TemporaryDirectory() as tmp:  # the same weights, RoPE on every layer
        as_llama = os.path.join(tmp, "as-llama.gguf")
        write_gguf(as_llama, "llama", t, tok)
        cases, report = [], []
        for pid, text in PROMPTS.items():
            toks = llamacpp_ref.tokenize(model, text)
            lg, greedy = llamacpp_ref.logits(model, toks)
            lg2, _ = llamacpp_ref.logits(model, toks, greedy=greedy)
            assert np.array_equal(lg, lg2), "llama.cpp is not deterministic here"
            abl, _ = llamacpp_ref.logits(as_llama, toks, greedy=greedy)
            n = len(toks)
            stem = f"smollm3-f32.{pid}"
            lg[:n].tofile(os.path.join(a.out, stem + ".prompt.f32"))
            lg[n:].tofile(os.path.join(a.out, stem + ".greedy.f32"))
            top2 = np.sort(lg, axis=1)[:, -2:]
            report.append((pid, n, np.abs(lg).max(), np.abs(lg - abl).max(),
                           np.sqrt(((lg[:n] - abl[:n]) ** 2).mean()),
                           (top2[:, 1] - top2[:, 0]).min(), len(set(greedy))))
            cases.append(dict(name=f"smollm3-f32/{pid}", model="smollm3-f32.gguf", prompt=text,
                              add_bos=True, tokens=toks, n_vocab=512,
                              prompt_logits=stem + ".prompt.f32", greedy_tokens=greedy,
                              greedy_logits=stem + ".greedy.f32"))
    with open(os.path.join(a.out, "cases.json"), "w") as f:
        json.dump(cases, f, indent=1, ensure_ascii=False)
        f.write("\n")
    for pid, n, rng_, dmax, drms, gap, distinct in report:
        print(f"{pid}: {n} tokens, logits +-{rng_:.2f}, NoPE ablation max {dmax:.3g} rms {drms:.3g}, "
              f"min top-1/top-2 gap {gap:.4f}, {distinct} distinct greedy tokens")


if __name__ == "__main__":
    main()
