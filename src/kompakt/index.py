"""The incremental index: groups, turns and running totals of a growing history.

A *group* is the unit compaction keeps or removes whole:

* ``system``: one system (or developer) message;
* ``user``: one user message (it starts a turn);
* ``assistant_text``: an assistant message without tool calls;
* ``tool_call``: an assistant message with tool calls and *all* of its results,
  parallel ones included; while a result is missing the group is ``pending``;
* ``summary``: a synthetic summary (or facts) message;
* ``compaction``: a provider's own compaction summary (an OpenAI Responses
  ``compaction`` item, an Anthropic ``compaction`` block), opaque: pinned, so no
  strategy edits, splits or collapses it. What came before the newest one is what the
  provider drops: a `View` does not send it (the originals stay here).

A message with ``metadata["tokens"]`` (an int: what the provider's usage reported) is
counted at that, not by the tokenizer.

Appending is O(1) amortized: a message is tokenized once, its group is found from
the last group or from the open-call table, and the totals are updated in place.

>>> from kompakt.messages import Message, ToolCall
>>> idx = MessageIndex()
>>> for m in [Message.system("be brief"), Message.user("list files"),
...           Message.assistant(tool_calls=[ToolCall(id="c1", name="ls")]),
...           Message.tool("a.py", tool_call_id="c1"), Message.assistant("one file")]:
...     _ = idx.append(m)
>>> [g.kind for g in idx.groups]
['system', 'user', 'tool_call', 'assistant_text']
>>> idx.message_count, idx.group_count, idx.turn_count
(5, 4, 1)
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Literal, TypeAlias

from kompakt.errors import ConfigError
from kompakt.messages import Message
from kompakt.notes.digest import is_note
from kompakt.tokens import (
    MESSAGE_OVERHEAD,
    TOOL_CALL_OVERHEAD,
    CharEstimator,
    Tokenizer,
    flat_rate,
)

__all__ = ["Group", "GroupKind", "MessageIndex"]

GroupKind: TypeAlias = Literal[
    "system", "user", "assistant_text", "tool_call", "summary", "compaction"
]


_NO_CALLS: frozenset[str] = frozenset()
"""The open calls of every group not waiting for a result (one set shared by all)."""


@dataclass(slots=True, eq=False)
class Group:
    """A run of messages kept or removed together: positions ``start`` to ``end - 1``."""

    index: int
    """Position of the group in `MessageIndex.groups`."""
    kind: GroupKind
    start: int
    """Position of the group's first message in the history."""
    end: int
    """One past the position of its last message."""
    turn: int
    """The turn the group belongs to (turns start at user messages; 0 before the first)."""
    tokens: int = 0
    chars: int = 0
    pinned: bool = False
    """A message of the group is pinned or a memory."""
    open_calls: frozenset[str] = _NO_CALLS
    """Ids of calls still waiting for their result (replaced, never changed in place: a
    history of thousands of groups holds no set for each)."""
    orphan: bool = False
    """A tool result whose call is not directly before it (validation reports it)."""

    @property
    def pending(self) -> bool:
        """A tool-call group still waiting for a result."""
        return bool(self.open_calls)

    @property
    def size(self) -> int:
        """Number of messages in the group."""
        return self.end - self.start


