#!/usr/bin/env python3
"""Writes the chat-templates reference set: real models' chat templates, taken from the pinned
llama.cpp tree (tools/refs/pins.py: llama-cpp-python 0.3.36 = llama.cpp 0c1e570;
models/templates/*.jinja and the template strings of tests/test-chat-template.cpp), rendered on
a fixed set of conversations by Hugging Face transformers' own rendering code.

    python3 tools/refs/make_chat_templates.py --out DIR     # writes DIR/chat-templates/

Needs transformers and jinja2 at the versions pinned in tests/requirements.txt (transformers runs
without PyTorch for this: only its chat-template module is used).

The render is what `tokenizer.apply_chat_template(messages, tools=..., tokenize=False,
add_generation_prompt=..., **extra)` returns: the messages normalised by transformers'
`_normalize_chat_messages` (keys whose value is None dropped), then
`transformers.utils.chat_template_utils.render_jinja_template` with bos_token / eos_token as
apply_chat_template passes them from the tokenizer's special tokens. The one change:
`strftime_now` reads a fixed date (26 July 2024) instead of the clock, so the set is reproducible.
"""
import argparse
import datetime as _dt
import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pins  # noqa: E402

FIXED_NOW = _dt.datetime(2024, 7, 26, 0, 0, 0)

# models/templates/<file> -> (model, bos_token, eos_token): the model's special tokens
MODEL_TEMPLATES = {
    "meta-llama-Llama-3.1-8B-Instruct.jinja": ("meta-llama/Llama-3.1-8B-Instruct", "<|begin_of_text|>", "<|eot_id|>"),
    "meta-llama-Llama-3.2-3B-Instruct.jinja": ("meta-llama/Llama-3.2-3B-Instruct; calls strftime_now",
                                               "<|begin_of_text|>", "<|eot_id|>"),
    "Qwen-Qwen2.5-7B-Instruct.jinja": ("Qwen/Qwen2.5-7B-Instruct (ChatML); bos_token is null in the model, passed as \"\"",
                                       "", "<|im_end|>"),
    "google-gemma-2-2b-it.jinja": ("google/gemma-2-2b-it", "<bos>", "<eos>"),
    "microsoft-Phi-3.5-mini-instruct.jinja": ("microsoft/Phi-3.5-mini-instruct", "<s>", "<|endoftext|>"),
    "mistralai-Mistral-Nemo-Instruct-2407.jinja": ("mistralai/Mistral-Nemo-Instruct-2407 ('v3-tekken')", "<s>", "</s>"),
    "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja": ("deepseek-ai/DeepSeek-R1-Distill-Llama-8B",
                                                       "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"),
    "CohereForAI-c4ai-command-r-plus-tool_use.jinja": ("CohereForAI/c4ai-command-r-plus, 'tool_use' template",
                                                       "<BOS_TOKEN>", "<|END_OF_TURN_TOKEN|>"),
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja": ("NousResearch/Hermes-2-Pro-Llama-3-8B, 'tool_use'",
                                                            "<|begin_of_text|>", "<|im_end|>"),
    "meetkai-functionary-medium-v3.2.jinja": ("meetkai/functionary-medium-v3.2", "<|begin_of_text|>", "<|eot_id|>"),
    "openai-gpt-oss-120b.jinja": ("openai/gpt-oss-120b (harmony: channels, reasoning effort; calls strftime_now)",
                                  "<|startoftext|>", "<|return|>"),
}

