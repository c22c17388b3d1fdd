"""The span a summary stands in for: which groups, what they render, which earlier
summary they absorb, and what the view still sends after them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from kompakt.messages import Message
from kompakt.notes import is_note
from kompakt.strategies._common import rendered_tokens
from kompakt.summarizers.prompt import strip_header
from kompakt.view import View

__all__ = [
    "STAND_INS",
    "Span",
    "later_than",
    "originals",
    "previous_of",
    "rendered_tokens",
    "select_span",
    "span_of",
]

STAND_INS = frozenset({"collapsed", "clamped"})
"""Kinds of short note that stand in for a group's originals (the digest reads those)."""


@dataclass
class Span:
    """The groups a summary will stand in for."""

    groups: list[int] = field(default_factory=list)
    """Groups whose current rendering is summarized (new groups and earlier summaries)."""
    absorbed: list[int] = field(default_factory=list)
    """Already-dropped groups an earlier summary covered (kept for provenance)."""
    previous: list[Message] = field(default_factory=list)
    """Earlier summaries inside the span."""
    messages: list[Message] = field(default_factory=list)
    """What the span renders now, earlier summaries left out."""
    read: list[Message] = field(default_factory=list)
    """What the extractive digest reads: `messages`, with the originals in place of the
    short notes that stand in for them (a collapsed or clamped group), so a value a
    tool printed can still reach the note."""
    tokens: int = 0
    """Tokens the span costs in the view now."""

    @property
    def all_groups(self) -> list[int]:
        return sorted({*self.groups, *self.absorbed})


def previous_of(span: Span) -> str:
    """The text of the earlier summaries in the span, headers left out."""
    return "\n\n".join(strip_header(m.text) for m in span.previous)


def later_than(view: View, span: Span) -> list[Message]:
    """What the view still sends after the span: statements there may update the span's."""
    if not span.groups:
        return []
    last = max(span.groups)
    out: list[Message] = []
    for g in range(last + 1, view.index.group_count):
        out.extend(view.rendered(g))
    return out


def select_span(view: View, keep: int) -> Span:
    """Every group that may be summarized with the newest `keep` left alone, oldest first
    (earlier summaries included)."""
    return span_of(view, list(view.candidates(keep, originals_only=False)))


def span_of(view: View, groups: Sequence[int]) -> Span:
    """The span of `groups`: a protected (memory) note among them stays out; an earlier
    summary is taken in, with the dropped groups it covered."""
    span = Span()
    idx = view.index
    for g in groups:
        rendered = view.rendered(g)
        if any(m.is_protected for m in rendered):  # a memory (facts) note stays
            continue
        span.groups.append(g)
        span.tokens += rendered_tokens(view, g)
        stand_in = any(m.synthetic in STAND_INS for m in rendered)
        for m in rendered:
            if m.synthetic == "summary" or (idx.groups[g].kind == "summary" and is_note(m)):
                span.previous.append(m)
                for mid in m.covers:
                    pos = idx.position(mid)
                    if pos is not None and view.is_dropped(idx.group_of(pos).index):
                        span.absorbed.append(idx.group_of(pos).index)
            else:
                span.messages.append(m)
                if not stand_in:
                    span.read.append(m)
        if stand_in:  # the digest reads what the short note stands in for
            span.read.extend(idx.group_messages(g))
    return span


def originals(view: View, span: Span) -> list[Message]:
    """The original messages of everything the span stands for (non-rolling input)."""
    out: list[Message] = []
    for g in span.all_groups:
        out.extend(m for m in view.index.group_messages(g) if m.synthetic != "summary")
    return out
