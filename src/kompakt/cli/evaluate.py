"""`kompakt eval`: retention benchmark of strategies side by side, at several budgets."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table
from rich.text import Text

from kompakt.cli.common import (
    emit,
    load_tokenizer,
    out_console,
    progress_bar,
    read_conversation,
    report_fallbacks,
)
from kompakt.cli.errors import handled
from kompakt.cli.fallbacks import model_failure_warning
from kompakt.cli.options import (
    FormatOpt,
    JsonOpt,
    ModelOpt,
    ReportOpt,
    StrictOpt,
    TargetOpt,
    TokenizerOpt,
)
from kompakt.cli.printable import printable
from kompakt.cli.replay import replay_warnings
from kompakt.errors import ConfigError
from kompakt.eval.probes import Needle
from kompakt.eval.report import eval_report
from kompakt.eval.retention import KINDS, Asker, EvalResult, evaluate
from kompakt.messages import Message
from kompakt.presets import (
    DEFAULT_TARGET,
    load_model,
    make_compactor,
    parse_budgets,
    registry_name,
)

if TYPE_CHECKING:
    from kompakt.models import ChatModel

__all__ = ["DEFAULT_STRATEGIES", "eval_command", "model_asker", "print_eval"]

DEFAULT_STRATEGIES = "truncation,collapse_tool_results,budgeted,extractive_digest"


def model_asker(model: ChatModel, failures: list[str] | None = None) -> Asker:
    """Ask `model` each needle's question over the final context; right if it says the value.

    A failed call counts as a wrong answer; its error is added to `failures`.
    """
    from kompakt.errors import ModelError
    from kompakt.models.base import ask, run_sync

    def asker(context: Sequence[Message], needle: Needle) -> bool:
        question = Message.user("Answer from the conversation above only. " + needle.question)
        try:
            response = run_sync(ask(model, [*context, question], max_output_tokens=64))
        except ModelError as exc:
            if failures is not None:
                failures.append(str(exc))
            return False
        return needle.value.lower() in response.message.text.lower()

    return asker


def _warnings(result: EvalResult, model: ChatModel | None, failures: list[str]) -> list[str]:
    """Each distinct fallback of every replay, then each distinct failure to answer."""
    lines = replay_warnings([c.result for c in result.cells if c.result is not None], model)
    if model is not None:
        for error in dict.fromkeys(failures):
            lines.append(model_failure_warning(model.name, error, "counted as not answered"))
    return lines


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.0f}%"


def print_eval(result: EvalResult) -> None:
    """The side-by-side table: survival per kind, tokens kept, model cost."""
    t = Table(title="Retention: share still visible at the end of the run", title_justify="left")
    t.add_column("strategy", no_wrap=True, min_width=max(len(s) for s in result.strategies))
    t.add_column("budget", justify="right")
    for kind in KINDS:  # whole words: the longer headers below wrap instead
        t.add_column(kind, justify="right", no_wrap=True)
    for col in ("stale", "kept", "compactions", "model calls", "summarizer tokens", "errors"):
        t.add_column(col, justify="right")
    last = None
    for r in result.rows():
        if last is not None and r.budget != last:
            t.add_section()
        last = r.budget
        t.add_row(
            Text(printable(r.strategy)),
            Text(printable(r.budget)),
            *(_pct(r.survival[k]) for k in KINDS),
            str(r.stale),
            _pct(r.tokens_kept),
            str(r.compactions),
            str(r.model_calls),
            f"{r.summarizer_tokens:,}",
            f"[red]{r.errors}/{r.runs}[/]" if r.errors else "",
        )
    out_console.print(t)
    if any(r.errors for r in result.rows()):
        out_console.print(
            "[dim]errors: runs whose budget cannot hold what must be kept (system prompt, "
            "last user message); a row pools only the runs that did not fail.[/]"
        )
    if any(r.answered is not None for r in result.rows()):
        a = Table(title="Model-answered probes", title_justify="left")
        for col in ("strategy", "budget", "answered"):
            a.add_column(col)
        for r in result.rows():
            a.add_row(
                Text(printable(r.strategy)),
                Text(printable(r.budget)),
                "—" if r.answered is None else f"{r.answered:.0%}",
            )
        out_console.print(a)


def eval_command(
    files: Annotated[list[str], typer.Argument(help="Transcripts to evaluate on.")],
    budget: Annotated[
        str,
        typer.Option(
            "--budget",
            "-b",
            help="Budgets, comma-separated: fractions of each run "
            "(0.5,0.2,0.1 or 20%) or tokens (8000).",
        ),
    ] = "0.5,0.2,0.1",
    strategies: Annotated[
        str, typer.Option("--strategies", "-s", help="Strategies to compare, comma-separated.")
    ] = DEFAULT_STRATEGIES,
    model: ModelOpt = None,
    target: TargetOpt = DEFAULT_TARGET,
    tokenizer: TokenizerOpt = "chars",
    fmt: FormatOpt = None,
    report: ReportOpt = None,
    json_out: JsonOpt = False,
    strict: StrictOpt = False,
) -> None:
    """Retention benchmark: how much of each run survives each strategy at each budget.

    Plants facts at known positions (values, constraints, decisions), replays every
    run under every (strategy, budget), and reports the share of facts and of the
    run's own paths, commands, errors and identifiers still visible, the tokens
    kept, and model calls and summarizer tokens spent. With --model, each planted
    fact is also asked as a question.

    Example: kompakt eval runs/*.traj.json --budget 0.5,0.2,0.1 --report eval.html

    Example: kompakt eval run.json --strategies truncation,collapse_tool_results,budgeted
    """
    with handled():
        tok = load_tokenizer(tokenizer)
        budgets = parse_budgets(budget)
        names = [registry_name(s.strip()) for s in strategies.split(",") if s.strip()]
        if not names:
            raise ConfigError("--strategies: give at least one strategy name")
        summarizer = load_model(model)
        for name in names:  # fail fast on an unknown name, before any replay
            make_compactor(name, 1000, target=target, tokenizer=tok, summarizer=summarizer)
        runs = [(Path(f).name, list(read_conversation(f, fmt))) for f in files]
        total = len(runs) * len(budgets) * len(names)
        failures: list[str] = []
        with progress_bar("evaluating", "replays", disable=json_out) as bar:
            task = bar.add_task("eval", total=total)
            result = evaluate(
                runs,
                names,
                budgets,
                lambda name, tokens: make_compactor(
                    name, tokens, target=target, tokenizer=tok, summarizer=summarizer
                ),
                tokenizer=tok,
                ask=model_asker(summarizer, failures) if summarizer is not None else None,
                on_cell=lambda _c: bar.advance(task),
            )
        report_fallbacks(_warnings(result, summarizer, failures), strict=strict)
        emit(
            result,
            html=lambda: eval_report(result),
            report=report,
            json_out=json_out,
            show=lambda: print_eval(result),
        )
