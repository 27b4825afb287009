"""Speculative decoding for :class:`vkformer.Llama`, as llama-cpp-python's
``llama_cpp.llama_speculative``: a draft model proposes the next tokens, and ``Llama`` checks
them all in one batched pass of the model (rows of rejected drafts are dropped from the KV
cache). Every token is still drawn by the call's own sampler from the model's logits, one draw
per token, so the output is the one without speculation (the same tokens for the same seed, at
any temperature).

    from vkformer import Llama
    from vkformer.llama_speculative import LlamaPromptLookupDecoding
    llm = Llama("model.gguf", draft_model=LlamaPromptLookupDecoding(num_pred_tokens=10))

A draft model is any :class:`LlamaDraftModel`: called with the token ids so far (a numpy intc
array), it returns the ids it proposes next (possibly none).
"""

from __future__ import annotations

import abc
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["LlamaDraftModel", "LlamaPromptLookupDecoding"]


class LlamaDraftModel(abc.ABC):
    """Proposes the next tokens after ``input_ids``."""

    @abc.abstractmethod
    def __call__(self, input_ids: npt.NDArray[np.intc], /, **kwargs: Any) -> npt.NDArray[np.intc]:
        raise NotImplementedError()


class LlamaPromptLookupDecoding(LlamaDraftModel):
    """Prompt lookup decoding (no second model): the first earlier occurrence of the last
    ``max_ngram_size`` (then fewer) tokens, and the up to ``num_pred_tokens`` tokens that
    followed it; llama-cpp-python's defaults and search order."""

    def __init__(self, max_ngram_size: int = 2, num_pred_tokens: int = 10):
        if max_ngram_size < 1:
            raise ValueError(f"max_ngram_size={max_ngram_size}: at least 1")
        if num_pred_tokens < 1:
            raise ValueError(f"num_pred_tokens={num_pred_tokens}: at least 1 token must be "
                             "drafted (llama.cpp's --draft-max)")
        self.max_ngram_size = max_ngram_size
        self.num_pred_tokens = num_pred_tokens

    @staticmethod
    def find_candidate_pred_tokens(input_ids: npt.NDArray[np.intc], max_ngram_size: int,
                                   num_pred_tokens: int) -> npt.NDArray[np.intc]:
        n = input_ids.shape[0]
        for size in range(min(max_ngram_size, n - 1), 0, -1):
            windows = np.lib.stride_tricks.sliding_window_view(input_ids, (size,))
            matches = np.all(windows == input_ids[-size:], axis=1)
            for idx in np.nonzero(matches)[0]:
                start = idx + size
                end = min(start + num_pred_tokens, n)
                if start < end:
                    return input_ids[start:end]
        return np.array([], dtype=np.intc)

    def __call__(self, input_ids: npt.NDArray[np.intc], /, **kwargs: Any) -> npt.NDArray[np.intc]:
        return self.find_candidate_pred_tokens(np.asarray(input_ids, dtype=np.intc),
                                               self.max_ngram_size, self.num_pred_tokens)
