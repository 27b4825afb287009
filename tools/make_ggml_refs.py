"""tests/data/ggml-avx2/refs.json: llama.cpp 0c1e570's logits on an AVX2 machine for the models of
the shared fixtures, as per-row hashes, for the ggml-activation mode's avx2 target
(test_ggml_mode: every row bit-identical).

The shared fixtures' own logits come from other llama.cpp builds on an AVX-512 machine
(c392e50: llama-tiny, llama-kq, gpt2-tiny; dc02e1f: arch); their float kernels sum in 16-lane
vectors where an AVX2 build uses 8, so the avx2 target needs logits of its own. Storing them
whole would take megabytes; a 64-bit FNV-1a hash of each row's float32 bytes (little-endian)
pins every bit of it. Per case: the fixture's prompt tokens (llama.cpp tokenizes them the
same), llama.cpp's own 24 greedy tokens, and one hash per row (prompt rows, then the rows after
each greedy token fed one at a time). To see the values of a failing case, run tools/
llamacpp_ref.py's logits() on it (same settings as below).

Needs llama-cpp-python 0.3.36 (llama.cpp 0c1e570) built for a CPU with AVX2, FMA and F16C but
no AVX-512 (pip builds it with -march=native), and numpy:

    /tmp/v/bin/python tools/make_ggml_refs.py --shared FIXTURES_DIR   (default: $VKF_FIXTURES)
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llamacpp_ref  # noqa: E402

FNV_OFFSET, FNV_PRIME = 0xcbf29ce484222325, 0x100000001b3

# (fixture set, case-name filter, n_ctx llama.cpp ran with for the fixture)
SETS = [("arch", "", 4096), ("llama-tiny", "", 512), ("llama-kq", "", 512), ("gpt2-tiny", "fox", 256)]


def fnv1a64(data):
    h = FNV_OFFSET
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return h


def main():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser()
    # the outside sets made on AVX-512 whose models refs.json hashes (tests/test_ggml_mode.c runs
    # it on a set that names no build)
    ap.add_argument("--shared", default=os.environ.get("VKF_FIXTURES"),
                    required=not os.environ.get("VKF_FIXTURES"),
                    help="the fixtures directory (default: VKF_FIXTURES)")
    ap.add_argument("--out", default=os.path.join(here, "tests", "data", "ggml-avx2", "refs.json"))
    a = ap.parse_args()
    refs = []
    for fixture, only, n_ctx in SETS:
        for cs in json.load(open(os.path.join(a.shared, fixture, "cases.json"))):
            if only not in cs["name"]:
                continue
            model = os.path.join(a.shared, fixture, cs["model"])
            lg, greedy = llamacpp_ref.logits(model, cs["tokens"], n_ctx=n_ctx)
            again, _ = llamacpp_ref.logits(model, cs["tokens"], greedy=greedy, n_ctx=n_ctx)
            assert (lg == again).all(), f"{cs['name']}: llama.cpp is not deterministic here"
            refs.append(dict(name=cs["name"], fixture=fixture, model=cs["model"],
                             tokens=cs["tokens"], greedy_tokens=greedy, n_vocab=lg.shape[1],
                             rows=["%016x" % fnv1a64(r.astype("<f4").tobytes()) for r in lg]))
            print(f"{cs['name']}: {len(lg)} rows, greedy {greedy[:6]}...", flush=True)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        f.write('{"llama_cpp": "0c1e570 (llama-cpp-python 0.3.36), x86-64 AVX2 FMA F16C, 1 thread, '
                'F32 KV cache, flash attention off", "hash": "FNV-1a 64 of each row\'s float32 bytes",\n'
                ' "cases": [\n')
        f.write(",\n".join(json.dumps(r) for r in refs))
        f.write("\n]}\n")


if __name__ == "__main__":
    main()
