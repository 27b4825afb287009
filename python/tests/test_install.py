"""`pip install ./python` builds a working package: the wheel holds the library beside the
Python files and py.typed, and the installed package loads its own copy. The library is the
build tree's (VKFORMER_PREBUILT), so this checks the packaging without compiling again; the
full build from source is `pip install ./python` on a fresh machine (README)."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import BUILD, KJV, REPO


def test_pip_install_packages_the_library(tmp_path):
    target = tmp_path / "site"
    env = dict(os.environ)
    env["VKFORMER_PREBUILT"] = str(BUILD / "libvkformer.so")
    env["VKFORMER_PREBUILT_CLI"] = str(BUILD / "vkformer")
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation",
                        "--no-deps", "--no-index", "--target", str(target),
                        "-C", f"build-dir={tmp_path / 'build'}",
                        str(REPO / "python")], capture_output=True, text=True, env=env,
                       timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    pkg = target / "vkformer"
    assert (pkg / "py.typed").exists() and (pkg / "libvkformer.so").exists()
    assert os.access(pkg / "bin" / "vkformer", os.X_OK)
    env = {k: v for k, v in os.environ.items() if k not in ("VKFORMER_LIBRARY", "PYTHONPATH")}
    env["PYTHONPATH"] = str(target)
    code = ("import vkformer, vkformer._lib as l; print(vkformer.__file__); print(l.lib._name);"
            f"llm = vkformer.Llama({str(KJV)!r}, verbose=False);"
            "print(llm('And God said', max_tokens=4, seed=1)['usage']['completion_tokens'])")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    init, libpath, n = r.stdout.split()
    assert init == str(pkg / "__init__.py")
    assert libpath == str(pkg / "libvkformer.so")
    assert n == "4"
    # the console script runs the CLI the package carries (README: `vkformer pull`, `chat -hf`)
    env.pop("VKFORMER_CLI", None)
    env["PATH"] = "/usr/bin:/bin"
    r = subprocess.run([str(target / "bin" / "vkformer"), "--version"], capture_output=True,
                       text=True, env=env, timeout=60, cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.startswith("vkformer "), r.stdout + r.stderr
    r = subprocess.run([str(target / "bin" / "vkformer"), "pull", "--list"], capture_output=True,
                       text=True, env=env, timeout=60, cwd=tmp_path)
    assert r.returncode == 0 and "smollm2-135m" in r.stdout, r.stderr
