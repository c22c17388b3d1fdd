"""Background compaction: prepare the next compaction while the agent waits on its model.

When the history passes a lower *prepare* threshold, `BackgroundCompactor.prepare`
copies the current view over a frozen copy of the history and compacts that copy in
an asyncio task, so a summarizer's model call overlaps the agent's own model call.
When the real trigger fires, `swap_in` puts the prepared edits on the live view
without a blocking summarizer call. A prepared result is used only if it is still
right: the groups it edits must hold the same originals (ids and digests) and must
show what they showed when it was prepared. Otherwise it is *stale*, dropped, and the
caller compacts afresh: a stale summary is never used.

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
from typing import Any, Literal, TypeAlias

from kompakt.index import MessageIndex
from kompakt.messages import Message
from kompakt.triggers import TriggerLike, as_trigger
from kompakt.view import View

__all__ = ["BackgroundCompactor", "Outcome"]

Outcome: TypeAlias = Literal["used", "stale", "none", "failed"]

CompactFn: TypeAlias = Callable[[View], Awaitable[Any]]
"""Compacts the given view in place (may call a model); its return value is kept."""


@dataclass
class _Prepared:
    task: asyncio.Task[Any]
    snapshot: View
    basis: list[tuple[Message, ...] | None]
    """What each group of the live view showed when the snapshot was taken."""
    started: float


@dataclass
class BackgroundCompactor:
    """Runs `compact` ahead of time on a copy of the view; swaps the result in later.

    Args:
        prepare_at: when to start preparing (a trigger on the live view's metrics).
        compact: an async function compacting a view in place.

    Attributes:
        stats: counts of ``prepared``, ``used``, ``stale`` and ``failed``, and
            ``waited`` (seconds `swap_in` spent waiting for an unfinished task).
    """

    prepare_at: TriggerLike
    compact: CompactFn
    stats: dict[str, float] = field(
        default_factory=lambda: {"prepared": 0, "used": 0, "stale": 0, "failed": 0, "waited": 0.0}
    )
    result: Any = None
    """What `compact` returned for the last prepared result swapped in."""
    _prepared: _Prepared | None = None

    @property
    def pending(self) -> bool:
        """A prepared result (finished or not) is waiting to be swapped in."""
        return self._prepared is not None

    @property
    def ready(self) -> bool:
        """The prepared result is computed."""
        return self._prepared is not None and self._prepared.task.done()

    def prepare(self, view: View, metrics: Any = None) -> bool:
        """Start preparing if the threshold is passed and nothing is prepared yet.

        `metrics` (default: the view) is what the threshold reads (e.g. calibrated).
        Must be called inside a running event loop. Returns True when it started.
        """
        if self._prepared is not None or not as_trigger(self.prepare_at)(metrics or view):
            return False
        frozen = MessageIndex(list(view.index.messages), tokenizer=view.index.tokenizer)
        snapshot = View(frozen)
        basis: list[tuple[Message, ...] | None] = []
        for g in frozen.groups:
            r = view.replacement(g.index)
            basis.append(r)
            if r is not None:
                snapshot.replace(g.index, r)
        task = asyncio.ensure_future(self.compact(snapshot))
        self._prepared = _Prepared(task, snapshot, basis, time.perf_counter())
        self.stats["prepared"] += 1
        return True

    async def swap_in(self, view: View) -> Outcome:
        """Put the prepared edits on `view` if they are still right.

        Waits for the task if it has not finished (the time is added to
        ``stats["waited"]``). Returns "used", "stale" (dropped: compact afresh),
        "failed" (the preparation raised) or "none" (nothing was prepared, or the
        preparation changed nothing).
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
        self.stats["used"] += 1
        return "used"

    def discard(self) -> None:
        """Drop what is prepared (cancelling an unfinished task)."""
        prepared, self._prepared = self._prepared, None
        if prepared is not None and not prepared.task.done():
            prepared.task.cancel()


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
