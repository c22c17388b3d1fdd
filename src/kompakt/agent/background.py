"""Background compaction: prepare the next compaction while the agent waits on its model.

Two layers. `BackgroundCompactor` is the mechanism: `prepare` copies the current view
over a frozen copy of the history and compacts that copy in an asyncio task, so a
summarizer's model call overlaps the agent's own; `swap_in` puts the prepared edits on
the live view. A prepared result is used only if it is still right: the groups it
edits must hold the same originals (ids and digests) and must show what they showed
when it was prepared. Otherwise it is *stale*, dropped, and the caller compacts
afresh: a stale summary is never used.

`BackgroundCompaction` is the policy, around a `Compactor`, for any loop that calls a
model (the `Agent`'s, a framework adapter's, the proxy's): it times each preparation
from the measured `Cadence` so the summary is ready when the trigger fires, asks it for
the span a compaction *at the trigger* would summarize, closes a gap left at swap-in
without a model (`close_gap`), explains a target the options make unreachable, and
cancels what is left unfinished.

>>> import asyncio
>>> from kompakt.index import MessageIndex
>>> from kompakt.messages import Message
>>> from kompakt.view import View
>>> async def drop_oldest(view: View) -> None:
...     view.drop(next(view.candidates(min_preserved=1)))
>>> async def main() -> str:
...     live = View(MessageIndex([Message.user(t) for t in "abc"]))
...     bg = BackgroundCompactor(lambda m: m.message_count >= 3, drop_oldest)
...     bg.prepare(live)
...     outcome = await bg.swap_in(live)
...     return f"{outcome} {[m.text for m in live.render()]}"
>>> asyncio.run(main())
"used ['b', 'c']"
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from kompakt.agent.cadence import Cadence
from kompakt.agent.calibration import Calibrated, Shifted
from kompakt.agent.target import close_gap
from kompakt.compactor import CompactionEvent
from kompakt.index import MessageIndex
from kompakt.messages import Message
from kompakt.models.base import describe_error
from kompakt.shortfall import explain_shortfall, kept_by
from kompakt.strategies.base import (
    NO_OVERRIDES,
    Overrides,
    StrategyLike,
    own_trigger,
)
from kompakt.triggers import ContextFraction, TokensExceed, Trigger, TriggerLike, as_trigger
from kompakt.view import View

if TYPE_CHECKING:
    from kompakt.compactor import Compactor
    from kompakt.models.base import ChatModel

__all__ = ["BackgroundCompaction", "BackgroundCompactor", "Outcome", "run_compaction"]

Outcome: TypeAlias = Literal["used", "stale", "none", "failed"]

CompactFn: TypeAlias = Callable[[View], Awaitable[Any]]
"""Compacts the given view in place (may call a model); its return value is kept."""

PREPARED = "prepared in the background"
"""`CompactionEvent.reason` of a compaction swapped in from a preparation."""


@dataclass
class _Prepared:
    task: asyncio.Task[Any]
    snapshot: View
    basis: list[tuple[Message, ...] | None]
    """What each group of the live view showed when the snapshot was taken."""
    started: float
    seconds: float = 0.0
    """How long the task took to compute (set when it is done)."""


@dataclass
class BackgroundCompactor:
    """Runs `compact` ahead of time on a copy of the view; swaps the result in later.

    Args:
        prepare_at: when to start preparing (a trigger on the live view's metrics);
            None: whenever `prepare` is called (the caller decides).
        compact: an async function compacting a view in place.

    Attributes:
        stats: counts of ``prepared``, ``used``, ``stale``, ``failed`` and
            ``cancelled``, and ``waited`` (seconds `swap_in` spent waiting for an
            unfinished task).
    """

    prepare_at: TriggerLike | None
    compact: CompactFn
    stats: dict[str, float] = field(
        default_factory=lambda: {
            "prepared": 0,
            "used": 0,
            "stale": 0,
            "failed": 0,
            "cancelled": 0,
            "waited": 0.0,
        }
    )
    result: Any = None
    """What `compact` returned for the last prepared result swapped in."""
    seconds: float = 0.0
    """How long the last prepared result swapped in took to compute."""
    error: BaseException | None = None
    """What the last failed preparation raised."""
    _prepared: _Prepared | None = None

    @property
    def pending(self) -> bool:
        """A prepared result (finished or not) is waiting to be swapped in."""
        return self._prepared is not None

    @property
    def ready(self) -> bool:
        """The prepared result is computed."""
        return self._prepared is not None and self._prepared.task.done()

    def prepare(self, view: View, metrics: Any = None, *, compact: CompactFn | None = None) -> bool:
        """Start preparing if the threshold is passed and nothing is prepared yet.

        `metrics` (default: the view) is what the threshold reads (e.g. calibrated);
        `compact` replaces the compactor's function for this preparation. Must be
        called inside a running event loop. Returns True when it started.
        """
        if self._prepared is not None:
            return False
        if self.prepare_at is not None and not as_trigger(self.prepare_at)(metrics or view):
            return False
        frozen = MessageIndex(list(view.index.messages), tokenizer=view.index.tokenizer)
        snapshot = View(frozen)
        basis: list[tuple[Message, ...] | None] = []
        for g in frozen.groups:
            r = view.replacement(g.index)
            basis.append(r)
            if r is not None:
                snapshot.replace(g.index, r)
        task = asyncio.ensure_future((compact or self.compact)(snapshot))
        prepared = _Prepared(task, snapshot, basis, time.perf_counter())

        def finished(_: asyncio.Task[Any]) -> None:
            prepared.seconds = time.perf_counter() - prepared.started

        task.add_done_callback(finished)
        self._prepared = prepared
        self.stats["prepared"] += 1
        return True

    async def swap_in(self, view: View) -> Outcome:
        """Put the prepared edits on `view` if they are still right.

        Waits for the task if it has not finished (the time is added to
        ``stats["waited"]``). Returns "used", "stale" (dropped: compact afresh),
        "failed" (the preparation raised: `error`) or "none" (nothing was prepared, or
        the preparation changed nothing).
        """
        prepared, self._prepared = self._prepared, None
        if prepared is None:
            return "none"
        if not prepared.task.done():
            t0 = time.perf_counter()
            await asyncio.wait({prepared.task})
            self.stats["waited"] += time.perf_counter() - t0
        if prepared.task.cancelled() or prepared.task.exception() is not None:
            self.stats["failed"] += 1
            self.error = (
                asyncio.CancelledError() if prepared.task.cancelled() else prepared.task.exception()
            )
            return "failed"
        edits = _edits(prepared)
        if not edits:
            return "none"
        if not _still_valid(view, prepared, edits):
            self.stats["stale"] += 1
            return "stale"
        for g, r in edits.items():
            if r is None:
                view.restore(g)
            else:
                view.replace(g, r)
        self.result = prepared.task.result()
        self.seconds = prepared.seconds
        self.stats["used"] += 1
        return "used"

    def cancel(self) -> bool:
        """Cancel an unfinished preparation (a finished one stays, to be swapped in);
        whether one was cancelled."""
        prepared = self._prepared
        if prepared is None or prepared.task.done():
            return False
        self._prepared = None
        prepared.task.cancel()
        self.stats["cancelled"] += 1
        return True

    def discard(self) -> None:
        """Drop what is prepared (cancelling an unfinished task)."""
        if not self.cancel():
            self._prepared = None


class BackgroundCompaction:
    """A compactor's next compaction, prepared while the loop waits on its model and
    swapped in when the trigger fires.

    This is what ``Agent(background=True)`` runs; a loop that is not the Agent's (a
    framework adapter's async path, the proxy) calls `checkpoint` before each model
    call instead, and `cancel` when it ends.

    * *When*: a preparation starts as late as it can and still be ready at the
      trigger, from the measured `cadence` (seconds and tokens per step, seconds per
      summarizer call); `prepare_at` (a trigger, or a token count) overrides that.
      Timing needs a token trigger (`TokensExceed`, `ContextFraction`, a `Budgeted`'s).
    * *What*: the span a compaction at the trigger would summarize. The groups that
      will arrive meanwhile are counted in what the strategy keeps (its `keep_last_groups` and
      `min_preserved` are lowered by the steps expected until the trigger, through
      `Overrides.fewer_kept`; the strategy itself is not changed), so after the
      swap the newest groups kept are what a foreground compaction would keep.
    * *Swap-in*: groups that arrived since stay raw, as many as the strategy keeps;
      older ones (a preparation that had to start further ahead) get one digest,
      model-free (`close_gap`), so the view ends where a compaction at the trigger
      would leave it, and the trigger does not fire again sooner and pay for another
      summary. A model-free strategy is run again to its target instead. A target
      that `keep_last_groups` or `min_preserved` makes unreachable is explained on the event
      (`shortfall`).

    Args:
        compactor: trigger, strategy, target and summarizer.
        prepare_at: start preparing when this fires instead (an int is a token count).
        cadence: the measurements to time preparations by (default: a new one).

    >>> import asyncio
    >>> from kompakt import Compactor, Message, MessageIndex, TokensBelow, TokensExceed
    >>> from kompakt.strategies import ExtractiveDigest
    >>> async def loop() -> list[str]:
    ...     compactor = Compactor(TokensExceed(600), strategy=ExtractiveDigest(keep_last_groups=2),
    ...                           target=TokensBelow(400))
    ...     background = BackgroundCompaction(compactor, prepare_at=400)
    ...     index, reasons = MessageIndex([Message.user("task")]), []
    ...     for i in range(25):
    ...         view, event = await background.checkpoint(index)   # before each model call
    ...         if event is not None:
    ...             reasons.append(event.reason)
    ...         index.append(Message.assistant(f"step {i}: wrote src/m{i}.py " + "ok " * 60))
    ...     background.cancel()
    ...     return reasons
    >>> asyncio.run(loop())
    ['prepared in the background', 'prepared in the background']
    """

    def __init__(
        self,
        compactor: Compactor,
        *,
        prepare_at: TriggerLike | int | None = None,
        cadence: Cadence | None = None,
    ) -> None:
        self.compactor = compactor
        self.prepare_at: TriggerLike | None = (
            TokensExceed(prepare_at) if isinstance(prepare_at, int) else prepare_at
        )
        per_call = getattr(compactor.strategy, "max_input_tokens", None)
        self.cadence = cadence or Cadence(
            tokens_per_call=per_call if isinstance(per_call, int) else 8_000
        )
        self.keep, self.keep_option = kept_by(compactor.strategy, compactor.overrides)
        self.failure: str | None = None
        """Why the last preparation could not be used, when it failed."""
        self._compactor = BackgroundCompactor(None, _nothing)
        self._last: tuple[float, int] | None = None

    # -- state -------------------------------------------------------------------------

    @property
    def stats(self) -> dict[str, float]:
        """Counts of ``prepared``, ``used``, ``stale``, ``failed``, ``cancelled``;
        ``waited``: seconds swap-ins spent waiting for an unfinished preparation."""
        return self._compactor.stats

    @property
    def pending(self) -> bool:
        """A preparation (finished or not) waits to be swapped in."""
        return self._compactor.pending

    @property
    def ready(self) -> bool:
        """The pending preparation is computed."""
        return self._compactor.ready

    @property
    def limit(self) -> int | None:
        """The token count the trigger fires above (None: not a token trigger)."""
        for t in (self.compactor.trigger, own_trigger(self.compactor.strategy)):
            if isinstance(t, (TokensExceed, ContextFraction)):
                return t.limit
        return None

    def cancel(self) -> bool:
        """Cancel an unfinished preparation (its summary is never used, nor billed on
        an event); a finished one is kept for the next checkpoint. Whether one was
        cancelled. Call it when the loop ends, or its event loop does."""
        self._last = None
        return self._compactor.cancel()

    def discard(self) -> None:
        """Drop the pending preparation, finished or not (the history changed under it)."""
        self._compactor.discard()

    # -- the steps of a checkpoint ------------------------------------------------------

    def observe(self, view: View) -> None:
        """Note a checkpoint: the step since the previous one (its seconds, the tokens
        the history grew by) goes into the cadence."""
        now, tokens = time.perf_counter(), view.index.total_tokens
        if self._last is not None:
            then, before = self._last
            self.cadence.step(seconds=now - then, tokens=tokens - before)
        self._last = (now, tokens)

    def pause(self) -> None:
        """The loop stops for a while (a run ended): the wait is not a step."""
        self._last = None

    def due(self, view: View, *, offset: int = 0) -> bool:
        """A preparation should start now (`offset` calibrates the view's tokens)."""
        tokens = view.total_tokens + offset
        if self.prepare_at is not None:
            return bool(as_trigger(self.prepare_at)(Calibrated(view, offset)))
        limit = self.limit
        if limit is None or tokens > limit:
            return False
        return self.cadence.due(tokens=tokens, limit=limit, span_tokens=self._span(tokens, limit))

    def prepare(self, view: View, *, offset: int = 0) -> bool:
        """Start preparing the compaction the trigger will ask for, when it is due;
        whether one started. Must be called inside a running event loop, last in a
        checkpoint: the next step is timed from here (a compaction that blocked the
        checkpoint is not part of the loop's pace)."""
        if self._last is not None:
            self._last = (time.perf_counter(), self._last[1])
        if self._compactor.pending or not self.due(view, offset=offset):
            return False
        tokens = view.total_tokens + offset
        limit = self.limit
        steps = self.cadence.steps_to(tokens, limit) if limit is not None else None
        growth = self.cadence.step_tokens
        if steps is not None and growth:
            headroom = int(steps * growth)
        else:  # no measurements (prepare_at given): one step past the trigger
            steps = 1
            headroom = max(0, (limit or tokens) - tokens)
        return self._compactor.prepare(view, compact=self._at_trigger(steps, headroom, offset))

    async def swap_in(self, view: View, *, offset: int = 0) -> CompactionEvent | None:
        """Put the prepared compaction on `view` (waiting for it if it is still
        running), close a gap left to the target without a model, and say what
        happened; None when nothing usable was prepared (`failure` says why when it
        failed: compact in the foreground then)."""
        event = CompactionEvent.before(view, PREPARED)
        t0 = time.perf_counter()
        outcome = await self._compactor.swap_in(view)
        waited = time.perf_counter() - t0
        self.failure = None
        if outcome == "failed":
            error = self._compactor.error
            why = describe_error(error) if error is not None else "cancelled"
            self.failure = f"background preparation failed ({why}); compacted in the foreground"
        if outcome != "used":
            return None
        prepared = self._compactor.result
        steps = list(prepared.steps) if isinstance(prepared, CompactionEvent) else []
        calls = sum(s.model_calls for s in steps)
        self.cadence.summary(seconds=self._compactor.seconds, calls=calls)
        target = Shifted(self.compactor.target, offset)
        if calls:  # a summarizer's work: never fold it into a digest, close the rest
            gap = close_gap(view, keep=self.keep)
            if gap is not None:
                steps.append(gap)
        elif not target(view):  # a model-free strategy: run it again, it costs nothing
            again = await self.compactor.run_async(
                view,
                target=target,
                overrides=self.compactor.overrides.shifted(offset),
                reason=PREPARED,
                check_trigger=False,
                rehydrate=False,
                summarizer=None,
            )
            steps.extend(again.steps)
        event.finish(view, steps, seconds=waited)
        event.shortfall = self.explain(view, offset=offset)
        return event

    def explain(self, view: View, *, offset: int = 0) -> str | None:
        """Why the compactor's target does not hold on `view` (see `explain_shortfall`)."""
        return explain_shortfall(
            view,
            keep=self.keep,
            option=self.keep_option,
            target=self.compactor.target,
            offset=offset,
        )

    def compacted(self, event: CompactionEvent) -> None:
        """Note a compaction made in the foreground: its summarizer calls time the
        next preparation, and a preparation that failed is recorded on it."""
        self.cadence.summary(seconds=event.seconds, calls=event.model_calls)
        if self.failure is not None:
            event.fallbacks.append(self.failure)
            self.failure = None

    # -- a loop that is not the Agent's -------------------------------------------------

    async def checkpoint(self, index: MessageIndex) -> tuple[View, CompactionEvent | None]:
        """Call before each model call with the history: the compactor's view to
        send, and the compaction made now (None: none was needed).

        Swaps a prepared compaction in when the trigger fires, compacts in the
        foreground when nothing usable was prepared, then starts the next
        preparation when it is due.
        """
        view = self.compactor.view_for(index)
        self.observe(view)
        event: CompactionEvent | None = None
        if self.compactor.check(view):
            if self.pending:
                event = await self.swap_in(view)
            if self.compactor.check(view):
                view, event = await self.compactor.compact_async(index)  # explains a shortfall
                self.compacted(event)
        self.prepare(view)
        return view, event

    # -- inside -------------------------------------------------------------------------

    def _span(self, tokens: int, limit: int) -> int:
        """Tokens a preparation started now would summarize, roughly: what the view
        holds but the newest groups still kept when the trigger fires."""
        growth = self.cadence.step_tokens or 0.0
        left = self.cadence.steps_to(tokens, limit) or 0
        return max(int(growth), int(tokens - max(0, self.keep - left) * growth))

    def _at_trigger(self, steps: int, headroom: int, offset: int) -> CompactFn:
        """Compact a snapshot as a compaction at the trigger would: the `steps` groups
        expected meanwhile count among those kept, and the target sits `headroom`
        tokens lower. Taken now: the coroutine runs later, when the figures moved."""
        compactor = self.compactor
        shift = offset + headroom
        overrides = compactor.overrides.shifted(shift).fewer(steps)
        stop = Shifted(compactor.target, shift)

        async def compact(snapshot: View) -> CompactionEvent:
            return await compactor.run_async(
                snapshot,
                target=stop,
                overrides=overrides,
                reason=PREPARED,
                check_trigger=False,
                rehydrate=False,
            )

        return compact


async def run_compaction(
    view: View,
    strategy: StrategyLike,
    stop: Trigger,
    summarizer: ChatModel | None,
    reason: str,
    check_trigger: bool = False,
    *,
    overrides: Overrides = NO_OVERRIDES,
) -> CompactionEvent:
    """Run `strategy` on `view` in place until `stop`, its options changed by
    `overrides` for this run; what happened as an event (`Compactor.run_async` with
    this strategy and summarizer, no rehydration)."""
    from kompakt.compactor import Compactor

    return await Compactor(strategy=strategy).run_async(
        view,
        target=stop,
        overrides=overrides,
        reason=reason,
        check_trigger=check_trigger,
        rehydrate=False,
        summarizer=summarizer,
    )


async def _nothing(view: View) -> None:
    """`BackgroundCompaction` gives each preparation its own function."""


def _edits(p: _Prepared) -> dict[int, tuple[Message, ...] | None]:
    """Groups whose rendering the preparation changed, and what they show now."""
    out: dict[int, tuple[Message, ...] | None] = {}
    for g in p.snapshot.index.groups:
        r = p.snapshot.replacement(g.index)
        if r != p.basis[g.index]:
            out[g.index] = r
    return out


def _still_valid(view: View, p: _Prepared, edits: dict[int, tuple[Message, ...] | None]) -> bool:
    """The live view still holds, for every edited group, the same originals showing the
    same thing as when the snapshot was taken (the span the summary covers did not change)."""
    live, frozen = view.index, p.snapshot.index
    if live.group_count < frozen.group_count:
        return False
    for g in edits:
        a, b = live.groups[g], frozen.groups[g]
        if (a.start, a.end, a.kind) != (b.start, b.end, b.kind):
            return False
        for pos in range(a.start, a.end):
            x, y = live.messages[pos], frozen.messages[pos]
            if x.id != y.id or x.digest != y.digest:
                return False
        if view.replacement(g) != p.basis[g]:
            return False
    for m in (m for r in edits.values() if r for m in r):
        for mid in m.covers:
            at = live.position(mid)
            if at is None or live.messages[at].digest != frozen.messages[at].digest:
                return False
    return True
