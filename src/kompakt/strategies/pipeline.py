"""Several strategies in order, gentlest first."""

from __future__ import annotations

from collections.abc import Iterable

from kompakt.errors import ConfigError
from kompakt.strategies._common import COMPOSITE, run_strategy_sync
from kompakt.strategies.base import BaseStrategy, CompactionContext, StrategyLike, run_strategy
from kompakt.view import View

__all__ = ["Pipeline"]


class Pipeline(BaseStrategy):
    """Run `strategies` in order; each runs only when its own trigger fires.

    Use it for layered compaction without a hard budget: put the gentlest first
    (collapse old tool results at 50k tokens), the harsher later (summarize at 80k,
    truncate at 120k). The pipeline stops early once the compaction's target holds.
    Each strategy records its own `Step`. For a hard token budget use `Budgeted`.

    >>> from kompakt import TokensExceed
    >>> from kompakt.strategies import CollapseToolResults, Truncation
    >>> p = Pipeline([CollapseToolResults(trigger=TokensExceed(50_000)),
    ...               Truncation(trigger=TokensExceed(120_000))])
    >>> [type(s).__name__ for s in p.strategies]
    ['CollapseToolResults', 'Truncation']
    """

    def __init__(self, strategies: Iterable[StrategyLike]) -> None:
        self.strategies = list(strategies)
        if not self.strategies:
            raise ConfigError("Pipeline needs at least one strategy")
        self.trigger = None

    def apply(self, view: View, context: CompactionContext) -> bool:
        context.note(detail=COMPOSITE)
        changed = False
        for s in self.strategies:
            if context.done():
                break
            changed |= run_strategy_sync(s, view, context).changed
        return changed

    async def apply_async(self, view: View, context: CompactionContext) -> bool:
        context.note(detail=COMPOSITE)
        changed = False
        for s in self.strategies:
            if context.done():
                break
            changed |= (await run_strategy(s, view, context)).changed
        return changed

    def __repr__(self) -> str:
        return f"Pipeline({self.strategies!r})"
