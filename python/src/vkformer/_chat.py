"""Chat and embeddings for :class:`vkformer.Llama`: the template, OpenAI's chat shapes,
constrained output and the embeddings API."""

from __future__ import annotations

import ctypes
from ctypes import POINTER, Structure, byref, c_float, c_int, c_int32, c_int64, c_void_p
from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Tuple, Union

from . import _core, _errors, _lib
from ._lib import lib

if TYPE_CHECKING:
    from .llama import Llama

# chat_format="chatml": llama.cpp's ChatML, the same text as the library's default for a model
# without a template (vkf_chat_chatml)
CHATML = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + "
    "message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def _content_text(content: Any, i: int) -> Any:
    # OpenAI content: a string, or a list of parts {"type": "text", "text": ...} (as the server)
    if content is None or isinstance(content, str):
        return "" if content is None else content
    if isinstance(content, list):
        out = []
        for p in content:
            if not (isinstance(p, dict) and isinstance(p.get("text"), str)):
                raise ValueError(f"messages[{i}].content: only parts {{\"type\": \"text\", "
                                 "\"text\": ...}} are supported")
            out.append(p["text"])
        return "".join(out)
    raise ValueError(f"messages[{i}].content: expected a string or a list of text parts")


def render(llm: "Llama", messages: List[Dict[str, Any]], tools: Optional[List[Dict[str, Any]]],
           template_kwargs: Optional[Dict[str, Any]]) -> Tuple[str, bool]:
    """The prompt text of `messages`, and whether it is the ChatML default (no template)."""
    if not isinstance(messages, list) or not messages:
        raise ValueError("messages: expected a non-empty list of {'role', 'content'} dicts")
    msgs = []
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise ValueError(f"messages[{i}]: expected a dict with a 'role' string")
        m = dict(m)
        m["content"] = _content_text(m.get("content"), i)
        msgs.append(m)
    if tools is not None and not isinstance(tools, list):
        raise ValueError("tools: expected a list of tool schemas")
    model = llm._m()
    if llm._chat_template is not None:
        bos = model.detokenize([model.bos_id], special=True).decode() if model.bos_id >= 0 else ""
        eos = model.detokenize([model.eos_id], special=True).decode() if model.eos_id >= 0 else ""
        text = _core.render_template(llm._chat_template, msgs, tools, template_kwargs, bos, eos)
        return text, llm._chat_template == CHATML
    return model.apply_chat_template(msgs, tools, True, template_kwargs)


# ---------------------------------------------------------------- constrained output


def require_grammar() -> None:
    """Refuses constrained output while the library has no grammar in its sampler."""
    raise _errors.UnsupportedError(
        "constrained output (grammar=, response_format=, tool_choice) needs the library's "
        "grammar sampler (vkf_sampler_params.grammar), which this build of vkformer does not "
        "have", "VKF_ERROR_UNSUPPORTED")


def constraint(response_format: Optional[Dict[str, Any]], tools: Optional[List[Dict[str, Any]]],
               tool_choice: Any, function_call: Any) -> Any:
    """The grammar a request asks for (response_format json_object / json_schema, a named or
    required tool choice), or None."""
    if response_format is not None:
        kind = response_format.get("type") if isinstance(response_format, dict) else None
        if kind not in ("text", "json_object", "json_schema"):
            raise ValueError("response_format: expected {'type': 'text' | 'json_object' | "
                             "'json_schema', ...}")
        if kind != "text":
            require_grammar()
    choice = tool_choice if tool_choice is not None else function_call
    if isinstance(choice, dict) or choice == "required":
        if not tools:
            raise ValueError("tool_choice: no tools given")
        require_grammar()
    return None


# ---------------------------------------------------------------- OpenAI's chat shapes


def _chat_logprobs(lp: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    if lp is None:
        return None
    return {
        "content": [
            {"token": t, "bytes": None, "logprob": p,
             "top_logprobs": [{"token": tt, "logprob": tp, "bytes": None}
                              for tt, tp in (top or {}).items()]}
            for t, p, top in zip(lp["tokens"], lp["token_logprobs"], lp["top_logprobs"])
        ],
        "refusal": None,
    }


def completion_to_chat(c: Dict[str, Any]) -> Any:
    """A text completion as a chat.completion (llama-cpp-python's conversion)."""
    ch = c["choices"][0]
    return {
        "id": "chat" + c["id"],
        "object": "chat.completion",
        "created": c["created"],
        "model": c["model"],
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": ch["text"]},
            "logprobs": _chat_logprobs(ch["logprobs"]),
            "finish_reason": ch["finish_reason"],
        }],
        "usage": c["usage"],
    }


