"""llama.cpp's OpenAI-compatible server (llama-cpp-python) with the embedded SmolLM2 model,
started on a free loopback port for a test (the ``llama_server`` fixture and the tests that
need another window size)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def llama_cpp_server(
    log_dir: Path, *, n_ctx: int = 4096, threads: int | None = None
) -> Iterator[str]:
    """The server with SmolLM2 and an `n_ctx`-token window (model alias ``smollm2``);
    yields its base URL (``http://127.0.0.1:PORT/v1``). `threads` pins llama.cpp's
    threads (one is steadier than two on a busy two-core machine). Skips when the
    ``[local]`` extra or the GGUF file is missing."""
    pytest.importorskip("llama_cpp.server")
    try:
        from kompakt.models import default_gguf

        gguf = str(default_gguf())
    except Exception as exc:  # the [local] extra is missing
        pytest.skip(f"no SmolLM2 GGUF: {exc}")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    log_path = log_dir / "server.log"
    log = log_path.open("wb")  # a file, not a pipe: llama.cpp logs a lot and would block
    args = ["--model", gguf, "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx)]
    if threads is not None:
        args += ["--n_threads", str(threads), "--n_threads_batch", str(threads)]
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
