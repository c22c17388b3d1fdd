"""Drop the oldest groups until the target holds."""

from __future__ import annotations

from kompakt.strategies._common import Stop, check_count, optional_trigger, rendered_tokens
from kompakt.strategies.base import DEFAULT_MIN_PRESERVED, BaseStrategy, CompactionContext
from kompakt.triggers import TriggerLike
from kompakt.view import View

__all__ = ["Truncation"]

SUMMARY_KINDS = frozenset({"summary", "facts"})


class Truncation(BaseStrategy):
    """Drop the oldest groups, one whole group at a time, until the target holds.

    Use it as the last resort of a chain, or alone when the recent past is all that
    matters and a hard limit must hold. Tool calls and their results go together;
    system, pinned and memory messages, the last user message, a pending call and
    the newest `min_preserved` groups are never dropped. Without a trigger or target
    (its own or the compaction's) it drops everything it may.

    A summary (or facts) message already in the view is the cheapest record of what
    went before, so it goes last: original groups and collapsed or clamped notes are
    dropped first, oldest first, and a summary only when nothing else is left.

    Args:
        min_preserved: newest groups left alone.
        trigger: run only when this fires; stop once it no longer does.
        target: stop once this holds (for hysteresis inside a pipeline).
        drop_summaries: with False, summary and facts messages are never dropped
            (`Budgeted`'s first fallback keeps them for its last resort).

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
        drop_summaries: bool = True,
    ) -> None:
        check_count("min_preserved", min_preserved)
        self.min_preserved = min_preserved
        self.trigger = optional_trigger(trigger)
        self.target = optional_trigger(target)
        self.drop_summaries = drop_summaries

    def apply(self, view: View, context: CompactionContext) -> bool:
        stop = Stop(self, view, context)
        summaries: list[int] = []
        dropped: list[int] = []  # dropped from the view once the target may hold
        done = 0
        stopped = False
        groups = view.index.groups
        # nothing replaced yet: every group the walk meets is an original (the loop drops
        # only groups it has passed)
        fresh = not view.changed
        for g in view.candidates(self.preserved(context), originals_only=False):
            if stop.estimate <= stop.quiet_above:  # it may hold: ask, the drops made
                view.drop_all(dropped)
                done += len(dropped)
                dropped.clear()
                if stop():
                    stopped = True
                    break
            if fresh or view.is_original(g):  # the common case
                group = groups[g]
                if group.kind == "summary":
                    summaries.append(g)
                    continue
                stop.estimate -= group.tokens  # stop.removed, inlined
            elif holds_summary(view, g):
                summaries.append(g)
                continue
            else:
                stop.removed(rendered_tokens(view, g))
            dropped.append(g)
        view.drop_all(dropped)
        done += len(dropped)
        if not stopped and self.drop_summaries:
            for g in summaries:
                if stop():
                    break
                stop.removed(rendered_tokens(view, g))
                view.drop(g)
                done += 1
        if done:
            context.note(groups_dropped=done)
        return done > 0

    def __repr__(self) -> str:
        return f"Truncation(min_preserved={self.min_preserved}, trigger={self.trigger!r})"


def holds_summary(view: View, group: int) -> bool:
    """The group sends a summary or facts message (an original one or one a strategy placed)."""
    if view.index.groups[group].kind == "summary":
        return True
    r = view.replacement(group)
    return r is not None and any(m.synthetic in SUMMARY_KINDS for m in r)
