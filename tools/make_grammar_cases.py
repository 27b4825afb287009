#!/usr/bin/env python3
"""Extracts llama.cpp's own grammar test cases into tests/data/grammar/*.json.

Source: llama.cpp as vendored by llama-cpp-python 0.3.36 (its CHANGELOG: "update llama.cpp to
ggml-org/llama.cpp@0c1e57098"), the files
  tests/test-grammar-parser.cpp           grammar text -> expected symbol ids and rule elements,
                                          and texts that must fail to parse
  tests/test-grammar-integration.cpp      grammar (or JSON Schema) + strings that must and must
                                          not match, grammars that must fail to build
  tests/test-json-schema-to-grammar.cpp   JSON Schema -> llama.cpp's grammar (SUCCESS) or an
                                          error (FAILURE)
The C++ is read with a small tokenizer (string and character literals, raw strings, token(id)
markers); the strings are stored decoded. token(id) in the integration test is stored as the
5-byte marker the test uses (0xff, then the id big-endian), JSON-escaped as \\u00ff + 4 bytes in
a list of byte values ("bytes" fields), since it is not UTF-8.

Usage: tools/make_grammar_cases.py LLAMA_CPP_SRC_DIR [OUT_DIR]   (default tests/data/grammar)
"""
import json
import os
import re
import sys

SOURCE = ("llama.cpp vendored by llama-cpp-python 0.3.36 "
          "(ggml-org/llama.cpp@0c1e57098)")

# ------------------------------------------------------------------ C++ tokens

ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", '"': '"', "'": "'",
           "a": "\a", "b": "\b", "f": "\f", "v": "\v", "?": "?"}


