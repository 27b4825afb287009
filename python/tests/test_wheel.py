"""`pip wheel ./python` makes a wheel that works on its own: installed into a fresh virtual
environment, it generates with the build tree and the source tree out of reach.

The wheel packages the build tree's library and CLI (VKFORMER_PREBUILT, as test_install.py: the
packaging is what is checked here, not a second compile; a wheel built from source runs the same
install rules of python/CMakeLists.txt). The fresh environment gets the wheel with pip and, as
the wheel's one dependency, numpy copied from the test tools' environment (the suite runs offline:
no index to fetch it from; pip check then finds every requirement met). The generation runs in a
mount namespace of its own where an empty tmpfs covers the build tree and the repository (the
model is a copy), with no VKFORMER_LIBRARY, PYTHONPATH or LD_LIBRARY_PATH: the package can only
use what the wheel put in the environment. Its greedy text must be the build tree's CLI's."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import numpy
import pytest

from conftest import BUILD, KJV, REPO, run_cli

PROMPT = "And God said"
N = 24


def _hidden(cmd: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """cmd with an empty tmpfs over the build tree and the repository (a mount namespace:
    root's, else an unprivileged user namespace's)."""
    ns = ["unshare", "--mount", "--propagation", "private"]
    if os.getuid() != 0:
        ns[1:1] = ["--user", "--map-root-user"]
    hide = [str(p) for p in (BUILD, REPO) if p.exists()]  # the build tree first: it may be in REPO
    script = 'for d in "$@"; do [ "$d" = -- ] && break; mount -t tmpfs tmpfs "$d" || exit 125; ' \
             'shift; done; shift; exec "$@"'
    r = subprocess.run([*ns, "sh", "-c", script, "sh", *hide, "--", *cmd], capture_output=True,
                       text=True, env=env, cwd=cwd, timeout=300)
    if r.returncode == 125 or (r.returncode != 0 and "unshare" in r.stderr):
        pytest.fail(f"cannot hide the build tree in a mount namespace ({' '.join(ns)}): "
                    f"{r.stderr.strip()} (run as root, as CI does)", pytrace=False)
    return r


def test_wheel_installs_and_runs_without_the_build_tree(tmp_path):
    # ---- pip wheel ./python
    env = dict(os.environ)
    env["VKFORMER_PREBUILT"] = str(BUILD / "libvkformer.so")
    env["VKFORMER_PREBUILT_CLI"] = str(BUILD / "vkformer")
    dist = tmp_path / "dist"
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation",
                        "--no-deps", "--no-index", "-w", str(dist),
                        "-C", f"build-dir={tmp_path / 'build'}", str(REPO / "python")],
                       capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    wheels = list(dist.glob("vkformer-*.whl"))
    assert len(wheels) == 1, list(dist.iterdir())
    whl = wheels[0]
    # no extension module: one wheel for every Python 3, for this machine's architecture
    plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    assert whl.name == f"vkformer-{vkformer_version()}-py3-none-{plat}.whl", whl.name
    with zipfile.ZipFile(whl) as z:
        names = set(z.namelist())
        cli_mode = z.getinfo("vkformer/bin/vkformer").external_attr >> 16
    assert {"vkformer/libvkformer.so", "vkformer/bin/vkformer", "vkformer/py.typed"} <= names
    assert cli_mode & 0o111, oct(cli_mode)

    # ---- a fresh environment, the wheel installed into it with pip (this environment's pip,
    # `pip --python`: making the new one its own pip took 25 s of the test on a busy machine)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=300)
    py = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(py), "--disable-pip-version-check"]
    r = subprocess.run([*pip, "install", "-q", "--no-index", "--no-deps", str(whl)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               capture_output=True, text=True, check=True).stdout.strip())
    np_dir = Path(numpy.__file__).parent
    for p in [np_dir, np_dir.parent / "numpy.libs", *np_dir.parent.glob("numpy-*.dist-info")]:
        if p.exists():
            shutil.copytree(p, site / p.name, symlinks=True)
    r = subprocess.run([*pip, "check"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr

    # ---- the reference: the build tree's CLI, greedy
    want = run_cli("generate", "-m", str(KJV), "-p", PROMPT, "-n", str(N), "--temp", "0",
                   "--no-display-prompt")
    assert want.returncode == 0, want.stderr

    # ---- the installed package, the build tree and the repository hidden
    model = tmp_path / "kjv-gpt"
    shutil.copytree(KJV, model)
    env = {k: v for k, v in os.environ.items()
           if k not in ("VKFORMER_LIBRARY", "VKFORMER_CLI", "PYTHONPATH", "LD_LIBRARY_PATH",
                        "VKF_BUILD_DIR", "PYTHONHOME")}
    env.update(PATH=f"{venv / 'bin'}:/usr/bin:/bin", HOME=str(tmp_path),
               XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONNOUSERSITE="1")
    code = ("import vkformer, vkformer._lib as l; print(vkformer.__file__); print(l.lib._name); "
            f"llm = vkformer.Llama({str(model)!r}, verbose=False); "
            f"print(repr(llm({PROMPT!r}, max_tokens={N}, temperature=0)['choices'][0]['text']))")
    r = _hidden([str(py), "-I", "-c", code], env, tmp_path)
    assert r.returncode == 0, r.stderr
    init, libpath, text = r.stdout.splitlines()
    assert Path(init) == site / "vkformer" / "__init__.py"
    assert Path(libpath) == site / "vkformer" / "libvkformer.so"
    assert eval(text) == want.stdout  # noqa: S307 (the repr printed above)
    # the console script: the CLI the wheel carries, the same text
    r = _hidden(["vkformer", "generate", "-m", str(model), "-p", PROMPT, "-n", str(N), "--temp",
                 "0", "--no-display-prompt"], env, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout == want.stdout


def vkformer_version() -> str:
    """The project's version (CMakeLists.txt's project() line, which the wheel's must equal)."""
    for line in (REPO / "CMakeLists.txt").read_text().splitlines():
        if line.startswith("project(vkformer VERSION"):
            return line.split()[2]
    raise AssertionError("CMakeLists.txt names no project version")
