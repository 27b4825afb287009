"""One rendering path for a chat with tools (issue: chat_format="chatml" dropped them): the C
library's (vkf_chat_apply_ex, the model's template or its ChatML default), `vkformer serve`'s
(the prompt /slots reports) and the package's with chat_format="chatml" or chat_template= give
the same prompt text. llama-tiny has no template, so all three are ChatML; a template that does
not render tools gets them described in the system message (README, "Tools"), so the prompt
with tools is longer than without, by that description."""

from __future__ import annotations

import http.client
import json

import pytest
import vkformer
from vkformer import _chat

from conftest import TINY, Serve

MSGS = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather?"}]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
# the description the README promises (structured/tool_chat.c writes it), from the tools' JSON
DESCRIPTION = "Tools (parameters as JSON Schema): " + json.dumps(TOOLS, separators=(",", ":"))


@pytest.fixture(scope="module")
def serve_prompt():
    if not TINY.exists():
        pytest.skip(f"{TINY}: the shared fixtures are not there")
    s = Serve(str(TINY), "-np", "1")
    try:
        status, r = s.post("/v1/chat/completions", {"messages": MSGS, "tools": TOOLS,
                                                    "max_tokens": 1, "temperature": 0})
        assert status == 200, r
        c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=60)
        c.request("GET", "/slots")
        slots = json.loads(c.getresponse().read())
        c.close()
        yield slots[0]["prompt"], r["usage"]["prompt_tokens"]
    finally:
        s.close()


@pytest.mark.parametrize("how", ["chat_format", "chat_template"])
def test_chatml_with_tools_renders_as_the_library_and_serve(serve_prompt, how):
    kw = {"chat_format": "chatml"} if how == "chat_format" else {"chat_template": _chat.CHATML}
    with vkformer.Llama(str(TINY), verbose=False, **kw) as llm:
        library, used_default = llm._m().apply_chat_template(MSGS, TOOLS)
        assert used_default  # llama-tiny has no template: the library's ChatML
        assert DESCRIPTION in library
        text, _ = _chat.render(llm, MSGS, TOOLS, None)
        assert text == library
        # /slots shows the prompt's tokens as text: the BOS the tokenizer adds comes first
        m = llm._m()
        bos = m.detokenize([m.bos_id], special=True).decode()
        assert serve_prompt[0] == bos + library
        r = llm.create_chat_completion(MSGS, tools=TOOLS, max_tokens=1, temperature=0)
        assert r["usage"]["prompt_tokens"] == serve_prompt[1]
        plain = llm.create_chat_completion(MSGS, max_tokens=1, temperature=0)
        assert plain["usage"]["prompt_tokens"] < serve_prompt[1]