def decode_escapes(body):
    """A C++ narrow string literal's body -> bytes (escapes \\x.. produce raw bytes)."""
    out = bytearray()
    i = 0
    while i < len(body):
        c = body[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
            continue
        e = body[i + 1]
        if e == "x":
            j = i + 2
            while j < len(body) and body[j] in "0123456789abcdefABCDEF":
                j += 1
            out.append(int(body[i + 2:j], 16) & 0xFF)
            i = j
        elif e in "uU":
            n = 4 if e == "u" else 8
            out += chr(int(body[i + 2:i + 2 + n], 16)).encode("utf-8")
            i += 2 + n
        elif e in "1234567" or (e == "0" and i + 2 < len(body) and body[i + 2] in "01234567"):
            j = i + 1
            while j < len(body) and j < i + 4 and body[j] in "01234567":
                j += 1
            out.append(int(body[i + 1:j], 8) & 0xFF)
            i = j
        else:
            out += ESCAPES[e].encode("utf-8")
            i += 2
    return bytes(out)


def tokens(src):
    """Yields (kind, value): 'str' (bytes), 'char' (int), 'id', 'num', 'punct'."""
    i = 0
    n = len(src)
    while i < n:
        c = src[i]
        if c.isspace():
            i += 1
        elif src.startswith("//", i):
            i = src.index("\n", i) if "\n" in src[i:] else n
        elif src.startswith("/*", i):
            i = src.index("*/", i) + 2
        elif c == "R" and i + 1 < n and src[i + 1] == '"':
            open_paren = src.index("(", i)
            delim = src[i + 2:open_paren]
            close = src.index(")" + delim + '"', open_paren)
            yield ("str", src[open_paren + 1:close].encode("utf-8"))
            i = close + len(delim) + 2
        elif c == '"' or (src.startswith('u8"', i)):
            if c == "u":
                i += 2
            j = i + 1
            while src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            yield ("str", decode_escapes(src[i + 1:j]))
            i = j + 1
        elif c == "'":
            j = i + 1
            while src[j] != "'":
                j += 2 if src[j] == "\\" else 1
            b = decode_escapes(src[i + 1:j])
            yield ("char", b[0] if len(b) == 1 else int.from_bytes(b, "big"))
            i = j + 1
        elif c.isalpha() or c == "_":
            j = i
            while j < n and (src[j].isalnum() or src[j] == "_" or src[j] == ":"):
                j += 1
            yield ("id", src[i:j])
            i = j
        elif c.isdigit():
            j = i
            while j < n and (src[j].isalnum()):
                j += 1
            yield ("num", int(src[i:j].rstrip("uUlL"), 0))
            i = j
        else:
            yield ("punct", c)
            i += 1


class Stream:
    def __init__(self, toks):
        self.t = list(toks)
        self.i = 0

    def peek(self, k=0):
        return self.t[self.i + k] if self.i + k < len(self.t) else (None, None)

    def next(self):
        tok = self.peek()
        self.i += 1
        return tok

    def expect(self, kind, value=None):
        k, v = self.next()
        if k != kind or (value is not None and v != value):
            raise ValueError("expected %s %r, found %s %r at token %d" % (kind, value, k, v, self.i))
        return v

    def string_expr(self):
        """str ("+" str | token(N))* -> bytes"""
        out = b""
        while True:
            k, v = self.peek()
            if k == "str":
                out += v
                self.next()
            elif k == "id" and v == "token":
                self.next()
                self.expect("punct", "(")
                num = self.expect("num")
                self.expect("punct", ")")
                out += bytes([0xFF]) + num.to_bytes(4, "big")
            elif k == "id" and v in ("std::string",):
                self.next()
            else:
                break
            k, v = self.peek()
            if k == "punct" and v == "+":
                self.next()
                continue
            break
        return out

    def string_list(self):
        """{ expr, expr, ... } -> [bytes]"""
        self.expect("punct", "{")
        out = []
        while True:
            k, v = self.peek()
            if k == "punct" and v == "}":
                self.next()
                return out
            out.append(self.string_expr())
            k, v = self.peek()
            if k == "punct" and v == ",":
                self.next()


def text(b):
    """bytes -> a JSON-safe value: the string when it is UTF-8, else the list of bytes"""
    try:
        s = b.decode("utf-8")
        return {"text": s}
    except UnicodeDecodeError:
        return {"bytes": list(b)}


# ------------------------------------------------------------------ test-grammar-parser.cpp

def parser_cases(src):
    s = Stream(tokens(src))
    ok, fail = [], []
    while s.peek()[0] is not None:
        k, v = s.next()
        if k == "id" and v == "verify_parsing" and s.peek() == ("punct", "("):
            s.next()
            if s.peek()[0] != "str":
                continue  # the definition
            grammar = s.string_expr()
            s.expect("punct", ",")
            s.expect("punct", "{")
            symbols = []
            while s.peek() != ("punct", "}"):
                s.expect("punct", "{")
                name = s.expect("str").decode("utf-8")
                s.expect("punct", ",")
                sid = s.expect("num")
                s.expect("punct", "}")
                symbols.append([name, sid])
                if s.peek() == ("punct", ","):
                    s.next()
            s.next()
            s.expect("punct", ",")
            s.expect("punct", "{")
            elems = []
            while s.peek() != ("punct", "}"):
                s.expect("punct", "{")
                typ = s.expect("id")
                s.expect("punct", ",")
                kk, vv = s.next()
                s.expect("punct", "}")
                elems.append([typ.replace("LLAMA_GRETYPE_", ""), vv])
                if s.peek() == ("punct", ","):
                    s.next()
            s.next()
            ok.append({"grammar": grammar.decode("utf-8"), "symbols": symbols, "elements": elems})
        elif k == "id" and v == "verify_failure" and s.peek() == ("punct", "("):
            s.next()
            if s.peek()[0] != "str":
                continue
            fail.append(s.string_expr().decode("utf-8"))
    return ok, fail


# ------------------------------------------------------------------ test-grammar-integration.cpp

def integration_cases(src):
    s = Stream(tokens(src))
    cases, strings, build_fails = [], {}, []
    while s.peek()[0] is not None:
        k, v = s.next()
        if k == "id" and v in ("test_grammar", "test_schema") and s.peek() == ("punct", "("):
            s.next()
            if s.peek()[0] != "str":
                continue
            desc = s.string_expr().decode("utf-8")
            s.expect("punct", ",")
            body = s.string_expr().decode("utf-8")
            s.expect("punct", ",")
            passing = s.string_list()
            s.expect("punct", ",")
            failing = s.string_list()
            cases.append({"kind": "grammar" if v == "test_grammar" else "schema", "name": desc,
                          ("grammar" if v == "test_grammar" else "schema"): body,
                          "pass": [text(x) for x in passing], "fail": [text(x) for x in failing]})
        elif k == "id" and v in ("std::string",) and s.peek()[0] == "id" and s.peek(1) == ("punct", "="):
            name = s.next()[1]
            s.next()
            if s.peek()[0] == "str":
                strings[name] = s.string_expr().decode("utf-8")
        elif k == "id" and v == "test_build_grammar_fails" and s.peek() == ("punct", "("):
            s.next()
            if s.peek()[0] == "id" and s.peek()[1] in strings:
                build_fails.append({"grammar": strings[s.peek()[1]], "root": "root"})
    return cases, strings, build_fails


def integration_specials(src):
    """test_failure_missing_root, _missing_reference, _missing_root_symbol,
    test_custom_root_symbol_check: (grammar, root, must_build)"""
    out = []

    def fn_strings(name):
        m = re.search(r"static void %s\(\) \{(.*?)\n\}" % name, src, re.S)
        return [v.decode("utf-8") for k, v in tokens(m.group(1)) if k == "str" and b"::=" in v]

    g = fn_strings("test_failure_missing_root")[0]
    out.append({"name": "missing root", "grammar": g, "root": "root", "builds": False,
                "parses": True})
    g = fn_strings("test_failure_missing_reference")[0]
    out.append({"name": "missing reference", "grammar": g, "root": "root", "builds": False,
                "parses": False})
    g = fn_strings("test_failure_missing_root_symbol")[0]
    out.append({"name": "missing root symbol", "grammar": g, "root": "nonexistent",
                "builds": False, "parses": True})
    g = fn_strings("test_custom_root_symbol_check")[0]
    out.append({"name": "custom root (root)", "grammar": g, "root": "root", "builds": False,
                "parses": True})
    out.append({"name": "custom root (foobar)", "grammar": g, "root": "foobar", "builds": True,
                "parses": True})
    return out


# ------------------------------------------------------------------ test-json-schema-to-grammar.cpp

def trim_grammar(g):
    g = g.strip(" \n\r\t")
    return re.sub(r"(^|\n)[ \t]+", r"\1", g)


def schema_cases(src):
    s = Stream(tokens(src))
    out = []
    while s.peek()[0] is not None:
        k, v = s.next()
        if k == "id" and v == "test" and s.peek() == ("punct", "(") and s.peek(1) == ("punct", "{"):
            s.next()
            s.next()
            status = s.expect("id")
            s.expect("punct", ",")
            name = s.expect("str").decode("utf-8")
            s.expect("punct", ",")
            schema = s.string_expr().decode("utf-8")
            s.expect("punct", ",")
            grammar = s.string_expr().decode("utf-8")
            out.append({"name": name, "status": status, "schema": schema,
                        "grammar": trim_grammar(grammar)})
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    out_dir = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "grammar")
    os.makedirs(out_dir, exist_ok=True)
    read = lambda p: open(os.path.join(root, "tests", p), encoding="utf-8").read()

    ok, fail = parser_cases(read("test-grammar-parser.cpp"))
    isrc = read("test-grammar-integration.cpp")
    cases, _, build_fails = integration_cases(isrc)
    specials = integration_specials(isrc)
    schemas = schema_cases(read("test-json-schema-to-grammar.cpp"))
    docs = {
        "parser.json": {"source": SOURCE + ", tests/test-grammar-parser.cpp",
                        "parse": ok, "fail": fail},
        "integration.json": {"source": SOURCE + ", tests/test-grammar-integration.cpp",
                             "cases": cases, "build_fails": build_fails, "roots": specials},
        "json_schema.json": {"source": SOURCE + ", tests/test-json-schema-to-grammar.cpp",
                             "cases": schemas},
    }
    for name, doc in docs.items():
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as f:
            json.dump(doc, f, ensure_ascii=False, indent=1)
            f.write("\n")
    print("parser: %d parse, %d fail; integration: %d cases, %d build failures, %d root checks; "
          "json_schema: %d cases" % (len(ok), len(fail), len(cases), len(build_fails),
                                      len(specials), len(schemas)))


if __name__ == "__main__":
    main()
