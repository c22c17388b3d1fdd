"""How big a note may be: the budget (or target) it must fit, the room once its span
is gone, and a model's text cut to that room at a line boundary."""

from __future__ import annotations

from dataclasses import dataclass

from kompakt.strategies.base import CompactionContext
from kompakt.strategies.span import Span, rendered_tokens
from kompakt.strategies.truncation import holds_summary
from kompakt.tokens import Tokenizer
from kompakt.triggers import TokensBelow
from kompakt.view import View

__all__ = [
    "MIN_NOTE_TOKENS",
    "Fit",
    "ceiling",
    "newest_within",
    "note_fit",
    "room_after_drops",
    "room_for",
    "size_limit",
    "trim_lines",
]

MIN_NOTE_TOKENS = 60
"""The smallest note worth writing: below it the span is dropped (an earlier summary kept)."""


@dataclass(frozen=True)
class Fit:
    """How big a note may be: `limit` tokens of text; `cap` the budget or target it
    must fit (None: no limit); `crowding`: how many of the newest original groups must
    go for it to fit (`Budgeted`'s last resort drops them)."""

    limit: int
    cap: int | None
    crowding: int = 0


def ceiling(context: CompactionContext) -> int | None:
    """The tokens the view must fit: the budget (inside `Budgeted`), else a `TokensBelow`
    target's limit, else None."""
    if context.budget is not None:
        return context.budget
    target = context.target
    return target.limit if isinstance(target, TokensBelow) else None


def newest_within(view: View, room: float) -> int:
    """How many of the newest groups the view still sends fit in `room` tokens, counted
    from the newest back (the tail a note shares a budget with)."""
    kept = used = 0
    for g in range(view.index.group_count - 1, -1, -1):
        if view.is_dropped(g):
            continue
        used += rendered_tokens(view, g)
        if used > room:
            break
        kept += 1
    return kept


def room_after_drops(view: View, span: Span, room: int, need: int) -> tuple[int, int]:
    """Drop, in thought, what `Budgeted`'s last resort drops first (originals outside
    the span, oldest first; never protected groups or summaries) until `need` tokens are
    free: ``(room then, groups that go)``; the room stays below `need` when even that
    is not enough."""
    inside = set(span.all_groups)
    gone = 0
    for g in range(view.index.group_count):
        if room >= need:
            break
        if g in inside or view.is_dropped(g) or view.protected(g) or holds_summary(view, g):
            continue
        room += rendered_tokens(view, g)
        gone += 1
    return room, gone


def trim_lines(text: str, limit: int, tok: Tokenizer) -> str:
    """The longest run of whole first lines of `text` within `limit` tokens, without a
    dangling heading at its end ("" when not even the first line fits)."""
    lines = text.splitlines()
    lo, hi = 0, len(lines)
    while lo < hi:  # the most lines that fit
        mid = (lo + hi + 1) // 2
        if tok.count_text("\n".join(lines[:mid])) <= limit:
            lo = mid
        else:
            hi = mid - 1
    kept = lines[:lo]
    while kept and (not kept[-1].strip() or kept[-1].lstrip().startswith("#")):
        kept.pop()
    return "\n".join(kept)


def size_limit(span_tokens: int, cap: int | None, *, max_tokens: int, share: float | None) -> int:
    """A note's own limit: `max_tokens` (or `share` of the budget `cap` when that is
    more), at most half the span.

    >>> size_limit(1_000, 2_000, max_tokens=100, share=0.1)
    200
    """
    own = max_tokens
    if cap is not None and share is not None:
        own = max(own, int(cap * share))
    return min(own, max(16, span_tokens // 2))


def room_for(view: View, span_tokens: int, cap: int | None, limit: int) -> int:
    """`limit`, at most what the budget `cap` leaves once the span is gone (an estimate
    of the note's header aside)."""
    if cap is not None:
        rest = view.total_tokens - span_tokens
        limit = min(limit, cap - rest - 48)  # the note's header and overhead
    return limit


def note_fit(view: View, span: Span, cap: int, limit: int, header: int) -> Fit | None:
    """How big the note of `span` may be (at most `limit`, besides its `header` tokens)
    so that it fits under `cap`.

    The room is what is left once the span is gone. When that is less than a minimal
    note (`MIN_NOTE_TOKENS`), it is what is left once the newest originals `Budgeted`'s
    last resort drops go too (they give way to the note). None: not even a minimal
    note fits next to the protected core and the summaries.
    """
    need = min(limit, MIN_NOTE_TOKENS)
    left = cap - (view.total_tokens - span.tokens) - header
    if left >= need:
        return Fit(min(limit, left), cap)
    left, gone = room_after_drops(view, span, left, need)
    if left >= need:
        return Fit(min(limit, left), cap, crowding=gone)
    return None
