"""The ctypes mirror of vkformer.h against the C compiler: every struct's size and every field's
offset, the flag values, and the version in three places (header, library, package)."""

from __future__ import annotations

import ctypes
import re
import shutil
import subprocess
import tomllib

import pytest
import vkformer
from vkformer import _lib

from conftest import REPO


def _c_layout(tmp_path, structs):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    lines = ["#include <stddef.h>", "#include <stdio.h>", '#include "vkformer.h"',
             "int main(void) {"]
    for cname, cls in structs.items():
        lines.append(f'printf("{cname} size %zu\\n", sizeof({cname}));')
        for f in cls._fields_:
            lines.append(f'printf("{cname} {f[0]} %zu\\n", offsetof({cname}, {f[0]}));')
    for flag in ("VKF_TOKENIZE_ADD_SPECIAL", "VKF_TOKENIZE_SOURCE", "VKF_DETOKENIZE_SPECIAL",
                 "VKF_TOKENIZE_LITERAL", "VKF_DETOKENIZE_CONTINUATION", "VKF_BACKEND_CPU",
                 "VKF_BACKEND_VULKAN", "VKF_CACHE_F32", "VKF_CACHE_F16", "VKF_CACHE_BF16",
                 "VKF_CACHE_Q8_0", "VKF_CACHE_Q4_0", "VKF_CACHE_Q4_1", "VKF_CACHE_IQ4_NL",
                 "VKF_CACHE_Q5_0", "VKF_CACHE_Q5_1", "VKF_GRAMMAR_NONE",
                 "VKF_GRAMMAR_OPEN", "VKF_GRAMMAR_MAY_END", "VKF_GRAMMAR_MUST_END",
                 "VKF_POOLING_DEFAULT", "VKF_POOLING_NONE", "VKF_POOLING_MEAN",
                 "VKF_POOLING_CLS", "VKF_POOLING_LAST", "VKF_NORMALIZE_DEFAULT",
                 "VKF_NORMALIZE_ON", "VKF_NORMALIZE_OFF"):
        lines.append(f'printf("flag {flag} %d\\n", (int){flag});')
    lines.append('printf("version %d.%d.%d\\n", VKF_VERSION_MAJOR, VKF_VERSION_MINOR, '
                 'VKF_VERSION_PATCH);')
    lines.append("return 0; }")
    src = tmp_path / "abi.c"
    src.write_text("\n".join(lines))
    exe = tmp_path / "abi"
    subprocess.run([cc, "-std=c11", f"-I{REPO / 'include'}", str(src), "-o", str(exe)],
                   check=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    return dict(line.rsplit(" ", 1) for line in out.splitlines())


def test_structs_and_flags_match_the_header(tmp_path):
    structs = dict(_lib.STRUCTS)
    c = _c_layout(tmp_path, structs)
    for cname, cls in structs.items():
        # a struct may be longer in C than here only by fields added at its end (padded() keeps
        # the library's writes inside memory we own); every field we mirror sits where C has it
        assert ctypes.sizeof(cls) <= int(c[f"{cname} size"]), cname
        for f in cls._fields_:
            assert getattr(cls, f[0]).offset == int(c[f"{cname} {f[0]}"]), f"{cname}.{f[0]}"
        if cname != "vkf_model_desc":  # the one the library only writes
            assert ctypes.sizeof(cls) == int(c[f"{cname} size"]), f"{cname}: fields missing here"
    assert int(c["flag VKF_TOKENIZE_ADD_SPECIAL"]) == _lib.TOKENIZE_ADD_SPECIAL
    assert int(c["flag VKF_TOKENIZE_SOURCE"]) == _lib.TOKENIZE_SOURCE
    assert int(c["flag VKF_DETOKENIZE_SPECIAL"]) == _lib.DETOKENIZE_SPECIAL
    assert int(c["flag VKF_TOKENIZE_LITERAL"]) == _lib.TOKENIZE_LITERAL
    assert int(c["flag VKF_DETOKENIZE_CONTINUATION"]) == _lib.DETOKENIZE_CONTINUATION
    assert int(c["flag VKF_BACKEND_CPU"]) == _lib.BACKEND_CPU
    assert int(c["flag VKF_BACKEND_VULKAN"]) == _lib.BACKEND_VULKAN
    for name, value in _lib.CACHE_TYPES.items():  # every KV cache type, by llama.cpp's name
        assert int(c[f"flag VKF_CACHE_{name.upper()}"]) == value, name
    for name in ("GRAMMAR_NONE", "GRAMMAR_OPEN", "GRAMMAR_MAY_END", "GRAMMAR_MUST_END",
                 "POOLING_DEFAULT", "POOLING_NONE", "POOLING_MEAN", "POOLING_CLS",
                 "POOLING_LAST", "NORMALIZE_DEFAULT", "NORMALIZE_ON", "NORMALIZE_OFF"):
        assert int(c[f"flag VKF_{name}"]) == getattr(_lib, name), name
    # one version: the header's, the library's and the package's
    assert c["version"] == vkformer.__version__ == vkformer.version()
    meta = tomllib.loads((REPO / "python" / "pyproject.toml").read_text())
    assert meta["project"]["version"] == c["version"]
    cm = (REPO / "CMakeLists.txt").read_text()
    assert re.search(r"project\(vkformer VERSION ([0-9.]+)", cm).group(1) == c["version"]


def test_status_names_map_to_exception_classes():
    # every status the library names has its class; the class's status is the library's name
    for code in range(1, 15):  # VKF_ERROR_INVALID_ARGUMENT .. VKF_ERROR_ABORTED
        name = _lib.lib.vkf_status_name(code).decode()
        assert name in vkformer._errors.BY_STATUS, name
    assert _lib.lib.vkf_status_name(0).decode() == "VKF_OK"


def _header_fields(header: str, name: str) -> list[str]:
    """The field names of `typedef struct name {...} name;` in vkformer.h, in order."""
    m = re.search(r"typedef struct %s \{(.*?)\} %s;" % (name, name), header, re.S)
    assert m, f"{name} is not in vkformer.h"
    body = re.sub(r"/\*.*?\*/|//[^\n]*", "", m.group(1), flags=re.S)
    names = []
    for decl in body.split(";"):
        decl = " ".join(decl.split())
        if not decl:
            continue
        fp = re.search(r"\(\s*\*\s*(\w+)\s*\)", decl)  # a function pointer
        if fp:
            names.append(fp.group(1))
            continue
        decl = re.sub(r"\[[^\]]*\]", "", decl)
        first, *more = decl.split(",")
        names.append(re.findall(r"\w+", first)[-1])
        names += [re.findall(r"\w+", d)[-1] for d in more]
    return names


def test_mirrors_have_the_headers_fields():
    # the names and their order, field for field: a field added on one side only fails here
    # even where it would fit in padding (same size and offsets) or at the end of a struct the
    # size check above lets be longer in C
    header = (REPO / "include" / "vkformer.h").read_text()
    for cname, cls in _lib.STRUCTS.items():
        assert [f[0] for f in cls._fields_] == _header_fields(header, cname), cname


def _documented_switches() -> set[str]:
    """The variables of bench/README.md's switch tables and README.md's environment table."""
    names = set()
    for doc, section in (("bench/README.md", "## Switches"), ("README.md", "## Environment")):
        text = (REPO / doc).read_text()
        text = text[text.index(section):]
        text = text[:text.find("\n## ", 1)]
        for line in text.splitlines():
            if line.startswith("|"):
                cell = line.split("|")[1]
                names |= {n for n in re.findall(r"`?((?:VKF|LP)_[A-Z0-9_]+)", cell)
                          if not n.endswith("_")}
    return names


def test_every_documented_switch_reads_and_sets(monkeypatch):
    # each switch the documentation names is read from its variable, and its key (the name in
    # lower case without VKF_) sets the same bytes: one documented variable the library does
    # not read, or reads without a key, fails
    docs = _documented_switches()
    assert {"VKF_NO_FUSE", "VKF_MM_TM", "VKF_NO_RS_PAIRU", "LP_NUM_THREADS"} <= docs, docs
    values = {"VKF_DEVICE_PROFILE": "mobile", "VKF_MM_TILE": "64x32x8x4", "VKF_INT_DOT": "on"}
    for var in sorted(docs):
        key = "driver_threads" if var == "LP_NUM_THREADS" else var.lower().removeprefix("vkf_")
        value = values.get(var, "1")
        monkeypatch.delenv(var, raising=False)
        without, with_var = _lib.Switches(), _lib.Switches()
        _lib.lib.vkf_switches_from_env(ctypes.byref(without))
        monkeypatch.setenv(var, value)
        _lib.lib.vkf_switches_from_env(ctypes.byref(with_var))
        monkeypatch.delenv(var)
        by_key = _lib.Switches.from_buffer_copy(without)
        st = _lib.lib.vkf_switches_set(ctypes.byref(by_key), key.encode(), value.encode())
        assert st == 0, f"{var}: key {key}: {_lib.lib.vkf_last_error().decode()}"
        assert bytes(with_var) != bytes(without), f"{var}={value} is not read"
        assert bytes(with_var) == bytes(by_key), f"{var}={value} and key {key} differ"
    bad = _lib.Switches()
    assert _lib.lib.vkf_switches_set(ctypes.byref(bad), b"no_such_switch", b"1") != 0
    assert b"no_such_switch" in _lib.lib.vkf_last_error()