# tests/test-chat-template.cpp case name -> template file here (bos/eos: the file's, "" when absent)
TEST_FILE_TEMPLATES = {
    "teknium/OpenHermes-2.5-Mistral-7B": "teknium-OpenHermes-2.5-Mistral-7B.jinja",
    "mistralai/Mistral-7B-Instruct-v0.2 (NOTE: Old pre-v1 without a system prompt)":
        "mistralai-Mistral-7B-Instruct-v0.2-pre-v1.jinja",
    "mistralai/Mistral-7B-Instruct-v0.2 (mistralai 'v1' template with a system prompt)":
        "mistralai-Mistral-7B-Instruct-v0.2-v1.jinja",
    "mistralai/Mistral-Large-Instruct-2411 (mistralai 'v7' template)": "mistralai-Mistral-Large-Instruct-2411-v7.jinja",
    "TheBloke/FusionNet_34Bx2_MoE-AWQ": "TheBloke-FusionNet_34Bx2_MoE-AWQ.jinja",
    "google/gemma-7b-it": "google-gemma-7b-it.jinja",
    "OrionStarAI/Orion-14B-Chat": "OrionStarAI-Orion-14B-Chat.jinja",
    "openchat/openchat-3.5-0106": "openchat-openchat-3.5-0106.jinja",
    "eachadea/vicuna-13b-1.1": "eachadea-vicuna-13b-1.1.jinja",
    "CohereForAI/c4ai-command-r-plus": "CohereForAI-c4ai-command-r-plus.jinja",
    "Llama-3": "Llama-3.jinja",
    "Phi-3-mini": "Phi-3-mini.jinja",
    "Phi-3-medium": "Phi-3-medium.jinja",
    "Phi-3-vision": "Phi-3-vision.jinja",
    "GLMEdge": "GLMEdge.jinja",
    "ibm-granite/granite-3.0-8b-instruct": "ibm-granite-granite-3.0-8b-instruct.jinja",
    "ai-sage/GigaChat-20B-A3B-instruct": "ai-sage-GigaChat-20B-A3B-instruct.jinja",
    "phi-4": "phi-4.jinja",
}

# GigaChat's template needs additional_special_tokens; chosen so the render reproduces llama.cpp's
# built-in GigaChat format (not checked against the model's tokenizer files)
EXTRA = {"ai-sage-GigaChat-20B-A3B-instruct.jinja": {"additional_special_tokens": ["<|role_sep|>", "<|message_sep|>", "[", "]"]}}

CONV6 = [{"role": "system", "content": "You are a helpful assistant"}, {"role": "user", "content": "Hello"},
         {"role": "assistant", "content": "Hi there"}, {"role": "user", "content": "Who are you"},
         {"role": "assistant", "content": "   I am an assistant   "}, {"role": "user", "content": "Another question"}]
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather for a location.",
    "parameters": {"type": "object", "properties": {"location": {"type": "string", "description": "The city name, e.g. Paris or Köln"}},
                   "required": ["location"]}}}]
WEATHER_Q = "What's the weather like in Paris today?"
CALL = {"id": "call12345", "type": "function", "function": {"name": "get_weather", "arguments": {"location": "Paris"}}}

