"""`kompakt replay`: what compaction would have done to a recorded run, turn by turn."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console
from rich.table import Table
from rich.text import Text

from kompakt.cli.common import (
    budget_error,
    build_compactor,
    checked_input,
    count_tokens,
    emit,
    err_console,
    load_tokenizer,
    out_console,
    progress_bar,
    read_conversation,
    report_fallbacks,
    resolve_budget,
    summarizer_names,
)
from kompakt.cli.errors import handled
from kompakt.cli.fallbacks import fallback_warnings
from kompakt.cli.options import (
    BudgetOpt,
    ConfigOpt,
    FileArg,
    FormatOpt,
    JsonOpt,
    ModelOpt,
    RepairOpt,
    ReportOpt,
    StrategyOpt,
    StrictOpt,
    TargetOpt,
    TokenizerOpt,
    VerboseOpt,
)
from kompakt.cli.printable import printable
from kompakt.errors import BudgetImpossible, InputError
from kompakt.eval.replay import CompactorLike, ReplayEvent, ReplayResult, replay
from kompakt.eval.report import replay_report
from kompakt.messages import Message
from kompakt.presets import DEFAULT_TARGET
from kompakt.tokens import Tokenizer

__all__ = [
    "print_replay",
    "replay_command",
    "replay_warnings",
    "run_replay",
]


def _event_line(e: ReplayEvent) -> Text:
    what = []
    if e.groups_dropped:
        what.append(f"dropped {e.groups_dropped}")
    if e.groups_collapsed:
        what.append(f"collapsed {e.groups_collapsed}")
    if e.groups_summarized:
        what.append(f"summarized {e.groups_summarized}")
    calls = f", {e.model_calls} model call(s)" if e.model_calls else ""
    return Text.assemble(
        ("compaction", "cyan"),
        f" at message {e.position}: {e.tokens_before:,} → "
        f"{e.tokens_after:,} tokens ({', '.join(what) or 'no group changed'} groups{calls}, "
        f"{e.seconds * 1000:.1f} ms): {printable(e.what(2), newlines=False)}",
    )


def run_replay(
    messages: list[Message],
    compactor: CompactorLike,
    *,
    tokenizer: Tokenizer,
    source: str,
    strategy: str,
    budget: int | None,
    progress: bool = True,
    recall: bool = True,
    verbose: bool = False,
    console: Console = err_console,
) -> ReplayResult:
    """Replay with a live progress bar on `console` (its description counts the
    compactions); with `verbose`, one line per compaction as well.

    With `recall`, lost artifacts count as recoverable only when a full-text search
    over the originals (a SQLite store, as the agent's recall tool) finds them.
    """
    with progress_bar(
        "replaying", "messages", disable=not progress, console=console, detail=True
    ) as bar:
        task = bar.add_task("", total=len(messages))
        compactions = 0
        step = max(1, len(messages) // 200)  # ~200 updates: a bar, not a per-message cost

        def on_message(done: int, total: int) -> None:
            if done % step == 0 or done == total:
                bar.update(task, completed=done)

        def on_event(e: ReplayEvent) -> None:
            nonlocal compactions
            compactions += 1
            bar.update(task, description=f"{compactions:,} compactions")
            if verbose:
                bar.console.print(_event_line(e), highlight=False)

        return replay(
            messages,
            compactor,
            tokenizer=tokenizer,
            source=source,
            strategy=strategy,
            budget=budget,
            recall=recall,
            on_message=on_message if progress else None,
            on_event=on_event if progress or verbose else None,
        )


def replay_warnings(results: Iterable[ReplayResult], *models: object) -> list[str]:
    """One warning line per distinct fallback taken in `results` (see `fallback_warnings`);
    `models` are the models or compactors in use, to name a failed summarizer."""
    fallbacks = [f for r in results for e in r.events for f in e.fallbacks]
    return fallback_warnings(fallbacks, summarizer_names(*models))


_BARS = "▁▂▃▄▅▆▇█"


def sparkline(values: list[int], top: int, width: int = 60) -> str:
    """`values` as block characters scaled to `top`, resampled to at most `width`."""
    if not values or top <= 0:
        return ""
    if len(values) > width:
        values = [values[int(i * len(values) / width)] for i in range(width)]
    return "".join(_BARS[min(len(_BARS) - 1, v * len(_BARS) // (top + 1))] for v in values)


def print_replay(result: ReplayResult, console: Console = out_console) -> None:
    """The end-of-replay summary: context sizes, events, what is still visible."""
    title = Text(f"Replay of {printable(result.source, newlines=False)}")
    head = Table(title=title, show_header=False, title_justify="left")
    head.add_column("", style="bold")
    head.add_column("")
    head.add_row(
        "strategy",
        Text(printable(f"{result.strategy} · budget {result.budget or '—'} · {result.tokenizer}")),
    )
    head.add_row("messages / model calls", f"{result.messages} / {len(result.steps)}")
    head.add_row("peak context without", f"{result.peak_tokens_full:,} tokens")
    head.add_row("peak context with", f"{result.peak_tokens_sent:,} tokens")
    head.add_row("final context", f"{result.final_tokens:,} tokens")
    head.add_row(
        "compactions",
        f"{len(result.events)} ({result.model_calls} model calls, "
        f"{result.summarizer_tokens:,} summarizer tokens)"
        + (f"; {result.ineffective} changed nothing" if result.ineffective else ""),
    )
    head.add_row("replay time", f"{result.seconds:.2f} s")
    console.print(head)
    top = result.peak_tokens_full
    console.print(
        f"[dim]without[/] {sparkline([s.tokens_full for s in result.steps], top)}\n"
        f"[dim]with   [/] [blue]{sparkline([s.tokens_sent for s in result.steps], top)}[/]",
        highlight=False,
    )
    if result.events:
        ev = Table(title="Compaction events", title_justify="left")
        for col in ReplayEvent.COLUMNS:
            ev.add_column(col, justify="left" if col == "what" else "right")
        shown = (
            result.events if len(result.events) <= 20 else result.events[:10] + result.events[-10:]
        )
        for e in shown:
            ev.add_row(*(Text(printable(c)) for c in e.cells()))
        console.print(ev)
    art = Table(title="Still visible at the end", title_justify="left")
    for col in ("kind", "visible", "recoverable by recall", "lost (examples)"):
        art.add_column(col, justify="left" if col in ("kind", "lost (examples)") else "right")
    for a in result.artifacts:
        art.add_row(
            a.kind,
            f"{a.visible}/{a.total}",
            str(a.recoverable),
            Text(printable("; ".join(x[:50] for x in a.lost[:2]), newlines=False) or "—"),
        )
    console.print(art)


def replay_command(
    file: FileArg,
    budget: BudgetOpt = None,
    strategy: StrategyOpt = None,
    config: ConfigOpt = None,
    model: ModelOpt = None,
    target: TargetOpt = DEFAULT_TARGET,
    tokenizer: TokenizerOpt = "chars",
    fmt: FormatOpt = None,
    report: ReportOpt = None,
    json_out: JsonOpt = False,
    strict: StrictOpt = False,
    verbose: VerboseOpt = False,
    repair: RepairOpt = False,
) -> None:
    """Replay a recorded run turn by turn through a compactor.

    A progress bar while it runs, then a summary: the context per model call with and
    without compaction, the compactions (what was dropped, collapsed, summarized;
    tokens; model calls; time; the first and last ten, -v prints each one as it
    happens) and what is still visible at the end (paths, commands, errors,
    identifiers).

    Example: kompakt replay run.traj.json --budget 0.2 --strategy truncation --report out.html
    """
    with handled():
        tok = load_tokenizer(tokenizer)
        conv = checked_input(read_conversation(file, fmt), repair=repair, strict=strict)
        messages = list(conv)
        if not messages:
            raise InputError(f"{file!r} holds no messages: nothing to replay")
        tokens = resolve_budget(budget, count_tokens(messages, tok))
        compactor = build_compactor(
            strategy=strategy,
            config=config,
            budget=tokens,
            target=target,
            model=model,
            tokenizer=tok,
        )
        if tokens is None:  # from --config: show its token trigger as the budget
            limit = getattr(compactor.trigger, "limit", None)
            tokens = limit if isinstance(limit, int) else None
        try:
            result = run_replay(
                messages,
                compactor,
                tokenizer=tok,
                source=file,
                budget=tokens,
                strategy=strategy or ("config" if config else "budgeted"),
                progress=not json_out,
                verbose=verbose and not json_out,
            )
        except BudgetImpossible as exc:
            raise budget_error(exc, tokens, target) from exc
        report_fallbacks(replay_warnings([result], compactor), strict=strict)
        emit(
            result,
            html=lambda: replay_report(result),
            report=report,
            json_out=json_out,
            show=lambda: print_replay(result),
        )
