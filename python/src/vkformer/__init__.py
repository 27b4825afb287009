"""vkformer: transformer inference on any Vulkan GPU, with a CPU reference backend.

High level, llama-cpp-python's API::

    from vkformer import Llama
    llm = Llama(model_path="models/kjv-gpt")
    print(llm("And God said", max_tokens=32, seed=42)["choices"][0]["text"])

Constrained output: ``grammar=LlamaGrammar.from_string(...)`` / ``from_json_schema(...)``,
``response_format`` and ``tools`` / ``tool_choice`` in ``create_chat_completion``; embeddings:
``Llama(path, embedding=True).create_embedding(...)`` / ``embed(...)``.

Real models: :func:`pull` (``vkformer.pull("smollm2-135m")``: the path of the GGUF in the
model cache, downloaded and checked the first time) and ``Llama.from_pretrained(name)``.

Low level: :func:`devices`, :func:`selftest`, :data:`__version__`, and the thin wrappers
:class:`Context`, :class:`Model`, :class:`Session`, :class:`Sampler` of include/vkformer.h.
Errors raise :class:`VkformerError` subclasses carrying the library's message.
"""

from __future__ import annotations

from . import llama_grammar, llama_types
from ._core import (
    Context,
    Model,
    Sampler,
    Session,
    Stopper,
    devices,
    git_revision,
    render_template,
    selftest,
    version,
)
from ._errors import (
    AbortedError,
    ContextFullError,
    FileError,
    FormatError,
    InternalError,
    InvalidArgumentError,
    NoDeviceError,
    NoVulkanError,
    OutOfMemoryError,
    ShaderError,
    TokenError,
    UnsupportedError,
    ValidationError,
    VkformerError,
    VulkanError,
)
from ._pull import pull, registry
from .llama_grammar import LlamaGrammar
from .llama import (
    LLAMA_DEFAULT_SEED,
    Llama,
    LogitsProcessor,
    LogitsProcessorList,
    StoppingCriteria,
    StoppingCriteriaList,
)

__version__: str = version()
"""The version of the library that runs (``vkf_version()``)."""

__all__ = [
    "AbortedError", "Context", "ContextFullError", "FileError", "FormatError", "InternalError",
    "InvalidArgumentError", "LLAMA_DEFAULT_SEED", "Llama", "LlamaGrammar", "LogitsProcessor",
    "LogitsProcessorList", "Model", "NoDeviceError", "NoVulkanError", "OutOfMemoryError",
    "Sampler", "Session", "ShaderError", "StoppingCriteria", "StoppingCriteriaList", "Stopper",
    "TokenError", "UnsupportedError", "ValidationError", "VkformerError", "VulkanError",
    "__version__", "devices", "git_revision", "llama_grammar", "llama_types", "pull", "registry", "render_template",
    "selftest",
    "version",
]
