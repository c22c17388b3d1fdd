"""Retention benchmark: strategies side by side, at several budgets, on recorded runs.

Each run gets the same planted needles (values, constraints, decisions at known
positions) and is replayed through one compactor per (strategy, budget). What is
measured at the end: the share of needles and of the run's own artifacts (paths,
commands, errors, identifiers) still visible, tokens kept, model calls and the
summarizer tokens spent. With a model, each needle is also asked as a question.

>>> [b.label for b in parse_budgets("0.5,20%,8000")]
['50%', '20%', '8000']
>>> parse_budgets("0.2")[0].resolve(10_000)
2000
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kompakt.errors import KompaktError
from kompakt.eval.probes import ARTIFACT_KINDS, NEEDLE_KINDS, Needle, plant_memory, plant_needles
from kompakt.eval.replay import CompactorLike, ReplayResult, replay
from kompakt.index import MessageIndex
from kompakt.messages import Message
from kompakt.presets import Budget, parse_budgets
from kompakt.tokens import Tokenizer

__all__ = [
    "KINDS",
    "Budget",
    "EvalCell",
    "EvalResult",
    "EvalRow",
    "evaluate",
    "parse_budgets",
]

KINDS: tuple[str, ...] = (*NEEDLE_KINDS, *ARTIFACT_KINDS)
"""Every kind a survival rate is reported for: needles first, then artifacts."""


@dataclass
class EvalCell:
    """One (file, strategy, budget) replay."""

    file: str
    strategy: str
    budget: str
    budget_tokens: int
    total_tokens: int
    result: ReplayResult | None = None
    error: str | None = None
    answered: dict[str, bool] = field(default_factory=dict)
    """Needle value -> the model answered it right (only with a model)."""

    def counts(self) -> dict[str, tuple[int, int]]:
        """Per kind: (visible, total)."""
        out: dict[str, tuple[int, int]] = {k: (0, 0) for k in KINDS}
        if self.result is None:
            return out
        for n in self.result.needles:
            v, t = out[n.kind]
            out[n.kind] = (v + int(n.visible), t + 1)
        for a in self.result.artifacts:
            out[a.kind] = (a.visible, a.total)
        return out

    def stale(self) -> tuple[int, int]:
        """(old values still shown, updates planted)."""
        if self.result is None:
            return (0, 0)
        updates = [n for n in self.result.needles if n.kind == "update"]
        return sum(n.stale_shown for n in updates), len(updates)


@dataclass
class EvalRow:
    """Pooled results of one strategy at one budget over every file."""

    strategy: str
    budget: str
    survival: dict[str, float | None]
    """Per kind: share visible at the end (None when no file had that kind)."""
    tokens_kept: float | None
    """Final context over full history, averaged over files (None when every run failed)."""
    peak_sent: int
    model_calls: int
    summarizer_tokens: int
    compactions: int
    seconds: float
    errors: int
    """Runs that failed (a budget that cannot hold what must be kept): not pooled."""
    answered: float | None = None
    runs: int = 0
    """Runs replayed, failed ones included."""
    stale: int = 0
    """Values an update replaced that are shown as current: still there, with no
    mention of the new value after them."""

    @property
    def needle_rate(self) -> float | None:
        """Mean survival of the planted facts (None when there were none)."""
        return _mean([self.survival[k] for k in NEEDLE_KINDS])

    @property
    def artifact_rate(self) -> float | None:
        """Mean survival of the run's own artifacts (None when there were none)."""
        return _mean([self.survival[k] for k in ARTIFACT_KINDS])


def _mean(values: Sequence[float | None]) -> float | None:
    real = [v for v in values if v is not None]
    return sum(real) / len(real) if real else None