class MessageIndex:
    """Messages, their groups and running totals, updated as messages arrive.

    Ids are made unique on the way in: a message whose id is already present is
    stored with ``~2``, ``~3`` ... appended (identical messages get distinct ids).

    >>> idx = MessageIndex([Message.user("hi"), Message.user("hi")])
    >>> [m.id[-2:] for m in idx.messages][1]
    '~2'
    """

    def __init__(
        self, messages: Iterable[Message] = (), *, tokenizer: Tokenizer | None = None
    ) -> None:
        if tokenizer is not None and not hasattr(tokenizer, "count_message"):
            raise ConfigError(
                f"`tokenizer` must be a Tokenizer (count_text, count_message), got {tokenizer!r}:"
                " kompakt.tokens.tokenizer_from_string('cl100k_base') makes one from a spec"
            )
        self.tokenizer: Tokenizer = tokenizer if tokenizer is not None else CharEstimator()
        self._messages: list[Message] = []
        self._tokens: list[int] = []
        self._groups: list[Group] = []
        self._positions: dict[str, int] = {}
        self._open_calls: dict[str, int] = {}
        self.total_tokens = 0
        self.total_chars = 0
        self.max_message_tokens = 0
        """Tokens of the costliest message (a strategy that cuts what is over a limit has
        nothing to look for when this is within it)."""
        self.turn_count = 0
        self.tool_call_group_count = 0
        self.last_user_group: int | None = None
        """Index of the newest user group (None before the first user message)."""
        self.first_user_group: int | None = None
        """Index of the oldest user group kompakt did not write (the user's request)."""
        self.compaction_group: int | None = None
        """Index of the newest group holding a provider compaction (None without one)."""
        # nothing but system messages (and notes) so far: where a note passed back as
        # plain text stands
        self._opening_only = True
        self.extend(messages)

    # -- building -----------------------------------------------------------------

    def append(self, message: Message) -> Message:
        """Add one message; returns it as stored (its id made unique if needed)."""
        positions = self._positions
        if message.id in positions:
            message = self._unique(message)
        pos = len(self._messages)
        tokens = self.tokenizer.count_message(message)
        if message.metadata:
            tokens = _usage_tokens(message, tokens)
        chars = message.char_count
        group = self._place(message, pos)
        group.end = pos + 1
        group.tokens += tokens
        group.chars += chars
        if message.pinned or message.memory:
            group.pinned = True
        self._messages.append(message)
        self._tokens.append(tokens)
        positions[message.id] = pos
        self.total_tokens += tokens
        self.total_chars += chars
        if tokens > self.max_message_tokens:
            self.max_message_tokens = tokens
        return message

    def extend(self, messages: Iterable[Message]) -> list[Message]:
        """Append several messages; returns them as stored."""
        # `append` and `_place`, inlined with their lookups hoisted: building an index is
        # this loop. A tool result answering the group before it (the common case) and an
        # assistant text or user message that cannot be a note take the short paths.
        positions, stored = self._positions, self._messages
        first = len(stored)
        store, store_tokens = stored.append, self._tokens.append
        count, place = self.tokenizer.count_message, self._place
        groups, open_calls = self._groups, self._open_calls
        # a flat whole-number rate prices a message of one ASCII text part from the length
        # read here, rounded up in integers (a fractional rate goes through the tokenizer)
        flat = flat_rate(self.tokenizer)
        rate = flat if isinstance(flat, int) else None
        total_tokens = total_chars = 0
        most = self.max_message_tokens
        try:
            for pos, message in enumerate(messages, first):
                mid = message.id
                if mid in positions:
                    message = self._unique(message)
                    mid = message.id
                content = message.content
                if len(content) == 1:
                    text = content[0].text
                    chars = len(text)
                    if message.tool_calls:
                        chars += sum(len(c.name) + len(c.arguments) for c in message.tool_calls)
                        tokens = count(message)
                    elif rate is not None and content[0].kind == "text" and text.isascii():
                        tokens = MESSAGE_OVERHEAD - (-chars // rate)  # ceil(chars / rate)
                    else:
                        tokens = count(message)
                elif not content and rate is not None and len(message.tool_calls) == 1:
                    name, args = message.tool_calls[0].name, message.tool_calls[0].arguments
                    chars = len(name) + len(args)
                    if name.isascii() and args.isascii():  # one call, no text: the same
                        tokens = -(-len(name) // rate) - (-len(args) // rate)
                        tokens += MESSAGE_OVERHEAD + TOOL_CALL_OVERHEAD
                    else:
                        tokens = count(message)
                else:
                    tokens = count(message)
                    chars = message.char_count
                if message.metadata:
                    tokens = _usage_tokens(message, tokens)
                role = message.role
                group = None
                if role == "tool":
                    cid = message.tool_call_id or ""
                    owner = open_calls.get(cid)
                    if owner is not None and owner == len(groups) - 1:  # the last group's
                        group = groups[owner]
                        waiting = group.open_calls  # _answered, inlined: one per result
                        group.open_calls = _NO_CALLS if len(waiting) == 1 else waiting - {cid}
                        del open_calls[cid]
                elif (
                    message.synthetic is None
                    and not self._opening_only
                    and (not content or (len(content) == 1 and content[0].kind == "text"))
                ):  # no note, no provider compaction: a plain turn
                    if role == "assistant":
                        calls = message.tool_calls
                        group = Group(len(groups), "tool_call" if calls else "assistant_text",
                                      pos, pos, self.turn_count)  # fmt: skip
                        groups.append(group)
                        if calls:
                            self.tool_call_group_count += 1
                            group.open_calls = (
                                frozenset((calls[0].id,))  # one call: no iterator to build
                                if len(calls) == 1
                                else frozenset(map(_CALL_ID, calls))
                            )
                            for call in calls:
                                open_calls[call.id] = group.index
                    elif role == "user" and not message.tool_calls:
                        self.turn_count += 1
                        group = Group(len(groups), "user", pos, pos, self.turn_count)
                        groups.append(group)
                        self.last_user_group = group.index
                        if self.first_user_group is None:
                            self.first_user_group = group.index
                if group is None:
                    group = place(message, pos)
                group.end = pos + 1
                group.tokens += tokens
                group.chars += chars
                if message.pinned or message.memory:
                    group.pinned = True
                store(message)
                store_tokens(tokens)
                positions[mid] = pos
                total_tokens += tokens
                total_chars += chars
                if tokens > most:
                    most = tokens
        finally:
            self.total_tokens += total_tokens
            self.total_chars += total_chars
            self.max_message_tokens = most
        return stored[first:]

    def _unique(self, message: Message) -> Message:
        if message.id not in self._positions:
            return message
        n = 2
        while f"{message.id}~{n}" in self._positions:
            n += 1
        return message.evolve(id=f"{message.id}~{n}")

    def _place(self, m: Message, pos: int) -> Group:
        if m.role == "tool":
            return self._place_result(m, pos)
        if m.synthetic in ("summary", "facts") or is_note(m, opening=self._opening_only):
            return self._new_group("summary", pos)  # a note passed back as plain text too
        if m.role in ("system", "developer"):
            return self._new_group("system", pos)
        if m.role == "user":
            self.turn_count += 1
            g = self._new_group("user", pos)
            self.last_user_group = g.index
            if self.first_user_group is None and m.synthetic is None:  # not an "omitted" note
                self.first_user_group = g.index
            return g
        compaction = m.role == "assistant" and is_provider_compaction(m)
        if m.tool_calls:
            g = self._new_group("tool_call", pos)
            self.tool_call_group_count += 1
            g.open_calls = frozenset(map(_CALL_ID, m.tool_calls))
            for call in m.tool_calls:
                self._open_calls[call.id] = g.index
        else:
            g = self._new_group("compaction" if compaction else "assistant_text", pos)
        if compaction:  # opaque: never edited; what came before it is not sent
            g.pinned = True
            self.compaction_group = g.index
        return g

    def _place_result(self, m: Message, pos: int) -> Group:
        owner = self._open_calls.get(m.tool_call_id or "")
        last = self._groups[-1] if self._groups else None
        if owner is not None and last is not None and owner == last.index:
            last.open_calls = _answered(last.open_calls, m.tool_call_id or "")
            del self._open_calls[m.tool_call_id or ""]
            return last
        g = self._new_group("tool_call", pos)
        g.orphan = True
        self.tool_call_group_count += 1
        return g

    def _new_group(self, kind: GroupKind, pos: int) -> Group:
        g = Group(len(self._groups), kind, pos, pos, self.turn_count)  # positional: faster
        self._groups.append(g)
        if kind not in ("system", "summary"):
            self._opening_only = False
        return g

    # -- reading ------------------------------------------------------------------

    @property
    def messages(self) -> Sequence[Message]:
        """Every message, in order (read-only)."""
        return self._messages

    @property
    def groups(self) -> Sequence[Group]:
        """Every group, in order (read-only)."""
        return self._groups

    @property
    def message_tokens(self) -> Sequence[int]:
        """Tokens of each message, overheads included."""
        return self._tokens

    @property
    def message_count(self) -> int:
        return len(self._messages)

    @property
    def group_count(self) -> int:
        return len(self._groups)

    @property
    def pending_groups(self) -> list[int]:
        """Indexes of the tool-call groups still waiting for a result, in order.

        >>> from kompakt.messages import ToolCall
        >>> call = Message.assistant(tool_calls=[ToolCall(id="c1", name="ls")])
        >>> MessageIndex([Message.user("go"), call]).pending_groups
        [1]
        """
        return sorted(set(self._open_calls.values()))

    @property
    def has_tool_calls(self) -> bool:
        """Whether any group is a tool call (an agent's run, not a conversation)."""
        return any(g.kind == "tool_call" for g in self._groups)

    def group_of(self, position: int) -> Group:
        """The group holding the message at `position`."""
        # groups cover the history in order: the last one starting at or before it (no
        # table of a group per message to keep, for the few callers that ask)
        position = range(len(self._messages))[position]  # IndexError and negatives as a list
        return self._groups[bisect_right(self._groups, position, key=_START) - 1]

    def group_messages(self, group: Group | int) -> Sequence[Message]:
        """The messages of a group, in order."""
        g = self._groups[group] if isinstance(group, int) else group
        return self._messages[g.start : g.end]

    def position(self, message_id: str) -> int | None:
        """Where the message with this id is, or None."""
        return self._positions.get(message_id)

    def __len__(self) -> int:
        return len(self._messages)

    def __iter__(self) -> Iterator[Message]:
        return iter(self._messages)

    def __repr__(self) -> str:
        return (
            f"MessageIndex(messages={self.message_count}, groups={self.group_count}, "
            f"turns={self.turn_count}, tokens={self.total_tokens})"
        )


def is_provider_compaction(m: Message) -> bool:
    """The message holds a provider's compaction summary (a part of type ``compaction``).

    >>> from kompakt.messages import Part
    >>> is_provider_compaction(Message(role="assistant", content=(
    ...     Part(kind="other", data={"type": "compaction", "encrypted_content": "gAAA"}),)))
    True
    """
    return any(p.kind == "other" and p.data.get("type") == "compaction" for p in m.content)


def _answered(open_calls: frozenset[str], call_id: str) -> frozenset[str]:
    """`open_calls` once `call_id` has its result (the shared empty set when it was the last)."""
    return _NO_CALLS if len(open_calls) == 1 else open_calls - {call_id}


_CALL_ID = attrgetter("id")
_START = attrgetter("start")


def _usage_tokens(m: Message, counted: int) -> int:
    reported = m.metadata.get("tokens")
    return reported if type(reported) is int and reported >= 0 else counted
