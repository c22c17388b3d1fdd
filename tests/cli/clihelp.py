"""Helpers for the command-line tests: the typer runner and a real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from kompakt.cli.app import app

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"
MINI = DATA / "mini-swe-agent"
SWE = DATA / "swe-agent"
SMALL = MINI / "django__django-13658.traj.json"
"""The smallest mini-swe-agent run (78 messages)."""


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


def invoke(*args: str, stdin: str | None = None) -> Run:
    """Run the app in-process with typer's runner."""
    result = CliRunner().invoke(app, list(args), input=stdin, catch_exceptions=False)
    return Run(result.exit_code, result.stdout, result.stderr)


NO_NETWORK = """
import socket

def _refuse(*args, **kwargs):
    raise OSError("network access attempted in an offline test")

socket.socket.connect = _refuse
socket.socket.connect_ex = _refuse
socket.create_connection = _refuse
"""
"""A ``sitecustomize`` that makes any network connection fail."""


def run(
    *args: str,
    cwd: Path | None = None,
    stdin: str | None = None,
    timeout: float = 120,
    offline: Path | None = None,
) -> Run:
    """Run ``python -m kompakt`` in a real subprocess.

    With `offline` (a scratch folder), the child process cannot open a connection.
    """
    env = dict(os.environ)
    paths = [str(REPO / "src")]
    if offline is not None:
        offline.mkdir(parents=True, exist_ok=True)
        (offline / "sitecustomize.py").write_text(NO_NETWORK)
        paths.insert(0, str(offline))
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["COLUMNS"] = "160"
    proc = subprocess.run(
        [sys.executable, "-m", "kompakt", *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return Run(proc.returncode, proc.stdout, proc.stderr)


def assert_one_line_error(r: Run, *needles: str, code: int = 2) -> None:
    """Non-zero exit, exactly one line on stderr starting ``kompakt: error:``, no traceback."""
    assert r.code == code, (r.code, r.stdout, r.stderr)
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("kompakt: error: "), lines[0]
    assert "Traceback" not in r.stderr + r.stdout
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


MALFORMED = json.dumps(
    [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": 5}}
            ],
        },
    ]
)
"""An OpenAI list whose message 1 has non-string tool-call arguments."""
UNKNOWN = json.dumps({"transcript": "not a chat", "version": 3})
"""A JSON document in no format kompakt knows."""


def bad_inputs(tmp: Path) -> dict[str, Path]:
    """A missing file, an unknown format and a malformed message, as files in `tmp`."""
    unknown = tmp / "unknown.json"
    unknown.write_text(UNKNOWN)
    malformed = tmp / "malformed.json"
    malformed.write_text(MALFORMED)
    return {"missing": tmp / "nope.json", "unknown": unknown, "malformed": malformed}


EXPECTED = {
    "missing": ("file not found", "nope.json"),
    "unknown": ("cannot detect the format",),
    "malformed": ("message 1", "tool_calls[0].function.arguments"),
}
