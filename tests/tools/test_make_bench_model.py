#!/usr/bin/env python3
"""tools/make_bench_model.py's random blocks, decoded by llama.cpp's gguf-py (PyPI `gguf`, pinned
in tests/requirements.txt), have the distribution the tool promises, on the small tiny-256 shape
(4 layers, d_model 256, FFN 768, vocabulary 512), in every type it writes directly:

- each tensor has the type llama-quantize gives it in that file type (written out here by hand
  from llama.cpp's llama_tensor_get_type for this shape, not from the tool's code);
- the weights decode to finite values with mean 0 and standard deviation sigma (1 for the
  embedding, 1/sqrt(d_in) for a projection), per tensor and pooled over all of them;
- the quant levels are uniform (Q4_0: the 16 levels of (w / d) + 8; Q8_0: w / d in -127..127).

    VKF_PYTHON tests/tools/test_make_bench_model.py   (exit 77: gguf-py is not installed)
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import gguf
    from gguf.quants import dequantize
except ImportError as e:
    print("skipped: %s (./setup.sh test installs tests/requirements.txt)" % e)
    sys.exit(77)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(ROOT, "tools", "make_bench_model.py")
N_LAYER = 4
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def expected_type(ftype, name):
    """llama-quantize's choice for tiny-256 (4 layers, untied output): output.weight Q6_K unless
    the file is Q8_0; in Q4_K_M, attn_v and ffn_down Q6_K in the layers where use_more_bits(i, 4)
    holds: i < 0 or i >= 3 or (i - 0) % 3 == 2, i.e. layers 2 and 3."""
    base = {"q4_0": "Q4_0", "q8_0": "Q8_0", "q4_k_m": "Q4_K"}[ftype]
    if name == "output.weight":
        return "Q8_0" if ftype == "q8_0" else "Q6_K"
    if ftype == "q4_k_m" and name.split(".")[-2] in ("attn_v", "ffn_down"):
        return "Q6_K" if name.split(".")[1] in ("2", "3") else "Q4_K"
    return base


def main():
    tmp = tempfile.mkdtemp(prefix="vkf-bench-model-")
    for ftype in ("q4_0", "q8_0", "q4_k_m"):
        path = os.path.join(tmp, ftype + ".gguf")
        subprocess.run([sys.executable, TOOL, "--shape", "tiny-256", "--type", ftype, "-o", path],
                       check=True, stderr=subprocess.DEVNULL)
        r = gguf.GGUFReader(path)
        names = [t.name for t in r.tensors]
        # 4 layers of 9 tensors, the embedding, the final norm and the output
        check(len(names) == 4 * 9 + 3, "%s: %d tensors" % (ftype, len(names)))
        pooled_z = []  # every weight divided by its tensor's sigma
        for t in r.tensors:
            if len(t.shape) < 2:
                continue
            check(t.tensor_type.name == expected_type(ftype, t.name),
                  "%s %s: type %s, expected %s" % (ftype, t.name, t.tensor_type.name,
                                                   expected_type(ftype, t.name)))
            w = dequantize(t.data, t.tensor_type).astype(np.float64).ravel()
            d_in = int(t.shape[0])
            check(w.size == d_in * int(t.shape[1]), "%s %s: %d values" % (ftype, t.name, w.size))
            check(bool(np.isfinite(w).all()), "%s %s: non-finite weights" % (ftype, t.name))
            sigma = 1.0 if t.name == "token_embd.weight" else 1.0 / np.sqrt(d_in)
            z = w / sigma
            # Per tensor: the smallest has 32,768 weights in 128 K-quant blocks whose scales vary
            # by a log-normal factor (sd 0.2), so the sd of one tensor's estimate is ~2%: 10%
            # is 5 of those; the mean's sd is ~1/sqrt(32768) = 0.6% of sigma: 5% is 8 of those.
            # A Q4_0 block without its random scale sign would be -0.11 sigma off, a Q4_K block
            # without its min 1.6 sigma, a missing square root 4-70x.
            check(abs(z.std() - 1) < 0.10, "%s %s: sd %.4f sigma" % (ftype, t.name, z.std()))
            check(abs(z.mean()) < 0.05, "%s %s: mean %.4f sigma" % (ftype, t.name, z.mean()))
            pooled_z.append(z)
            # the levels: Q4_0 d = the block's f16 scale; 18-byte blocks
            raw = np.asarray(t.data, dtype=np.uint8).reshape(-1)
            if t.tensor_type.name == "Q4_0":
                blk = raw.reshape(-1, 18)
                d = blk[:, 0:2].copy().view("<f2").astype(np.float64)
                lv = np.rint(w.reshape(-1, 32) / d + 8)
                check(bool((np.abs(w.reshape(-1, 32) / d + 8 - lv) < 1e-3).all()),
                      "%s %s: Q4_0 weights off d * (q - 8)" % (ftype, t.name))
                # 16 levels, each 1/16 of the weights: counts of >= 4,096 blocks of 32, sd of a
                # level's share ~0.2%, so 1% is 5 sd
                share = np.bincount(lv.astype(np.int64).ravel(), minlength=16) / lv.size
                check(share.size == 16 and np.abs(share - 1 / 16).max() < 0.01,
                      "%s %s: Q4_0 levels not uniform: %s" % (ftype, t.name, np.round(share, 4)))
            if t.tensor_type.name == "Q8_0":
                blk = raw.reshape(-1, 34)
                q = blk[:, 2:].view(np.int8)
                check(int(q.min()) >= -127, "%s %s: Q8_0 holds -128" % (ftype, t.name))
                # uniform over -127..127 (0 twice as often): the sd of q is sqrt(5397.5) = 73.5;
                # with >= 32,768 values its estimate is within 1% (sd ~0.3%)
                check(abs(q.astype(np.float64).std() / np.sqrt(5397.5) - 1) < 0.01,
                      "%s %s: Q8_0 quants sd %.2f" % (ftype, t.name, q.astype(np.float64).std()))
        z = np.concatenate(pooled_z)
        # pooled over ~1.3 M weights: the sd's estimate is within ~0.5% (block scales shared by
        # 32-256 weights), the mean within 0.1% of sigma: 3% and 1% leave room for that and
        # still catch a wrong constant of 3 or more percent in the scale arithmetic
        check(abs(z.std() - 1) < 0.03, "%s pooled: sd %.4f sigma" % (ftype, z.std()))
        check(abs(z.mean()) < 0.01, "%s pooled: mean %.4f sigma" % (ftype, z.mean()))
        print("%s: %d weight tensors, pooled sd %.4f sigma, mean %+.4f sigma" %
              (ftype, len(pooled_z), z.std(), z.mean()))
        os.remove(path)
    os.rmdir(tmp)
    if failures:
        print("%d failures" % len(failures))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
