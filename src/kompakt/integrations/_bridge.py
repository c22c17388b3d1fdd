"""What every framework adapter shares: lazy imports, JSON helpers and the `Mirror`.

A `Mirror` keeps a `MessageIndex` in step with a framework's growing message list:
only messages it has not seen are converted and appended (the prefix is recognised
by object identity, which costs one pointer comparison per message), the compactor
runs on the index when its trigger fires, and the compacted view is turned back into
framework messages, reusing the framework's own objects for every original so the
model receives exactly what the framework recorded.
"""

from __future__ import annotations

import asyncio
import copy
import importlib
import json
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any, Literal

from kompakt.errors import ConfigError, MissingDependency
from kompakt.index import MessageIndex
from kompakt.messages import Message
from kompakt.view import View

__all__ = [
    "PREAMBLE",
    "Conversations",
    "Mirror",
    "Origin",
    "Oversized",
    "as_compactor",
    "as_text",
    "budget_of",
    "dumps",
    "fit_preamble",
    "is_preamble",
    "loads_or_text",
    "preamble",
    "require",
]

Origin = tuple[int, int, int]
"""Where a kompakt message came from: (position in the source list, part, parts)."""

Oversized = Literal["error", "clamp"]
"""What an adapter does with instructions too large for the budget: raise, or cut them (warning)."""

PREAMBLE = "kompakt-preamble:"
"""Id prefix of the messages standing for what a framework sends besides the conversation."""

Convert = Callable[[Any, int], list[Message]]
Render = Callable[[Sequence[Message]], list[Any]]


def require(module: str, what: str, extra: str) -> ModuleType:
    """Import `module` or raise `MissingDependency` naming the extra that brings it."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise MissingDependency(what, extra) from e


def dumps(value: Any) -> str:
    """JSON text of `value` as a model would read it (non-ASCII kept, unknown types as str)."""
    return json.dumps(value, ensure_ascii=False, default=str)


def as_text(value: Any) -> tuple[str, bool]:
    """`value` as text, and whether it already was text (else it is JSON-encoded)."""
    if isinstance(value, str):
        return value, True
    return dumps(value), False


def loads_or_text(text: str) -> Any:
    """`text` parsed as JSON, or `text` itself when it is not JSON."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def as_compactor(compactor: Any) -> Any:
    """`compactor` itself, or a bare strategy (``Budgeted(60_000)``) in a `Compactor`
    (whose trigger is then the strategy's own: a `Budgeted` fires over its budget)."""
    if hasattr(compactor, "compact") and hasattr(compactor, "view_for"):
        return compactor
    from kompakt.compactor import Compactor

    return Compactor(strategy=compactor)


def fresh_compactor(compactor: Any) -> Any:
    """A copy of `compactor` with no view yet (one per conversation the adapter serves)."""
    clone = copy.copy(compactor)
    reset = getattr(clone, "reset", None)
    if callable(reset):
        reset()
    return clone


