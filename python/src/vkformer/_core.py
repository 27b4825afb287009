"""Thin wrappers of the library's objects: contexts, models, sessions, samplers, stop strings.

These follow include/vkformer.h one to one (create/free pairs become objects with ``close()``,
context managers and a finalizer) and are what :class:`vkformer.Llama` is built on. Threads,
as the C library's rules (vkformer.h, top of file): a :class:`Model` may serve sessions in any
number of threads; a :class:`Session` and a :class:`Sampler` belong to one thread at a time.
"""

from __future__ import annotations

import ctypes
import json
import threading
from ctypes import byref, c_int, c_int32, c_size_t, c_void_p
from typing import Any, Callable, Iterable, Sequence

import numpy as np
import numpy.typing as npt

from . import _lib
from ._lib import lib

_I32P = ctypes.POINTER(c_int32)


def _ids(tokens: Sequence[int] | npt.NDArray[Any]) -> npt.NDArray[np.int32]:
    arr = np.ascontiguousarray(tokens, dtype=np.int32)
    if arr.ndim != 1:
        raise ValueError(f"tokens: expected a flat sequence of token ids, got shape {arr.shape}")
    return arr


def _ptr(arr: npt.NDArray[Any]) -> Any:
    return arr.ctypes.data_as(_I32P)


class _Handle:
    """An owned library handle, freed once: by close(), by `with`, or by the garbage collector."""

    _free: Callable[[Any], None]

    def __init__(self) -> None:
        # created before the call that fills it, so a KeyboardInterrupt landing right after the
        # call returns still leaves the handle reachable for close()
        self._h = c_void_p()
        self._lock = threading.Lock()

    @property
    def closed(self) -> bool:
        return not self._h.value

    def _handle(self) -> c_void_p:
        if not self._h.value:
            raise ValueError(f"{type(self).__name__} is closed")
        return self._h

    def _release(self) -> None:
        """Subclasses free what they depend on after the handle (a model's context)."""

    def close(self) -> None:
        """Frees the library object now (later calls raise ValueError); idempotent."""
        with self._lock:
            h = self._h.value
            self._h.value = None
        if h:
            type(self)._free(h)
        self._release()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


# ---------------------------------------------------------------- contexts


class Context(_Handle):
    """A backend: a Vulkan device (with its pipelines and caches) or the CPU reference.

    Args:
        backend: ``None``/``"auto"`` (a Vulkan device if there is one, else the CPU),
            ``"vulkan"`` or ``"cpu"``.
        device: a Vulkan device index (``0``, ``"1"``) or name substring; ``None``: the
            ``VKF_DEVICE`` environment variable, else the first discrete, integrated, then any.
        validate: the Khronos validation layer on (also ``VKF_VALIDATE=1``).
    """

    _free = staticmethod(lib.vkf_context_free)

    def __init__(
        self,
        backend: str | None = None,
        device: int | str | None = None,
        validate: bool = False,
        ggml_activations: bool = False,
    ) -> None:
        super().__init__()
        kinds = {None: _lib.BACKEND_AUTO, "auto": _lib.BACKEND_AUTO, "cpu": _lib.BACKEND_CPU,
                 "vulkan": _lib.BACKEND_VULKAN}
        if backend not in kinds:
            raise ValueError(f"backend: expected 'auto', 'vulkan' or 'cpu', got {backend!r}")
        self._device_arg = None if device is None else _lib.cstr(str(device))
        p = _lib.ContextParams(kinds[backend], self._device_arg, int(validate),
                               int(ggml_activations))
        box = _lib.padded(p)
        _lib.check(lib.vkf_context_create(ctypes.addressof(box), byref(self._h)), "context")
        self._users = 0

    @property
    def device_name(self) -> str:
        """``"cpu"`` or the Vulkan device's name."""
        return (lib.vkf_context_device_name(self._handle()) or b"").decode("utf-8", "replace")

    @property
    def backend(self) -> str:
        """``"cpu"`` or ``"vulkan"``."""
        return "vulkan" if lib.vkf_context_backend(self._handle()) == _lib.BACKEND_VULKAN else "cpu"


