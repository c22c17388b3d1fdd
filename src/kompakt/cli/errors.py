"""One-line errors and exit codes for the `kompakt` command.

Exit codes:

* ``0``: success;
* ``1``: a runtime failure (a model call failed, a store failed, a bug);
* ``2``: a usage or input error: a bad option, a missing or unreadable file, an
  unknown format, a malformed message (named by index and field), a budget too
  small for what must be kept, a missing optional extra;
* ``130``: interrupted (Ctrl-C).

Errors print one line on stderr, ``kompakt: error: ...``; ``--debug`` (or
``KOMPAKT_DEBUG=1``) shows the traceback instead.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

import typer

from kompakt.cli.printable import printable
from kompakt.errors import BudgetImpossible, InputError, KompaktError, MissingDependency

__all__ = ["EXIT_FAILURE", "EXIT_OK", "EXIT_USAGE", "fail", "handled", "set_debug"]

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2

_state = {"debug": os.environ.get("KOMPAKT_DEBUG", "") not in ("", "0")}


def set_debug(on: bool) -> None:
    """Show tracebacks instead of one-line errors."""
    _state["debug"] = _state["debug"] or on


def debug_enabled() -> bool:
    return _state["debug"]


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    """Print ``kompakt: error: message`` on stderr and exit with `code`."""
    line = printable(" ".join(str(message).split()), newlines=False)
    sys.stderr.write(f"kompakt: error: {line}\n")
    sys.stderr.flush()
    raise typer.Exit(code)


def _describe(exc: BaseException) -> tuple[str, int]:
    if isinstance(exc, FileNotFoundError):
        return f"file not found: {exc.filename or exc}", EXIT_USAGE
    if isinstance(exc, IsADirectoryError):
        return f"expected a file, got a directory: {exc.filename or exc}", EXIT_USAGE
    if isinstance(exc, PermissionError):
        return f"permission denied: {exc.filename or exc}", EXIT_USAGE
    if isinstance(exc, UnicodeDecodeError):
        return f"input is not UTF-8 text: {exc}", EXIT_USAGE
    if isinstance(exc, json.JSONDecodeError):
        return f"input is not valid JSON: {exc}", EXIT_USAGE
    if isinstance(exc, (InputError, BudgetImpossible, MissingDependency)):
        return str(exc).replace("pass format=", "pass --format"), EXIT_USAGE
    if isinstance(exc, KompaktError):
        return str(exc), EXIT_FAILURE
    return f"{type(exc).__name__}: {exc} (run with --debug for the traceback)", EXIT_FAILURE


@contextmanager
def handled() -> Iterator[None]:
    """Turn any exception into a one-line error and an exit code (unless debugging)."""
    try:
        yield
    except (typer.Exit, typer.Abort):
        raise
    except KeyboardInterrupt:
        sys.stderr.write("kompakt: interrupted\n")
        raise typer.Exit(130) from None
    except Exception as exc:
        if _state["debug"]:
            raise
        message, code = _describe(exc)
        fail(message, code)