class Mirror:
    """A framework's message list, indexed incrementally and compacted by a `Compactor`.

    `convert(obj, position)` turns one framework message into kompakt messages (several
    when the framework packs several into one, as Pydantic AI's requests do); `render`
    turns kompakt messages back into framework messages. Messages seen before are
    recognised by identity, or by `same(old, new)` when given (for sources rebuilt on
    every call).
    """

    def __init__(
        self,
        compactor: Any,
        convert: Convert,
        render: Render,
        *,
        same: Callable[[Any, Any], bool] | None = None,
        events: list[Any] | None = None,
    ) -> None:
        self.template = as_compactor(compactor)
        self.lock = threading.Lock()
        self._alock: asyncio.Lock | None = None
        self._convert = convert
        self._render = render
        self._same = same
        self.events: list[Any] = events if events is not None else []
        """Every `CompactionEvent` so far, oldest first (a list mirrors may share)."""
        self._reset()

    def _reset(self) -> None:
        self.compactor = fresh_compactor(self.template)
        self._source: list[Any] = []
        self.index = MessageIndex(tokenizer=getattr(self.template, "tokenizer", None))
        self._origin: dict[str, Origin] = {}
        self._digests: dict[str, str] = {}
        self._out: list[Any] | None = None
        """The last render, reused while nothing but appends happened since."""
        self._out_at = (0, 0, 0)
        """(source length, index length, view length) when `_out` was made."""
        self.last_render_reused = False
        """The last `render` only appended new originals to the one before."""

    # -- keeping up with the framework -------------------------------------------------

    def sync(self, source: Sequence[Any]) -> int:
        """Take in `source`; returns how many of its messages were new.

        When `source` no longer starts with what was seen (a message was edited,
        removed or inserted), the index is rebuilt from scratch.
        """
        seen = self._source
        n = len(seen)
        if len(source) < n or not self._prefix(source):
            self._reset()
            seen, n = self._source, 0
        for pos in range(n, len(source)):
            obj = source[pos]
            parts = self._convert(obj, pos)
            stored = self.index.extend(parts)
            for k, m in enumerate(stored):
                self._origin[m.id] = (pos, k, len(stored))
                self._digests[m.id] = m.digest
            seen.append(obj)
        return len(source) - n

    def _prefix(self, source: Sequence[Any]) -> bool:
        """`source` starts with what was seen (a rebuilt but same message replaces its twin)."""
        seen, same = self._source, self._same
        for i, (a, b) in enumerate(zip(seen, source, strict=False)):
            if a is b:
                continue
            if same is None or not same(a, b):
                return False
            seen[i] = b  # render the framework's current object
            self._out = None
        return True

    @property
    def source(self) -> list[Any]:
        """The framework messages taken in so far."""
        return self._source

    def prefix_of(
        self, source: Sequence[Any], same: Callable[[Any, Any], bool] | None = None
    ) -> int:
        """How many messages were taken in, when `source` starts with them (else -1)."""
        seen = self._source
        if not seen or len(source) < len(seen):
            return -1
        for a, b in zip(seen, source, strict=False):
            if a is not b and (same is None or not same(a, b)):
                return -1
        return len(seen)

    @property
    def view(self) -> View:
        """What is sent now: the compactor's persistent view over the index."""
        view: View = self.compactor.view_for(self.index)
        return view

    def due(self) -> bool:
        """The compactor's trigger fires on what is sent now."""
        return bool(self.compactor.check(self.view))

    def compact(self) -> bool:
        """Compact when due; returns True when it ran."""
        if not self.due():
            return False
        _, event = self.compactor.compact(self.index)
        self.events.append(event)
        self._out = None
        return True

    async def acompact(self) -> bool:
        """`compact` for strategies that await a model."""
        if not self.due():
            return False
        _, event = await self.compactor.compact_async(self.index)
        self.events.append(event)
        self._out = None
        return True

    # -- back to the framework ----------------------------------------------------------

    def render(self) -> list[Any]:
        """The compacted history as framework messages (originals are the source objects).

        When only originals were appended since the last render (no compaction, each new
        message sent as it is), the last render plus the new source objects is returned
        without walking the history again.
        """
        reused = self._reuse()
        self.last_render_reused = reused is not None
        out = reused if reused is not None else self._render_all()
        view = self.view
        self._out = out
        self._out_at = (len(self._source), self.index.message_count, view.message_count)
        return list(out)

    def _reuse(self) -> list[Any] | None:
        if self._out is None:
            return None
        n_source, n_index, n_view = self._out_at
        index, view = self.index, self.view
        new = index.message_count - n_index
        if view.message_count != n_view + new:
            return None  # an omission note appeared, or a new message joined a replaced group
        for pos in range(n_index, index.message_count):
            if not view.is_original(index.group_of(pos).index):
                return None
        return self._out + self._source[n_source:]

    def _render_all(self) -> list[Any]:
        out: list[Any] = []
        pending: list[Message] = []
        rendered = self.view.render()
        i = 0
        while i < len(rendered):
            m = rendered[i]
            origin = self._original(m)
            if origin is not None and origin[1] == 0 and self._whole(rendered, i, origin):
                out.extend(self._flush(pending))
                out.append(self._source[origin[0]])
                i += origin[2]
                continue
            pending.append(m)
            i += 1
        out.extend(self._flush(pending))
        return out

    def _whole(self, rendered: Sequence[Message], i: int, origin: Origin) -> bool:
        pos, _, n = origin
        if n == 1:
            return True
        if i + n > len(rendered):
            return False
        return all(self._original(rendered[i + k]) == (pos, k, n) for k in range(n))

    def _original(self, m: Message) -> Origin | None:
        """Where `m` came from, if it is an original sent exactly as recorded."""
        if m.synthetic is not None or self._digests.get(m.id) != m.digest:
            return None
        return self._origin.get(m.id)

    def _flush(self, pending: list[Message]) -> list[Any]:
        if not pending:
            return []
        out = self._render(pending)
        pending.clear()
        return out

    def process(self, source: Sequence[Any]) -> list[Any]:
        """Sync, compact when due, render (one caller at a time)."""
        with self.lock:
            self.sync(source)
            self.compact()
            return self.render()

    async def aprocess(self, source: Sequence[Any]) -> list[Any]:
        """`process` for strategies that await a model."""
        async with self.alock:
            self.sync(source)
            await self.acompact()
            return self.render()

    @property
    def alock(self) -> asyncio.Lock:
        """Held while one coroutine syncs, compacts and renders: another conversation
        sharing this mirror must not swap the index in between."""
        if self._alock is None:
            self._alock = asyncio.Lock()
        return self._alock