# One context per (backend, device, validate) in the process, shared by the models loaded on it
# (a Vulkan context holds the device, its pipelines and caches: two models need not pay for two)
# and freed when its last model is closed.
_shared_lock = threading.Lock()
_shared: dict[tuple[Any, ...], Context] = {}


def _acquire_context(backend: str | None, device: int | str | None) -> Context:
    key = (backend or "auto", None if device is None else str(device))
    with _shared_lock:
        ctx = _shared.get(key)
        if ctx is None or ctx.closed:
            ctx = Context(backend, device)
            _shared[key] = ctx
        ctx._users += 1
        return ctx


def _release_context(ctx: Context) -> None:
    with _shared_lock:
        ctx._users -= 1
        if ctx._users > 0:
            return
        for k, v in list(_shared.items()):
            if v is ctx:
                del _shared[k]
    ctx.close()


# ---------------------------------------------------------------- models


class Model(_Handle):
    """A loaded model (weights on the backend, tokenizer, chat template).

    Args:
        path: a model directory (config.json + model.safetensors ...) or a .gguf file.
        backend, device: as :class:`Context`; models on the same backend and device share one
            context. Ignored when ``context`` is given.
        context: an explicit :class:`Context` (it must outlive the model).
        n_ctx: positions to prepare, tokens; 0: the library's default.
        tokenizer: a tokenizer file or directory that replaces the model's.
        use_mmap: map the file (default) or read it into memory.
    """

    _free = staticmethod(lib.vkf_model_free)

    def __init__(
        self,
        path: str,
        *,
        backend: str | None = None,
        device: int | str | None = None,
        context: Context | None = None,
        n_ctx: int = 0,
        tokenizer: str | None = None,
        use_mmap: bool = True,
    ) -> None:
        super().__init__()
        self._shared_ctx = context is None
        self.context = context if context is not None else _acquire_context(backend, device)
        try:
            self.path = str(path)
            self._path_b = _lib.cstr(self.path)
            self._tok_b = _lib.cstr(tokenizer)
            mp = _lib.ModelParams(self._path_b, self._tok_b, int(n_ctx), _lib.ProgressFn(), None,
                                  0 if use_mmap else 1)
            box = _lib.padded(mp)
            _lib.check(lib.vkf_model_load(self.context._handle(), ctypes.addressof(box),
                                          byref(self._h)))
        except BaseException:
            self.close()
            raise
        box = _lib.padded(_lib.ModelDesc())
        lib.vkf_model_describe(self._h, ctypes.addressof(box))
        self.desc = box.s  # type: ignore[attr-defined]

    def _release(self) -> None:
        ctx, self.__dict__["context"] = self.__dict__.get("context"), None
        if ctx is not None and self._shared_ctx:
            _release_context(ctx)

    # -- description

    @property
    def n_vocab(self) -> int:
        return int(self.desc.n_vocab)

    @property
    def n_ctx_train(self) -> int:
        return int(self.desc.n_ctx_train)

    @property
    def bos_id(self) -> int:
        return int(self.desc.bos_id)

    @property
    def eos_id(self) -> int:
        return int(self.desc.eos_id)

    @property
    def architecture(self) -> str:
        return (self.desc.architecture or b"").decode()

    @property
    def encoder_only(self) -> bool:
        """An embedding model (bert, nomic-bert): :meth:`Session.embed`, not generation."""
        return bool(self.desc.encoder_only)

    @property
    def tool_format(self) -> int:
        """The tool-call format of the chat template (``vkf_model_tool_format``)."""
        return int(lib.vkf_model_tool_format(self._handle()))

    def info(self) -> dict[str, Any]:
        """The library's report (``vkformer info --json``) as a dict."""
        out = c_void_p()
        _lib.check(lib.vkf_model_info(self._handle(), 1, byref(out)))
        return json.loads(_lib.take_string(out))

    # -- tokens

    def tokenize(self, text: str | bytes, add_special: bool = True,
                 parse_special: bool = True) -> list[int]:
        """Token ids of `text` (UTF-8); BOS where the model adds it when `add_special`;
        control-token text becomes its token when `parse_special`."""
        t = _lib.cstr(text)
        flags = (_lib.TOKENIZE_ADD_SPECIAL if add_special else 0) | (
            0 if parse_special else _lib.TOKENIZE_LITERAL)
        cap = len(t) + 8
        for _ in range(2):
            buf = (c_int32 * cap)()
            n = c_int32(0)
            st = lib.vkf_model_tokenize(self._handle(), t, flags, buf, cap, byref(n))
            if st == 0:
                return buf[: n.value]
            if n.value <= cap:
                break
            cap = n.value  # more tokens than bytes (byte fallback): once more with room
        _lib.raise_status(st, "tokenize")

    def detokenize(self, tokens: Iterable[int], special: bool = False,
                   continuation: bool = False) -> bytes:
        """The text of `tokens` as UTF-8 bytes (possibly ending inside a character).

        Args:
            special: render control tokens (BOS, EOS, ...) as their text.
            continuation: the tokens continue earlier text: keep the leading space a
                SentencePiece token carries.
        """
        ids = _ids(list(tokens))
        flags = (_lib.DETOKENIZE_SPECIAL if special else 0) | (
            _lib.DETOKENIZE_CONTINUATION if continuation else 0)
        out = c_void_p()
        _lib.check(lib.vkf_model_detokenize(self._handle(), _ptr(ids), len(ids), flags,
                                            byref(out)), "detokenize")
        return _lib.take_string(out)

    def is_eog(self, token: int) -> bool:
        """Whether `token` ends a generation (EOS and the tokenizer's end-of-turn tokens)."""
        return bool(lib.vkf_model_is_eog(self._handle(), int(token)))

    # -- chat

    @property
    def chat_template(self) -> str | None:
        """The model's Jinja chat template, or None (then ChatML is used, as llama.cpp)."""
        t = lib.vkf_model_chat_template(self._handle())
        return t.decode("utf-8") if t is not None else None

    def apply_chat_template(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        add_generation_prompt: bool = True,
        template_kwargs: dict[str, Any] | None = None,
    ) -> tuple[str, bool]:
        """Renders `messages` with the model's template (the library's Jinja interpreter).

        Returns the prompt text and whether the ChatML default was used (no template)."""
        mj = _lib.cstr(json.dumps(messages, ensure_ascii=False))
        tj = _lib.cstr(json.dumps(tools, ensure_ascii=False)) if tools is not None else None
        kj = (_lib.cstr(json.dumps(template_kwargs, ensure_ascii=False))
              if template_kwargs is not None else None)
        out = c_void_p()
        used = c_int(0)
        _lib.check(lib.vkf_chat_apply_ex(self._handle(), mj, tj, kj, int(add_generation_prompt),
                                         byref(out), byref(used)), "chat template")
        return _lib.take_string(out).decode("utf-8"), bool(used.value)

    def apply_template(
        self,
        template: str | None,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        add_generation_prompt: bool = True,
        template_kwargs: dict[str, Any] | None = None,
    ) -> str:
        """Renders `messages` with `template` (None: llama.cpp's ChatML) instead of the model's,
        through the library's one rendering path (``vkf_chat_apply_template``): tools a template
        does not render are described in the system message, as for the model's own."""
        mj = _lib.cstr(json.dumps(messages, ensure_ascii=False))
        tj = _lib.cstr(json.dumps(tools, ensure_ascii=False)) if tools is not None else None
        kj = (_lib.cstr(json.dumps(template_kwargs, ensure_ascii=False))
              if template_kwargs is not None else None)
        out = c_void_p()
        _lib.check(lib.vkf_chat_apply_template(self._handle(), _lib.cstr(template), mj, tj, kj,
                                               int(add_generation_prompt), byref(out)),
                   "chat template")
        return _lib.take_string(out).decode("utf-8")


