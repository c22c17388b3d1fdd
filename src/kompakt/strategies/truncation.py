"""Drop the oldest groups until the target holds."""

from __future__ import annotations

from kompakt.strategies._common import check_count, optional_trigger, should_stop
from kompakt.strategies.base import DEFAULT_MIN_PRESERVED, BaseStrategy, CompactionContext
from kompakt.triggers import TriggerLike
from kompakt.view import View

__all__ = ["Truncation"]


class Truncation(BaseStrategy):
    """Drop the oldest groups, one whole group at a time, until the target holds.

    Use it as the last resort of a chain, or alone when the recent past is all that
    matters and a hard limit must hold. Tool calls and their results go together;
    system, pinned and memory messages, the last user message, a pending call and
    the newest `min_preserved` groups are never dropped. Without a trigger or target
    (its own or the compaction's) it drops everything it may.

    Args:
        min_preserved: newest groups left alone.
        trigger: run only when this fires; stop once it no longer does.
        target: stop once this holds (for hysteresis inside a pipeline).

    >>> from kompakt import MessageIndex, Message, TokensExceed, View
    >>> from kompakt.strategies import CompactionContext
    >>> idx = MessageIndex([Message.user("old " * 50), Message.assistant("ok"),
    ...                     Message.user("new question")])
    >>> view = View(idx)
    >>> Truncation(min_preserved=1, trigger=TokensExceed(40)).apply(view, CompactionContext(view))
    True
    >>> [m.text for m in view.render()]  # a user message must come first: a note says why
    ['[Earlier conversation omitted to fit the context window.]', 'ok', 'new question']
    """

    def __init__(
        self,
        *,
        min_preserved: int = DEFAULT_MIN_PRESERVED,
        trigger: TriggerLike | None = None,
        target: TriggerLike | None = None,
    ) -> None:
        check_count("min_preserved", min_preserved)
        self.min_preserved = min_preserved
        self.trigger = optional_trigger(trigger)
        self.target = optional_trigger(target)

    def apply(self, view: View, context: CompactionContext) -> bool:
        changed = False
        for g in view.candidates(self.min_preserved, originals_only=False):
            if should_stop(self, view, context):
                break
            view.drop(g)
            context.note(groups_dropped=1)
            changed = True
        return changed

    def __repr__(self) -> str:
        return f"Truncation(min_preserved={self.min_preserved}, trigger={self.trigger!r})"
