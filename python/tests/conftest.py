"""Shared set-up of the Python package's suite (ctest: python_pytest).

The suite runs the package from the source tree (python/src) against the library of the build
tree it tests: VKFORMER_LIBRARY (set by ctest) or BUILD/libvkformer.so. Paths: VKF_BUILD_DIR
(default ../../build), VKF_FIXTURES (default ../../../shared/fixtures)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("VKF_BUILD_DIR", REPO / "build")).resolve()
FIXTURES = Path(os.environ.get("VKF_FIXTURES", REPO.parent / "shared" / "fixtures")).resolve()
CLI = BUILD / "vkformer"
KJV = REPO / "models" / "kjv-gpt"
TINY = FIXTURES / "llama-tiny" / "llama-tiny-f32.gguf"

os.environ.setdefault("VKFORMER_LIBRARY", str(BUILD / "libvkformer.so"))
sys.path.insert(0, str(REPO / "python" / "src"))

import vkformer  # noqa: E402


def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The CLI of the build tree; stdout/stderr as text."""
    return subprocess.run([str(CLI), *args], capture_output=True, text=True, timeout=timeout,
                          check=False)


@pytest.fixture(scope="session")
def kjv() -> vkformer.Llama:
    """The shipped character-level GPT on the default device (lavapipe here)."""
    with vkformer.Llama(str(KJV), verbose=False) as llm:
        yield llm


@pytest.fixture(scope="session")
def tiny() -> vkformer.Llama:
    """llama-tiny F32 (a RoPE llama with a SentencePiece vocabulary), F32 KV cache."""
    if not TINY.exists():
        pytest.skip(f"{TINY}: the shared fixtures are not there")
    with vkformer.Llama(str(TINY), cache_type="f32", verbose=False) as llm:
        yield llm