def render_template(
    template: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None = None,
    template_kwargs: dict[str, Any] | None = None,
    bos_token: str = "",
    eos_token: str = "",
    add_generation_prompt: bool = True,
) -> str:
    """Renders a Jinja chat template as Hugging Face's apply_chat_template (the library's
    interpreter: trim_blocks, lstrip_blocks, raise_exception, strftime_now)."""
    out = c_void_p()
    _lib.check(lib.vkf_chat_template_render(
        _lib.cstr(template), _lib.cstr(json.dumps(messages, ensure_ascii=False)),
        _lib.cstr(json.dumps(tools, ensure_ascii=False)) if tools is not None else None,
        _lib.cstr(json.dumps(template_kwargs, ensure_ascii=False)) if template_kwargs else None,
        _lib.cstr(bos_token), _lib.cstr(eos_token), int(add_generation_prompt), byref(out)),
        "chat template")
    return _lib.take_string(out).decode("utf-8")


# ---------------------------------------------------------------- sessions


class Lora(_Handle):
    """A LoRA adapter of a model (``vkf_lora_load``): a llama.cpp GGUF adapter or a Hugging
    Face PEFT directory. Keep the model open while it lives; close it after the sessions that
    use it."""

    _free = staticmethod(lib.vkf_lora_free)

    def __init__(self, model: Model, path: str) -> None:
        super().__init__()
        self.model = model
        self.path = path
        _lib.check(lib.vkf_lora_load(model._handle(), _lib.cstr(path), byref(self._h)),
                   "lora")

    @property
    def n_tensors(self) -> int:
        """The model's matrices it adapts."""
        return int(lib.vkf_lora_n_tensors(self._handle()))

    @property
    def alpha(self) -> float:
        """adapter.lora.alpha (PEFT's lora_alpha); 0: none."""
        return float(lib.vkf_lora_alpha(self._handle()))


