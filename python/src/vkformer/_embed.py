"""Embeddings for :class:`vkformer.Llama` (llama-cpp-python's ``embed`` / ``create_embedding``)
on the library's vkf_embed: encoder-only models (BERT, all-MiniLM, BGE, E5, nomic-bert)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Union

from . import _errors, _lib

if TYPE_CHECKING:
    from .llama import Llama

# llama.cpp's llama_pooling_type (llama-cpp-python's pooling_type=) -> vkf_pooling
POOLING_FROM_LLAMA = {-1: _lib.POOLING_DEFAULT, 0: _lib.POOLING_NONE, 1: _lib.POOLING_MEAN,
                      2: _lib.POOLING_CLS, 3: _lib.POOLING_LAST, 4: _lib.POOLING_RANK}
_NORMALIZE = {None: _lib.NORMALIZE_DEFAULT, True: _lib.NORMALIZE_ON, False: _lib.NORMALIZE_OFF}

Input = Union[str, List[str], List[int], List[List[int]]]


def _inputs(input: Input) -> tuple[Sequence[Any], bool]:
    """The inputs as a list (texts, or token-id lists) and whether a single one was given."""
    if isinstance(input, str):
        return [input], True
    if isinstance(input, (list, tuple)):
        if not input:
            raise ValueError("input: expected a string, a list of strings, token ids or a list "
                             "of lists of token ids; got an empty list")
        if all(isinstance(t, int) for t in input):  # one input as token ids (OpenAI's form)
            return [list(input)], True
        if all(isinstance(t, str) for t in input):
            return list(input), False
        if all(isinstance(t, (list, tuple)) and all(isinstance(x, int) for x in t)
               for t in input):
            return [list(t) for t in input], False
    raise TypeError("input: expected a string, a list of strings, token ids or a list of "
                    "lists of token ids")


def embed(llm: "Llama", input: Input, normalize: Optional[bool], truncate: bool,
          return_count: bool) -> Any:
    """llama-cpp-python's Llama.embed: a list of floats per input (a list of them, one per
    token, when the pooling is none); the single input's own when `input` is one."""
    if not llm._embedding:
        raise RuntimeError("Llama model must be created with embedding=True to call this method")
    m = llm._m()
    if not m.encoder_only:
        raise _errors.UnsupportedError(
            f"{llm.model_path}: embeddings need an encoder-only model (the BERT family: "
            f"all-MiniLM, BGE, E5, nomic-bert); this is a {m.architecture} decoder, and the "
            "library's vkf_embed pools only encoder-only models", "VKF_ERROR_UNSUPPORTED")
    if normalize not in _NORMALIZE:
        raise TypeError("normalize: expected True, False or None (the model's default)")
    items, single = _inputs(input)
    with llm._lock:
        e = llm._s().embed(items, llm._pooling, _NORMALIZE[normalize])
    if not truncate and any(e.truncated):
        i = next(k for k, n in enumerate(e.truncated) if n)
        raise ValueError(f"input {i}: {e.n_tokens[i] + e.truncated[i]} tokens exceed the "
                         f"model's {m.desc.n_embd_max} (truncate=True keeps the first ones)")
    data = [e.of(i).tolist() for i in range(len(items))]
    result = data[0] if single else data
    return (result, e.total_tokens) if return_count else result


def create_embedding(llm: "Llama", input: Input, model: Optional[str]) -> Any:
    """OpenAI's embeddings response (llama-cpp-python's create_embedding): one entry per input,
    usage counting the tokens embedded (specials included)."""
    items, single = _inputs(input)
    embeds, total = embed(llm, items, False, True, True)
    return {
        "object": "list",
        "data": [{"object": "embedding", "embedding": v, "index": i}
                 for i, v in enumerate(embeds)],
        "model": model if model is not None else llm.model_path,
        "usage": {"prompt_tokens": total, "total_tokens": total},
    }


