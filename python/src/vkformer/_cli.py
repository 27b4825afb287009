"""The ``vkformer`` console script of the package: the CLI itself (``vkformer chat -hf
smollm2-135m``, ``vkformer pull NAME``, ...), the program built from the same repository.

The program is, in order: ``$VKFORMER_CLI``, the copy installed inside this package
(``vkformer/bin/vkformer``, put there by ``pip install ./python``), else one on PATH that is not
this script. It replaces this process (``execv``), so its exit status, signals and terminal are
the CLI's own."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path


def _is_this_script(path: str) -> bool:
    """Whether `path` is a Python launcher (this console script), not the compiled CLI."""
    try:
        with open(path, "rb") as f:
            head = f.read(256)
    except OSError:
        return True
    return head.startswith(b"#!") and b"python" in head.split(b"\n", 1)[0]


def find_cli() -> str | None:
    """The path of the vkformer program this package runs, or None."""
    env = os.environ.get("VKFORMER_CLI")
    if env:
        return env
    own = Path(__file__).resolve().parent / "bin" / "vkformer"
    if own.is_file() and os.access(own, os.X_OK):
        return str(own)
    for d in os.environ.get("PATH", "").split(os.pathsep):
        cand = shutil.which("vkformer", path=d or ".")
        if cand and not _is_this_script(cand):
            return cand
    return None


def main() -> None:
    cli = find_cli()
    if cli is None:
        sys.stderr.write(
            "vkformer: the package holds no vkformer program (a VKFORMER_PREBUILT install "
            "without VKFORMER_PREBUILT_CLI?): reinstall with `pip install ./python` from the "
            "repository, or set VKFORMER_CLI to a built vkformer\n")
        raise SystemExit(127)
    try:
        os.execv(cli, [cli, *sys.argv[1:]])
    except OSError as e:
        sys.stderr.write(f"vkformer: cannot run {cli}: {e}\n")
        raise SystemExit(126) from None


if __name__ == "__main__":
    main()
