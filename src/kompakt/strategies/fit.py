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

__all__ = ["MIN_NOTE_TOKENS", "Fit", "ceiling", "room_after_drops", "trim_lines"]

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
