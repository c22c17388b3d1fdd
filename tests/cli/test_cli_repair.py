"""`compact` and `replay` on input a provider would reject: warned, --repair fixes it,
--strict refuses it. Was: written out unchanged, exit 0, not a word said."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clihelp import assert_one_line_error, run

import kompakt
from kompakt.validation import find_problems

BROKEN = [
    {"role": "user", "content": "fix the build"},
    {"role": "tool", "tool_call_id": "gone", "content": "orphan from a trimmed window"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
        ],
    },
    {"role": "user", "content": "and?"},
]


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(BROKEN))
    return path


def test_compact_warns_and_keeps_invalid_input(broken: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    r = run("compact", str(broken), "--budget", "1000", "-o", str(out), cwd=tmp_path)
    assert r.code == 0, r.stderr
    warning = next(line for line in r.stderr.splitlines() if line.startswith("warning:"))
    assert "message 1: orphan_result" in warning and "(and 1 more)" in warning
    assert "--repair fixes them" in warning
    assert find_problems(kompakt.load(out))  # kept as it was


def test_compact_repair_fixes_and_lists_each_repair(broken: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    r = run("compact", str(broken), "--budget", "1000", "--repair", "-o", str(out), cwd=tmp_path)
    assert r.code == 0, r.stderr
    repaired = [line for line in r.stderr.splitlines() if line.startswith("warning: repaired")]
    assert repaired == [
        "warning: repaired message 1: dropped_orphan_result: result for call 'gone', which is "
        "not in the conversation: 'orphan from a trimmed window'",
        "warning: repaired message 2: added_missing_result: call 'c1' (ls) had no result: "
        "answered '[no result recorded]'",
    ]
    fixed = kompakt.load(out)
    assert find_problems(fixed) == []
    assert [m.role for m in fixed] == ["user", "assistant", "tool", "user"]


@pytest.mark.parametrize("command", ["compact", "replay"])
def test_strict_refuses_invalid_input(broken: Path, tmp_path: Path, command: str) -> None:
    r = run(command, str(broken), "--budget", "1000", "--strict", cwd=tmp_path)
    assert_one_line_error(r, "invalid for openai: message 1: orphan_result")
    r = run(command, str(broken), "--budget", "1000", "--strict", "--repair", cwd=tmp_path)
    assert r.code == 0, r.stderr


def test_replay_repairs_before_replaying(broken: Path, tmp_path: Path) -> None:
    r = run("replay", str(broken), "--budget", "1000", "--repair", "--json", cwd=tmp_path)
    assert r.code == 0, r.stderr
    assert r.json()["messages"] == 4  # the orphan dropped, the missing result added
    assert "warning: repaired message 1" in r.stderr
