"""The span a summary stands in for: which groups, what they render, which earlier
summary they absorb, and what the view still sends after them."""

from __future__ import annotations

from dataclasses import dataclass, field

from kompakt.messages import Message
from kompakt.strategies.prompt import strip_header
from kompakt.view import View

__all__ = ["STAND_INS", "Span", "later_than", "previous_of", "rendered_tokens"]

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


def rendered_tokens(view: View, g: int) -> int:
    """What group `g` costs in the view now (its replacement's tokens when replaced)."""
    r = view.replacement(g)
    if r is None:
        return view.index.groups[g].tokens
    return sum(view.index.tokenizer.count_message(m) for m in r)
