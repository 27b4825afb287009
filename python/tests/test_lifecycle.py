"""Objects free deterministically (close, with, garbage collection), share one device context,
and errors carry the library's message; llama-cpp-python's arguments are taken or refused."""

from __future__ import annotations

import gc
import warnings
import weakref

import pytest
import vkformer
from vkformer import _core

from conftest import KJV, TINY


def test_close_with_and_gc_free_everything():
    before = dict(_core._shared)
    llm = vkformer.Llama(str(KJV), verbose=False)
    ctx = llm.model.context
    assert ctx is not None and not ctx.closed
    llm.close()
    llm.close()  # idempotent
    with pytest.raises(ValueError, match="closed"):
        llm("x", max_tokens=1)
    with pytest.raises(ValueError, match="closed"):
        llm.tokenize(b"x")
    if not before:
        assert ctx.closed  # the last model on it: the device context is freed too
    with vkformer.Llama(str(KJV), verbose=False) as a:
        model = weakref.ref(a.model)
        a("x", max_tokens=1, seed=1)
    assert model() is None or model().closed
    b = vkformer.Llama(str(KJV), verbose=False)
    handle = b.model
    del b
    gc.collect()
    assert handle.closed  # the finalizer closed it
    assert _core._shared == before


def test_two_models_share_one_context_and_run_alone_alike():
    with vkformer.Llama(str(KJV), verbose=False) as a, \
            vkformer.Llama(str(KJV), verbose=False) as b:
        assert a.model.context is b.model.context
        ra = a("And God", max_tokens=10, seed=8)["choices"][0]["text"]
        rb = b("And God", max_tokens=10, seed=8)["choices"][0]["text"]
        assert ra == rb
        a.close()
        assert not b.model.context.closed
        assert b("And God", max_tokens=10, seed=8)["choices"][0]["text"] == ra


def test_errors_carry_the_library_message(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        vkformer.Llama(str(tmp_path / "nothing.gguf"), verbose=False)
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 12)
    with pytest.raises(vkformer.VkformerError) as e:
        vkformer.Llama(str(bad), verbose=False)
    assert "bad.gguf" in str(e.value) and e.value.status.startswith("VKF_ERROR_")
    with pytest.raises(vkformer.InvalidArgumentError, match="pass the directory") as e:
        vkformer.Model(str(KJV / "model.safetensors"))
    assert e.value.status == "VKF_ERROR_INVALID_ARGUMENT" and isinstance(e.value, ValueError)
    with pytest.raises(ValueError, match="encoder-decoder"):
        vkformer.Llama(str(KJV.parent / "dates-transformer"), verbose=False)


def test_llama_cpp_arguments():
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        llm = vkformer.Llama(str(KJV), n_threads=8, use_mlock=True, n_gpu_layers=-1,
                             flash_attn=True, verbose=False)
        llm.close()
    msgs = " ".join(str(x.message) for x in w)
    assert "n_threads" in msgs and "use_mlock" in msgs
    assert "n_gpu_layers" not in msgs and "flash_attn" not in msgs
    for bad in ({"kv_overrides": {"a": 1}}, {"lora_base": "x.gguf"}, {"rope_freq_base": 5e5},
                {"type_k": 12}, {"vocab_only": True}):  # 12: GGML_TYPE_Q3_K, no cache type
        with pytest.raises(ValueError, match=next(iter(bad))):
            vkformer.Llama(str(KJV), verbose=False, **bad)
    # ggml's type ids: 0 = F32, 1 = F16; an F32 cache holds twice the bytes
    kv = {}
    for t in (0, 1):
        with vkformer.Llama(str(TINY), type_k=t, type_v=t, verbose=False) as llm:
            kv[t] = llm._s().memory()["kv_cache"]
    assert kv[0] == 2 * kv[1] > 0


def test_low_level_api():
    devs = vkformer.devices()
    assert isinstance(devs, list) and devs
    assert vkformer.__version__.count(".") == 2
    lines = []
    res = vkformer.selftest(quick=True, backend="cpu", log=lines.append)
    assert res["n_failed"] == 0 and res["n_cases"] > 0 and len(lines) >= 1
    with vkformer.Model(str(KJV), backend="cpu") as m, vkformer.Session(m, n_ctx=16) as s:
        import numpy as np

        logits = np.zeros(m.n_vocab, dtype=np.float32)
        s.eval(m.tokenize("In"), logits)
        assert s.n_past == 3 and s.n_ctx == 16
        with pytest.raises(vkformer.ContextFullError, match="context"):
            s.eval(list(range(5)) * 4)
        assert s.n_past == 3  # a refused call leaves the session as it was
        with vkformer.Sampler(temp=0) as smp:
            assert smp.sample(logits) == int(np.argmax(logits))
