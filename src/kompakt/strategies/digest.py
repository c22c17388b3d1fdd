"""`ExtractiveDigest`: the strategy that stands a model-free note in for old groups.

The note itself is written by `kompakt.notes` (the digest engine, a leaf module); its
names are re-exported here for code written against 0.1.
"""

from __future__ import annotations

from kompakt._deprecation import renamed_options
from kompakt.errors import ConfigError
from kompakt.notes import (
    SECTIONS,
    Note,
    build_note,
    clamp_tokens,
    digest,
    digest_items,
    rolled_note,
)
from kompakt.strategies._summarizer import SummarizingStrategy
from kompakt.strategies.base import CompactionContext
from kompakt.strategies.fit import ceiling
from kompakt.strategies.span import Span, later_than, previous_of, rendered_tokens
from kompakt.view import View

__all__ = ["SECTIONS", "ExtractiveDigest", "build_note", "clamp_tokens", "digest", "digest_items"]


class ExtractiveDigest(SummarizingStrategy):
    """Replace the older span with the extractive digest: no model, no cost.

    Keeps the newest groups (and everything protected) and stands one
    ``synthetic="summary"`` note in for the rest; a previous note is merged in, its
    standing instructions carried forward verbatim.

    Under a budget (inside `Budgeted`, or with a `TokensBelow` target) the note and
    the recent tail share it: the note may grow to `note_share` of the budget, and
    the tail keeps as many of the newest groups as fit in the rest (at least
    `keep_last_groups`), and what the note leaves of its share when it needs less.
    Without a budget, the newest `keep_last_groups` groups stay and
    the note is at most `max_note_tokens`.

    Args:
        keep_last_groups: newest groups always left as they are.
        max_note_tokens: the note's size limit (under a budget: at least this).
        note_share: share of a budget the note may take (None: `max_note_tokens` only).
        recall_tool: name of a tool that fetches originals, mentioned in the note.

    >>> from kompakt.messages import Message
    >>> from kompakt.index import MessageIndex
    >>> from kompakt.view import View
    >>> from kompakt.strategies.base import CompactionContext
    >>> msgs = [Message.user(f"step {i}: edit src/mod{i}.py " + "and more " * 30)
    ...         for i in range(6)]
    >>> view = View(MessageIndex(msgs))
    >>> ExtractiveDigest(keep_last_groups=2).apply(view, CompactionContext(view))
    True
    >>> [m.synthetic for m in view.render()]
    ['summary', None, None]
    """

    @renamed_options(
        positional=("keep_last", "max_tokens"),
        keep_last="keep_last_groups",
        max_tokens="max_note_tokens",
    )
    def __init__(
        self,
        *,
        keep_last_groups: int = 4,
        max_note_tokens: int = 800,
        note_share: float | None = 0.7,
        recall_tool: str | None = None,
    ) -> None:
        super().__init__(
            keep_last_groups=keep_last_groups,
            max_note_tokens=max_note_tokens,
            recall_tool=recall_tool,
        )
        if note_share is not None and not 0 < note_share < 1:
            raise ConfigError(f"`note_share` must be between 0 and 1, got {note_share!r}")
        self.note_share = note_share

    def apply(self, view: View, context: CompactionContext) -> bool:
        tail = self.tail_groups(view, context)
        span = self.select_span(view, context, keep_last_groups=tail)
        if not span.messages:
            return False
        written = self.first_note(view, context, span)
        if written is not None:
            limit, note = written
            unused = limit - view.index.tokenizer.count_text(note.text)
            cap = ceiling(context) or 0
            # the note needs less than its share: the tail keeps the rest verbatim (a
            # second, shorter digest; under a tenth of the budget it is not worth one)
            wider = self.tail_groups(view, context, extra=unused) if unused > cap // 10 else tail
            if wider > tail:
                span = self.select_span(view, context, keep_last_groups=wider)
                if not span.messages:
                    return False
                written = None
        return self.finish(view, context, span, None, written=written)

    def first_note(
        self, view: View, context: CompactionContext, span: Span
    ) -> tuple[int, Note] | None:
        """Under a budget shared with the tail, the span's note at the limit `finish`
        starts from, ``(limit, note)``: what it leaves unused goes to the tail."""
        if ceiling(context) is None or self.note_share is None:
            return None
        fit = self.note_limit(view, context, span)
        if fit is None:
            return None
        note = rolled_note(
            span.read,
            previous_of(span),
            fit.limit,
            tokenizer=view.index.tokenizer,
            later=later_than(view, span),
        )
        return fit.limit, note

    def tail_groups(self, view: View, context: CompactionContext, *, extra: int = 0) -> int:
        """How many of the newest groups stay as they are: `keep_last_groups` without a
        budget; with one, as many as fit in the share the note leaves (at least that),
        and `extra` tokens more."""
        cap = ceiling(context)
        if cap is None or self.note_share is None:
            return self.kept(context)
        room = cap * (1 - self.note_share) + extra
        kept = used = 0
        for g in range(view.index.group_count - 1, -1, -1):
            if view.is_dropped(g):
                continue
            used += rendered_tokens(view, g)
            if used > room:
                break
            kept += 1
        return max(self.kept(context), kept)

    def summarizer_for(self, context: CompactionContext) -> None:
        return None  # the digest never asks a model, whatever the compaction's summarizer
