"""Keep the first user message and the last N groups (Koog's shape, without a summary)."""

from __future__ import annotations

from kompakt._deprecation import renamed_options
from kompakt.strategies._common import check_count, optional_trigger, should_stop
from kompakt.strategies.base import BaseStrategy, CompactionContext
from kompakt.strategies.window import nth_newest_live_group
from kompakt.triggers import TriggerLike
from kompakt.view import View

__all__ = ["KeepFirstAndLast"]


class KeepFirstAndLast(BaseStrategy):
    """Keep the system messages, the first user message and the last `keep_last_groups` groups.

    Use it when the opening request frames the whole session (a task statement, a
    persona, a spec) and only recent work matters besides it: everything between
    the two is dropped, oldest first, until the target holds. Pinned and memory
    messages, the last user message and a pending call stay too.

    Args:
        keep_last_groups: newest non-system groups to keep.
        trigger: run only when this fires; stop once it no longer does.

    >>> from kompakt import MessageIndex, Message, View
    >>> from kompakt.strategies import CompactionContext
    >>> idx = MessageIndex([Message.user("task"), Message.assistant("a1"),
    ...                     Message.user("q2"), Message.assistant("a2")])
    >>> view = View(idx)
    >>> KeepFirstAndLast(keep_last_groups=1).apply(view, CompactionContext(view))
    True
    >>> [m.text for m in view.render()]
    ['task', 'q2', 'a2']
    """

    @renamed_options(keep_last="keep_last_groups")
    def __init__(self, *, keep_last_groups: int = 4, trigger: TriggerLike | None = None) -> None:
        check_count("keep_last_groups", keep_last_groups)
        self.keep_last_groups = keep_last_groups
        self.min_preserved = keep_last_groups
        self.trigger = optional_trigger(trigger)

    def apply(self, view: View, context: CompactionContext) -> bool:
        first = view.index.first_user_group
        boundary = nth_newest_live_group(view, context.overrides.kept(self.keep_last_groups))
        changed = False
        for g in view.candidates(0, originals_only=False):
            if g >= boundary or should_stop(self, view, context):
                break
            if g == first:
                continue
            view.drop(g)
            context.note(groups_dropped=1)
            changed = True
        return changed

    def __repr__(self) -> str:
        return f"KeepFirstAndLast(keep_last_groups={self.keep_last_groups})"
