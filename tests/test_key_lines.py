"""`key_lines` looks for an error line only where its cheap pre-check finds a hint of one:
the pre-check must hold wherever the error pattern matches, or an error goes unquoted."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kompakt.notes.digest import _ERROR_ANYWHERE_RE, _ERROR_HINT_RE, key_lines

# one line for each branch of the error pattern, and its edges
ERROR_LINES = [
    "Traceback (most recent call last):",
    "ValueError: bad value",
    "  pkg.mod.CustomException:",
    "SystemExit",
    "KeyboardInterrupt",
    "DeprecationWarning: old",
    "tests/test_a.py::test_b FAILED",
    "FAIL: test_x (tests.T)",
    "ERROR collecting tests",
    "make: *** error: no rule",
    "fatal: not a git repository",
    "panic: runtime error",
    "Error: exit status 2",
    "ls: x: No such file or directory",
    "bash: ./run: Permission denied",
    "sh: foo: command not found",
    "Segmentation fault (core dumped)",
    "E       assert 1 == 2",
    "E\t\tx",
    "E\n\nx",
]


def test_the_hint_finds_every_kind_of_error_line() -> None:
    for line in ERROR_LINES:
        assert _ERROR_ANYWHERE_RE.search(line), line  # the example is an error line
        assert _ERROR_HINT_RE.search(line), line


PIECES = [
    *ERROR_LINES,
    *("Error", "E", "FAIL", "error", "fatal", "panic", ":", " ", "  ", "\t", "\n", ".", "x"),
    *("Exit", "Traceback", "Warning", "No such", "ok", "   12  def f(x): return x"),
]


@given(st.lists(st.sampled_from(PIECES), max_size=12))
def test_no_error_line_without_the_hint(pieces: list[str]) -> None:
    text = "".join(pieces)
    if _ERROR_ANYWHERE_RE.search(text):
        assert _ERROR_HINT_RE.search(text)


def test_key_lines_quotes_the_last_error_of_a_long_output() -> None:
    body = "\n".join(f"{i:4d}  def f_{i}(x): return x * {i}" for i in range(400))
    out = key_lines("collecting\n" + body + "\nE       assert 3 == 4\n" + body[:200])
    assert out == ["E       assert 3 == 4"]
    assert key_lines(body) == []
