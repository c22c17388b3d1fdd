"""`kompakt demo`: replay a recorded agent run shipped with kompakt, offline."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from kompakt.cli.common import (
    count_tokens,
    load_tokenizer,
    out_console,
    resolve_budget,
    write_report,
)
from kompakt.cli.errors import handled
from kompakt.cli.replay import print_replay, run_replay
from kompakt.eval.report import replay_report
from kompakt.presets import make_compactor

__all__ = ["DEMO_TRANSCRIPT", "demo_command", "demo_transcript"]

DEMO_TRANSCRIPT = "django__django-13658.traj.json"
"""A mini-swe-agent run (MIT, see ``kompakt/data/LICENSE.md``) fixing a Django issue."""


def demo_transcript() -> Path:
    """Path of the transcript shipped inside the package."""
    return Path(str(resources.files("kompakt") / "data" / DEMO_TRANSCRIPT))


def demo_command(
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Where to write the HTML report.")
    ] = Path("kompakt-demo.html"),
    budget: Annotated[
        str, typer.Option("--budget", "-b", help="Token budget: tokens or a fraction of the run.")
    ] = "0.35",
    strategy: Annotated[
        str, typer.Option("--strategy", "-s", help="Any strategy replay takes.")
    ] = "extractive_digest",
) -> None:
    """Replay a recorded agent run shipped with kompakt, offline, and write an HTML report.

    The run is a mini-swe-agent session on a Django issue. It is replayed under a
    budget of about a third of its tokens with the embedded extractive digest: no model,
    no network, no API key.

    Example: kompakt demo --output /tmp/kompakt-demo.html
    """
    with handled():
        from kompakt.formats import load

        tok = load_tokenizer("chars")
        path = demo_transcript()
        messages = list(load(path))
        tokens = resolve_budget(budget, count_tokens(messages, tok))
        assert tokens is not None
        compactor = make_compactor(strategy, tokens, tokenizer=tok)
        result = run_replay(
            messages,
            compactor,
            tokenizer=tok,
            source=DEMO_TRANSCRIPT,
            strategy=strategy,
            budget=tokens,
        )
        print_replay(result)
        written = write_report(replay_report(result, title="kompakt demo"), output)
        out_console.print(
            Text.assemble("\nreport written to ", (str(written), "bold"), " (open it in a browser)")
        )
        out_console.print(
            "your own run: [bold]kompakt replay RUN.json --budget 0.3 --report replay.html[/]",
            highlight=False,
        )