class Session(_Handle):
    """A KV cache and the graphs that fill it: one sequence of a decoder-only model.

    Args:
        model: the model (it must stay open while the session lives).
        n_ctx: tokens the cache holds; 0: the model's.
        cache_type: the KV cache type of K and V: ``None`` (the device's default), or one of
            llama.cpp's ``"f32"``, ``"f16"``, ``"bf16"``, ``"q8_0"``, ``"q4_0"``, ``"q4_1"``,
            ``"iq4_nl"``, ``"q5_0"``, ``"q5_1"`` (on Vulkan, K and V of one type).
        cache_type_k, cache_type_v: the same for K or V alone (they win over cache_type).
        n_batch: sequences evaluated together (an encoder-only model: inputs embedded in one
            graph; 0: the library's default).
        n_ubatch: most tokens in one forward pass (llama.cpp's -ub; 0: the library's: 512 on
            GPUs, 64 on CPU drivers): a prompt runs in passes of this many, and
            :meth:`request_abort` is heard between them.
    """

    _free = staticmethod(lib.vkf_session_free)

    def __init__(self, model: Model, n_ctx: int = 0, cache_type: str | None = None,
                 n_batch: int = 1, n_ubatch: int = 0, cache_type_k: str | None = None,
                 cache_type_v: str | None = None) -> None:
        super().__init__()
        kinds = {None: _lib.CACHE_DEFAULT, **_lib.CACHE_TYPES}
        for name, t in (("cache_type", cache_type), ("cache_type_k", cache_type_k),
                        ("cache_type_v", cache_type_v)):
            if t not in kinds:
                raise ValueError(f"{name}: expected None or one of "
                                 f"{', '.join(_lib.CACHE_TYPES)}, got {t!r}")
        tk = kinds[cache_type_k if cache_type_k is not None else cache_type]
        tv = kinds[cache_type_v if cache_type_v is not None else cache_type]
        self.model = model
        # the library's abort callback (llama.cpp's), asked before every forward pass: a flag
        # of its own, so the callback holds no reference to the session
        flag = self._abort = [False]
        self._abort_cb = _lib.AbortFn(lambda _user: 1 if flag[0] else 0)
        p = _lib.SessionParams(int(n_ctx), int(n_batch), tk, tv, int(n_ubatch),
                               self._abort_cb, None)
        box = _lib.padded(p)
        _lib.check(lib.vkf_session_create(model._handle(), ctypes.addressof(box),
                                          byref(self._h)), "session")

    def set_lora(self, adapters: Sequence["Lora"], scales: Sequence[float]) -> None:
        """The adapters the session applies, each with its user scale (``vkf_session_set_lora``;
        empty: none). Tokens already in the cache keep the set they were computed with."""
        if len(adapters) != len(scales):
            raise ValueError("set_lora: one scale per adapter")
        hs = (c_void_p * max(1, len(adapters)))(*[a._handle().value for a in adapters])
        sc = (ctypes.c_float * max(1, len(scales)))(*[float(x) for x in scales])
        _lib.check(lib.vkf_session_set_lora(self._handle(), hs, sc, len(adapters)), "lora")
        self._loras = list(adapters)  # they must outlive their use here

    def request_abort(self, on: bool = True) -> None:
        """Stops the running call before its next forward pass (AbortedError; the passes run
        stay in the cache), from any thread or a signal handler; False clears the request."""
        self._abort[0] = bool(on)

    @property
    def n_past(self) -> int:
        """Tokens in the cache."""
        return int(lib.vkf_session_n_past(self._handle()))

    @property
    def n_ctx(self) -> int:
        """Tokens the cache holds."""
        return int(lib.vkf_session_n_ctx(self._handle()))

    def memory(self) -> dict[str, int]:
        """Bytes by use: weights, kv_cache, activations, device_total, device_used."""
        box = _lib.padded(_lib.MemoryInfo())
        _lib.check(lib.vkf_session_memory(self._handle(), ctypes.addressof(box)), "memory")
        m = box.s  # type: ignore[attr-defined]
        return {f[0]: int(getattr(m, f[0])) for f in _lib.MemoryInfo._fields_}

    def reset(self) -> None:
        """Empties the cache."""
        lib.vkf_session_reset(self._handle())

    def truncate(self, n: int) -> None:
        """Keeps the first `n` tokens of the cache."""
        _lib.check(lib.vkf_session_truncate(self._handle(), int(n)), "truncate")

    def eval(self, tokens: Sequence[int] | npt.NDArray[Any],
             logits: npt.NDArray[np.float32] | None = None, all_rows: bool = False) -> None:
        """Appends `tokens` to the sequence; writes the logits straight into `logits` (a
        C-contiguous float32 array: n_vocab values for the last position, or len(tokens) x
        n_vocab with `all_rows`), no copy. The GIL is released while it runs."""
        ids = _ids(tokens)
        out = None
        if logits is not None:
            rows = len(ids) if all_rows else 1
            if (logits.dtype != np.float32 or not logits.flags.c_contiguous
                    or logits.size != rows * self.model.n_vocab or not logits.flags.writeable):
                raise ValueError(f"logits: expected a writable C-contiguous float32 array of "
                                 f"{rows} x {self.model.n_vocab}")
            out = logits.ctypes.data_as(c_void_p)
        fn = lib.vkf_session_eval if all_rows else lib.vkf_session_eval_last
        _lib.check(fn(self._handle(), _ptr(ids), len(ids), out))


    def embed(self, inputs: Sequence[str] | Sequence[Sequence[int]], pooling: int = 0,
              normalize: int = 0) -> Embeddings:
        """Embeds texts (with the model's special tokens) or token-id lists (used as given) with
        an encoder-only model (vkf_embed / vkf_embed_tokens); `pooling` and `normalize` are
        vkf_pooling / vkf_normalize values (0: the model's). The GIL is released while it
        runs."""
        box = _lib.padded(_lib.EmbedParams(int(pooling), int(normalize)))
        out = c_void_p()
        n = len(inputs)
        if n and not isinstance(inputs[0], (str, bytes)):
            arrs = [_ids(list(t)) for t in inputs]
            ptrs = (_I32P * max(1, n))(*[_ptr(a) for a in arrs])
            lens = np.array([len(a) for a in arrs], dtype=np.int32)
            _lib.check(lib.vkf_embed_tokens(self._handle(), ptrs, _ptr(lens), n,
                                            ctypes.addressof(box), byref(out)), "embed")
        else:
            enc = [_lib.cstr(t) for t in inputs]  # type: ignore[arg-type]
            arr = (ctypes.c_char_p * max(1, n))(*enc)
            _lib.check(lib.vkf_embed(self._handle(), arr, n, ctypes.addressof(box),
                                     byref(out)), "embed")
        return Embeddings(out)


    def rerank(self, query: str, documents: Sequence[str]) -> tuple[list[float], list[int]]:
        """Each document's relevance score to `query` and the pair's token count, through a
        cross-encoder's classifier head (vkf_rerank). The GIL is released while it runs."""
        n = len(documents)
        enc = [_lib.cstr(d) for d in documents]
        arr = (ctypes.c_char_p * max(1, n))(*enc)
        scores = (ctypes.c_float * max(1, n))()
        ntok = np.zeros(max(1, n), dtype=np.int32)
        _lib.check(lib.vkf_rerank(self._handle(), _lib.cstr(query), arr, n, scores, _ptr(ntok)),
                   "rerank")
        return [float(scores[i]) for i in range(n)], [int(ntok[i]) for i in range(n)]


