"""What the CLI prints from a transcript can never act on the terminal.

Was: `kompakt inspect` wrote a transcript's escape sequences to the terminal as they
were, so an OSC 52 in a tool result wrote the user's clipboard.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from clihelp import REPO

from kompakt.cli.printable import printable

ESC = "\x1b"
HOSTILE = (
    f"{ESC}]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07"  # OSC 52: write the clipboard
    f"{ESC}[2J{ESC}[31m"  # CSI: clear the screen, then red
    "\x9b31m"  # the 8-bit CSI
    "\rOK\b\b"  # overwrite what was printed
    "\u202egnp.exe"  # right-to-left override
)
RAW = (ESC, "\x07", "\x9b", "\r", "\b", "\u202e")


def _conversation() -> list[dict[str, object]]:
    msgs: list[dict[str, object]] = [{"role": "system", "content": "be brief"}]
    for n in range(12):
        call = {
            "id": f"c{n}{HOSTILE}",
            "type": "function",
            "function": {"name": f"run{HOSTILE}", "arguments": json.dumps({"cmd": HOSTILE})},
        }
        msgs.append({"role": "user", "content": f"step {n}: open /tmp/{HOSTILE}.py " * 8})
        msgs.append({"role": "assistant", "content": None, "tool_calls": [call]})
        msgs.append({"role": "tool", "tool_call_id": call["id"], "content": HOSTILE * 30})
    msgs.append({"role": "user", "content": f"last {HOSTILE}"})
    return msgs


def _run(*args: str, cwd: Path) -> tuple[int, str]:
    """A real process; bytes, so no newline translation hides a carriage return."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "COLUMNS": "160"}
    proc = subprocess.run(
        [sys.executable, "-m", "kompakt", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        timeout=300,
    )
    return proc.returncode, (proc.stdout + proc.stderr).decode("utf-8")


def _assert_inert(out: str) -> None:
    found = [repr(c) for c in RAW if c in out]
    assert not found, (found, out[:2000])


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hostile")
    (path / "run.json").write_text(json.dumps(_conversation()))
    return path


@pytest.mark.parametrize(
    "args",
    [
        ("inspect", "run.json"),
        ("replay", "run.json", "--budget", "0.3"),
        ("replay", "run.json", "--budget", "0.3", "--strategy", "extractive_digest"),
        ("eval", "run.json", "--budget", "0.3", "--strategies", "truncation,collapse_tool_results"),
        ("compact", "run.json", "--budget", "0.3"),
    ],
    ids=lambda a: "-".join(a[:1] + a[-1:]),
)
def test_no_command_prints_a_control_character(folder: Path, args: tuple[str, ...]) -> None:
    code, out = _run(*args, cwd=folder)
    assert code == 0, out
    _assert_inert(out)
    if args[0] == "inspect":
        assert "\\x1b]52;c;" in out  # shown, so the reader sees what the transcript holds


def test_batch_names_a_hostile_file_without_obeying_it(folder: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / f"x{ESC}]52;c;ZXZpbA==\x07.json").write_text("not json")
    code, out = _run("batch", str(runs), "-o", str(tmp_path / "out"), cwd=tmp_path)
    assert code == 1, out
    _assert_inert(out)
    assert "\\x1b]52;c;ZXZpbA==\\x07.json" in out


def test_errors_print_no_control_character(tmp_path: Path) -> None:
    code, out = _run("inspect", f"missing{ESC}[2J.json", cwd=tmp_path)
    assert code == 2, out
    _assert_inert(out)
    assert out.count("\n") == 1 and "missing\\x1b[2J.json" in out


def test_printable_escapes_every_control_and_keeps_the_rest() -> None:
    assert printable(HOSTILE) == (
        "\\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\\x07\\x1b[2J\\x1b[31m\\x9b31m\\x0dOK\\x08\\x08"
        "\\u202egnp.exe"
    )
    text = "naïve café, 日本語, emoji 🎉, tab\there\nnew line"
    assert printable(text) == text  # nothing else changes
    assert printable(text, newlines=False) == text.replace("\t", "\\t").replace("\n", "\\n")
    assert printable("\ud800") == "\\ud800"  # a lone surrogate cannot reach a UTF-8 terminal
    assert all(c not in printable(chr(i)) for i in range(0x20) for c in RAW)
