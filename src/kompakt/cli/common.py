"""What the commands share: reading input, budgets, compactors, consoles."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from kompakt.cli.errors import EXIT_FAILURE, fail
from kompakt.cli.printable import printable
from kompakt.errors import BudgetImpossible, ConfigError
from kompakt.index import MessageIndex
from kompakt.presets import (
    DEFAULT_TARGET,
    compactor_from_config,
    load_model,
    load_tokenizer,
    make_compactor,
    parse_budgets,
)
from kompakt.tokens import Tokenizer

if TYPE_CHECKING:
    from kompakt.compactor import Compactor
    from kompakt.formats import Conversation

__all__ = [
    "budget_error",
    "build_compactor",
    "checked_input",
    "count_tokens",
    "emit",
    "err_console",
    "load_tokenizer",
    "out_console",
    "progress_bar",
    "read_conversation",
    "report_fallbacks",
    "resolve_budget",
    "summarizer_names",
    "warn",
    "write_report",
]

# Not a terminal (a pipe, a file, CI): wide enough for the side-by-side tables.
out_console = Console(soft_wrap=False, width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True)


def read_conversation(source: str, fmt: str | None = None) -> Conversation:
    """Load a transcript from a file path, or its content from stdin when `source` is ``-``
    (stdin is always content, never a path)."""
    from kompakt.formats import load, loads
    from kompakt.formats.reading import read_stream

    if source == "-":
        text = read_stream(sys.stdin.buffer, "stdin")
        if not text.strip():
            raise ConfigError("stdin is empty: pipe a transcript in, or give a file path")
        return loads(text, format=fmt)
    return load(source, format=fmt)


def checked_input(conv: Conversation, *, repair: bool, strict: bool) -> Conversation:
    """`conv`, with a warning when it breaks the tool-call rules providers enforce: fixed
    (each repair a warning line) with `repair`; refused (exit 2) with `strict`."""
    from kompakt.errors import InvalidConversation
    from kompakt.repair import repair as fix
    from kompakt.validation import find_problems

    problems = find_problems(list(conv))
    if not problems:
        return conv
    if repair:
        fixed, repairs = fix(conv)
        for r in repairs[:_SHOWN]:
            warn(f"warning: repaired {r}")
        if len(repairs) > _SHOWN:
            warn(f"warning: ... and {len(repairs) - _SHOWN} more repairs")
        return conv.with_messages(fixed)
    if strict:
        raise InvalidConversation(problems)
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    warn(
        f"warning: the input breaks provider rules, kept as they are: {problems[0]}{more}; "
        "--repair fixes them, --strict refuses the input"
    )
    return conv


_SHOWN = 10
"""Repairs listed one per line; the rest are counted."""


def resolve_budget(text: str | None, total_tokens: int) -> int | None:
    """``8000`` -> 8000; ``0.2`` or ``20%`` -> 20% of `total_tokens`; None -> None."""
    if text is None:
        return None
    budgets = parse_budgets(text)
    if len(budgets) != 1:
        raise ConfigError(f"--budget: give one budget here, got {text!r}")
    return budgets[0].resolve(total_tokens)


def count_tokens(messages: Any, tokenizer: Tokenizer) -> int:
    """Tokens of a whole message list."""
    return MessageIndex(messages, tokenizer=tokenizer).total_tokens


def config_only(strategy: str | None, budget: object) -> None:
    """--config sets the strategy and when to stop: refuse options it would silently ignore."""
    if strategy is not None:
        raise ConfigError("give --strategy or --config, not both")
    if budget is not None:
        raise ConfigError("give --budget or --config, not both (a config sets `budget = N`)")


def build_compactor(
    *,
    strategy: str | None,
    config: Path | None,
    budget: int | None,
    target: float = DEFAULT_TARGET,
    model: str | None,
    tokenizer: Tokenizer,
) -> Compactor:
    """A compactor from ``--config``, or from ``--strategy`` and ``--budget``."""
    if config is not None:
        config_only(strategy, budget)
        return compactor_from_config(config)
    if budget is None:
        raise ConfigError("--budget is required (tokens like 8000, or a fraction like 0.2)")
    return make_compactor(
        strategy or "budgeted",
        budget,
        target=target,
        tokenizer=tokenizer,
        summarizer=load_model(model),
    )


def budget_error(exc: BudgetImpossible, budget: int | None, target: float) -> ConfigError:
    """Restate a `BudgetImpossible` in terms of the options the user gave."""
    parts = ", ".join(f"{k} {v:,}" for k, v in exc.breakdown.items() if v)
    given = (
        f"--budget {budget:,} x --target {target:g} = {exc.budget:,}" if budget else "the budget"
    )
    position = getattr(exc, "position", None)  # set by a replay
    where = f" at message {position:,} of the run" if isinstance(position, int) else ""
    return ConfigError(
        f"{given} tokens cannot hold what must be kept{where}: {exc.required:,} tokens "
        f"({parts}); raise --budget or --target"
    )


def summarizer_names(*holders: Any) -> list[str]:
    """Names of the models in use: each holder is a name, a model, or has a ``summarizer``."""
    names: list[str] = []
    for h in holders:
        model = getattr(h, "summarizer", h)
        name = model if isinstance(model, str) else getattr(model, "name", None)
        if isinstance(name, str) and name and name not in names:
            names.append(name)
    return names


def warn(line: str) -> None:
    """One warning line on stderr (no rich markup: it quotes model errors; escapes shown)."""
    sys.stderr.write(printable(" ".join(line.split()), newlines=False) + "\n")
    sys.stderr.flush()


def report_fallbacks(lines: list[str], *, strict: bool) -> None:
    """Print each fallback warning; with `strict`, then fail with exit code 1."""
    for line in lines:
        warn(line)
    if strict and lines:
        fail(
            f"{len(lines)} fallback(s) taken and --strict given: see the warnings above",
            EXIT_FAILURE,
        )


def progress_bar(
    verb: str,
    unit: str,
    *,
    disable: bool = False,
    console: Console | None = None,
    detail: bool = False,
) -> Progress:
    """The live progress bar of a long command, on stderr (transient); with `detail`, the
    task's description follows (a running count, say)."""
    columns = [
        TextColumn(f"[bold]{verb}[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(unit),
        TimeElapsedColumn(),
    ]
    if detail:
        columns.append(TextColumn("[dim]{task.description}[/]"))
    return Progress(*columns, console=console or err_console, transient=True, disable=disable)


def write_report(html: str, path: Path) -> Path:
    """Write a report atomically; returns its absolute path."""
    from kompakt.formats.documents import write_atomic

    path = path.expanduser().resolve()
    if path.is_dir():
        raise ConfigError(f"--report: expected a file, got a directory: {str(path)!r}")
    write_atomic(path, html.encode("utf-8", "replace").decode("utf-8"))  # lone surrogate: ?
    return path


class _Result(Protocol):
    def to_dict(self) -> dict[str, Any]: ...


def emit(
    result: _Result,
    *,
    html: Callable[[], str],
    report: Path | None,
    json_out: bool,
    show: Callable[[], None],
) -> None:
    """Write the HTML report if asked, then print the result as JSON or with `show`."""
    written = write_report(html(), report) if report else None
    if json_out:
        data = result.to_dict()
        data["report"] = str(written) if written else None
        typer.echo(json.dumps(data, indent=2))
        return
    show()
    if written:
        out_console.print(Text.assemble("report: ", (printable(str(written)), "bold")))