class Embeddings:
    """The library's vkf_embeddings, copied out: ``vectors`` (n_vectors x dim float32, input
    after input), ``first`` / ``n_tokens`` / ``truncated`` per input, ``total_tokens``,
    ``pooling`` (a vkf_pooling) and ``normalized``."""

    def __init__(self, handle: c_void_p) -> None:
        try:
            e = ctypes.cast(handle, ctypes.POINTER(_lib.Embeddings)).contents
            n = int(e.n_inputs)
            self.dim = int(e.dim)
            self.vectors: npt.NDArray[np.float32] = np.ctypeslib.as_array(
                e.data, shape=(int(e.n_vectors), self.dim)).copy() if e.n_vectors else \
                np.zeros((0, self.dim), dtype=np.float32)
            self.first = [int(e.first[i]) for i in range(n)]
            self.n_tokens = [int(e.n_tokens[i]) for i in range(n)]
            self.truncated = [int(e.truncated[i]) for i in range(n)]
            self.total_tokens = int(e.total_tokens)
            self.pooling = int(e.pooling)
            self.normalized = bool(e.normalized)
        finally:
            lib.vkf_embeddings_free(handle)

    def of(self, i: int) -> npt.NDArray[np.float32]:
        """Input i's vector (pooled), or its rows, one per token (``VKF_POOLING_NONE``)."""
        if self.pooling == _lib.POOLING_NONE:
            return self.vectors[self.first[i]: self.first[i] + self.n_tokens[i]]
        return self.vectors[self.first[i]]