# id -> (what, messages, tools, add_generation_prompt, extra context); None = every template
CONVERSATIONS = {
    "single_user": ("one user message", [{"role": "user", "content": "What is the capital of France?"}], None, True, {}),
    "system_turns": ("system, user, assistant, user",
                     [{"role": "system", "content": "You are a concise assistant."},
                      {"role": "user", "content": "What is 2 + 2?"}, {"role": "assistant", "content": "2 + 2 = 4."},
                      {"role": "user", "content": "And 3 + 3?"}], None, True, {}),
    "conv6": ("the 6-message conversation of llama.cpp's test-chat-template.cpp (the assistant turn "
              "\"   I am an assistant   \" keeps its spaces)", CONV6, None, True, {}),
    "conv6_no_gen": ("the same with add_generation_prompt false", CONV6, None, False, {}),
    "unicode": ("user, assistant, user with accents, Cyrillic, CJK, Hangul, emoji (a flag too) and newlines",
                [{"role": "user", "content": "Crème brûlée, s'il vous plaît.\nПривет! 你好，世界 🌍"},
                 {"role": "assistant", "content": "Voilà : 日本語もOK 👍\nÇa marche — naïve café."},
                 {"role": "user", "content": "Straße, Ñandú, 한국어, emoji 🚀🇫🇷 and a line\nbreak."}], None, True, {}),
}
# only where the output changes with tools
TOOL_CONVERSATIONS = {
    "tools": ("system + user with one tool, get_weather(location), an OpenAI-style JSON schema (non-ASCII in a "
              "description)", [{"role": "system", "content": "You are a weather assistant."},
                               {"role": "user", "content": WEATHER_Q}], TOOLS, True, {}),
    "tool_call": ("a tool-call round trip in transformers' documented format: user; assistant with no content and "
                  "tool_calls (arguments an object); a tool message with tool_call_id, name and string content",
                  [{"role": "user", "content": WEATHER_Q}, {"role": "assistant", "tool_calls": [CALL]},
                   {"role": "tool", "tool_call_id": "call12345", "name": "get_weather",
                    "content": "{\"temperature_c\": 18, \"condition\": \"cloudy\"}"}], TOOLS, True, {}),
}
# the tool_call message where a template fails on the documented shape
TOOL_CALL_VARIANT = {
    "meetkai-functionary-medium-v3.2.jinja": (
        {"role": "assistant", "content": None, "tool_calls": [dict(CALL, function={"name": "get_weather", "arguments": "{\"location\": \"Paris\"}"})]},
        "assistant tool-call message given with content null and arguments as a JSON string (OpenAI wire format; "
        "transformers drops the null content): with transformers' documented shape (arguments as an object) this "
        "template fails"),
    "ibm-granite-granite-3.0-8b-instruct.jinja": (
        {"role": "assistant", "content": "", "tool_calls": [CALL]},
        "assistant tool-call message given with content \"\" and arguments as an object: with transformers' "
        "documented shape (no content) this template fails"),
}
EMPTY_TOOLS = ("system + user with tools = [] (an empty list, not null); only where that renders differently "
               "from tools = null", [{"role": "system", "content": "You are a weather assistant."},
                                     {"role": "user", "content": "Hello!"}])


# ------------------------------------------------------------------ tests/test-chat-template.cpp

_ESC = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "\"": "\"", "'": "'", "?": "?", "0": "\0", "a": "\a",
        "b": "\b", "f": "\f", "v": "\v"}


def _literal(src, i):
    """Parses the C++ string literal(s) at src[i:] (adjacent ones concatenated, u8 prefixes and
    U8C() wrappers allowed); returns (text, index after)."""
    out, depth = [], 0
    while True:
        while src[i].isspace():
            i += 1
        if src.startswith("U8C(", i):
            i, depth = i + 4, depth + 1
            continue
        if src.startswith("u8\"", i):
            i += 2
        if src[i] != "\"":
            break
        i += 1
        while src[i] != "\"":
            c = src[i]
            if c == "\\":
                e = src[i + 1]
                if e in _ESC:
                    out.append(_ESC[e])
                    i += 2
                elif e == "x":
                    m = re.match(r"[0-9a-fA-F]+", src[i + 2:])
                    out.append(chr(int(m.group(0), 16)))
                    i += 2 + len(m.group(0))
                elif e in "uU":
                    n = 4 if e == "u" else 8
                    out.append(chr(int(src[i + 2:i + 2 + n], 16)))
                    i += 2 + n
                else:
                    raise SystemExit(f"make_chat_templates: unknown escape \\{e} in test-chat-template.cpp")
            else:
                out.append(c)
                i += 1
        i += 1
    while depth:
        while src[i].isspace():
            i += 1
        if src[i] != ")":
            raise SystemExit("make_chat_templates: unbalanced U8C( in test-chat-template.cpp")
        i, depth = i + 1, depth - 1
    return "".join(out), i


def test_file_cases(path):
    """{name: {field: text}} of the test cases' /* .field= */ string fields."""
    with open(path, encoding="utf-8") as f:
        src = f.read()
    cases, cur = {}, None
    for m in re.finditer(r"/\* \.(\w+)= \*/", src):
        field = m.group(1)
        text, _ = _literal(src, m.end())
        if field == "name":
            cur = cases.setdefault(text, {})
        elif cur is not None and field not in cur:  # the first template_str where two are given
            cur[field] = text
    return cases


# ------------------------------------------------------------------ rendering


