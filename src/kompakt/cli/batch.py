"""`kompakt batch`: compact or evaluate a folder of transcripts, locally or on Ray."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from kompakt.cli.common import out_console, progress_bar
from kompakt.cli.errors import EXIT_FAILURE, fail, handled
from kompakt.cli.evaluate import DEFAULT_STRATEGIES
from kompakt.cli.options import ConfigOpt, FormatOpt, StrategyOpt, TargetOpt, TokenizerOpt, ToOpt
from kompakt.cli.printable import printable
from kompakt.errors import ConfigError
from kompakt.eval.batch import (
    BatchJob,
    BatchSummary,
    ItemResult,
    claim_output,
    plan,
    run_batch,
)
from kompakt.presets import DEFAULT_TARGET, compactor_from_config, make_compactor, registry_name

__all__ = ["batch_command"]


def _print_summary(summary: BatchSummary, output: Path) -> None:
    out_console.print(
        Text.assemble(
            (str(summary.count("done")), "bold"),
            f" done, {summary.count('skipped')} skipped (already there), ",
            (str(summary.count("failed")), "bold"),
            f" failed in {summary.seconds:.1f} s → {printable(str(output))}",
        ),
        highlight=False,
    )
    failed = [r for r in summary.results if r.status == "failed"]
    if failed:
        t = Table(title="Failed files (skipped; the rest of the batch ran)", title_justify="left")
        t.add_column("file")
        t.add_column("error")
        for r in failed[:50]:
            t.add_row(Text(printable(r.relative)), Text(printable(r.error or "")))  # never markup
        out_console.print(t)


def batch_command(
    input_dir: Annotated[
        Path, typer.Argument(help="Folder of transcripts (searched recursively).")
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="Output folder.")],
    budget: Annotated[
        str,
        typer.Option(
            "--budget",
            "-b",
            help="Tokens (8000) or a fraction of each file (0.2); "
            "with --eval several, comma-separated.",
        ),
    ] = "0.5",
    strategy: StrategyOpt = None,
    config: ConfigOpt = None,
    evaluate: Annotated[
        bool, typer.Option("--eval", help="Write a retention evaluation per file instead.")
    ] = False,
    strategies: Annotated[
        str, typer.Option("--strategies", help="With --eval: strategies to compare.")
    ] = DEFAULT_STRATEGIES,
    target: TargetOpt = DEFAULT_TARGET,
    tokenizer: TokenizerOpt = "chars",
    workers: Annotated[int, typer.Option("--workers", "-w", help="Local worker processes.")] = 1,
    ray: Annotated[
        str | None,
        typer.Option(
            "--ray",
            help="Run as Ray tasks: 'local' or a cluster address "
            "(ray://host:10001, auto). Needs the kompakt\\[ray] extra.",
        ),
    ] = None,
    source_format: FormatOpt = None,
    to: ToOpt = None,
    force: Annotated[
        bool, typer.Option("--force", help="Redo files whose output already exists.")
    ] = False,
    json_out: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Compact (or --eval) every transcript under a folder, resumably, in parallel.

    Outputs keep each file's relative path and format. A rerun skips outputs that
    already exist (a rerun with other settings is refused; --force redoes every file);
    a file that fails is reported and skipped, never aborting the batch (the exit code
    is then 1). --ray runs the same work as Ray tasks, with identical outputs; the Ray
    workers need no shared filesystem.

    Example: kompakt batch runs/ -o compacted/ --budget 0.3 --workers 4

    Example: kompakt batch runs/ -o evals/ --eval --budget 0.5,0.2 --ray local
    """
    with handled():
        if not input_dir.is_dir():
            if input_dir.exists():
                raise ConfigError(f"DIR must be a folder, got a file: {str(input_dir)!r}")
            raise FileNotFoundError(2, "No such folder", str(input_dir))
        if workers < 1:
            raise ConfigError(f"--workers must be >= 1, got {workers}")
        table = None
        if config is not None:
            from kompakt.config import read_config

            table = read_config(config)
            compactor_from_config(table)  # a bad config fails once, before any file
        # registry names (a 0.1 short name warns once, here), so reruns compare equal
        names = tuple(registry_name(s.strip()) for s in strategies.split(",") if s.strip())
        job = BatchJob(
            mode="eval" if evaluate else "compact",
            budget=budget,
            strategy=registry_name(strategy) if strategy else "budgeted",
            strategies=names,
            target=target,
            tokenizer=tokenizer,
            config=table,
            source_format=source_format,
            to=to,
        )
        for name in names if evaluate else (() if table else (job.strategy,)):
            make_compactor(name, 1000, target=target)  # unknown names fail before any work
        items = plan(input_dir, output, job)
        claim_output(output, job, force=force)
        with progress_bar("batch", "files", disable=json_out) as bar:
            task = bar.add_task("batch", total=len(items))

            def progress(r: ItemResult) -> None:
                bar.advance(task)
                if r.status == "failed":
                    line = Text.assemble(
                        ("failed", "red"), printable(f" {r.relative}: {r.error}", newlines=False)
                    )
                    bar.console.print(line, highlight=False)

            summary = run_batch(
                job, items, workers=workers, ray_address=ray, force=force, on_result=progress
            )
        if json_out:
            typer.echo(json.dumps(summary.to_dict(), indent=2))
        else:
            _print_summary(summary, output)
        if summary.count("failed"):
            fail(f"{summary.count('failed')} of {len(items)} file(s) failed", EXIT_FAILURE)