# ---------------------------------------------------------------- sampling


class Sampler(_Handle):
    """The library's sampler chain (llama.cpp's order: [grammar], penalties, top-k, typical-p,
    top-p, min-p, temperature, draw); see vkf_sampler_params for each field.

    Args:
        model: the model whose vocabulary a grammar is matched against (needed with
            ``grammar``; it must stay open while the sampler lives).
        grammar: a GBNF grammar (text): only tokens that continue a string it derives are
            drawn, and each drawn token advances it (a malformed one raises FormatError with
            its line and column).
        grammar_root: its start rule (default ``"root"``).
        **params: the other fields of vkf_sampler_params (temp, top_k, top_p, seed, ...).
    """

    _free = staticmethod(lib.vkf_sampler_free)

    def __init__(self, model: Model | None = None, grammar: str | None = None,
                 grammar_root: str | None = None, **params: Any) -> None:
        super().__init__()
        p = _lib.SamplerParams()
        for k, v in params.items():
            if not hasattr(p, k) or k in ("grammar", "grammar_root"):
                raise TypeError(f"Sampler: unknown parameter {k!r}")
            setattr(p, k, v)
        # the library copies the grammar's text: these need only outlive the call
        g, root = _lib.cstr(grammar), _lib.cstr(grammar_root)
        p.grammar, p.grammar_root = g, root
        self.params = p
        self.model = model
        box = _lib.padded(p)
        if model is not None:
            _lib.check(lib.vkf_sampler_create_ex(model._handle(), ctypes.addressof(box),
                                                 byref(self._h)), "sampler")
        else:
            _lib.check(lib.vkf_sampler_create(ctypes.addressof(box), byref(self._h)), "sampler")

    @property
    def grammar_state(self) -> int:
        """Where the grammar stands after the tokens drawn so far: ``GRAMMAR_NONE`` (no
        grammar), ``GRAMMAR_OPEN``, ``GRAMMAR_MAY_END`` or ``GRAMMAR_MUST_END`` (complete,
        nothing can extend it: only end-of-generation)."""
        return int(lib.vkf_sampler_grammar_state(self._handle()))

    def sample(self, logits: npt.NDArray[np.float32]) -> int:
        """A token drawn from `logits` (float32, C-contiguous, n_vocab values)."""
        if logits.dtype != np.float32 or not logits.flags.c_contiguous:
            logits = np.ascontiguousarray(logits, dtype=np.float32)
        tok = c_int32(0)
        _lib.check(lib.vkf_sampler_sample(self._handle(), logits.ctypes.data_as(c_void_p),
                                          logits.size, byref(tok)), "sample")
        return tok.value

    def accept(self, token: int) -> None:
        """Records `token` in the penalty window."""
        _lib.check(lib.vkf_sampler_accept(self._handle(), int(token)), "sampler")


