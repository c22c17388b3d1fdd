"""Every failure is a KompaktError; every usage error exits 2 with one line naming what
the user gave. Each case was a defect: a traceback, a silent misreading, or an error
that named a temporary file instead of the user's path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from clihelp import SMALL, assert_one_line_error, invoke, run

from kompakt.errors import ConfigError, InputError
from kompakt.eval.documents import write_atomic
from kompakt.eval.retention import parse_budgets
from kompakt.messages import Message
from kompakt.store import MemoryStore, SQLiteStore

CHAT = json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}])


def test_a_token_budget_must_be_a_whole_number() -> None:
    """Was: ``--budget 1.5`` silently meant 1 token."""
    with pytest.raises(ConfigError, match=r"whole number, got '1.5'"):
        parse_budgets("1.5")
    assert [b.tokens for b in parse_budgets("1, 8000, 1e3")] == [1, 8000, 1000]
    assert [b.fraction for b in parse_budgets("1.0, 0.5")] == [1.0, 0.5]
    r = invoke("compact", str(SMALL), "--budget", "1.5")
    assert_one_line_error(r, "--budget in tokens must be a whole number, got '1.5'")


@pytest.mark.parametrize("top", ["0", "-5"])
def test_inspect_top_must_be_positive(top: str, tmp_path: Path) -> None:
    """Was: ``--top -5`` accepted (and printed a cut list)."""
    r = run("inspect", str(SMALL), "--top", top, cwd=tmp_path)
    assert_one_line_error(r, "Invalid value for '--top'", "greater than or equal to 1")


def test_deep_json_is_a_usage_error_not_a_recursion_error(tmp_path: Path) -> None:
    """Was: RecursionError, exit 1 and "run with --debug"."""
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    r = run("inspect", str(path), cwd=tmp_path)
    assert_one_line_error(r, "deep.json' is nested deeper than 100 levels")


def test_batch_output_that_is_a_file_is_a_usage_error(tmp_path: Path) -> None:
    """Was: FileExistsError."""
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "a.json").write_text(CHAT)
    taken = tmp_path / "taken.txt"
    taken.write_text("mine")
    r = invoke("batch", str(runs), "-o", str(taken))
    assert_one_line_error(r, f"--output must be a folder, got a file: {str(taken)!r}")
    assert taken.read_text() == "mine"


@pytest.mark.parametrize("command", ["compact", "replay"])
def test_an_unwritable_output_names_the_users_path(tmp_path: Path, command: str) -> None:
    """Was: the error named the temporary file next to /proc/version."""
    (tmp_path / "in.json").write_text(CHAT)
    option = "-o" if command == "compact" else "--report"
    r = run(command, "in.json", "--budget", "100", option, "/proc/version", cwd=tmp_path)
    assert_one_line_error(r, "cannot write '/proc/version'")
    assert ".tmp" not in r.stderr


def test_write_atomic_errors_are_kompakt_errors(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match=r"out.json': a parent of it is a file"):
        write_atomic(tmp_path / "file" / "out.json", "y")
    with pytest.raises(InputError, match="cannot write '/proc/version'"):
        write_atomic(Path("/proc/version"), "y")
    with pytest.raises(InputError, match="is a directory"):
        write_atomic(tmp_path, "y")


@pytest.mark.parametrize("path", ["", "   "])
def test_sqlite_store_needs_a_path(path: str) -> None:
    """Was: silently a temporary database, gone on close."""
    with pytest.raises(ConfigError, match="needs a database file path"):
        SQLiteStore(path)
    SQLiteStore(":memory:").close()


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_a_lone_surrogate_query_finds_and_does_not_raise(tmp_path: Path, kind: str) -> None:
    """Was: UnicodeEncodeError out of store.search and store.recall."""
    store = SQLiteStore(tmp_path / "s.db") if kind == "sqlite" else MemoryStore()
    with store:
        store.append("s", [Message.user("bad \ud800 byte in deploy.log"), Message.user("other")])
        found = store.search("s", "\ud800 byte")
        assert [m.text for m in found] == ["bad \ud800 byte in deploy.log"]
        recalled = store.recall("s", "deploy \ud800")
        assert [m.text for m in recalled] == ["bad \ud800 byte in deploy.log"]
