"""Older results of a repeated tool call become a one-line note."""

from __future__ import annotations

import json
from collections.abc import Callable, Hashable, Iterable
from typing import TypeAlias

from kompakt.errors import ConfigError
from kompakt.messages import Message, ToolCall
from kompakt.strategies._common import (
    check_count,
    optional_trigger,
    short_args,
    should_stop,
)
from kompakt.strategies.base import DEFAULT_MIN_PRESERVED, BaseStrategy, CompactionContext
from kompakt.triggers import TriggerLike
from kompakt.view import View

__all__ = ["SupersedeKey", "SupersedeReads"]

SupersedeKey: TypeAlias = "str | Callable[[ToolCall], Hashable | None] | None"
"""None (same tool, same arguments), an argument name ("path"), or a function of the call."""


class SupersedeReads(BaseStrategy):
    """When a tool is called again with the same arguments, older results become a one-line note.

    Use it for agents that re-read files or re-run status commands: only the newest
    result reflects the current state, the older copies are stale and cost tokens.
    The old call stays and its result message stays paired with it (only the
    content becomes ``[Superseded: read_file(path=a.py) was run again later; see the
    newer result.]``), so the conversation remains valid for every provider.

    Args:
        key: what makes two calls "the same": None (tool name and arguments), the
            name of one argument (``"path"``: any read of the same file), or a
            function of the `ToolCall` returning a hashable key (None: never same).
        tools: only calls of these tools (default: every tool).
        min_preserved: newest groups left alone.
        trigger: run only when this fires; stop once it no longer does.

    >>> from kompakt import MessageIndex, Message, ToolCall, View
    >>> from kompakt.strategies import CompactionContext
    >>> def read(i):
    ...     return [Message.assistant(tool_calls=[ToolCall(id=f"c{i}", name="read_file",
    ...                                                    arguments='{"path": "a.py"}')]),
    ...             Message.tool(f"version {i} " + "x" * 400, tool_call_id=f"c{i}")]
    >>> idx = MessageIndex([Message.user("go"), *read(1), *read(2), Message.assistant("ok")])
    >>> view = View(idx)
    >>> SupersedeReads(min_preserved=0).apply(view, CompactionContext(view))
    True
    >>> [m.text[:24] for m in view.render() if m.role == "tool"]
    ['[Superseded: read_file(p', 'version 2 xxxxxxxxxxxxxx']
    """

    def __init__(
        self,
        *,
        key: SupersedeKey = None,
        tools: Iterable[str] | None = None,
        min_preserved: int = DEFAULT_MIN_PRESERVED,
        trigger: TriggerLike | None = None,
    ) -> None:
        if key is not None and not isinstance(key, str) and not callable(key):
            raise ConfigError(f"`key` must be None, an argument name or a callable, got {key!r}")
        check_count("min_preserved", min_preserved)
        self.key = key
        self.tools = frozenset(tools) if tools is not None else None
        self.min_preserved = min_preserved
        self.trigger = optional_trigger(trigger)
        self._keys: dict[tuple[str, str], Hashable | None] = {}

    def apply(self, view: View, context: CompactionContext) -> bool:
        stale = self._stale_results(view)
        count = view.index.tokenizer.count_message
        changed = False
        for g in sorted(stale):
            if should_stop(self, view, context):
                break
            current = view.rendered(g)
            new: list[Message] = []
            for m in current:
                call = stale[g].get(m.tool_call_id or "") if m.role == "tool" else None
                if call is None or m.synthetic not in (None, "clamped"):
                    new.append(m)
                    continue
                note = m.evolve(
                    content=f"[Superseded: {call.name}({short_args(call.arguments)}) was run "
                    "again later; see the newer result.]",
                    synthetic="superseded",
                    covers=m.covers if m.synthetic else (m.id,),
                    extra={},
                )
                new.append(note if count(note) < count(m) else m)
            if any(a is not b for a, b in zip(new, current, strict=True)):
                view.replace(g, new)
                context.note(groups_replaced=1)
                changed = True
        return changed

    def _stale_results(self, view: View) -> dict[int, dict[str, ToolCall]]:
        """group -> {call id: call} of results a newer identical call makes stale."""
        seen: set[tuple[str, Hashable]] = set()
        stale: dict[int, dict[str, ToolCall]] = {}
        for group in reversed(view.index.groups):
            if group.kind != "tool_call":
                continue
            rendered = view.rendered(group.index)
            answered = {
                m.tool_call_id
                for m in rendered
                if m.role == "tool" and m.synthetic in (None, "clamped")
            }
            calls = [c for m in rendered for c in m.tool_calls if c.id in answered]
            editable: bool | None = None  # asked only when a call is stale
            for call in calls:
                if self.tools is not None and call.name not in self.tools:
                    continue
                k = self._key(call)
                if k is None:
                    continue
                if (call.name, k) in seen:
                    if editable is None:
                        editable = not view.protected(group.index, self.min_preserved)
                    if editable:
                        stale.setdefault(group.index, {})[call.id] = call
                else:
                    seen.add((call.name, k))
        return stale

    def _key(self, call: ToolCall) -> Hashable | None:
        if callable(self.key):
            return self.key(call)
        memo = (call.name, call.arguments)
        if memo in self._keys:
            return self._keys[memo]
        if len(self._keys) > 100_000:
            self._keys.clear()
        k = self._keys[memo] = self._parse_key(call)
        return k

    def _parse_key(self, call: ToolCall) -> Hashable | None:
        if self.key is None:
            return _canonical(call.arguments)
        if isinstance(self.key, str):
            args = call.parsed_arguments()
            if not isinstance(args, dict) or self.key not in args:
                return None
            return _canonical_value(args[self.key])
        return None

    def __repr__(self) -> str:
        return f"SupersedeReads(key={self.key!r})"


def _canonical(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), sort_keys=True)
    except (ValueError, TypeError):
        return arguments


def _canonical_value(value: object) -> Hashable:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return json.dumps(value, sort_keys=True, default=str)
