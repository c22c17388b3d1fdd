"""Keep only the last N turns or the last N groups."""

from __future__ import annotations

from kompakt.errors import ConfigError
from kompakt.strategies._common import check_count, optional_trigger, should_stop
from kompakt.strategies.base import BaseStrategy, CompactionContext
from kompakt.triggers import TriggerLike
from kompakt.view import View

__all__ = ["SlidingWindow"]


class SlidingWindow(BaseStrategy):
    """Keep only the last `keep_last_turns` user turns, or the last `keep_last_groups` groups.

    Use it to bound a chat predictably: a turn is a user message and everything
    that answers it, and whole turns go at once, oldest first (the target is checked
    between turns, so a turn is never cut in half). By groups it removes one group
    at a time. System, pinned and memory messages, the last user message and a
    pending call always stay.

    Args:
        keep_last_turns: user turns to keep (give this or `keep_last_groups`).
        keep_last_groups: non-system groups to keep.
        min_preserved: newest groups left alone whatever the window says.
        trigger: run only when this fires; stop once it no longer does.

    >>> from kompakt import MessageIndex, Message, View
    >>> from kompakt.strategies import CompactionContext
    >>> idx = MessageIndex([Message.system("s"), Message.user("q1"), Message.assistant("a1"),
    ...                     Message.user("q2"), Message.assistant("a2")])
    >>> view = View(idx)
    >>> SlidingWindow(keep_last_turns=1).apply(view, CompactionContext(view))
    True
    >>> [m.text for m in view.render()]
    ['s', 'q2', 'a2']
    """

    def __init__(
        self,
        *,
        keep_last_turns: int | None = None,
        keep_last_groups: int | None = None,
        min_preserved: int = 1,
        trigger: TriggerLike | None = None,
    ) -> None:
        if (keep_last_turns is None) == (keep_last_groups is None):
            raise ConfigError(
                "SlidingWindow needs exactly one of `keep_last_turns` or `keep_last_groups`"
            )
        check_count("keep_last_turns", keep_last_turns)
        check_count("keep_last_groups", keep_last_groups)
        check_count("min_preserved", min_preserved)
        self.keep_last_turns = keep_last_turns
        self.keep_last_groups = keep_last_groups
        self.min_preserved = min_preserved
        self.trigger = optional_trigger(trigger)

    def apply(self, view: View, context: CompactionContext) -> bool:
        if self.keep_last_turns is not None:
            return self._by_turns(view, context, self.keep_last_turns)
        assert self.keep_last_groups is not None
        return self._by_groups(view, context, self.keep_last_groups)

    def _by_turns(self, view: View, context: CompactionContext, keep: int) -> bool:
        last_dropped_turn = view.index.turn_count - keep
        if last_dropped_turn < 1:
            return False
        changed = False
        turn = -1
        for g in view.candidates(self.preserved(context), originals_only=False):
            group = view.index.groups[g]
            if group.turn > last_dropped_turn:
                break
            if group.turn != turn:  # a new turn: the target may hold now
                if should_stop(self, view, context):
                    break
                turn = group.turn
            view.drop(g)
            context.note(groups_dropped=1)
            changed = True
        return changed

    def _by_groups(self, view: View, context: CompactionContext, keep: int) -> bool:
        boundary = nth_newest_live_group(view, keep)
        changed = False
        for g in view.candidates(self.preserved(context), originals_only=False):
            if g >= boundary or should_stop(self, view, context):
                break
            view.drop(g)
            context.note(groups_dropped=1)
            changed = True
        return changed

    def __repr__(self) -> str:
        if self.keep_last_turns is not None:
            return f"SlidingWindow(keep_last_turns={self.keep_last_turns})"
        return f"SlidingWindow(keep_last_groups={self.keep_last_groups})"


def nth_newest_live_group(view: View, n: int) -> int:
    """Index of the `n`-th newest non-system group still sent (0 when there are fewer)."""
    if n == 0:
        return view.index.group_count
    seen = 0
    for group in reversed(view.index.groups):
        if group.kind == "system" or view.is_dropped(group.index):
            continue
        seen += 1
        if seen == n:
            return group.index
    return 0