class Stopper(_Handle):
    """Stop strings at the text level (vkf_stopper): pieces go in, the text safe to show comes
    out, a tail that may begin a stop string (or an unfinished UTF-8 character) held back."""

    _free = staticmethod(lib.vkf_stopper_free)

    def __init__(self, stops: Sequence[str]) -> None:
        super().__init__()
        enc = [_lib.cstr(s) for s in stops]
        arr = (ctypes.c_char_p * max(1, len(enc)))(*enc)
        _lib.check(lib.vkf_stopper_create(arr, len(enc), byref(self._h)), "stop")

    def push(self, piece: bytes) -> tuple[bytes, bool]:
        """Appends `piece`; returns the text to show now and whether a stop string matched."""
        emit, n = c_void_p(), c_size_t(0)
        hit = lib.vkf_stopper_push(self._handle(), piece, len(piece), byref(emit), byref(n))
        return (ctypes.string_at(emit.value, n.value) if n.value else b""), bool(hit)

    def flush(self) -> bytes:
        """The held-back tail, at the end of a generation without a stop."""
        emit, n = c_void_p(), c_size_t(0)
        lib.vkf_stopper_flush(self._handle(), byref(emit), byref(n))
        return ctypes.string_at(emit.value, n.value) if n.value else b""


# ---------------------------------------------------------------- structured output


def grammar_check(gbnf: str, root: str | None = None) -> None:
    """Parses a GBNF grammar (llama.cpp's format) without a model; raises FormatError with the
    line, column and what was expected."""
    _lib.check(lib.vkf_grammar_check(_lib.cstr(gbnf), _lib.cstr(root)))


def json_schema_to_grammar(schema: str | dict[str, Any] | bool) -> str:
    """The GBNF grammar of the JSON texts a JSON Schema validates (vkf_json_schema_to_grammar,
    llama.cpp's layout). A keyword the library does not translate raises UnsupportedError
    naming it and where it is; a malformed schema FormatError."""
    text = schema if isinstance(schema, str) else json.dumps(schema, ensure_ascii=False)
    out = c_void_p()
    _lib.check(lib.vkf_json_schema_to_grammar(_lib.cstr(text), byref(out)))
    return _lib.take_string(out).decode("utf-8")


def tool_format_name(fmt: int) -> str:
    """"generic", "hermes", "llama3", "mistral", "deepseek" or "functionary"."""
    return (lib.vkf_tool_format_name(int(fmt)) or b"").decode()


