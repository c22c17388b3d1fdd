"""The agent's compaction checkpoints: when to compact, with what, and what follows.

A checkpoint runs before each model call (after the tools of the previous step ran):
it swaps in a compaction prepared in the background, or compacts in the foreground when
the compactor's trigger fires on calibrated metrics (or the model asked, with the
``compact_context`` tool); then the fresh tool results come back, recall notes and the
rehydration are added, and the next preparation starts. With ``hook="after_run"`` the
compaction happens at the end of a run instead, and is recorded in the store.

`Checkpoints` is the half of `Agent` that does this; the loop, the tools and the
history are in `kompakt.agent.agent`.
"""

from __future__ import annotations

import logging
from typing import Literal, TypeAlias

from kompakt.agent.background import BackgroundCompaction
from kompakt.agent.calibration import Calibrated, Shifted
from kompakt.agent.fresh import keep_fresh_results
from kompakt.agent.recall import add_recall_notes
from kompakt.agent.result import RunResult
from kompakt.compactor import CompactionEvent, Compactor
from kompakt.errors import BudgetImpossible
from kompakt.shortfall import explain_shortfall
from kompakt.store.base import HistoryStore
from kompakt.store.records import CompactionRecord
from kompakt.strategies._common import _token_limit
from kompakt.strategies.base import (
    NO_OVERRIDES,
    CompactionContext,
    Overrides,
    StrategyLike,
    own_trigger,
    token_budget_of,
)
from kompakt.triggers import TokensBelow, Trigger
from kompakt.view import View

__all__ = ["Checkpoints", "Hook"]

log = logging.getLogger("kompakt.agent")

Hook: TypeAlias = Literal["before_model", "after_run", "both"]
"""What compaction touches: what is sent (``before_model``), what is stored at the end
of a run (``after_run``), or both."""