def chunks_to_chat(chunks: Iterator[Dict[str, Any]]) -> Iterator[Any]:
    """Completion chunks as chat.completion.chunk dicts: a first one with the role, then the
    content, then the finish reason."""
    for i, c in enumerate(chunks):
        ch = c["choices"][0]
        base = {"id": "chat" + c["id"], "model": c["model"], "created": c["created"],
                "object": "chat.completion.chunk"}
        if i == 0:
            yield {**base, "choices": [{"index": 0, "delta": {"role": "assistant"},
                                        "logprobs": None, "finish_reason": None}]}
        yield {**base, "choices": [{
            "index": 0,
            "delta": {"content": ch["text"]} if ch["finish_reason"] is None else {},
            "logprobs": _chat_logprobs(ch["logprobs"]),
            "finish_reason": ch["finish_reason"],
        }]}


# ---------------------------------------------------------------- embeddings (vkf_embed)


class _EmbedParams(Structure):
    _fields_ = [("pooling", c_int), ("normalize", c_int)]


class _Embeddings(Structure):
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


_POOLING_NONE = 1
_NORMALIZE = {None: 0, True: 1, False: 2}


def embed(llm: "Llama", input: Union[str, List[str]], normalize: Optional[bool] = None,
          truncate: bool = True, return_count: bool = False) -> Any:
    """The embedding of each input (vkf_embed): a list of floats per input (a list of them,
    one per token, when the model's pooling is none)."""
    if not _lib.has("vkf_embed"):
        raise _errors.UnsupportedError(
            "embeddings need the library's vkf_embed (encoder-only models), which this build of "
            "vkformer does not have", "VKF_ERROR_UNSUPPORTED")
    if not llm._embedding:
        raise RuntimeError("Llama model must be created with embedding=True to call this method")
    texts = [input] if isinstance(input, str) else list(input)
    if not all(isinstance(t, str) for t in texts):
        raise TypeError("input: expected a string or a list of strings")
    enc = [_lib.cstr(t) for t in texts]
    arr = (ctypes.c_char_p * max(1, len(enc)))(*enc)
    p = _lib.padded(_EmbedParams(0, _NORMALIZE[normalize]))
    out = c_void_p()
    fn = lib.vkf_embed
    fn.restype = c_int
    fn.argtypes = [c_void_p, POINTER(ctypes.c_char_p), c_int32, c_void_p, POINTER(c_void_p)]
    with llm._lock:
        _lib.check(fn(llm._s()._handle(), arr, len(enc), ctypes.addressof(p), byref(out)),
                   "embed")
    lib.vkf_embeddings_free.argtypes = [c_void_p]
    lib.vkf_embeddings_free.restype = None
    try:
        e = ctypes.cast(out, POINTER(_Embeddings)).contents
        if not truncate and e.n_truncated:
            cut = [i for i in range(e.n_inputs) if e.truncated[i]]
            raise ValueError(f"input {cut[0]}: {e.truncated[cut[0]]} tokens past the model's "
                             "length (truncate=True cuts them)")
        dim = e.dim
        data: List[Any] = []
        for i in range(e.n_inputs):
            if e.pooling == _POOLING_NONE:
                rows = range(e.first[i], e.first[i] + e.n_tokens[i])
                data.append([e.data[r * dim: (r + 1) * dim] for r in rows])
            else:
                r = e.first[i]
                data.append(e.data[r * dim: (r + 1) * dim])
        total = int(e.total_tokens)
    finally:
        lib.vkf_embeddings_free(out)
    result = data[0] if isinstance(input, str) else data
    return (result, total) if return_count else result


def create_embedding(llm: "Llama", input: Union[str, List[str]], model: Optional[str]) -> Any:
    """OpenAI's embeddings response (llama-cpp-python's create_embedding)."""
    inputs = input if isinstance(input, list) else [input]
    embeds, total = embed(llm, inputs, return_count=True)
    return {
        "object": "list",
        "data": [{"object": "embedding", "embedding": e, "index": i} for i, e in enumerate(embeds)],
        "model": model if model is not None else llm.model_path,
        "usage": {"prompt_tokens": total, "total_tokens": total},
    }
