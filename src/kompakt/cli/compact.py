"""`kompakt compact`: compact a transcript once; the same format out as in."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from kompakt.cli.common import (
    checked_input,
    config_only,
    count_tokens,
    err_console,
    load_tokenizer,
    read_conversation,
    report_fallbacks,
    resolve_budget,
    summarizer_names,
    warn,
)
from kompakt.cli.errors import handled
from kompakt.cli.fallbacks import fallback_warnings
from kompakt.cli.options import (
    BudgetOpt,
    ConfigOpt,
    FileArg,
    FormatOpt,
    ModelOpt,
    RepairOpt,
    StrategyOpt,
    StrictOpt,
    TokenizerOpt,
    ToOpt,
)
from kompakt.cli.printable import printable
from kompakt.formats.documents import render_document, write_atomic
from kompakt.presets import budget_warning, compact_once, load_model

__all__ = ["compact_command"]


def compact_command(
    file: FileArg,
    output: Annotated[
        str, typer.Option("--output", "-o", help="Output file, or - for stdout.")
    ] = "-",
    budget: BudgetOpt = None,
    strategy: StrategyOpt = None,
    config: ConfigOpt = None,
    model: ModelOpt = None,
    tokenizer: TokenizerOpt = "chars",
    source_format: FormatOpt = None,
    to: ToOpt = None,
    strict: StrictOpt = False,
    repair: RepairOpt = False,
) -> None:
    """Compact a transcript once and write it in the same format (or --to another).

    Example: kompakt compact run.traj.json --budget 8000 -o small.traj.json

    Example: cat chat.json | kompakt compact - --budget 0.3 --to anthropic > small.json

    Input a provider would reject (an orphan result, a reused call id, an unanswered
    call) is warned about and written as it was; --repair fixes it, --strict refuses it.
    """
    with handled():
        if config is not None:
            config_only(strategy, budget)
        tok = load_tokenizer(tokenizer)
        conv = checked_input(read_conversation(file, source_format), repair=repair, strict=strict)
        before = count_tokens(conv, tok)
        summarizer = load_model(model)
        done = compact_once(
            conv,
            tokenizer=tok,
            budget=resolve_budget(budget, before),
            strategy=strategy,
            config=config,
            summarizer=summarizer,
        )
        fallbacks = done.event.fallbacks if done.event is not None else []
        names = summarizer_names(summarizer, *done.models)
        report_fallbacks(fallback_warnings(fallbacks, names), strict=strict)
        text = render_document(done.messages, conv, to)
        if output == "-":
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            write_atomic(Path(output), text)
        over = budget_warning(done, strategy)
        if over:
            warn(over)
        err_console.print(
            f"compacted {len(conv)} → {len(done.messages)} messages, "
            f"{before:,} → {done.tokens:,} tokens"
            + ("" if output == "-" else f": {printable(output, newlines=False)}"),
            highlight=False,
            markup=False,
        )
