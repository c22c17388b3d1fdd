"""`kompakt compact`: compact a transcript once; the same format out as in."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from kompakt.cli.common import (
    count_tokens,
    err_console,
    load_tokenizer,
    read_conversation,
    resolve_budget,
)
from kompakt.cli.errors import handled
from kompakt.cli.replay import (
    BudgetOpt,
    ConfigOpt,
    FileArg,
    FormatOpt,
    ModelOpt,
    StrategyOpt,
    TokenizerOpt,
    ToOpt,
)
from kompakt.eval.compactors import compact_messages, load_model
from kompakt.eval.documents import render_document, write_atomic

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
) -> None:
    """Compact a transcript once and write it in the same format (or --to another).

    Example: kompakt compact run.traj.json --budget 8000 -o small.traj.json

    Example: cat chat.json | kompakt compact - --budget 0.3 --to anthropic > small.json
    """
    with handled():
        tok = load_tokenizer(tokenizer)
        conv = read_conversation(file, source_format)
        before = count_tokens(conv, tok)
        out = compact_messages(
            conv,
            tokenizer=tok,
            budget=resolve_budget(budget, before),
            strategy=strategy,
            config=config,
            summarizer=load_model(model),
        )
        text = render_document(out, conv, to)
        after = count_tokens(out, tok)
        if output == "-":
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            write_atomic(Path(output), text)
        err_console.print(
            f"compacted {len(conv)} → {len(out)} messages, {before:,} → {after:,} tokens"
            + ("" if output == "-" else f": {output}"),
            highlight=False,
        )
