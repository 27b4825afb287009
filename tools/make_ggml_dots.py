"""tests/data/ggml-avx2/dots.json: single-row dot products of llama.cpp 0c1e570's CPU backend
(the AVX2 build of tools/refs/llama_cpp_build.py) for the weight types whose vec_dot takes blocks
in pairs with a scalar tail for an odd last one (MXFP4, IQ4_NL): the kernel llama.cpp runs for a
weight it does not repack (rows not a multiple of 8). The model sets cover only even block counts
and repacked weights; these pin the other path bit for bit (test_ggml_mode).

Per case: the weight row and the activation row as float32 bits (numpy default_rng(SEED)), the
weight quantized by ggml's reference quantizer (ggml_quantize_chunk), the activation quantized by
the CPU backend's from_float of the type's vec_dot_type (Q8_0), and vec_dot's result, all as hex.

    python3 tools/make_ggml_dots.py            # rewrites tests/data/ggml-avx2/dots.json
"""
import ctypes
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "refs"))
import llama_cpp_build  # noqa: E402

SEED = 4141
GGML_TYPES = {"IQ4_NL": 20, "MXFP4": 39}
GGML_TYPE_Q8_0 = 8
# (type, blocks of 32): odd counts take the tail, 1 only the tail
CASES = [("MXFP4", 1), ("MXFP4", 2), ("MXFP4", 3), ("MXFP4", 7), ("MXFP4", 8),
         ("IQ4_NL", 1), ("IQ4_NL", 3), ("IQ4_NL", 7)]


class Traits(ctypes.Structure):
    _fields_ = [("from_float", ctypes.c_void_p), ("vec_dot", ctypes.c_void_p),
                ("vec_dot_type", ctypes.c_int), ("nrows", ctypes.c_int64)]


FROM_FLOAT = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
VEC_DOT = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.POINTER(ctypes.c_float), ctypes.c_size_t,
                           ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t,
                           ctypes.c_int)


def main():
    lib = llama_cpp_build.build("avx2")
    base = ctypes.CDLL(os.path.join(lib, "libggml-base.so.0"), mode=ctypes.RTLD_GLOBAL)
    cpu = ctypes.CDLL(os.path.join(lib, "libggml-cpu.so.0"), mode=ctypes.RTLD_GLOBAL)
    cpu.ggml_cpu_init()
    cpu.ggml_get_type_traits_cpu.restype = ctypes.POINTER(Traits)
    base.ggml_quantize_chunk.restype = ctypes.c_size_t
    base.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                         ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
    base.ggml_row_size.restype = ctypes.c_size_t
    base.ggml_row_size.argtypes = [ctypes.c_int, ctypes.c_int64]
    rng = np.random.default_rng(SEED)
    out = []
    for name, nb in CASES:
        t = GGML_TYPES[name]
        k = 32 * nb
        # weights with a spread of block scales; activations with an outlier per block
        w = (rng.standard_normal(k) * np.repeat(rng.uniform(0.01, 2.0, nb), 32)).astype(np.float32)
        x = rng.standard_normal(k).astype(np.float32)
        x[rng.integers(0, 32, nb) + 32 * np.arange(nb)] *= 8
        tr = cpu.ggml_get_type_traits_cpu(t).contents
        assert tr.vec_dot_type == GGML_TYPE_Q8_0
        wq = ctypes.create_string_buffer(base.ggml_row_size(t, k))
        base.ggml_quantize_chunk(t, w.ctypes.data, wq, 0, 1, k, None)
        aq = ctypes.create_string_buffer(base.ggml_row_size(GGML_TYPE_Q8_0, k))
        FROM_FLOAT(cpu.ggml_get_type_traits_cpu(GGML_TYPE_Q8_0).contents.from_float)(x.ctypes.data, aq, k)
        s = ctypes.c_float()
        VEC_DOT(tr.vec_dot)(k, ctypes.byref(s), 0, wq, 0, aq, 0, 1)
        out.append(dict(type=name, k=k, w=w.view(np.uint32).tolist(), x=x.view(np.uint32).tolist(),
                        wq=wq.raw.hex(), aq=aq.raw.hex(),
                        dot=int(np.array([s.value], dtype=np.float32).view(np.uint32)[0])))
        print(f"{name} k={k}: {s.value!r}", file=sys.stderr)
    path = os.path.join(os.path.dirname(HERE), "tests", "data", "ggml-avx2", "dots.json")
    with open(path, "w") as f:
        f.write('{"llama_cpp": "0c1e570 (llama-cpp-python 0.3.36), the avx2 build of tools/refs/llama_cpp_build.py",\n'
                ' "what": "w, x: float32 bits; wq: ggml_quantize_chunk; aq: the CPU backend\'s Q8_0 from_float; '
                'dot: vec_dot (one row, nrc 1), float32 bits",\n "cases": [\n')
        f.write(",\n".join(json.dumps(c, separators=(",", ":")) for c in out))
        f.write("\n]}\n")


if __name__ == "__main__":
    main()