# -- what the framework sends besides the conversation -----------------------------------


def preamble(instructions: str | None, tools: Sequence[Mapping[str, Any]] = ()) -> list[Message]:
    """The agent's instructions and tool schemas as pinned system messages.

    An adapter puts them first in its index so every trigger, target and budget counts
    what the provider really receives; they are never sent as messages (`is_preamble`).

    >>> [m.id for m in preamble("You fix tests.", [{"name": "ls"}])]
    ['kompakt-preamble:instructions', 'kompakt-preamble:tools']
    """
    out: list[Message] = []
    if instructions:
        out.append(Message.system(instructions, id=PREAMBLE + "instructions", pinned=True))
    if tools:
        out.append(Message.system(dumps(list(tools)), id=PREAMBLE + "tools", pinned=True))
    return out


def is_preamble(obj: Any) -> bool:
    """`obj` is one of the messages `preamble` made."""
    return isinstance(obj, Message) and obj.id.startswith(PREAMBLE)


def budget_of(compactor: Any) -> int | None:
    """The token budget `compactor` keeps to: a `Budgeted` strategy's, else its target's
    or trigger's token limit (None when it has none)."""
    c = as_compactor(compactor)
    budget = getattr(c.strategy, "token_budget", None)
    if isinstance(budget, int):
        return budget
    for rule in (c.target, c.trigger):
        limit = getattr(rule, "limit", None)
        if type(rule).__name__.startswith("Tokens") and isinstance(limit, int):
            return limit
    return None


def fit_preamble(
    compactor: Any, messages: list[Message], *, oversized: Oversized = "error"
) -> list[Message]:
    """`messages` (a `preamble`) when they leave at least a quarter of the budget to the
    conversation; else a `ConfigError`, or with ``oversized="clamp"`` the instructions cut
    to fit, with a warning.

    >>> from kompakt import Budgeted
    >>> fit_preamble(Budgeted(100), preamble("x" * 2_000))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    kompakt.errors.ConfigError: instructions and tool schemas take ... tokens, more than ...
    """
    if oversized not in ("error", "clamp"):
        raise ConfigError(f"`oversized` must be 'error' or 'clamp', got {oversized!r}")
    budget = budget_of(compactor)
    if budget is None or not messages:
        return messages
    from kompakt.tokens import CharEstimator

    tok = getattr(as_compactor(compactor), "tokenizer", None) or CharEstimator()
    room = budget - budget // 4
    used = sum(tok.count_message(m) for m in messages)
    if used <= room:
        return messages
    if oversized == "error":
        raise ConfigError(
            f"instructions and tool schemas take {used} tokens, more than the {room} a "
            f"{budget}-token budget leaves them: shorten them, raise the budget, "
            'or pass oversized="clamp"'
        )
    from kompakt.strategies.digest import clamp_tokens

    others = sum(tok.count_message(m) for m in messages if not m.id.endswith("instructions"))
    out = []
    for m in messages:
        if m.id.endswith("instructions"):
            limit = max(1, room - others - (tok.count_message(m) - tok.count_text(m.text)))
            m = m.evolve(content=clamp_tokens(m.text, limit, tok), id=m.id)
        out.append(m)
    warnings.warn(
        f"instructions and tool schemas take {used} tokens of a {budget}-token budget; "
        f"the instructions are cut to fit {room}",
        stacklevel=3,
    )
    return out


# -- several conversations through one adapter -------------------------------------------


class Conversations:
    """The mirrors of the conversations one adapter instance serves.

    A conversation is recognised by what it starts with: `find` returns the mirror whose
    messages so far are a prefix of `source` (the longest such), or a new mirror. Two
    conversations never share an index, so neither recompacts the other. The newest
    `limit` conversations are kept.
    """

    def __init__(
        self,
        make: Callable[[], Mirror],
        *,
        same: Callable[[Any, Any], bool] | None = None,
        limit: int = 256,
    ) -> None:
        self._make = make
        self._same = same
        self._limit = limit
        self._mirrors: OrderedDict[int, Mirror] = OrderedDict()
        self.events: list[Any] = []
        """Every compaction of every conversation, oldest first."""

    def __len__(self) -> int:
        return len(self._mirrors)

    def find(self, source: Sequence[Any]) -> tuple[Mirror, bool]:
        """The mirror for `source`, and whether it is new."""
        best: Mirror | None = None
        for mirror in self._mirrors.values():
            n = mirror.prefix_of(source, self._same)
            if n > 0 and (best is None or n > len(best.source)):
                best = mirror
        if best is not None:
            self._mirrors.move_to_end(id(best))
            return best, False
        mirror = self._make()
        mirror.events = self.events
        self._mirrors[id(mirror)] = mirror
        while len(self._mirrors) > self._limit:
            self._mirrors.popitem(last=False)
        return mirror, True
