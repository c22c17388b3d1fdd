"""Older results of a repeated tool call become a one-line note."""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable, Hashable, Iterable
from typing import TypeAlias

from kompakt._deprecation import renamed_options
from kompakt.errors import ConfigError
from kompakt.messages import Message, ToolCall, text_stand_in
from kompakt.strategies._common import (
    Stop,
    check_count,
    optional_trigger,
    rendered_tokens,
    short_args,
    tool_name_set,
)
from kompakt.strategies.base import DEFAULT_MIN_PRESERVED, BaseStrategy, CompactionContext
from kompakt.tokens import MESSAGE_OVERHEAD, flat_rate
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
        include_tools: only calls of these tools (default: every tool).
        exclude_tools: never calls of these tools.
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

    @renamed_options(tools="include_tools")
    def __init__(
        self,
        *,
        key: SupersedeKey = None,
        include_tools: Iterable[str] | str | None = None,
        exclude_tools: Iterable[str] | str = (),
        min_preserved: int = DEFAULT_MIN_PRESERVED,
        trigger: TriggerLike | None = None,
    ) -> None:
        if key is not None and not isinstance(key, str) and not callable(key):
            raise ConfigError(f"`key` must be None, an argument name or a callable, got {key!r}")
        check_count("min_preserved", min_preserved)
        self.key = key
        self.include_tools = None if include_tools is None else tool_name_set(include_tools)
        self.exclude_tools = tool_name_set(exclude_tools)
        self.min_preserved = min_preserved
        self.trigger = optional_trigger(trigger)
        self._keys: dict[tuple[str, str], Hashable | None] = {}

    def apply(self, view: View, context: CompactionContext) -> bool:
        seen = self._seen(view)
        stop = Stop(self, view, context)
        preserved = self.preserved(context)
        notes = _Notes(view)
        newest, is_original = seen.newest, view.is_original
        replaced = 0
        for g in sorted(seen.stale):
            if stop.estimate <= stop.quiet_above and stop():  # no call while far
                break
            if view.protected(g, preserved):
                continue  # protected for now: asked again next time
            entry = seen.stale.pop(g)
            original = is_original(g)
            if not original:  # results collapsed, summarized or dropped since
                sent = _sent_results(view, g)
                entry = {cid: v for cid, v in entry.items() if cid in sent}
            stale: dict[str, ToolCall] = {}
            for cid, (call, key) in entry.items():  # the newest result is still sent
                (newer, _, newer_call), _ = newest[key]
                if is_original(newer) or newer_call in _sent_results(view, newer):
                    stale[cid] = call
            if len(stale) < len(entry):  # a newer result is not sent as it is: ask again
                seen.stale[g] = {c: v for c, v in entry.items() if c not in stale}
            if not stale:
                continue
            before = notes.groups[g].tokens if original else rendered_tokens(view, g)
            new, tokens = notes.stand_ins(g, stale, original)
            if new is not None:
                view.replace(g, new, tokens=tokens)
                stop.estimate -= before - tokens  # stop.removed, inlined
                replaced += 1
        view.settle(self._walk_key(), seen.position)  # its own edits need no new reading
        if replaced:
            context.note(groups_replaced=replaced)
        return replaced > 0

    def _walk_key(self) -> Hashable:
        return ("SupersedeReads", self.key, self.include_tools, self.exclude_tools)

    def _seen(self, view: View) -> _Seen:
        """What this strategy has read of the view's calls, brought up to date: only the
        groups new since the last compaction (and a batch that was waiting) are read."""
        key = self._walk_key()
        seen = view.memo(key)
        if not isinstance(seen, _Seen):
            seen = _Seen(view)
        elif seen.owner() is not view:
            seen = seen.copy(view)
        view.keep(key, seen)
        groups = view.index.groups
        # groups edited since (a collapse restored) are read again, like those still waiting
        edited, _ = view.resume(key)
        waiting = seen.waiting
        seen.waiting = {}
        again = sorted({*waiting, *(g for g in edited if g < seen.position)})
        for i in (
            (*again, *range(seen.position, len(groups)))
            if again
            else range(seen.position, len(groups))
        ):
            group = groups[i]
            if group.kind != "tool_call":
                continue
            done = self._read(view, seen, i, waiting.get(i, _NONE))
            if group.open_calls:  # results still to come: read it again next time
                seen.waiting[i] = done
        seen.position = max(seen.position, len(groups))
        return seen

    def _read(self, view: View, seen: _Seen, g: int, done: frozenset[str]) -> frozenset[str]:
        """Record the answered calls of group `g` (but those in `done`); returns all read."""
        calls: list[ToolCall] = []
        answered: set[str | None] = set()  # _sent_results, from the messages at hand
        for m in view.rendered(g):  # one pass: the calls, and the results sent as they came
            if m.tool_calls:
                calls += m.tool_calls
            if m.role == "tool" and m.synthetic in _SENT:
                answered.add(m.tool_call_id)
        exclude, include = self.exclude_tools, self.include_tools
        keys = None if callable(self.key) else self._keys
        read = set(done)
        for ordinal, call in enumerate(calls, 1):
            cid, name = call.id, call.name
            if cid not in answered or cid in read:
                continue
            if name in exclude or (include is not None and name not in include):
                continue  # not watched
            k = keys.get((name, call.arguments), _UNREAD) if keys is not None else _UNREAD
            if k is _UNREAD:  # the memo of `_key`, read here first: agents repeat calls
                k = self._key(call)
            if k is not None:
                read.add(cid)
                seen.add((name, k), (g, -ordinal, cid), call)
        return frozenset(read)

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
    except (ValueError, TypeError, RecursionError):
        return arguments


