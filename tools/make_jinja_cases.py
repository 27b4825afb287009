#!/usr/bin/env python3
"""Writes tests/data/jinja/cases.json: small Jinja templates exercising the features chat
templates use beyond the chat-templates set (tools/refs/make_chat_templates.py), each rendered by
jinja2 itself with the settings of Hugging Face transformers' apply_chat_template (as that set's
README.md describes: ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols,
tojson as json.dumps(ensure_ascii=False), raise_exception, strftime_now at the fixed date
2024-07-26).

    python3 tools/make_jinja_cases.py   # needs jinja2 (tested with 3.1.6); CI only reads the JSON

Each case: name, template, context (variables beside messages = [], tools = None,
documents = None, add_generation_prompt = True, bos_token = "<s>", eos_token = "</s>"), and
expected (the render) or error (true) with error_type / error_message."""
import datetime
import json
import os

import jinja2
from jinja2.exceptions import TemplateError
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment


def raise_exception(message):
    raise TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(fmt):
    return datetime.datetime(2024, 7, 26, 0, 0, 0).strftime(fmt)


env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
env.filters["tojson"] = tojson
env.globals["raise_exception"] = raise_exception
env.globals["strftime_now"] = strftime_now

MSGS = [{"role": "system", "content": " Be brief. "}, {"role": "user", "content": "Hi there"},
        {"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "Çava? 日本 🇫🇷"}]
TOOLS = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}},
         {"type": "code_interpreter"}]

