"""The option types the commands share (typer `Annotated` aliases): one help text per option."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

__all__ = [
    "BudgetOpt",
    "ConfigOpt",
    "FileArg",
    "FormatOpt",
    "JsonOpt",
    "ModelOpt",
    "RepairOpt",
    "ReportOpt",
    "StrategyOpt",
    "StrictOpt",
    "TargetOpt",
    "ToOpt",
    "TokenizerOpt",
    "VerboseOpt",
]

ReportOpt = Annotated[
    Path | None, typer.Option("--report", "-r", help="Write an HTML report here.")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]

FileArg = Annotated[
    str, typer.Argument(help="Transcript in any format kompakt reads, or - for stdin.")
]
BudgetOpt = Annotated[
    str | None,
    typer.Option(
        "--budget", "-b", help="Token budget: tokens (8000) or a fraction of the run (0.2)."
    ),
]
StrategyOpt = Annotated[
    str | None,
    typer.Option(
        "--strategy",
        "-s",
        help="budgeted (default), extractive_digest, summarize, truncation, sliding_window, "
        "keep_first_and_last, collapse_tool_results, remove_tool_calls, clamp_oversized, "
        "supersede_reads.",
    ),
]
ConfigOpt = Annotated[
    Path | None,
    typer.Option("--config", "-c", help="TOML compaction setup (Compactor.from_config)."),
]
ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model", "-m", help="Summarizer: extractive, local, openai:NAME, anthropic:NAME."
    ),
]
TargetOpt = Annotated[
    float, typer.Option("--target", help="Compact down to this fraction of the budget.")
]
TokenizerOpt = Annotated[
    str,
    typer.Option("--tokenizer", help="chars (default), chars:N, cl100k_base, or tokenizer.json."),
]
FormatOpt = Annotated[
    str | None,
    typer.Option(
        "--format",
        "--from",
        "-f",
        help="Input format (default: detected): openai, anthropic, responses, "
        "gemini, jsonl, mini-swe-agent, swe-agent.",
    ),
]
ToOpt = Annotated[str | None, typer.Option("--to", help="Output format (default: the input's).")]
StrictOpt = Annotated[
    bool,
    typer.Option(
        "--strict",
        help="Exit 1 if a fallback was taken (e.g. a summarizer failed); compact and replay "
        "also exit 2 on input a provider would reject (unless --repair fixes it).",
    ),
]
RepairOpt = Annotated[
    bool,
    typer.Option(
        "--repair",
        help="Fix tool-call breaks in the input first (orphan or misplaced results, reused "
        "call ids, unanswered calls), listing each repair (see kompakt.repair).",
    ),
]
VerboseOpt = Annotated[
    bool,
    typer.Option("--verbose", "-v", help="Print one line per compaction as it happens."),
]
