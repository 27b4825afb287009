"""llama.cpp's logits for a GGUF and a token list, through llama-cpp-python's low-level API.

Shared by the reference generators in tools/ (tools/refs/make_*.py through tools/refs/llama_cpp_build.py,
which binds it to the pinned build; make_smollm3_fixture.py, make_ggml_refs.py). The
arithmetic is that of the llama.cpp the package was built from: llama-cpp-python 0.3.36 vendors
llama.cpp 0c1e570 (Oct 2026). Runs as the shared fixtures were made: CPU backend, 1 thread, F32
K and V cache, flash attention off, swa_full, the prompt in one llama_decode (logits of every
position), then one token per llama_decode.

    pip install llama-cpp-python==0.3.36 numpy      # builds llama.cpp for this CPU
    # or, with a llama.cpp build of 0c1e570 already made (shared libraries):
    LLAMA_CPP_LIB_PATH=/path/to/llama.cpp/build/bin PYTHONPATH=/path/to/llama_cpp_python-0.3.36
    # or, from Python, the pinned sdist and its build (tools/refs/llama_cpp_build.py; no pip install):
    llamacpp_ref = llama_cpp_build.runner("avx2")

    import llamacpp_ref
    logits, greedy = llamacpp_ref.logits("model.gguf", tokens, n_greedy=24)
"""
import ctypes
import os
import sys

import numpy as np

os.environ.setdefault("LLAMA_LOG_LEVEL", "error")
import llama_cpp as L  # noqa: E402

_LOG_CB = None


def _quiet():
    """Silences llama.cpp's log (it writes every load to stderr)."""
    global _LOG_CB
    if _LOG_CB is None:
        _LOG_CB = L.llama_log_callback(lambda level, text, user: None)
        L.llama_log_set(_LOG_CB, ctypes.c_void_p(0))
        L.llama_backend_init()


def tokenize(model_path, text, add_special=True, parse_special=True):
    """llama_tokenize of text with the model's vocabulary (BOS added where the model says)."""
    _quiet()
    mp = L.llama_model_default_params()
    mp.vocab_only = True
    m = L.llama_model_load_from_file(model_path.encode(), mp)
    if not m:
        sys.exit(f"llama.cpp cannot load {model_path}")
    vocab = L.llama_model_get_vocab(m)
    data = text.encode()
    buf = (L.llama_token * (len(data) + 8))()
    n = L.llama_tokenize(vocab, data, len(data), buf, len(buf), add_special, parse_special)
    L.llama_model_free(m)
    return [buf[i] for i in range(n)]


def logits(model_path, tokens, greedy=None, n_greedy=24, n_ctx=4096, type_k=0, type_v=0,
           flash_attn=False, loras=()):
    """Rows of logits: one per prompt token (one batch), then one per generated token fed back
    one at a time. greedy=None: llama.cpp's own argmax continuation (lowest id on ties) of
    n_greedy tokens; else those tokens teacher-forced. type_k / type_v: the KV cache's ggml_type
    (0 F32, the fixtures' default; 1 F16, 8 Q8_0, ...), flash_attn: llama.cpp's flash attention
    (which a quantized V cache needs); loras: (GGUF adapter path, scale) pairs set on the context
    (llama_adapter_lora_init, llama_set_adapters_lora). Returns (float32 [rows, n_vocab], the greedy tokens)."""
    _quiet()
    mp = L.llama_model_default_params()
    mp.n_gpu_layers = 0
    m = L.llama_model_load_from_file(model_path.encode(), mp)
    if not m:
        sys.exit(f"llama.cpp cannot load {model_path}")
    cp = L.llama_context_default_params()
    cp.n_ctx = n_ctx
    cp.n_batch = cp.n_ubatch = 512
    cp.n_threads = cp.n_threads_batch = 1
    cp.flash_attn_type = 1 if flash_attn else 0  # LLAMA_FLASH_ATTN_TYPE_ENABLED / _DISABLED
    cp.type_k, cp.type_v = type_k, type_v  # ggml_type: GGML_TYPE_F32 unless asked
    c = None
    cp.swa_full = True
    c = L.llama_init_from_model(m, cp)
    if not c:
        sys.exit(f"llama.cpp cannot make a context for {model_path} (type_k {type_k}, type_v "
                 f"{type_v}, flash_attn {flash_attn})")
    n_vocab = L.llama_vocab_n_tokens(L.llama_model_get_vocab(m))
    adapters = []
    for path, _ in loras:
        a = L.llama_adapter_lora_init(m, path.encode())
        if not a:
            sys.exit(f"llama.cpp cannot load the adapter {path} for {model_path}")
        adapters.append(a)
    if adapters:
        arr = (L.llama_adapter_lora_p_ctypes * len(adapters))(*adapters)
        sc = (ctypes.c_float * len(adapters))(*[float(x) for _, x in loras])
        if L.llama_set_adapters_lora(c, arr, len(adapters), sc) != 0:
            sys.exit(f"llama_set_adapters_lora failed on {model_path}")

    def decode(toks, pos0, all_rows):
        b = L.llama_batch_init(len(toks), 0, 1)
        for i, t in enumerate(toks):
            b.token[i] = t
            b.pos[i] = pos0 + i
            b.n_seq_id[i] = 1
            b.seq_id[i][0] = 0
            b.logits[i] = 1 if all_rows or i == len(toks) - 1 else 0
        b.n_tokens = len(toks)
        if L.llama_decode(c, b) != 0:
            sys.exit(f"llama_decode failed on {model_path}")
        rows = [np.ctypeslib.as_array(L.llama_get_logits_ith(c, i), shape=(n_vocab,)).copy()
                for i in range(len(toks)) if all_rows or i == len(toks) - 1]
        L.llama_batch_free(b)
        return rows

    out = decode(tokens, 0, True)
    fed = []
    for i in range(n_greedy if greedy is None else len(greedy)):
        t = int(np.argmax(out[-1])) if greedy is None else greedy[i]
        fed.append(t)
        out += decode([t], len(tokens) + i, False)
    L.llama_free(c)
    for a in adapters:
        L.llama_adapter_lora_free(a)
    L.llama_model_free(m)
    return np.array(out, dtype=np.float32), fed


def quantize(src, dst, ftype, nthread=1, pure=False):
    """llama_model_quantize(src -> dst) with llama.cpp's default parameters, ftype (enum
    llama_ftype, e.g. 15 = Q4_K_M) and nthread threads: what `llama-quantize SRC DST TYPE NTHREAD`
    does without an importance matrix or overrides; pure: its --pure (every matrix at the file
    type's default type, no per-tensor rules)."""
    _quiet()
    qp = L.llama_model_quantize_default_params()
    qp.ftype = ftype
    qp.nthread = nthread
    qp.pure = bool(pure)
    if L.llama_model_quantize(src.encode(), dst.encode(), ctypes.byref(qp)) != 0:
        sys.exit(f"llama_model_quantize failed: {src} -> {dst} (ftype {ftype})")
