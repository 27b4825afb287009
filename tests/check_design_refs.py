#!/usr/bin/env python3
"""Every citation of docs/DESIGN.md in the tree names one of its sections.

Comments cite the design by section name: "docs/DESIGN.md, 'Switches read once'" (also
"docs/DESIGN.md: 'A', 'B'" and "docs/DESIGN.md's 'Layers'"); a name may start on the line after
"docs/DESIGN.md," when the comment wraps there. This check reads the "## " headings of
docs/DESIGN.md and fails, naming the file and line, on any cited name that is not one of them
(a section renamed without its citations, a typo), and on the older numbered form
("DESIGN decision 6", "DESIGN 5") that no document defines.

Usage: check_design_refs.py SOURCE_DIR
"""
import os
import re
import sys

ROOTS = ["src", "include", "shaders", "tests", "tools", "bench", "python", "cmake", "examples",
         "deploy", "CMakeLists.txt", "README.md", "setup.sh"]
EXTS = (".c", ".h", ".comp", ".glsl", ".py", ".sh", ".cmake", ".txt", ".md", ".js")
# a comment line's leading marker, removed before a citation's lines are joined
MARKER = re.compile(r"^\s*(?:/\*+|\*+(?!/)|#+|//+|--)?\s?")
CITE = re.compile(r"docs/DESIGN\.md(?:'s|,|:)?\s*((?:'[^'\n]+'(?:,\s*|\s+and\s+)?)+)")
NUMBERED = re.compile(r"\bDESIGN(?:\.md)?(?: decisions?| §)? ?\d+\b")


def files(src):
    for root in ROOTS:
        path = os.path.join(src, root)
        if os.path.isfile(path):
            yield path
            continue
        for d, dirs, names in os.walk(path):
            dirs[:] = [x for x in dirs if x not in ("corpus", "regressions", "data", "results",
                                                    "__pycache__", "node_modules")]
            for n in names:
                if n.endswith(EXTS) or n == "CMakeLists.txt":
                    yield os.path.join(d, n)


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else "."
    design = os.path.join(src, "docs", "DESIGN.md")
    with open(design, encoding="utf-8") as f:
        sections = {m.group(1).strip() for m in re.finditer(r"^## (.+)$", f.read(), re.M)}
    bad = cited = 0
    for path in sorted(files(src)):
        rel = os.path.relpath(path, src)
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.read().split("\n")
        except (UnicodeDecodeError, OSError):
            continue
        if rel == os.path.join("tests", "check_design_refs.py"):
            continue  # its own docstring shows the forms
        for i, line in enumerate(lines):
            if NUMBERED.search(line):
                print(f"design refs: {rel}:{i + 1}: a numbered citation"
                      f" ({NUMBERED.search(line).group(0)}): cite docs/DESIGN.md's section by name")
                bad += 1
            if "docs/DESIGN.md" not in line:
                continue
            # the citation may continue on the next comment line
            nxt = MARKER.sub("", lines[i + 1], count=1) if i + 1 < len(lines) else ""
            text = line + " " + nxt
            for m in CITE.finditer(text):
                if m.start() >= len(line):
                    continue
                for name in re.findall(r"'([^'\n]+)'", m.group(1)):
                    cited += 1
                    if name not in sections:
                        print(f"design refs: {rel}:{i + 1}: '{name}' is not a section of"
                              " docs/DESIGN.md")
                        bad += 1
    print(f"{cited} citations of docs/DESIGN.md checked against {len(sections)} sections,"
          f" {bad} bad")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
