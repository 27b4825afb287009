"""Chat for :class:`vkformer.Llama`: the template, OpenAI's chat shapes, constrained output
(response_format, grammars) and tool calls, mapped onto the library as `vkformer serve` maps
them (src/serve/structured.c), so the same request gives the same answer through both."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Dict, Iterator, List, Optional, Tuple

from . import _core, _errors

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
        calls = m.get("tool_calls")
        # an assistant turn that called tools keeps its null content (as the server): the
        # templates test it
        if not (m.get("content") is None and isinstance(calls, list) and calls):
            m["content"] = _content_text(m.get("content"), i)
        msgs.append(m)
    if tools is not None and not isinstance(tools, list):
        raise ValueError("tools: expected a list of tool schemas")
    model = llm._m()
    if llm._chat_template is not None or llm.chat_format == "chatml":
        # the library's rendering path with this template (chatml: its ChatML), so tools and
        # tool calls are prepared as for the model's own template and as `vkformer serve` does
        tmpl = None if llm._chat_template == CHATML else llm._chat_template
        text = model.apply_template(tmpl, msgs, tools, True, template_kwargs)
        return text, tmpl is None
    return model.apply_chat_template(msgs, tools, True, template_kwargs)


# ---------------------------------------------------------------- constrained output


def grammar_text(grammar: Any) -> Optional[Tuple[str, Optional[str]]]:
    """(GBNF text, start rule) of a ``grammar=`` argument: a :class:`vkformer.LlamaGrammar`
    or GBNF text (checked here: FormatError names the line and column); None for None."""
    if grammar is None:
        return None
    if isinstance(grammar, str):
        _core.grammar_check(grammar)
        return grammar, None
    text = getattr(grammar, "_grammar", None)
    if not isinstance(text, str):
        raise TypeError("grammar: expected a vkformer.LlamaGrammar or GBNF text")
    return text, getattr(grammar, "_root", None)


def _schema_grammar(schema: Any, field: str) -> str:
    try:
        return _core.json_schema_to_grammar(schema)
    except _errors.VkformerError as e:
        raise type(e)(f"{field}: {e.message}", e.status) from None


def tool_choice_of(tool_choice: Any, function_call: Any) -> Any:
    """OpenAI's tool_choice, or the legacy function_call ("none", "auto", {"name": ...})."""
    if tool_choice is not None or function_call is None:
        return tool_choice
    if isinstance(function_call, dict) and isinstance(function_call.get("name"), str):
        return {"type": "function", "function": {"name": function_call["name"]}}
    return function_call


def constraint(llm: "Llama", response_format: Optional[Dict[str, Any]],
               tools: Optional[List[Dict[str, Any]]], tool_choice: Any,
               parallel_tool_calls: Optional[bool],
               grammar: Optional[Tuple[str, Optional[str]]],
               ) -> Tuple[Optional[Tuple[str, Optional[str]]], Optional[int]]:
    """The grammar a chat request asks for and the tool-call format to parse its answer in
    (None: no tools), as the server reads response_format, grammar, tools, tool_choice and
    parallel_tool_calls. Two constraints at once are refused, naming both."""
    g = grammar
    source = "grammar" if grammar is not None else None
    if response_format is not None:
        kind = response_format.get("type") if isinstance(response_format, dict) else None
        if not isinstance(kind, str):
            raise ValueError("response_format: expected {'type': 'text' | 'json_object' | "
                             "'json_schema', ...}")
        schema: Any = None
        if kind == "json_object":  # any object, or llama-cpp-python's "schema" beside it
            schema = response_format.get("schema") or {"type": "object"}
        elif kind == "json_schema":
            w = response_format.get("json_schema")
            if not isinstance(w, dict) or "schema" not in w:
                raise ValueError("response_format: json_schema needs {'json_schema': {'name': "
                                 "..., 'schema': {...}}}")
            if w.get("strict") not in (None, True, False):
                raise ValueError("response_format.json_schema.strict: expected True or False")
            schema = w["schema"]  # strict or not, the grammar enforces the schema
        elif kind != "text":
            raise ValueError(f"response_format: type {kind!r} is not text, json_object or "
                             "json_schema")
        if schema is not None:
            if g is not None:
                raise ValueError("grammar and response_format both constrain the output: "
                                 "give one")
            field = ("response_format.json_schema.schema" if kind == "json_schema"
                     else "response_format")
            g, source = (_schema_grammar(schema, field), None), "response_format"
    if tool_choice is not None and not tools:
        raise ValueError("tool_choice: given without tools")
    if parallel_tool_calls is not None and not isinstance(parallel_tool_calls, bool):
        raise ValueError("parallel_tool_calls: expected True or False")
    if tools is not None and not isinstance(tools, list):
        raise ValueError("tools: expected a list of tool schemas")
    fmt: Optional[int] = None
    if tools and tool_choice != "none":
        fmt = llm._m().tool_format
        par = True if parallel_tool_calls is None else parallel_tool_calls
        tg = _core.tool_calls_grammar(fmt, tools, tool_choice, par)
        if tg is not None:
            if g is not None:
                what = tool_choice if isinstance(tool_choice, str) else "(a function)"
                raise ValueError(f"tool_choice {what} and {source} both constrain the output: "
                                 "give one")
            g = (tg, None)
    return g, fmt


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


def completion_to_chat(c: Dict[str, Any], tool_format: Optional[int] = None) -> Any:
    """A text completion as a chat.completion (llama-cpp-python's conversion). With tools
    (`tool_format`), the answer parsed in the model's format (vkf_tool_calls_parse): calls
    become ``message.tool_calls`` and the finish reason ``"tool_calls"`` (unless the answer
    was cut off: ``"length"``), as the server answers."""
    ch = c["choices"][0]
    finish = ch["finish_reason"]
    message: Dict[str, Any] = {"role": "assistant", "content": ch["text"]}
    if tool_format is not None:
        message = _core.tool_calls_parse(tool_format, ch["text"])
        if message.get("tool_calls") and finish != "length":
            finish = "tool_calls"
    return {
        "id": "chat" + c["id"],
        "object": "chat.completion",
        "created": c["created"],
        "model": c["model"],
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": _chat_logprobs(ch["logprobs"]),
            "finish_reason": finish,
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


def tool_chunks_to_chat(chunks: Iterator[Dict[str, Any]], tool_format: int) -> Iterator[Any]:
    """Completion chunks as chat.completion.chunk dicts with tool calls, as the server streams
    them: a first chunk with the role (and empty content), then the deltas of the library's
    stream parser (text, a call's id and name, its arguments in pieces), then the finish
    reason (``"tool_calls"`` when the answer held calls and was not cut off)."""
    parser = _core.ToolParser(tool_format)
    try:
        first = True
        for c in chunks:
            base = {"id": "chat" + c["id"], "model": c["model"], "created": c["created"],
                    "object": "chat.completion.chunk"}

            def one(delta: Dict[str, Any], finish: Optional[str] = None) -> Dict[str, Any]:
                return {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                             "finish_reason": finish}]}

            if first:
                yield one({"role": "assistant", "content": ""})
                first = False
            ch = c["choices"][0]
            last = ch["finish_reason"] is not None
            for d in parser.push(ch["text"], last):
                yield one(d)
            if last:
                fin = ch["finish_reason"]
                yield one({}, "tool_calls" if parser.n_calls > 0 and fin != "length" else fin)
    finally:
        parser.close()
