"""The SQLite agent example, run offline against llama.cpp's server with SmolLM2 (plumbing only)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kompakt.store import SQLiteStore
from kompakt.validation import validate

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "agent_sqlite.py"

pytestmark = pytest.mark.model

# `llama_server` (tests/conftest.py): llama.cpp's server with SmolLM2, one per session.


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
            "--max-output-tokens",
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
    store = SQLiteStore(db)
    history = store.messages("demo")
    # the small model may answer or keep calling tools; each stop has its own evidence
    if first["stopped_reason"] == "answer":
        assert history[-1].role == "assistant" and not history[-1].tool_calls
        assert first["output"] == history[-1].text
        assert 1 <= int(first["steps"]) <= 3  # type: ignore[call-overload]
    else:
        assert first["stopped_reason"] == "max_steps" and first["steps"] == 3
        assert history[-1].role == "tool"  # the last step called a tool; its result is kept
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