CASES = [
    # whitespace control
    ("ws_trim_lstrip", "a\n  {% if true %}\n  b\n  {% endif %}\nc\n", {}),
    ("ws_minus", "a  {%- if true -%}  b  {%- endif -%}  c", {}),
    ("ws_plus", "a\n  {%+ if true +%}\nb\n{% endif %}", {}),
    ("ws_var_untouched", "a\n  {{ 'x' }}\n  b", {}),
    ("ws_comment", "a\n  {# note #}\nb {#- x -#} c", {}),
    ("ws_trailing_newlines", "x\n\n", {}),
    ("ws_crlf", "a\r\n{% if true %}\r\nb\r\n{% endif %}\r\n", {}),
    ("ws_tabs_lstrip", "\t {% for i in [1,2] %}\n{{ i }}\n\t{% endfor %}\n", {}),
    ("ws_mid_line_block", "x {% if true %}y{% endif %} z", {}),
    ("raw_block", "{% raw %}{{ not parsed }}{% endraw %}|", {}),
    # literals and printing
    ("print_types", "{{ 1 }} {{ 1.5 }} {{ 2.0 }} {{ 1e20 }} {{ 0.0001 }} {{ true }} {{ none }} {{ [1, 'a', none, true] }} {{ {'k': [1.25, {'x': none}]} }}", {}),
    ("print_tuple", "{{ (1, 'b') }} {{ (1,) }} {{ () }}", {}),
    ("string_escapes", "{{ 'a\\tb\\\\n' }}|{{ \"q'\" }}|{{ 'x' 'y' }}|{{ '\\u00e9\\x41' }}", {}),
    ("repr_quotes", "{{ [\"it's\", 'say \"hi\"', 'both \\' \"', 'nl\\n'] }}", {}),
    ("undefined_print", "[{{ nope }}][{{ nope.x is defined }}]", {}),
    ("float_repr", "{{ 0.1 + 0.2 }} {{ 1 / 3 }} {{ 10 / 2 }} {{ 3 // 2 }} {{ -7 // 2 }} {{ -7 % 3 }} {{ 7.5 % 2 }} {{ 2 ** 10 }}", {}),
    # operators
    ("concat_tilde", "{{ 'a' ~ 1 ~ none ~ nope ~ [1] }}", {}),
    ("plus_lists", "{{ [1] + [2, 3] }} {{ 'ab' + 'cd' }} {{ 1 + true }}", {}),
    ("str_repeat", "{{ '-' * 3 }}{{ 2 * 'ab' }}{{ [0] * 2 }}", {}),
    ("compare_chain", "{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }}", {}),
    ("in_operator", "{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'z' not in 'abc' }} {{ 'x' in nope }}", {}),
    ("and_or_values", "{{ 0 or 'x' }} {{ 'a' and 'b' }} {{ '' and 'b' }} {{ none or none }}", {}),
    ("not_precedence", "{{ not nope is defined }} {{ not 1 == 2 }} {{ nope is not defined }}", {}),
    ("cond_expr", "{{ 'y' if 1 else 'n' }} {{ 'y' if 0 else 'n' }} [{{ 'y' if 0 }}]", {}),
    ("filter_precedence", "{{ 'a' + '  b  ' | trim + 'c' }} {{ -3 | abs }}", {}),
    ("equality_types", "{{ 1 == 1.0 }} {{ 1 == true }} {{ 'a' == 'a' }} {{ [1] == [1] }} {{ none == none }} {{ {'a': 1} == {'a': 1} }}", {}),
    # subscripts and slices
    ("slices", "{{ 'hello'[1:3] }} {{ 'hello'[-1] }} {{ 'hello'[::-1] }} {{ [1,2,3,4][1:] }} {{ [1,2,3,4][:-1] }} {{ [1,2,3,4][::2] }} {{ 'héllo'[1] }}", {}),
    ("index_negative", "{{ messages[-1]['content'] }}|{{ messages[0].role }}", {"messages": MSGS}),
    ("missing_key", "[{{ messages[0]['nope'] }}][{{ messages[0].nope is defined }}][{{ messages[10] is defined }}]", {"messages": MSGS}),
    ("dict_methods_win", "{{ d.items() | list }} {{ d['items'] }} {{ d.get('x', 5) }} {{ d.get('y') }} {{ d.keys() | list }} {{ d.values() | list }}", {"d": {"items": 1, "z": 2}}),
    # loops
    ("loop_vars", "{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}", {}),
    ("loop_prev_next", "{% for x in [1,2,3] %}[{{ loop.previtem }}|{{ loop.nextitem }}]{% endfor %}", {}),
    ("loop_else", "{% for x in [] %}x{% else %}empty{% endfor %}{% for x in [1] %}{{ x }}{% else %}no{% endfor %}", {}),
    ("loop_filter", "{% for m in messages if m.role != 'system' %}{{ loop.index }}:{{ m.role }} {% endfor %}", {"messages": MSGS}),
    ("loop_unpack", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for a, b in [[1, 2], (3, 4)] %}{{ a + b }}{% endfor %}", {"d": {"x": 1, "y": [2]}}),
    ("loop_dict_keys", "{% for k in d %}{{ k }}{% endfor %}", {"d": {"b": 1, "a": 2}}),
    ("loop_break_continue", "{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i > 4 %}{% break %}{% endif %}{{ i }}{% endfor %}", {}),
    ("loop_scope", "{% set x = 1 %}{% for i in [1, 2] %}{% set x = x + i %}{{ x }}{% endfor %}|{{ x }}", {}),
    ("loop_cycle", "{% for i in range(5) %}{{ loop.cycle('a', 'b') }}{% endfor %}", {}),
    ("loop_nested", "{% for a in [1, 2] %}{% for b in 'xy' %}{{ a }}{{ b }}{{ loop.index }} {% endfor %}{{ loop.index }}|{% endfor %}", {}),
    ("pow_forms", "{{ 1 ** 1000 }} {{ 0 ** 0 }} {{ (-1) ** 1001 }} {{ -1 ** 2 }} {{ 2 ** -1 }} {{ 2 ** 62 }} {{ 2.0 ** 0.5 }}", {}),
    ("extreme_steps", "{{ [1, 2, 3][1::9223372036854775807] }} {{ [1, 2, 3][::-9223372036854775807] }} {{ range(1, 9223372036854775807, 9223372036854775806) | list }} {{ 'abc'[-100:100] }} {{ 1e308 | round(300) > 0 }}", {}),
    ("range_forms", "{{ range(3) | list }} {{ range(1, 7, 2) | list }} {{ range(5, 0, -2) | list }}", {}),
    ("loop_over_none", "{% for x in none %}{% endfor %}", {}),
    ("loop_over_undefined", "[{% for x in nope %}x{% endfor %}]", {}),
    # set and namespace
    ("namespace", "{% set ns = namespace(found=false, n=0) %}{% for m in messages %}{% if m.role == 'user' %}{% set ns.found = true %}{% set ns.n = ns.n + 1 %}{% endif %}{% endfor %}{{ ns.found }} {{ ns.n }}", {"messages": MSGS}),
    ("set_tuple", "{% set a, b = 1, 'two' %}{{ a }}{{ b }}", {}),
    ("set_block", "{% set x %}  inner {{ 1 + 1 }}  {% endset %}[{{ x }}]", {}),
    ("set_block_filter", "{% set x | upper %}abc{% endset %}{{ x }}", {}),
    ("scope_read_then_set", "{% set x = 1 %}{% for i in [1, 2] %}{{ x }}{% set x = 2 %}{{ x }}{% endfor %}{{ x }}", {}),
    ("scope_macro_late_global", "{% macro m() %}[{{ y }}]{% endmacro %}{{ m() }}{% set y = 5 %}{{ m() }}", {}),
    ("scope_macro_no_leak", "{% macro m() %}{% set z = 1 %}{{ z }}{% endmacro %}{{ m() }}[{{ z }}]", {}),
    ("scope_nested_loop_outer_var", "{% for a in [1, 2] %}{% set t = a * 10 %}{% for b in [1] %}{{ t + b }} {% endfor %}{% endfor %}", {}),
    ("set_if_scope", "{% if true %}{% set y = 5 %}{% endif %}{{ y }}", {}),
    ("filter_block", "{% filter upper %}hello {{ 'x' }}{% endfilter %}", {}),
    # macros
    ("macro_defaults", "{% macro f(a, b='B', c=none) %}{{ a }}-{{ b }}-{{ c }}{% endmacro %}{{ f(1) }}|{{ f(1, 2) }}|{{ f(1, c=3) }}", {}),
    ("macro_recursion", "{% macro r(n) %}{% if n > 0 %}{{ n }}{{ r(n - 1) }}{% endif %}{% endmacro %}{{ r(4) }}", {}),
    ("macro_whitespace", "{% macro m(x) %}\n  <{{ x }}>\n{% endmacro %}\n{{ m(1) }}{{ m(2) | trim }}", {}),
    ("macro_sees_globals", "{% macro m() %}{{ bos_token }}{{ messages | length }}{% endmacro %}{{ m() }}", {"messages": MSGS}),
    ("call_block", "{% macro m(x) %}[{{ caller(x) }}|{{ caller(x + 1) }}]{% endmacro %}{% call(v) m(1) %}v={{ v }}{% endcall %}{% macro n() %}<{{ caller() }}>{% endmacro %}{% call n() %}body{% endcall %}", {}),
    ("with_block", "{% set a = 5 %}{% with a = 1, b = a %}{{ a }}{{ b }}{% set c = 3 %}{% endwith %}{{ a }}[{{ c }}]{% with %}{% set q = 1 %}{{ q }}{% endwith %}[{{ q }}]", {}),
    ("loop_recursive", "{% for n in tree recursive %}<{{ n.name }}:{{ loop.depth }}/{{ loop.depth0 }}/{{ loop.index }}{% if n.kids %}[{{ loop(n.kids) }}]{% endif %}>{% endfor %}", {"tree": [{"name": "a", "kids": [{"name": "b", "kids": [{"name": "c"}]}, {"name": "d"}]}, {"name": "e"}]}),
    ("e_loop_call_not_recursive", "{% for x in [1] %}{{ loop([2]) }}{% endfor %}", {}),
    ("loop_changed", "{% for i in [1, 1, 2, 2, 1] %}{{ loop.changed(i) }} {% endfor %}", {}),
    ("e_break_outside_loop", "{% break %}x", {}),
    ("e_continue_in_for_else", "{% for i in [] %}{% else %}{% continue %}{% endfor %}", {}),
    # tests
    ("tests_types", "{{ 'a' is string }} {{ 1 is number }} {{ 1.5 is float }} {{ 1 is integer }} {{ true is boolean }} {{ none is none }} {{ {} is mapping }} {{ [] is iterable }} {{ 'a' is iterable }} {{ nope is iterable }} {{ 1 is iterable }} {{ [] is sequence }}", {}),
    ("tests_values", "{{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 'ab' is lower }} {{ 'AB' is upper }} {{ 1 is eq 1 }} {{ 2 is gt 1 }} {{ none is sameas none }} {{ 'a' is in 'cat' }} {{ true is true }} {{ false is false }}", {}),
    ("tests_defined", "{{ messages is defined }} {{ tools is defined }} {{ tools is none }} {{ nope is undefined }} {{ documents is none }}", {}),
    # filters
    ("f_trim_unicode", "[{{ '\\u3000 x \\n\\t' | trim }}][{{ 'xxaxx' | trim('x') }}]", {}),
    ("f_length", "{{ 'héllo' | length }} {{ [1,2] | length }} {{ {'a': 1} | length }} {{ nope | length }} {{ 'abc' | count }}", {}),
    ("f_tojson", "{{ messages | tojson }}\n{{ {'a': [1, 2.5, none, true], 'b': {}, 'c': []} | tojson(indent=2) }}\n{{ 'é\"\\n<>&' | tojson }}", {"messages": MSGS[:2]}),
    ("f_tojson_sort", "{{ {'b': 1, 'a': [3, {'d': 1, 'c': 2}]} | tojson(sort_keys=true) }}", {}),
    ("f_tojson_seps", "{{ [1, {'a': 2}] | tojson(separators=(',', ':')) }}", {}),
    ("f_tojson_tools", "{{ tools | tojson(indent=4) }}", {"tools": TOOLS}),
    ("f_select", "{{ tools | selectattr('type', 'equalto', 'function') | map(attribute='function.name') | list }} {{ tools | rejectattr('type', 'equalto', 'function') | list | length }} {{ [1, 0, 2, none] | select | list }} {{ [1, 2, 3, 4] | select('odd') | list }} {{ [1, 2, 3] | reject('equalto', 2) | list }}", {"tools": TOOLS}),
    ("f_selectattr_defined", "{{ xs | selectattr('a', 'defined') | list }} {{ xs | selectattr('a') | list }}", {"xs": [{"a": 1}, {"b": 2}, {"a": 0}]}),
    ("f_map", "{{ ['a', 'B'] | map('upper') | list }} {{ xs | map(attribute='a', default='-') | join(',') }} {{ messages | map(attribute='role') | join(' | ') }}", {"xs": [{"a": 1}, {}], "messages": MSGS}),
    ("f_join", "{{ [1, 'a', none] | join }} {{ [1, 2] | join(', ') }} {{ xs | join(',', attribute='n') }}", {"xs": [{"n": 1}, {"n": 2}]}),
    ("f_default", "{{ nope | default('d') }} {{ '' | default('d') }} {{ '' | default('d', true) }} {{ none | default('d') }} {{ none | d('d', true) }} [{{ nope | default }}]", {}),
    ("f_case_unicode", "{{ 'straße éà ǆemal ﬁx' | upper }}|{{ 'İSTANBUL ΣΑΣ Ǆ ΟΔΟΣ. Σ ΑΣ\\'Β' | lower }}|{{ \"don't x1y 日本abc ǆa\".title() }}|{{ \"don't x1y(a)b-c\" | title }}|{{ 'ǆx' | capitalize }}|{{ 'ǆx'.capitalize() }}", {}),
    ("f_case", "{{ 'hello world' | upper }} {{ 'ABC Déf' | lower }} {{ 'hello wORLD' | title }} {{ 'hello World' | capitalize }}", {}),
    ("f_items", "{% for k, v in d | items %}{{ k }}:{{ v }} {% endfor %}{{ d | items | list }}", {"d": {"a": 1, "b": "x"}}),
    ("f_first_last", "{{ [1, 2, 3] | first }} {{ [1, 2, 3] | last }} {{ 'abc' | first }} {{ 'abc' | last }} [{{ [] | first }}]", {}),
    ("f_list_string", "{{ 'ab' | list }} {{ 12 | string }} {{ [1, 'a'] | string }} {{ none | string }}", {}),
    ("f_replace", "{{ 'aaa' | replace('a', 'b') }} {{ 'aaa' | replace('a', 'b', 2) }} {{ \"{'x': 1}\" | replace(\"'\", '\"') }} {{ 'ab' | replace('', '-') }}", {}),
    ("f_unique", "{{ ['a', 'A', 'b', 'a', 1, 1] | unique | list }}", {}),
    ("f_indent", "{{ 'a\\nb\\n\\nc' | indent }}|{{ 'a\\nb' | indent(2, true) }}|{{ 'a\\n\\nb' | indent(2, blank=true) }}|{{ 'x\\n' | indent(3) }}", {}),
    ("f_misc_num", "{{ '42' | int }} {{ 'x' | int }} {{ 3.7 | int }} {{ '2.5' | float }} {{ 2.567 | round(2) }} {{ 2.5 | round }} {{ [1, 2.5] | sum }} {{ [3, 1, 2] | min }} {{ [3, 1, 2] | max }} {{ -1 | abs }}", {}),
    ("f_sort_reverse", "{{ [3, 1, 2] | sort | list }} {{ ['b', 'A', 'c'] | sort }} {{ [1, 2, 3] | reverse | list }} {{ 'abc' | reverse }} {{ [3, 1, 2] | sort(reverse=true) }}", {}),
    ("f_escape_safe", "{{ '<a href=\"x\">&\\'' | e }} {{ '<b>' | safe }} {{ 'a b  c' | wordcount }}", {}),
    # select/reject/selectattr/rejectattr/map yield nothing for a falsy input (jinja2's `if value:`):
    # function-calling templates filter `tools` when the request has none
    ("f_select_none", "[{{ none | select | list }}][{{ nope | reject('odd') | list }}][{{ tools | selectattr('type', 'equalto', 'function') | list }}][{{ nope | rejectattr('a', 'equalto', 1) | list }}][{{ none | map(attribute='x') | list }}][{{ nope | map('upper') | list }}][{{ 0 | select | list }}][{{ '' | map('upper') | list }}][{{ none | select('no_such_test') | list }}][{{ nope | select | length if false else 1 }}]", {}),
    ("f_select_none_loop", "{% for t in tools | selectattr('type', 'equalto', 'function') %}{{ t }}{% else %}no tools{% endfor %}|{{ (tools | map(attribute='function') | list | length) }}", {}),
    # markupsafe: |safe and |escape make a Markup; Markup + str escapes the str (either side), while
    # transformers' tojson returns a plain str; `~` joins plainly (autoescape is off)
    ("markup_concat_tojson", "{{ '<tool_call>' | safe + t | tojson }}|{{ t | tojson + '</tool_call>' | safe }}|{{ 'x' | safe ~ t | tojson }}", {"t": {"name": "f", "arguments": {"q": "a<b & 'c'"}}}),
    ("markup_ops", "{{ '<' | safe + '<' }}|{{ '<' | e + '<' }}|{{ ('<' | safe + '<') + '&' }}|{{ '<' | safe + '<' | safe }}|{{ '<' | safe is escaped }}{{ '<' is escaped }}|{{ ('<' | safe + '>') | forceescape }}|{{ ('<' | safe + q) | e }}|{{ 1 | safe + q }}|{{ ('a' | safe) | length }}|{{ '<' | safe | string + '<' }}", {"q": "\"'"}),
    ("f_tojson_ascii", "{{ 'é🇫🇷\\n' | tojson(ensure_ascii=true) }} {{ {'k': 'ü'} | tojson(true) }}", {}),
    # idioms of newer templates (Qwen3, Llama 4, Gemma 3, DeepSeek R1)
    ("idiom_reverse_index", "{% for m in messages[::-1] %}{% set index = (messages|length - 1) - loop.index0 %}{{ index }}{{ m.role[0] }} {% endfor %}", {"messages": MSGS}),
    ("idiom_think_split", "{% set c = x.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') %}[{{ c }}][{{ x.split('</think>')[-1].lstrip('\\n') }}]", {"x": "<think>\nplan\n</think>\n\nanswer"}),
    ("idiom_content_parts", "{% for m in messages %}{% if m.content is string %}{{ m.content }}{% else %}{% for p in m.content | selectattr('type', 'equalto', 'text') %}{{ p.text | trim }}{% endfor %}{% endif %};{% endfor %}", {"messages": [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": " look "}]}, {"role": "assistant", "content": "ok"}]}),
    ("idiom_flags", "{{ enable_thinking is defined and enable_thinking is false }} {{ (x is defined) and x }}", {"enable_thinking": False}),
    ("idiom_tool_args", "{% for tc in calls %}{% if tc.function is defined %}{% set tc = tc.function %}{% endif %}{{ tc.name }}({{ tc.arguments | tojson if tc.arguments is mapping else tc.arguments }}){% endfor %}", {"calls": [{"function": {"name": "a", "arguments": {"x": 1}}}, {"name": "b", "arguments": "{\"y\": 2}"}]}),
    ("json_numbers", "{{ x }} {{ x | tojson }} {{ y }} {{ z }} {{ big }}", {"x": [1, 1.0, 2.5, -0.0, 1e100, -9223372036854775808], "y": {"a": 1.5e-7}, "z": 3.0, "big": 1e16}),
    ("dict_int_keys", "{% set d = {0: 'a', 512: 'b', 2: 'c', true: 'x'} %}{{ d }} {{ d[512] }} {{ d[1] }} {{ d.get(2) }} {{ 0 in d }} {{ d | tojson }} {{ d | tojson(sort_keys=true) }}{% for k, v in d | dictsort %} {{ k }}={{ v }}{% endfor %} {{ d | length }}", {}),
    ("f_dictsort", "{{ d | dictsort }} {{ d | dictsort(true) }} {{ d | dictsort(by='value') }} {{ d | dictsort(reverse=true) }}", {"d": {"b": 2, "A": 3, "a": 1, "C": 0}}),
    ("seed_oss_budget", "{%- set t = {0: 0, 512: 128, 1024: 256, 16384: 1024} -%}{%- set ns = namespace(interval = None) -%}{%- for k, v in t | dictsort -%}{%- if ns.interval is none and budget <= k -%}{%- set ns.interval = v -%}{%- endif -%}{%- endfor -%}{{ ns.interval }} {{ t[16384] }}", {"budget": 600}),
    ("e_unhashable_key", "{{ {[1]: 2} }}", {}),
    ("percent_format", "{{ '%s|%5s|%-5s|%.2s|%r' % ('a', 'b', 'c', 'déf', 'x') }} {{ '%d %5d %-5d| %05d %+d %x %X %#x %o %#o %%' % (42, 42, 42, 42, 42, 255, 255, 255, 8, 8) }} {{ '%.3f %e %g %10.2f' % (3.14159, 12345.678, 0.0001, 2.5) }} {{ '%(a)s-%(b)d' % {'a': 'x', 'b': 7} }} {{ '%s' % none }} {{ '%s' % [1, 2] }} {{ '%d' % 3.9 }} {{ '%c%c' % (65, 'é') }} {{ '%x' % -255 }}", {}),
    ("f_format", "{{ '%s=%d' | format('a', 5) }} {{ '%(x)s!' | format(x='hi') }}", {}),
    ("e_percent_missing", "{{ '%s %s' % ('a',) }}", {}),
    ("e_percent_extra", "{{ '%s' % ('a', 'b') }}", {}),
    ("e_percent_type", "{{ '%d' % 'x' }}", {}),
    # string methods
    ("m_strip", "[{{ '  x  '.strip() }}][{{ '  x  '.lstrip() }}][{{ '  x  '.rstrip() }}][{{ 'xxaxx'.strip('x') }}][{{ '\\n x\\u00a0'.strip() }}]", {}),
    ("m_split", "{{ 'a,b,,c'.split(',') }} {{ '  a  b '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'x</think>y'.split('</think>')[-1] }}", {}),
    ("m_startsends", "{{ 'hello'.startswith('he') }} {{ 'hello'.endswith('lo') }} {{ 'hello'.startswith(('x', 'h')) }} {{ 'a.'.endswith('.') }}", {}),
    ("m_case", "{{ 'user'.title() }} {{ 'hello world-wide'.title() }} {{ 'aB'.upper() }} {{ 'aB'.lower() }} {{ 'hello'.capitalize() }}", {}),
    ("m_misc", "{{ 'a-b'.replace('-', '+') }} {{ ','.join(['a', 'b']) }} {{ 'hello'.find('l') }} {{ 'hello'.count('l') }} {{ 'a\\nb'.splitlines() }} {{ '12'.isdigit() }} {{ 'ab'.isalpha() }} {{ ' '.isspace() }}", {}),
    ("m_list", "{{ [1, 2, 1].count(1) }} {{ ['a', 'b'].index('b') }}", {}),
    # globals
    ("g_strftime", "{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%Y-%m-%d %H:%M:%S %A %B %j') }}", {}),
    ("g_dict", "{{ dict(a=1, b='x') }} {{ namespace(a=1).a }}", {}),
    # errors
    ("e_raise", "{% if messages | length == 0 %}{{ raise_exception('Need at least one message: ' ~ 42) }}{% endif %}", {}),
    ("e_raise_after_output", "partial{{ raise_exception('stop here') }}", {}),
    ("e_undefined_attr", "{{ nope.x }}", {}),
    ("e_undefined_add", "{{ nope + 1 }}", {}),
    ("e_none_iter", "{% for t in tools %}{% endfor %}", {}),
    ("e_type_add", "{{ 'a' + 1 }}", {}),
    ("e_syntax_unknown_tag", "{% frobnicate %}", {}),
    ("e_syntax_unclosed", "{% if true %}x", {}),
    ("e_syntax_bad_expr", "{{ 1 + }}", {}),
    ("e_syntax_endfor_mismatch", "{% for x in y %}{% endif %}", {}),
    ("e_unknown_filter", "{{ 1 | frobnicate }}", {}),
    ("e_unknown_test", "{{ 1 is frobnicate }}", {}),
    ("e_tojson_generator", "{{ [1, 2] | map('string') | tojson }}", {}),
    ("e_length_generator", "{{ [1, 2] | select | length }}", {}),
    ("e_set_attr_non_ns", "{% set d = {} %}{% set d.x = 1 %}", {}),
    ("e_div_zero", "{{ 1 // 0 }}", {}),
    ("e_call_non_callable", "{{ 'x'() }}", {}),
    ("e_list_append", "{% set xs = [] %}{{ xs.append(1) }}", {}),
    ("e_macro_too_many_args", "{% macro f(a) %}{% endmacro %}{{ f(1, 2) }}", {}),
]


def render(template, context):
    variables = {"messages": [], "tools": None, "documents": None, "add_generation_prompt": True,
                 "bos_token": "<s>", "eos_token": "</s>"}
    variables.update(context)
    try:
        return {"expected": env.from_string(template).render(**variables), "error": False}
    except Exception as e:  # noqa: BLE001 - every failure is a recorded outcome
        return {"error": True, "error_type": type(e).__name__, "error_message": str(e)}


def main():
    out = []
    for name, template, context in CASES:
        case = {"name": name, "template": template, "context": context,
                "context_json": json.dumps(context, ensure_ascii=False)}
        case.update(render(template, context))
        out.append(case)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "jinja", "cases.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"generator": "tools/make_jinja_cases.py", "jinja2": jinja2.__version__, "cases": out}, f,
                  ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"{len(out)} cases ({sum(c['error'] for c in out)} errors) -> {os.path.normpath(path)}")


if __name__ == "__main__":
    main()