def renderer():
    import jinja2  # noqa: PLC0415
    import transformers  # noqa: PLC0415
    from transformers.tokenization_utils_base import _normalize_chat_messages  # noqa: PLC0415
    from transformers.utils import chat_template_utils as ctu  # noqa: PLC0415

    class FixedDatetime(_dt.datetime):
        @classmethod
        def now(cls, tz=None):  # noqa: ARG003 - the fixed date of the set
            return FIXED_NOW

    ctu.datetime = FixedDatetime  # strftime_now reads the module's datetime.now()

    def render(template, messages, tools, add_gen, bos, eos, extra):
        msgs = _normalize_chat_messages(messages)
        try:
            out, _ = ctu.render_jinja_template(conversations=[msgs], tools=tools, documents=None,
                                               chat_template=template, add_generation_prompt=add_gen,
                                               bos_token=bos, eos_token=eos, **extra)
            return msgs, {"error": False, "expected": out[0]}
        except Exception as e:  # noqa: BLE001 - a raising render is a recorded outcome
            return msgs, {"error": True, "error_type": type(e).__name__, "error_message": str(e)}

    return render, {"transformers": transformers.__version__, "jinja2": jinja2.__version__}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="directory that receives chat-templates/")
    args = ap.parse_args()
    tree = pins.llama_cpp_tree()
    render, versions = renderer()
    templates = []  # (file, text, model, source, bos, eos)
    for fname, (model, bos, eos) in MODEL_TEMPLATES.items():
        with open(os.path.join(tree, "models", "templates", fname), encoding="utf-8", newline="") as f:
            templates.append((fname, f.read(), model, f"models/templates/{fname}", bos, eos))
    tf = test_file_cases(os.path.join(tree, "tests", "test-chat-template.cpp"))
    for name, fname in TEST_FILE_TEMPLATES.items():
        if name not in tf:
            raise SystemExit(f"make_chat_templates: test-chat-template.cpp has no case {name!r}")
        c = tf[name]
        templates.append((fname, c["template_str"], name, f"tests/test-chat-template.cpp, case \"{name}\"",
                          c.get("bos_token", ""), c.get("eos_token", "")))
    dest = os.path.join(args.out, "chat-templates")
    tmp = dest + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.join(tmp, "templates"))
    cases, per_template, conv_count = [], {}, {}

    def add(fname, text, bos, eos, conv, messages, tools, add_gen, extra, note=None):
        msgs, res = render(text, messages, tools, add_gen, bos, eos, extra)
        case = {"name": f"{fname[:-len('.jinja')]}/{conv}", "template_file": f"templates/{fname}",
                "bos_token": bos, "eos_token": eos, "add_generation_prompt": add_gen, "messages": msgs,
                "tools": tools, "extra_context": extra}
        case.update(res)
        if note:
            case["note"] = note
        cases.append(case)
        r, e = per_template.get(fname, (0, 0))
        per_template[fname] = (r + (not res["error"]), e + res["error"])
        conv_count[conv] = conv_count.get(conv, 0) + 1
        return res

    for fname, text, model, source, bos, eos in templates:
        with open(os.path.join(tmp, "templates", fname), "w", encoding="utf-8", newline="") as f:
            f.write(text)
        extra = EXTRA.get(fname, {})
        for conv, (_, messages, tools, add_gen, ctx) in CONVERSATIONS.items():
            add(fname, text, bos, eos, conv, messages, tools, add_gen, dict(extra, **ctx))
        # tools: only where the output changes when tools are given
        _, tmsgs, ttools, _, _ = TOOL_CONVERSATIONS["tools"]
        _, without = render(text, tmsgs, None, True, bos, eos, extra)
        _, with_tools = render(text, tmsgs, ttools, True, bos, eos, extra)
        if with_tools != without:
            for conv, (_, messages, tools, add_gen, ctx) in TOOL_CONVERSATIONS.items():
                note = None
                if conv == "tool_call" and fname in TOOL_CALL_VARIANT:
                    msg, note = TOOL_CALL_VARIANT[fname]
                    messages = [messages[0], msg, messages[2]]
                add(fname, text, bos, eos, conv, messages, tools, add_gen, dict(extra, **ctx), note)
            _, emsgs = EMPTY_TOOLS
            _, none_r = render(text, emsgs, None, True, bos, eos, extra)
            _, empty_r = render(text, emsgs, [], True, bos, eos, extra)
            if none_r != empty_r:
                add(fname, text, bos, eos, "empty_tools", emsgs, [], True, dict(extra))
        if fname == "meta-llama-Llama-3.1-8B-Instruct.jinja":
            _, messages, tools, add_gen, _ = CONVERSATIONS["single_user"]
            add(fname, text, bos, eos, "date_string_override", messages, tools, add_gen, {"date_string": "01 Jan 2025"})
    with open(os.path.join(tmp, "cases.json"), "w", encoding="utf-8") as f:
        json.dump(cases, f, ensure_ascii=False, indent=1)
        f.write("\n")
    n_err = sum(c["error"] for c in cases)
    version, filename, sha256, _ = pins.PINS["llama-cpp-python"]
    rows = []
    for fname, text, model, source, bos, eos in templates:
        r, e = per_template[fname]
        esc = lambda s: f"`{s}`".replace("|", "\\|") if s else "`\"\"`"  # noqa: E731
        rows.append(f"| `{fname}` | {model} | {source} | {esc(bos)} / {esc(eos)} | {r} / {e} |")
    convs = [(k, v[0]) for k, v in CONVERSATIONS.items()] + [(k, v[0]) for k, v in TOOL_CONVERSATIONS.items()] + [
        ("empty_tools", EMPTY_TOOLS[0]), ("date_string_override", "single_user on Llama 3.1 with the variable "
                                          "date_string = \"01 Jan 2025\" in extra_context")]
    with open(os.path.join(tmp, "README.md"), "w", encoding="utf-8") as f:
        f.write(README.format(
            n=len(cases), n_ok=len(cases) - n_err, n_err=n_err, n_t=len(templates), pin=version, file=filename,
            sha=sha256, py=sys.version.split()[0], **versions,
            convs="\n".join(f"| `{k}` | {conv_count.get(k, 0)} | {w} |" for k, w in convs),
            rows="\n".join(rows)))
    shutil.rmtree(dest, ignore_errors=True)
    os.rename(tmp, dest)
    print(f"make_chat_templates: {len(cases)} cases ({n_err} expected to fail) over {len(templates)} templates -> {dest}")


