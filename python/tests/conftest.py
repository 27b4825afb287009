"""Shared set-up of the Python package's suite (ctest: python_pytest).

The suite runs the package from the source tree (python/src) against the library of the build
tree it tests: VKFORMER_LIBRARY (set by ctest) or BUILD/libvkformer.so. Paths: VKF_BUILD_DIR
(default ../../build), VKF_FIXTURES (default: the sets tools/refs/make_all.py makes, as for the
C tests). A missing reference fails the test that reads it (`need`), naming the path: no test
skips for lack of data; a skip may only name an absent device feature ("device: ...")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("VKF_BUILD_DIR", REPO / "build")).resolve()


def _made_fixtures() -> Path:
    """The directory of tools/refs/make_all.py's sets (it makes nothing here)."""
    sys.path.insert(0, str(REPO / "tools" / "refs"))
    try:
        import make_all
    finally:
        sys.path.pop(0)
    return Path(make_all.fixtures_dir())


FIXTURES = Path(os.environ.get("VKF_FIXTURES") or _made_fixtures()).resolve()
CLI = BUILD / "vkformer"
KJV = REPO / "models" / "kjv-gpt"
TINY = FIXTURES / "llama-tiny" / "llama-tiny-f32.gguf"

os.environ.setdefault("VKFORMER_LIBRARY", str(BUILD / "libvkformer.so"))
sys.path.insert(0, str(REPO / "python" / "src"))

import vkformer  # noqa: E402


def run_cli(*args: str, timeout: float = 120,
            input: str | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI of the build tree; stdout/stderr as text (`input`: its stdin)."""
    return subprocess.run([str(CLI), *args], capture_output=True, text=True, timeout=timeout,
                          check=False, input=input)


def need(path: Path) -> Path:
    """path, or the test fails here naming it (a reference the suite must have)."""
    if not path.exists():
        pytest.fail(f"reference data missing: {path} (VKF_FIXTURES; ./setup.sh test makes the sets "
                    "with tools/refs/make_all.py)", pytrace=False)
    return path


@pytest.fixture(scope="session")
def kjv() -> vkformer.Llama:
    """The shipped character-level GPT on the default device (lavapipe here)."""
    with vkformer.Llama(str(KJV), verbose=False) as llm:
        yield llm


@pytest.fixture(scope="session")
def tiny() -> vkformer.Llama:
    """llama-tiny F32 (a RoPE llama with a SentencePiece vocabulary), F32 KV cache."""
    need(TINY)
    with vkformer.Llama(str(TINY), cache_type="f32", verbose=False) as llm:
        yield llm


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "real: a real trained model from the model cache (ctest python_pytest_real, "
        "label real); skipped when the cache does not hold it")


class Serve:
    """`vkformer serve` of the build tree on a free loopback port (read from its stderr)."""

    def __init__(self, model: str, *args: str) -> None:
        import re
        import threading
        import time

        self.p = subprocess.Popen([str(CLI), "serve", "-m", model, "--port", "0", *args],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.port = 0
        self.log: list[str] = []
        t0 = time.monotonic()
        assert self.p.stderr is not None
        while not self.port and time.monotonic() - t0 < 180:  # load + pipelines on lavapipe
            line = self.p.stderr.readline()
            if not line and self.p.poll() is not None:
                break
            self.log.append(line)
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
            if m:
                self.port = int(m.group(1))
        if not self.port:
            self.close()
            raise RuntimeError("vkformer serve did not start: " + "".join(self.log))
        threading.Thread(target=lambda: [self.log.append(x) for x in self.p.stderr or []],
                         daemon=True).start()

    def post(self, path: str, body: dict) -> tuple[int, dict]:
        """A JSON request; (status, the JSON answer)."""
        import http.client
        import json

        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, json.loads(data)

    def stream(self, path: str, body: dict) -> list[dict]:
        """The server-sent events of a streamed request, as JSON objects ([DONE] left out)."""
        import http.client
        import json

        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        c.request("POST", path, json.dumps(dict(body, stream=True)),
                  {"Content-Type": "application/json"})
        r = c.getresponse()
        assert r.status == 200, r.read()
        out = []
        for line in r.read().decode().splitlines():
            if line.startswith("data: ") and line != "data: [DONE]":
                out.append(json.loads(line[6:]))
        c.close()
        return out

    def close(self) -> None:
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