def tool_calls_grammar(fmt: int, tools: list[dict[str, Any]], tool_choice: Any,
                       parallel: bool = True) -> str | None:
    """The grammar of tool_choice over tools in the model's call syntax (None for "none" and
    "auto": no constraint)."""
    out = c_void_p()
    _lib.check(lib.vkf_tool_calls_grammar(
        int(fmt), _lib.cstr(json.dumps(tools, ensure_ascii=False)),
        _lib.cstr(json.dumps(tool_choice, ensure_ascii=False)) if tool_choice is not None
        else None, int(bool(parallel)), byref(out)))
    return _lib.take_string(out).decode("utf-8") if out.value else None


def tool_calls_parse(fmt: int, text: str | bytes) -> dict[str, Any]:
    """A model's whole answer -> OpenAI's assistant message (``tool_calls`` when it holds
    calls; text that is not a call stays in ``content``)."""
    b = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    out = c_void_p()
    _lib.check(lib.vkf_tool_calls_parse(int(fmt), b, len(b), byref(out)), "tool calls")
    return json.loads(_lib.take_string(out))


class ToolParser(_Handle):
    """Tool calls from a stream of answer text (vkf_tool_parser): pieces go in, OpenAI's
    ``delta`` objects come out (text, then a call's id and name, then its arguments in pieces)."""

    _free = staticmethod(lib.vkf_tool_parser_free)

    def __init__(self, fmt: int) -> None:
        super().__init__()
        _lib.check(lib.vkf_tool_parser_create(int(fmt), byref(self._h)), "tool parser")

    def push(self, text: str | bytes, last: bool = False) -> list[dict[str, Any]]:
        """Appends `text`; `last`: the answer is complete. Returns the deltas ready now."""
        b = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        out = c_void_p()
        _lib.check(lib.vkf_tool_parser_push(self._handle(), b, len(b), int(last), byref(out)),
                   "tool parser")
        return json.loads(_lib.take_string(out) or b"[]")

    def message(self) -> dict[str, Any]:
        """The message so far (after the last piece: vkf_tool_calls_parse's of the whole)."""
        out = c_void_p()
        _lib.check(lib.vkf_tool_parser_message(self._handle(), byref(out)), "tool parser")
        return json.loads(_lib.take_string(out))

    @property
    def n_calls(self) -> int:
        return int(lib.vkf_tool_parser_n_calls(self._handle()))


# ---------------------------------------------------------------- the library itself


def version() -> str:
    """The version of the library that runs ("MAJOR.MINOR.PATCH")."""
    return lib.vkf_version().decode()


def git_revision() -> str:
    return lib.vkf_git_revision().decode()


def devices() -> list[dict[str, Any]]:
    """Every Vulkan device and its capabilities (``vkformer devices --json``)."""
    out = c_void_p()
    _lib.check(lib.vkf_devices_report(1, byref(out)), "devices")
    report = json.loads(_lib.take_string(out))
    if isinstance(report, dict) and isinstance(report.get("devices"), list):
        return report["devices"]
    return report if isinstance(report, list) else [report]


def selftest(quick: bool = True, backend: str | None = None, device: int | str | None = None,
             log: Callable[[str], None] | None = None) -> dict[str, int]:
    """Runs the op harness on a device against the CPU reference (``vkformer selftest``).

    Returns ``{"n_cases": ..., "n_failed": ...}``; `log` gets one line per case."""
    box = _lib.padded(_lib.SelftestResult())
    errors: list[BaseException] = []

    def on_line(_user: Any, line: bytes) -> None:
        if log is not None and not errors:
            try:
                log(line.decode("utf-8", "replace"))
            except BaseException as e:  # noqa: BLE001 (raised again after the call)
                errors.append(e)

    cb = _lib.LogFn(on_line)
    with Context(backend, device) as ctx:
        _lib.check(lib.vkf_selftest(ctx._handle(), int(quick), cb, None, ctypes.addressof(box)),
                   "selftest")
    if errors:
        raise errors[0]
    res = box.s  # type: ignore[attr-defined]
    return {"n_cases": res.n_cases, "n_failed": res.n_failed}
