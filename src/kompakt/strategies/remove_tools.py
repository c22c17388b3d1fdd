"""Drop old tool-call groups entirely."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from kompakt._deprecation import renamed_options
from kompakt.strategies._common import (
    check_count,
    has_calls,
    optional_trigger,
    should_stop,
    tool_name_set,
)
from kompakt.strategies._common import tool_names as _tool_names
from kompakt.strategies.base import DEFAULT_MIN_PRESERVED, BaseStrategy, CompactionContext
from kompakt.strategies.window import nth_newest_live_group
from kompakt.triggers import TriggerLike
from kompakt.view import View

__all__ = ["RemoveToolCalls"]


class RemoveToolCalls(BaseStrategy):
    """Drop old tool-call groups (a call and all its results), keeping the newest ones.

    Use it when tool chatter dominates and old results are no longer needed at all
    (the agent re-reads what it needs); user messages and plain assistant answers
    stay. `exclude_tools` names tools whose groups always stay (a plan, a memory
    tool). For a trace of what ran, prefer `CollapseToolResults`.

    Args:
        keep_last_groups: newest groups kept verbatim: tool-call groups only (the
            default), or every kind with ``only_tool_groups=False``.
        only_tool_groups: whether `keep_last_groups` counts tool-call groups only.
        exclude_tools: tool names never removed.
        min_preserved: newest groups left alone.
        trigger: run only when this fires; stop once it no longer does.

    >>> from kompakt import MessageIndex, Message, ToolCall, View
    >>> from kompakt.strategies import CompactionContext
    >>> call = lambda i: Message.assistant(tool_calls=[ToolCall(id=f"c{i}", name="ls")])
    >>> idx = MessageIndex([Message.user("go"), call(1), Message.tool("a", tool_call_id="c1"),
    ...                     call(2), Message.tool("b", tool_call_id="c2"), Message.assistant("ok")])
    >>> view = View(idx)
    >>> RemoveToolCalls(keep_last_groups=1, min_preserved=0).apply(view, CompactionContext(view))
    True
    >>> [m.role for m in view.render()]
    ['user', 'assistant', 'tool', 'assistant']
    """

    @renamed_options(keep_last="keep_last_groups")
    def __init__(
        self,
        *,
        keep_last_groups: int = 2,
        only_tool_groups: bool = True,
        exclude_tools: Iterable[str] | str = (),
        min_preserved: int = DEFAULT_MIN_PRESERVED,
        trigger: TriggerLike | None = None,
    ) -> None:
        check_count("keep_last_groups", keep_last_groups)
        check_count("min_preserved", min_preserved)
        self.keep_last_groups = keep_last_groups
        self.only_tool_groups = only_tool_groups
        self.exclude_tools = tool_name_set(exclude_tools)
        self.min_preserved = min_preserved
        self.trigger = optional_trigger(trigger)

    def apply(self, view: View, context: CompactionContext) -> bool:
        changed = False
        groups = old_tool_groups(
            view,
            context.overrides.kept(self.keep_last_groups),
            self.preserved(context),
            self.exclude_tools,
            only_tool_groups=self.only_tool_groups,
        )
        for g in groups:
            if should_stop(self, view, context):
                break
            view.drop(g)
            context.note(groups_dropped=1)
            changed = True
        return changed

    def __repr__(self) -> str:
        only = "" if self.only_tool_groups else ", only_tool_groups=False"
        return f"RemoveToolCalls(keep_last_groups={self.keep_last_groups}{only})"


def old_tool_groups(
    view: View,
    keep_last_groups: int,
    min_preserved: int,
    exclude_tools: frozenset[str],
    *,
    only_tool_groups: bool = True,
    start: int = 0,
    revisit: Iterable[int] = (),
) -> Iterator[int]:
    """Tool-call groups still sent as calls, oldest first (from `start`), before the newest
    `keep_last_groups` (tool-call groups, or groups of every kind without `only_tool_groups`)."""
    if only_tool_groups:
        boundary = _newest_tool_boundary(view, keep_last_groups)
    else:
        boundary = nth_newest_live_group(view, keep_last_groups)
    walk = view.candidates(
        min_preserved, ["tool_call"], originals_only=False, start=start, revisit=revisit
    )
    groups = view.index.groups
    for g in walk:
        if g >= boundary:
            return
        if not groups[g].orphan or not view.is_original(g):  # not an orphan
            for m in view.rendered(g):  # has_calls, inlined: it walks every group
                if m.tool_calls:
                    break
            else:
                continue
        if exclude_tools and _tool_names(view.index.group_messages(g)) & exclude_tools:
            continue
        yield g


def _newest_tool_boundary(view: View, keep: int) -> int:
    """Index of the `keep`-th newest tool-call group still sent as calls."""
    if keep == 0:
        return view.index.group_count
    seen = 0
    for group in reversed(view.index.groups):
        if group.kind != "tool_call" or not has_calls(view.rendered(group.index)):
            continue
        seen += 1
        if seen == keep:
            return group.index
    return 0
