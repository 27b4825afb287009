"""The pinned public sources every reference of the test suite is rebuilt from, and where they are
unpacked once per machine.

A pin is a source distribution on PyPI named by version and sha256. `source(name)` downloads it
through the PyPI JSON API (VKF_PYPI_URL names a mirror, as for `vkformer pull`), checks the
sha256 against the pin, and unpacks it into the references cache (VKF_REFS_CACHE, else
$XDG_CACHE_HOME/vkformer/refs, else ~/.cache/vkformer/refs) with an atomic rename, so an
interrupted run leaves nothing half-unpacked. It returns the unpacked tree's top directory.

    python3 tools/refs/pins.py llama-cpp-python     # prints the unpacked tree (fetches once)
    python3 tools/refs/pins.py --list

Standard library only: it runs before any virtual environment exists.
"""
import hashlib
import json
import os
import shutil
import sys
import tarfile
import tempfile
import urllib.parse
import urllib.request

# name -> (version, file, sha256, what it is for)
PINS = {
    # llama.cpp 0c1e570 (Oct 2026) in vendor/llama.cpp: its C source (the logits, llama-quantize,
    # the ggml-activations mode's `avx2` target), gguf-py, the real vocabularies with their test
    # strings (models/ggml-vocab-*), the chat templates (models/templates), and the Python
    # binding tools/llamacpp_ref.py drives
    "llama-cpp-python": (
        "0.3.36",
        "llama_cpp_python-0.3.36.tar.gz",
        "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e",
        "llama.cpp 0c1e570 and its Python binding",
    ),
}


def cache_dir():
    d = os.environ.get("VKF_REFS_CACHE")
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "vkformer", "refs")
    os.makedirs(d, exist_ok=True)
    return d


def _index():
    return (os.environ.get("VKF_PYPI_URL") or "https://pypi.org").rstrip("/")


def _url(name, version, filename, sha256):
    api = f"{_index()}/pypi/{name}/json"
    try:
        with urllib.request.urlopen(api, timeout=120) as r:
            meta = json.load(r)
    except Exception as e:  # noqa: BLE001 - any failure is reported with the URL tried
        raise SystemExit(f"pins: cannot reach the package registry at {api} ({e}); set VKF_PYPI_URL to a PyPI mirror")
    for f in meta.get("releases", {}).get(version, []):
        if f.get("filename") == filename:
            listed = f.get("digests", {}).get("sha256", "")
            if listed.lower() != sha256:
                raise SystemExit(f"pins: {api} lists {filename} with sha256 {listed}, but the pin is {sha256}")
            return urllib.parse.urljoin(api, f["url"])
    raise SystemExit(f"pins: {api} has no {filename} in release {version}")


def source(name, quiet=False):
    """The unpacked tree of pin `name` (downloaded, checked and unpacked on first use)."""
    if name not in PINS:
        raise SystemExit(f"pins: no pin named {name!r} (pins: {', '.join(PINS)})")
    version, filename, sha256, _ = PINS[name]
    top = filename[: -len(".tar.gz")]
    dest = os.path.join(cache_dir(), f"{top}-{sha256[:12]}")
    if os.path.isdir(dest):
        return os.path.join(dest, top)
    url = _url(name, version, filename, sha256)
    if not quiet:
        print(f"pins: fetching {name}=={version} ({filename})", file=sys.stderr)
    tmp = tempfile.mkdtemp(prefix=".unpack-", dir=cache_dir())
    try:
        archive = os.path.join(tmp, filename)
        h = hashlib.sha256()
        with urllib.request.urlopen(url, timeout=600) as r, open(archive, "wb") as out:
            while True:
                b = r.read(1 << 20)
                if not b:
                    break
                h.update(b)
                out.write(b)
        if h.hexdigest() != sha256:
            raise SystemExit(f"pins: {url}: sha256 {h.hexdigest()}, the pin is {sha256}")
        with tarfile.open(archive) as t:
            if hasattr(tarfile, "data_filter"):  # Python >= 3.11.4: refuse links and paths leaving tmp
                t.extractall(tmp, filter="data")
            else:
                for m in t.getmembers():
                    if m.name.startswith("/") or ".." in m.name.split("/"):
                        raise SystemExit(f"pins: {filename}: member {m.name!r} leaves the archive")
                t.extractall(tmp)
        os.remove(archive)
        try:
            os.rename(tmp, dest)
        except OSError:  # another process unpacked it first
            if not os.path.isdir(dest):
                raise
    finally:
        if os.path.isdir(tmp):
            shutil.rmtree(tmp, ignore_errors=True)
    return os.path.join(dest, top)


def llama_cpp_tree():
    """llama.cpp's source tree of the pinned distribution."""
    return os.path.join(source("llama-cpp-python"), "vendor", "llama.cpp")


if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1] == "--list":
        for n, (v, f, s, why) in PINS.items():
            print(f"{n}=={v}\t{f}\tsha256:{s}\t{why}")
    elif len(sys.argv) == 2:
        print(source(sys.argv[1]))
    else:
        print("usage: pins.py NAME | --list", file=sys.stderr)
        sys.exit(2)