class Checkpoints:
    """Compaction checkpoints for an agent loop (the base of `Agent`, which sets the
    attributes below and provides `_load` and `_warn`)."""

    compactor: Compactor | None
    background: BackgroundCompaction | None
    store: HistoryStore
    session: str
    hook: Hook
    context_window: int | None
    _view: View | None
    _offset: int
    _keep: tuple[int, str]
    _explained: bool
    _recall: bool
    _dirty: bool
    _compact_requested: bool

    def _load(self) -> View:  # pragma: no cover - the agent's
        raise NotImplementedError

    def _warn(self, text: str) -> None:  # pragma: no cover - the agent's
        raise NotImplementedError

    async def _checkpoint(self, result: RunResult) -> None:
        """Before a model call: swap in what was prepared, compact when due, prepare next."""
        if self.compactor is None:
            return
        view = self._load()
        background = self.background
        if background is not None:
            background.observe(view)
        forced, self._compact_requested = self._compact_requested, False
        if not forced and self.hook == "after_run":
            return
        fires = forced or self._fires()
        if fires and background is not None and background.pending:
            event = await background.swap_in(view, offset=self._offset)
            if event is not None:
                self._after_compaction(view, self._budget(self._calibrated()))
                event.tokens_after, event.messages_after = view.total_tokens, view.message_count
                self._explain(event)
                log.info("session %s: %s", self.session, event.summary())
                result.compactions.append(event)
                fires = forced or self._fires()
            else:
                log.info("session %s: nothing usable was prepared; compacting afresh", self.session)
        if fires:
            # the compactor's budget and target leave room for its rehydration
            overrides, target = self.compactor.with_room()
            within = None
            if forced:
                stop: Trigger = TokensBelow(view.total_tokens // 2)
                reason = "requested by the model (compact_context)"
            else:
                stop = Shifted(target, self._offset)
                reason = (
                    f"{self.compactor.trigger!r} fired at {self._metrics().total_tokens:,} tokens"
                )
                within = self._rehydrate_within()
            try:
                event = await self._compact(
                    self.compactor,
                    stop,
                    reason=reason,
                    check_trigger=False,
                    rehydrate_within=within,
                    overrides=overrides.shifted(self._offset),
                )
            except BudgetImpossible as e:  # the request may still go through: let it try
                self._warn(f"compaction could not reach its budget: {e}")
            else:
                if background is not None:
                    background.compacted(event)
                if not forced:
                    self._explain(event)
                result.compactions.append(event)
        if background is not None:
            background.prepare(self._load(), offset=self._offset)

    def _explain(self, event: CompactionEvent) -> None:
        """Record on `event` why the target was not reached; warn the first time."""
        assert self.compactor is not None
        keep, option = self._keep
        event.shortfall = explain_shortfall(
            self._load(),
            keep=keep,
            option=option,
            target=self.compactor.target,
            offset=self._offset,
            rehydrate=self.compactor.rehydrate is not None,
        )
        if event.shortfall and not self._explained:
            self._explained = True
            self._warn(event.shortfall)

    async def _compact(
        self,
        driver: Compactor,
        stop: Trigger,
        *,
        reason: str,
        check_trigger: bool,
        rehydrate_within: int | None = None,
        overrides: Overrides = NO_OVERRIDES,
    ) -> CompactionEvent:
        """Run `driver` on a copy of the view until `stop`; the copy is then the view.

        The rehydration is the agent's own: after the fresh tool results are back."""
        work = self._load().copy()
        event = await driver.run_async(
            work,
            target=stop,
            overrides=overrides,
            reason=reason,
            check_trigger=check_trigger,
            rehydrate=False,
        )
        self._view = work
        self._after_compaction(work, self._budget(overrides, driver.strategy), rehydrate_within)
        event.tokens_after, event.messages_after = work.total_tokens, work.message_count
        log.info("session %s: %s", self.session, event.summary())
        return event

    def _driver(self, strategy: StrategyLike) -> Compactor:
        """A compactor running `strategy` with the agent's summarizer (`compact_now` with
        a strategy of its own, an overflow's retry)."""
        summarizer = self.compactor.summarizer if self.compactor else None
        return Compactor(strategy=strategy, summarizer=summarizer)

    def _after_compaction(
        self, view: View, budget: int | None, rehydrate_within: int | None = None
    ) -> None:
        self._dirty = True
        if self._recall:
            add_recall_notes(view)
        # the fresh tool results always reach the model: clamped copies stay (restoring
        # them would undo the clamp); dropped or collapsed ones come back, within budget
        warning = keep_fresh_results(view, budget)
        if warning is not None:
            self._warn(warning)
        rehydrate = self.compactor.rehydrate if self.compactor is not None else None
        if rehydrate is not None:  # files, plan and pinned memory back, within the budget
            within = rehydrate_within if rehydrate_within is not None else budget
            rehydrate.apply(view, CompactionContext(view, budget=within))

    def _rehydrate_within(self) -> int | None:
        """What the compactor's own budget and token target allow, calibrated: the room
        `Compactor.with_room` left is the rehydration's."""
        assert self.compactor is not None
        limits = [self._budget(self._calibrated())]
        target = _token_limit(self.compactor.target)
        if target is not None:
            limits.append(target - self._offset)
        known = [x for x in limits if x is not None]
        return max(1, min(known)) if known else None

    def _calibrated(self) -> Overrides:
        """The compactor's overrides with its budget calibrated to the provider's count."""
        assert self.compactor is not None
        return self.compactor.overrides.shifted(self._offset)

    def _budget(self, overrides: Overrides, strategy: StrategyLike | None = None) -> int | None:
        """Estimated tokens the view must fit in: the token budget of `strategy` (default:
        the compactor's) under `overrides`, else the context window, calibrated."""
        if strategy is None and self.compactor is not None:
            strategy = self.compactor.strategy
        budget = token_budget_of(strategy)
        if budget is not None:
            return max(1, overrides.budget(budget))
        return max(1, self.context_window - self._offset) if self.context_window else None

    async def _after_run(self, result: RunResult) -> None:
        """At the end of a run (``after_run``): compact when due, record the view."""
        if self.compactor is not None and self._fires():
            overrides, target = self.compactor.with_room()
            stop = Shifted(target, self._offset)
            reason = f"after the run: {self.compactor.trigger!r} fired"
            event = await self._compact(
                self.compactor,
                stop,
                reason=reason,
                check_trigger=False,
                rehydrate_within=self._rehydrate_within(),
                overrides=overrides.shifted(self._offset),
            )
            self._explain(event)
            result.compactions.append(event)
        if self._dirty:
            last = result.compactions[-1] if result.compactions else None
            self._record(last)

    def _record(self, event: CompactionEvent | None) -> None:
        self.store.record_compaction(self.session, CompactionRecord.from_view(self._load(), event))
        self._dirty = False

    def _fires(self) -> bool:
        """The compactor's trigger and the strategy's own, on calibrated metrics."""
        assert self.compactor is not None
        metrics = self._metrics()
        own = own_trigger(self.compactor.strategy)
        return self.compactor.trigger(metrics) and (own is None or bool(own(metrics)))

    def _metrics(self) -> Calibrated:
        return Calibrated(self._load(), self._offset)

    def _request_compaction(self) -> None:
        self._compact_requested = True
