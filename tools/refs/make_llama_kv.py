"""llama-kv: llama.cpp's logits through a KV cache of each of its cache types (-ctk / -ctv), on
llama-tiny's F32 weights (make_llama_tiny.py's model, written again here).

    python3 tools/refs/make_llama_kv.py --out DIR

For each type T of f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1: a context with type_k =
type_v = T and flash attention on (llama.cpp needs it for a quantized V cache; its CPU kernel
then reads K through the type's vec_dot with q converted to the type's dot type, and V converted
to f32, or accumulated in f16 for an f16 V), the prompts `fox` and `mixed` evaluated in one batch,
then 8 greedy tokens one at a time (each run twice and required byte-identical, as the other
sets). llama.cpp writes the cache rows with ggml_cpy from F32, the CPU's from_float of the type.
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import llama_cpp_build  # noqa: E402
import make_llama_tiny as tiny  # noqa: E402

# name -> ggml_type (ggml.h)
KV_TYPES = [("f16", 1), ("bf16", 30), ("q8_0", 8), ("q4_0", 2), ("q4_1", 3), ("iq4_nl", 20),
            ("q5_0", 6), ("q5_1", 7)]
PROMPTS = ("fox", "mixed")
N_GREEDY = 8


def main():
    out = common.out_dir(__doc__)
    tensors, raw = tiny.convert(tiny.weights(), "f32")
    model = "llama-tiny-f32.gguf"
    path = os.path.join(out, model)
    common.write_gguf(path, "llama", tiny.fill(0), tensors, raw)
    ref = llama_cpp_build.runner(common.ISA)
    cases = []
    for name, gt in KV_TYPES:
        for pid in PROMPTS:
            text = common.PROMPTS[pid]
            toks = ref.tokenize(path, text)
            kw = dict(n_ctx=tiny.CTX, type_k=gt, type_v=gt, flash_attn=True)
            lg, greedy = ref.logits(path, toks, n_greedy=N_GREEDY, **kw)
            again, _ = ref.logits(path, toks, greedy=greedy, **kw)
            if not np.array_equal(lg, again):
                raise SystemExit(f"llama-kv: {name}/{pid}: llama.cpp's logits differ between two runs")
            n = len(toks)
            stem = f"kv-{name}.{pid}"
            lg[:n].astype("<f4").tofile(os.path.join(out, stem + ".prompt.f32"))
            lg[n:].astype("<f4").tofile(os.path.join(out, stem + ".greedy.f32"))
            c = dict(name=f"kv-{name}/{pid}", model=model, cache_type=name, flash_attn=True,
                     prompt=text, add_bos=True, tokens=toks, n_vocab=int(lg.shape[1]),
                     prompt_logits=stem + ".prompt.f32", greedy_tokens=greedy,
                     greedy_logits=stem + ".greedy.f32")
            c.update(common.case_fields())
            cases.append(c)
            print(f"{c['name']}: {n} tokens, greedy {greedy}", flush=True)
    common.write_cases(out, cases)
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(f"""# llama-kv: llama.cpp's logits through each KV cache type

{common.provenance("make_llama_kv.py")}
{__doc__.split(chr(10), 4)[4]}
Files: `{model}` (llama-tiny's F32 weights); `cases.json` (one case per type and prompt: name,
model, cache_type (llama.cpp's name, for K and V), flash_attn, prompt, add_bos, tokens, n_vocab,
prompt_logits (float32 LE `[len(tokens)][n_vocab]`), greedy_tokens ({N_GREEDY}), greedy_logits
(float32 LE `[{N_GREEDY}][n_vocab]`, row i after feeding greedy_tokens[i]), llama_cpp, ggml_isa).
""")


if __name__ == "__main__":
    main()