def _canonical_value(value: object) -> Hashable:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return json.dumps(value, sort_keys=True, default=str)


_NONE: frozenset[str] = frozenset()
_UNREAD = object()
_Occurrence: TypeAlias = "tuple[int, int, str]"
"""(group, minus the call's place in it, call id): the newest group's first call is kept."""


class _Seen:
    """The calls SupersedeReads has read of one view: the newest of each key, and the
    older ones it makes stale (group -> call id -> (call, key)) not yet replaced."""

    def __init__(self, owner: View) -> None:
        # weakly: the view keeps this memo, and a cycle back to it would leave the whole
        # view and index for the garbage collector to find instead of freeing them at once
        self.owner = weakref.ref(owner)
        self.position = 0
        self.waiting: dict[int, frozenset[str]] = {}
        """Groups still waiting for results -> the ids of their calls read already."""
        self.newest: dict[Hashable, tuple[_Occurrence, ToolCall]] = {}
        self.stale: dict[int, dict[str, tuple[ToolCall, Hashable]]] = {}

    def copy(self, owner: View) -> _Seen:
        """The same knowledge for a copy of the view (so the original keeps its own)."""
        other = _Seen(owner)
        other.position = self.position
        other.waiting = dict(self.waiting)
        other.newest = dict(self.newest)
        other.stale = {g: dict(calls) for g, calls in self.stale.items()}
        return other

    def add(self, key: Hashable, at: _Occurrence, call: ToolCall) -> None:
        prev = self.newest.get(key)
        if prev is None:
            self.newest[key] = (at, call)
            return
        was = prev[0]
        if was == at:  # read again (its group was edited since)
            return
        if at[0] > was[0] or (at[0] == was[0] and at[1] > was[1]):  # at[:2] > was[:2]
            self.newest[key] = (at, call)
            at, call = prev
        stale = self.stale.get(at[0])
        if stale is None:
            stale = self.stale[at[0]] = {}
        stale[at[2]] = (call, key)


def _sent_results(view: View, g: int) -> set[str | None]:
    """Call ids whose result group `g` sends as it came (or clamped)."""
    return {m.tool_call_id for m in view.rendered(g) if m.role == "tool" and m.synthetic in _SENT}


_SENT = (None, "clamped")
"""`synthetic` of a result sent as it came (or clamped)."""


class _Notes:
    """Writes the one-line notes of one view's stale results (what it reads of the index
    read once, not once per group; each note's text and price once per tool and arguments:
    agents re-read the same files)."""

    def __init__(self, view: View) -> None:
        index = view.index
        self.view = view
        self.groups = index.groups
        self.messages = index.messages
        self.counted = index.message_tokens
        self.count = index.tokenizer.count_message
        self.rate = flat_rate(index.tokenizer)
        self.texts: dict[tuple[str, str], tuple[str, int | None]] = {}

    def stand_ins(
        self, g: int, stale: dict[str, ToolCall], original: bool
    ) -> tuple[list[Message] | None, int]:
        """What group `g` sends with its `stale` results (call id -> call) as one-line
        notes, and what that costs; None when no note is cheaper than what it replaces."""
        count, texts = self.count, self.texts
        # an original group's messages were counted by the index: read, not recounted
        group = self.groups[g]
        start = group.start
        counted = self.counted if original else None
        current = self.messages[start : group.end] if original else self.view.rendered(g)
        new: list[Message] = []
        tokens = 0  # what `new` costs, counted once here (the view is told, not recounting)
        changed = False
        for i, m in enumerate(current):
            was = count(m) if counted is None else counted[start + i]
            call = stale.get(m.tool_call_id or "") if m.role == "tool" else None
            if call is None or m.synthetic not in _SENT:
                new.append(m)
                tokens += was
                continue
            known = texts.get((call.name, call.arguments))
            text, cost = known if known is not None else self._text(call)
            if cost is not None and not m.tool_calls:  # priced before it is built
                if cost >= was:  # no cheaper: not written
                    new.append(m)
                    tokens += was
                    continue
            else:
                cost = None
            covers = m.covers if m.synthetic else (m.id,)
            note = text_stand_in(m, text, synthetic="superseded", covers=covers)
            if cost is None:
                cost = count(note)
            if cost < was:
                new.append(note)
                tokens += cost
                changed = True
            else:
                new.append(m)
                tokens += was
        return (new if changed else None), tokens

    def _text(self, call: ToolCall) -> tuple[str, int | None]:
        """The note of a stale result of `call`, and what `count` says of it at a flat
        rate (None: count the note itself)."""
        text = (
            f"[Superseded: {call.name}({short_args(call.arguments)}) was run "
            "again later; see the newer result.]"
        )
        cost = None
        if self.rate is not None and text.isascii():
            x = len(text) / self.rate  # what `count` says of the note, without the call
            cost = int(x)
            cost += MESSAGE_OVERHEAD + (cost < x)
        self.texts[(call.name, call.arguments)] = (text, cost)
        return text, cost