@dataclass
class EvalResult:
    """Every cell of a retention benchmark and the pooled rows."""

    files: list[str]
    strategies: list[str]
    budgets: list[str]
    cells: list[EvalCell]

    def rows(self) -> list[EvalRow]:
        """One row per (strategy, budget), in the order given."""
        return [self.row(s, b) for b in self.budgets for s in self.strategies]

    def row(self, strategy: str, budget: str) -> EvalRow:
        """Pooled results of `strategy` at `budget` over every file."""
        cells = [c for c in self.cells if c.strategy == strategy and c.budget == budget]
        ok = [c for c in cells if c.result is not None]
        survival: dict[str, float | None] = {}
        for kind in KINDS:
            visible = sum(c.counts()[kind][0] for c in ok)
            total = sum(c.counts()[kind][1] for c in ok)
            survival[kind] = visible / total if total else None
        answers = [v for c in ok for v in c.answered.values()]
        return EvalRow(
            strategy=strategy,
            budget=budget,
            survival=survival,
            tokens_kept=_mean(
                [c.result.final_tokens / max(1, c.total_tokens) for c in ok if c.result]
            ),
            peak_sent=max((c.result.peak_tokens_sent for c in ok if c.result), default=0),
            model_calls=sum(c.result.model_calls for c in ok if c.result),
            summarizer_tokens=sum(c.result.summarizer_tokens for c in ok if c.result),
            compactions=sum(len(c.result.events) for c in ok if c.result),
            seconds=sum(c.result.seconds for c in ok if c.result),
            errors=len(cells) - len(ok),
            answered=sum(answers) / len(answers) if answers else None,
            runs=len(cells),
            stale=sum(c.stale()[0] for c in ok),
        )

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON: the pooled rows and each cell's headline numbers."""
        return {
            "files": self.files,
            "strategies": self.strategies,
            "budgets": self.budgets,
            "rows": [
                {
                    **{k: v for k, v in vars(r).items()},
                    "needle_rate": r.needle_rate,
                    "artifact_rate": r.artifact_rate,
                }
                for r in self.rows()
            ],
            "cells": [
                {
                    "file": c.file,
                    "strategy": c.strategy,
                    "budget": c.budget,
                    "budget_tokens": c.budget_tokens,
                    "total_tokens": c.total_tokens,
                    "error": c.error,
                    "final_tokens": c.result.final_tokens if c.result else None,
                    "counts": {k: list(v) for k, v in c.counts().items()},
                    "answered": c.answered,
                }
                for c in self.cells
            ],
        }


CompactorFactory = Callable[[str, int], CompactorLike]
"""(strategy name, budget in tokens) -> a fresh compactor."""
Asker = Callable[[Sequence[Message], Needle], bool]
"""(final context, needle) -> the model answered the needle's question right."""


def evaluate(
    runs: Sequence[tuple[str, Sequence[Message]]],
    strategies: Sequence[str],
    budgets: Sequence[Budget],
    factory: CompactorFactory,
    *,
    tokenizer: Tokenizer | None = None,
    ask: Asker | None = None,
    on_cell: Callable[[EvalCell], None] | None = None,
) -> EvalResult:
    """Replay every run under every (strategy, budget); errors are recorded per cell."""
    cells: list[EvalCell] = []
    for name, messages in runs:
        told, memory = plant_memory(messages, seed=name)
        planted, facts = plant_needles(told, seed=name)
        needles = sorted([*memory, *facts], key=lambda n: n.position)
        total = MessageIndex(planted, tokenizer=tokenizer).total_tokens
        for budget in budgets:
            tokens = budget.resolve(total)
            for strategy in strategies:
                cell = EvalCell(name, strategy, budget.label, tokens, total)
                try:
                    cell.result = replay(
                        planted,
                        factory(strategy, tokens),
                        tokenizer=tokenizer,
                        source=name,
                        strategy=strategy,
                        budget=tokens,
                        needles=needles,
                    )
                    if ask is not None:
                        final = cell.result.final_messages
                        cell.answered = {n.value: ask(final, n) for n in needles}
                except KompaktError as exc:
                    cell.error = f"{type(exc).__name__}: {exc}"
                cells.append(cell)
                if on_cell is not None:
                    on_cell(cell)
    return EvalResult(
        files=[n for n, _ in runs],
        strategies=list(strategies),
        budgets=[b.label for b in budgets],
        cells=cells,
    )