README = """# Chat-template reference renders

Expected outputs of real models' chat templates, rendered exactly as Hugging Face transformers'
`apply_chat_template(..., tokenize=False)` renders them, for checking a chat-template renderer byte
for byte.

Generated by `python3 tools/refs/make_chat_templates.py --out DIR` (into `DIR/chat-templates`);
do not edit by hand. {n} cases ({n_ok} rendered, {n_err} expected to fail) over {n_t} templates.

## Sources

- Templates: llama-cpp-python=={pin} (`{file}`, sha256 `{sha}`, fetched and checked by
  `tools/refs/pins.py`), which carries llama.cpp commit 0c1e570: its `models/templates/*.jinja`
  (each model's `tokenizer_config.json` chat_template, fetched by llama.cpp's
  `scripts/get_chat_template.py`) and the template strings of its `tests/test-chat-template.cpp`
  (C++ escapes decoded, adjacent literals joined).
- Renderer: transformers {transformers} (its own code, run without PyTorch) with jinja2 {jinja2},
  Python {py}.

## Files

| path | contents |
|---|---|
| `cases.json` | list of cases (format below) |
| `templates/<name>.jinja` | one template per file, the exact UTF-8 bytes of the template string (no newline added) |

## Case format

| field | meaning |
|---|---|
| `name` | `<template name>/<conversation id>` |
| `template_file` | template text, relative to this directory |
| `bos_token`, `eos_token` | strings passed as the variables of those names |
| `add_generation_prompt` | boolean variable |
| `messages` | list of message objects (`role`, `content`; in `tool_call` cases also `tool_calls`, `tool_call_id`, `name`), passed as `messages`: exactly what the template saw (transformers drops keys whose value is null before rendering) |
| `tools` | list of tool schemas passed as `tools`, or `null` (passed as `None`) |
| `extra_context` | further variables (object; usually empty): `additional_special_tokens` for GigaChat, `date_string` in one case |
| `error` | `false`: `expected` holds the render; `true`: rendering must fail |
| `expected` | the rendered string (only when `error` is false) |
| `error_type`, `error_message` | exception class and text (only when `error` is true) |
| `note` | optional remark on a surprising case |

## How the expected strings were rendered

transformers' `apply_chat_template(conversation, tools=..., add_generation_prompt=..., tokenize=False,
**extra)` does: `_normalize_chat_messages` (message objects to dicts, keys whose value is None
dropped), then `render_jinja_template(conversations, tools, documents=None, chat_template,
add_generation_prompt, **special_tokens_map, **extra)`. The generator calls those two functions of the
pinned transformers with `bos_token` / `eos_token` in place of a tokenizer's special-tokens map.
Their environment (transformers `utils/chat_template_utils.py`):

- `jinja2.sandbox.ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
  extensions=[AssistantTracker, jinja2.ext.loopcontrols])`; every other option at jinja2's default:
  `keep_trailing_newline=False` (one final `\\n` of the template text is dropped), `autoescape=False`,
  `undefined=jinja2.Undefined` (not strict). No template here uses `{{% generation %}}`.
- Filter `tojson` = `json.dumps(x, ensure_ascii=False, indent=indent, separators=separators,
  sort_keys=sort_keys)`: no HTML escaping, raw UTF-8, keys in input order, Python's default separators.
- Globals: `raise_exception(msg)` raises `jinja2.exceptions.TemplateError(msg)`; `strftime_now(fmt)`
  formats the FIXED date 26 July 2024 00:00 here (transformers uses the clock), C locale;
  `namespace` rejects attribute names starting with `_`; `dict` builds a plain dict.
- Variables: `messages`, `tools` (the case's list, or `None` when the case has `null`: the variable is
  then defined and `is none`), `documents = None`, `add_generation_prompt`, `bos_token`, `eos_token`,
  plus every key of the case's `extra_context`. `date_string` is not passed except in
  `date_string_override`.
- Errors: a case whose render raises is recorded with `"error": true`, `error_type` (the Python
  exception class) and `error_message` (its text). Only messages from `raise_exception` are the
  template's own words; `UndefinedError` / `TypeError` texts are jinja2's or Python's, so an engine
  should match the fact that rendering fails, not those texts.

## Conversations

| id | cases | what |
|---|---|---|
{convs}

`tools` and `tool_call` are rendered only for templates whose output on the `tools` conversation
changes when the tools are given; `empty_tools` only where `tools = []` renders differently from
`tools = None` on those. A template that raises on a conversation (for example gemma and Mistral v0.2
refuse a system message, the tool_use templates iterate `tools` unguarded) has that case recorded as an
error.

## Templates

| template file | model | source | bos / eos | rendered / errors |
|---|---|---|---|---|
{rows}

GigaChat's `additional_special_tokens` = `["<|role_sep|>", "<|message_sep|>", "[", "]"]` was chosen so
the render reproduces llama.cpp's built-in GigaChat format; it was not checked against the model's
tokenizer files.

Differences from an earlier copy of this set (llama.cpp c392e50, 2025-02, rendered with jinja2 and
transformers' settings rather than transformers' code; every case the two share renders the same
bytes, except as listed): `deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja` is the template as
llama.cpp 0c1e570 ships it (updated upstream since; the same renders); HuggingFaceH4/zephyr-7b-beta's
template is left out (no pinned source carries it as Jinja); Mistral v0.2 pre-v1 takes bos `""`, as the
pinned test file gives it (was `<s>`); functionary's `tool_call` messages are recorded without the null
content that transformers drops before rendering.
"""


if __name__ == "__main__":
    main()
