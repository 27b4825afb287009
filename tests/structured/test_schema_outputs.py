#!/usr/bin/env python3
"""Every output generated under a JSON Schema validates against it (python-jsonschema).

Usage: test_schema_outputs.py VKFORMER TEST_JSON_SCHEMA LLAMA_TINY_GGUF

- grammar walks: 40 random strings of each schema's grammar (test_json_schema --sample: a
  random walk over characters, no model) validate;
- the model: `vkformer generate -j` with the random-weight llama-tiny (byte-level vocabulary,
  so tokens span several grammar symbols and split UTF-8 characters), several seeds: every
  answer that ended with the grammar complete parses and validates;
- the server: response_format json_schema / json_object and llama-server's json_schema field
  give valid JSON; tool_choice "required" gives tool_calls whose arguments validate against
  the tool's parameters, finish_reason "tool_calls", and the stream adds up to the same
  message (same seed); bad schemas and grammars are 400s that name the field.
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import FAILS, Server, add_up, check, finish, validator  # noqa: E402

SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10},
                                      "age": {"type": "integer", "minimum": 0, "maximum": 120}},
     "required": ["name", "age"], "additionalProperties": False},
    {"type": "array", "items": {"enum": ["red", "green", 3, None]}, "minItems": 1, "maxItems": 4},
    {"type": "object", "properties": {"when": {"type": "string", "format": "date"},
                                      "at": {"type": "string", "format": "time"},
                                      "id": {"type": "string", "format": "uuid"},
                                      "stamp": {"type": "string", "format": "date-time"}},
     "required": ["when", "at", "id", "stamp"], "additionalProperties": False},
    {"type": "number", "exclusiveMinimum": -2.5, "maximum": 7.25},
    {"type": "integer", "minimum": -1000, "exclusiveMaximum": 37},
    {"type": "string", "pattern": "^[A-Z]{2}-\\d{3}(-[a-z]+)?$"},
    {"type": "string", "pattern": "ab+c"},
    {"anyOf": [{"type": "boolean"}, {"type": "null"}, {"const": {"k": [1, "two"]}}]},
    {"$ref": "#/$defs/node", "$defs": {"node": {
        "type": "object", "properties": {"v": {"type": "integer"}, "kids": {
            "type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}},
        "required": ["v"], "additionalProperties": False}}},
    {"type": "object", "additionalProperties": {"type": "number"}},
    {"allOf": [{"type": "object", "properties": {"a": {"type": "string", "minLength": 2}},
                "required": ["a"]},
               {"properties": {"b": {"type": "boolean"}}, "required": ["b"]}]},
    {"type": "object"},
    {"prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False},
]


def main():
    exe, sampler, tiny = sys.argv[1:4]
    tmp = tempfile.mkdtemp()
    n_walk = n_gen = 0
    for k, schema in enumerate(SCHEMAS):
        v = validator(schema)
        path = os.path.join(tmp, "s%d.json" % k)
        with open(path, "w") as f:
            json.dump(schema, f)
        # grammar walks
        out = subprocess.run([sampler, "--sample", path, "40"], capture_output=True, text=True)
        lines = [json.loads(x) for x in out.stdout.splitlines() if x.strip()]
        # (a random walk seldom spells "ab+c" somewhere: schema 6 may give no sample)
        check((lines or k == 6) and all(x["ok"] for x in lines), "schema %d: %s" % (k, out.stdout[:300]))
        for x in lines:
            if not x["ok"]:
                continue
            n_walk += 1
            try:
                doc = json.loads(x["text"])
            except ValueError as e:
                check(False, "schema %d: walk %r is not JSON: %s" % (k, x["text"], e))
                continue
            errs = [e.message for e in v.iter_errors(doc)]
            check(not errs, "schema %d: walk %r: %s" % (k, x["text"], errs))
        # the model (CPU: the engine's masks, not the device, are under test here)
        for seed in (1, 2) if k in (0, 1, 2, 3, 5, 8, 12) else ():
            r = subprocess.run([exe, "generate", "--cpu", "-m", tiny, "-p", "Data:", "--no-display-prompt",
                                "-jf", path, "-n", "120", "--temp", "1", "-s", str(seed), "-v"],
                               capture_output=True, text=True, errors="replace")
            check(r.returncode == 0, "schema %d seed %d: exit %d: %s" % (k, seed, r.returncode, r.stderr[-300:]))
            if "the grammar is complete" not in r.stderr and "end of sequence" not in r.stderr:
                continue  # cut off at -n: an unfinished string of the grammar, not checked
            n_gen += 1
            try:
                doc = json.loads(r.stdout)
            except ValueError as e:
                check(False, "schema %d seed %d: %r is not JSON: %s" % (k, seed, r.stdout, e))
                continue
            errs = [e.message for e in v.iter_errors(doc)]
            check(not errs, "schema %d seed %d: %r: %s" % (k, seed, r.stdout, errs))
    check(n_gen >= 8, "at least 8 of 14 generations finished (got %d)" % n_gen)
    print("schema outputs: %d grammar walks and %d generations validated" % (n_walk, n_gen), flush=True)

    # ---- the server (llama-tiny has no chat template: ChatML, the generic tool format)
    srv = Server(exe, tiny, ["--cpu", "-np", "1"])
    msgs = [{"role": "user", "content": "Give data."}]
    schema = SCHEMAS[0]
    for rf in ({"type": "json_schema", "json_schema": {"name": "person", "schema": schema, "strict": True}},
               {"type": "json_object", "schema": schema}):
        st, r = srv.post("/v1/chat/completions", {"messages": msgs, "max_tokens": 200, "seed": 5,
                                                   "response_format": rf})
        check(st == 200, "response_format %s: %s" % (rf["type"], r))
        if st == 200:
            text = r["choices"][0]["message"]["content"]
            try:
                errs = [e.message for e in validator(schema).iter_errors(json.loads(text))]
                check(not errs, "response_format %s: %r: %s" % (rf["type"], text, errs))
            except ValueError:
                check(False, "response_format %s: %r is not JSON" % (rf["type"], text))
    st, r = srv.post("/v1/chat/completions", {"messages": msgs, "max_tokens": 120, "seed": 6,
                                               "response_format": {"type": "json_object"}})
    if check(st == 200, "json_object: %s" % r):
        t = r["choices"][0]["message"]["content"]
        try:
            check(isinstance(json.loads(t), dict) or r["choices"][0]["finish_reason"] == "length",
                  "json_object gives an object: %r" % t)
        except ValueError:
            check(r["choices"][0]["finish_reason"] == "length", "json_object: %r is not JSON" % t)
    st, r = srv.post("/v1/completions", {"prompt": "x", "max_tokens": 40, "seed": 1,
                                          "json_schema": {"type": "integer", "minimum": 10, "maximum": 99}})
    if check(st == 200, "completions json_schema: %s" % r):
        t = r["choices"][0]["text"]
        check(t.isdigit() and 10 <= int(t) <= 99, "completions json_schema: %r" % t)
    st, r = srv.post("/v1/completions", {"prompt": "x", "max_tokens": 40, "seed": 1,
                                          "grammar": 'root ::= "yes" | "no"'})
    check(st == 200 and r["choices"][0]["text"] in ("yes", "no"), "grammar field: %s" % r)

    # (short: llama-tiny's 512 tokens hold the tools' description ChatML gets in its system
    # message)
    tools = [{"type": "function", "function": {"name": "w", "parameters": {
              "properties": {"c": {"maxLength": 3}, "u": {"enum": [1, 2]}}, "required": ["c", "u"]}}},
             {"type": "function", "function": {"name": "t", "parameters": {
              "properties": {"z": {"maximum": 9}}, "required": ["z"]}}}]
    params = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    n_calls = 0
    for choice, par in (("required", True), ({"type": "function", "function": {"name": "t"}}, False)):
        body = {"messages": msgs, "max_tokens": 60, "seed": 11, "tools": tools, "tool_choice": choice,
                "parallel_tool_calls": par}
        st, r = srv.post("/v1/chat/completions", body)
        if not check(st == 200, "tools %s: %s" % (choice, r)):
            continue
        c = r["choices"][0]
        if c["finish_reason"] == "length":
            continue  # the random model ran out of tokens inside the call
        check(c["finish_reason"] == "tool_calls", "finish_reason tool_calls: %s" % c)
        calls = c["message"].get("tool_calls") or []
        check(calls and c["message"]["content"] is None, "tool_calls, content null: %s" % c["message"])
        for call in calls:
            n_calls += 1
            fn = call["function"]
            check(call["type"] == "function" and call["id"].startswith("call_"), "call shape: %s" % call)
            if isinstance(choice, dict):
                check(fn["name"] == "t", "the named function: %s" % fn)
            check(par or len(calls) == 1, "parallel_tool_calls false: one call")
            errs = [e.message for e in validator(params[fn["name"]]).iter_errors(json.loads(fn["arguments"]))]
            check(not errs, "arguments %s: %s" % (fn["arguments"], errs))
        # the same request streamed adds up to the same message
        content, scalls, fin = add_up(srv.stream_chunks(body))
        check(fin == c["finish_reason"], "stream finish_reason %s vs %s" % (fin, c["finish_reason"]))
        check(content == c["message"]["content"], "stream content %r vs %r" % (content, c["message"]["content"]))
        check([(x["function"]["name"], x["function"]["arguments"]) for x in scalls] ==
              [(x["function"]["name"], x["function"]["arguments"]) for x in calls],
              "stream calls %s vs %s" % (scalls, calls))
    check(n_calls >= 1, "at least one tool call finished")
    # errors name the field
    for body, want in (({"response_format": {"type": "json_schema", "json_schema": {"name": "x",
                         "schema": {"type": "string", "format": "email"}}}}, "format 'email'"),
                       ({"grammar": "root ::= ["}, "line 1"),
                       ({"grammar": 'root ::= "a"', "json_schema": {}}, "give one"),
                       ({"tools": tools, "tool_choice": {"type": "function", "function": {"name": "nope"}}}, "nope"),
                       ({"tool_choice": "required"}, "without tools"),
                       ({"response_format": {"type": "xml"}}, "xml")):
        st, r = srv.post("/v1/chat/completions", dict({"messages": msgs, "max_tokens": 4}, **body))
        check(st == 400 and want in json.dumps(r), "400 naming %s: %s %s" % (want, st, r))
    srv.stop()
    finish("test_schema_outputs")


if __name__ == "__main__":
    try:
        import jsonschema  # noqa: F401
    except ImportError:
        print("SKIP: python-jsonschema is missing (./setup.sh test installs it into build/pyenv)")
        sys.exit(77)
    main()
