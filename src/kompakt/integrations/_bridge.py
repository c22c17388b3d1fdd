"""What every framework adapter shares: lazy imports, JSON helpers and the `Mirror`.

A `Mirror` keeps a `MessageIndex` in step with a framework's growing message list:
only messages it has not seen are converted and appended (the prefix is recognised
by object identity, which costs one pointer comparison per message), the compactor
runs on the index when its trigger fires, and the compacted view is turned back into
framework messages, reusing the framework's own objects for every original so the
model receives exactly what the framework recorded.

For adapters that keep kompakt's state in the framework's own storage: `Mirror.record`
is the view as JSON (its notes and what they stand in for), `Mirror.restore` puts it
back on a mirror rebuilt from the same messages, and `Overhead` is what a framework
sends besides its messages (instructions, tool schemas), counted as a system message
that is never rendered back. `Conversations` keeps one mirror per conversation, found by
the framework's name for it (a thread, a session) or, where it names none, by the
messages it starts with.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import hashlib
import importlib
import json
import threading
import uuid
import warnings
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Literal

from kompakt.errors import BudgetImpossible, ConfigError, MissingDependency
from kompakt.index import MessageIndex
from kompakt.messages import Message
from kompakt.overflow import Overflow
from kompakt.view import View

__all__ = [
    "Conversations",
    "Mirror",
    "Origin",
    "Overhead",
    "Oversize",
    "as_compactor",
    "as_text",
    "budget_of",
    "count_text",
    "dumps",
    "fit_overhead",
    "loads_or_text",
    "overhead_of",
    "oversize_option",
    "require",
    "strip_overhead",
]

Oversize = Literal["clamp", "raise"]
Mode = Literal["view", "permanent"]
"""What an adapter compacts: the model's input only, or the framework's state too."""
"""What an adapter does when what the framework always sends (instructions, tool
schemas) leaves no room in the budget: clamp it with a warning, or raise."""


def oversize_option(value: str) -> Oversize:
    """`value` checked as an `Oversize` (a `ConfigError` naming the option otherwise).

    >>> oversize_option("raise")
    'raise'
    """
    if value == "clamp":
        return "clamp"
    if value == "raise":
        return "raise"
    raise ConfigError(f"`oversize` must be 'clamp' or 'raise', got {value!r}")


def mode_option(value: str) -> Mode:
    """`value` checked as an adapter's `Mode` (a `ConfigError` naming the option otherwise).

    >>> mode_option("permanent")
    'permanent'
    """
    if value == "view":
        return "view"
    if value == "permanent":
        return "permanent"
    raise ConfigError(f"`mode` must be 'view' or 'permanent', got {value!r}")


Origin = tuple[int, int, int]
"""Where a kompakt message came from: (position in the source list, part, parts)."""

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
    except (ValueError, RecursionError):
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
        carry: bool = False,
        lenient: bool = False,
    ) -> None:
        self.template = as_compactor(compactor)
        self.carry = carry
        """On a rebuild (the source was edited), keep the view's notes (`record`/`restore`)."""
        self.lenient = lenient
        """When the protected core alone exceeds the budget, warn and send the smallest
        view the strategy reaches instead of raising `BudgetImpossible` mid-run."""
        self.own_events: list[Any] = []
        """The compactions of this mirror's conversation only."""
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
        self.rev: str | None = None
        """Names the view's current edits (a new one per compaction, the record's on
        `restore`); None while nothing was compacted."""

    # -- keeping up with the framework -------------------------------------------------

    def sync(self, source: Sequence[Any]) -> int:
        """Take in `source`; returns how many of its messages were new.

        When `source` no longer starts with what was seen (a message was edited,
        removed or inserted), the index is rebuilt from scratch.
        """
        seen = self._source
        n = len(seen)
        carried: dict[str, Any] | None = None
        if len(source) < n or not self._prefix(source):
            carried = self.record() if self.carry else None
            self._reset()
            seen, n = self._source, 0
        for pos in range(n, len(source)):
            self._take(source[pos], self._parts(source[pos], pos))
        if carried is not None:
            self.restore(carried)
        return len(source) - n

    def extend(self, items: Sequence[Any]) -> list[Message]:
        """Take in `items` that follow what was seen (the caller knows they do, so
        nothing seen is compared again); returns the new originals. Each item is
        converted before any is taken, so one that does not convert leaves the mirror
        as it was."""
        n = len(self._source)
        parts = [self._parts(obj, n + k) for k, obj in enumerate(items)]
        return [m for obj, p in zip(items, parts, strict=True) for m in self._take(obj, p)]

    def _parts(self, obj: Any, pos: int) -> list[Message]:
        return [obj.message] if isinstance(obj, Overhead) else self._convert(obj, pos)

    def _take(self, obj: Any, parts: list[Message]) -> list[Message]:
        pos = len(self._source)
        stored = self.index.extend(parts)
        for k, m in enumerate(stored):
            self._origin[m.id] = (pos, k, len(stored))
            self._digests[m.id] = m.digest
        self._source.append(obj)
        return stored

    def _prefix(self, source: Sequence[Any]) -> bool:
        """`source` starts with what was seen (a rebuilt but same message replaces its twin)."""
        seen = self._source
        for i, (a, b) in enumerate(zip(seen, source, strict=False)):
            if a is b or (isinstance(a, Overhead) and a == b):
                continue  # an equal overhead renders as nothing: no need to swap it in
            if not self._matches(a, b):
                return False
            seen[i] = b  # render the framework's current object
            self._out = None
        return True

    def _matches(self, a: Any, b: Any) -> bool:
        """`b` is `a` seen again (an equal `Overhead`, or the same message by `same`)."""
        if a is b:
            return True
        if isinstance(a, Overhead) or isinstance(b, Overhead):
            return bool(a == b)
        return self._same is not None and bool(self._same(a, b))

    @property
    def source(self) -> list[Any]:
        """The framework messages taken in so far (an `Overhead` first, when given)."""
        return self._source

    def prefix_of(self, source: Sequence[Any]) -> int:
        """How many messages were taken in, when `source` starts with them (else -1)."""
        seen = self._source
        if not seen or len(source) < len(seen):
            return -1
        if all(self._matches(a, b) for a, b in zip(seen, source, strict=False)):
            return len(seen)
        return -1

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
        try:
            _, event = self.compactor.compact(self.index)
        except BudgetImpossible as e:
            if not self.lenient:
                raise
            _, event = self._lenient(e).compact(self.index)
        self._ran(event)
        return True

    async def acompact(self) -> bool:
        """`compact` for strategies that await a model."""
        if not self.due():
            return False
        try:
            _, event = await self.compactor.compact_async(self.index)
        except BudgetImpossible as e:
            if not self.lenient:
                raise
            _, event = await self._lenient(e).compact_async(self.index)
        self._ran(event)
        return True

    # -- after the provider refused a request as too long ---------------------------------

    def tighten(self, overflow: Overflow) -> View:
        """Compact what is sent to fit under the `overflow` the provider reported
        (`compact_for_retry` with the compactor's strategy, never lenient: what cannot fit
        raises `BudgetImpossible`); the event, its `overflow` set, joins `events`. Returns
        the view sent next."""
        from kompakt.recovery import compact_for_retry

        view, event = compact_for_retry(self.view, overflow=overflow, **self._retry_options())
        return self._adopt(view, event)

    async def atighten(self, overflow: Overflow) -> View:
        """`tighten` for strategies that await a model."""
        from kompakt.recovery import compact_for_retry_async

        view, event = await compact_for_retry_async(
            self.view, overflow=overflow, **self._retry_options()
        )
        return self._adopt(view, event)

    def _retry_options(self) -> dict[str, Any]:
        # the template's strategy: a lenient copy (`_lenient`) must not loosen a retry
        return {
            "strategy": getattr(self.template, "strategy", None),
            "summarizer": getattr(self.compactor, "summarizer", None),
        }

    def _adopt(self, view: View, event: Any) -> View:
        # the compactor's persistent view: later compactions build on it
        self.compactor.adopt(view)
        self._ran(event)
        return view

    def _ran(self, event: Any) -> None:
        self.events.append(event)
        self.own_events.append(event)
        self._out = None
        if event.changed:
            self.rev = uuid.uuid4().hex

    def _lenient(self, error: BudgetImpossible) -> Any:
        """The compactor, its runs no longer strict (`Overrides.strict`): the view shrinks
        to the core."""
        warnings.warn(f"kompakt: {error}; sending the smallest view that keeps it", stacklevel=4)
        self.compactor.overrides = dataclasses.replace(self.compactor.overrides, strict=False)
        return self.compactor

    # -- the view as data -----------------------------------------------------------------

    def record(self) -> dict[str, Any] | None:
        """The view's edits as JSON-ready data (None while nothing was compacted):
        ``{"rev", "synthetic", "dropped", "upto"}``, what `restore` takes."""
        view = self.compactor.view
        if view is None or view.index is not self.index or not view.changed:
            return None
        from kompakt.store.base import CompactionRecord

        data = CompactionRecord.from_view(view).to_dict()
        return {"rev": self.rev or uuid.uuid4().hex, **_pick(data, "synthetic", "dropped", "upto")}

    def restore(self, record: Mapping[str, Any]) -> None:
        """Put `record`'s edits on the view of what was synced (ids it names that are not
        here are ignored): a mirror rebuilt from the framework's stored messages sends
        what the one that wrote `record` would have sent."""
        from kompakt.store.base import CompactionRecord, apply_record

        self.compactor.reset()
        view = self.compactor.view_for(self.index)
        apply_record(view, CompactionRecord.from_dict(record))
        for g in self.index.groups:
            if not view.is_original(g.index) and not _answered(view.rendered(g.index)):
                view.restore(g.index)  # its notes named originals no longer here
        self.rev = str(record.get("rev") or "") or None
        self._out = None

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


def _answered(messages: Sequence[Message]) -> bool:
    """Every tool call in `messages` has its result among them, and every result its call."""
    calls = {c.id for m in messages for c in m.tool_calls}
    results = {m.tool_call_id for m in messages if m.role == "tool"}
    return calls == results


def _pick(d: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    return {k: d[k] for k in keys if k in d}


class Overhead:
    """What a framework sends on every request besides its messages (instructions,
    tool schemas): put first in a mirror's source, it is counted as a system message
    (always kept) and `strip_overhead` takes it out of what is rendered.

    >>> Overhead("You debug.") == Overhead("You debug."), Overhead("a").message.role
    (True, 'system')
    """

    __slots__ = ("id", "message", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        digest = hashlib.sha1(text.encode("utf-8", "surrogatepass"), usedforsecurity=False)
        self.id = "kompakt-overhead-" + digest.hexdigest()[:16]
        self.message = Message.system(text, id=self.id)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Overhead) and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)

    def __repr__(self) -> str:
        return f"Overhead({len(self.text)} chars)"


def strip_overhead(rendered: Sequence[Any]) -> list[Any]:
    """`rendered` without the `Overhead` put in front of the source."""
    return [m for m in rendered if not isinstance(m, Overhead)]


def budget_of(compactor: Any) -> int | None:
    """The token budget `compactor` keeps to: a `Budgeted` strategy's, else its target's
    or trigger's token limit (None when it has none).

    >>> from kompakt import Budgeted, Compactor, TokensExceed
    >>> tripped = Compactor(trigger=TokensExceed(4_000), strategy="collapse_tool_results")
    >>> budget_of(Budgeted(900)), budget_of(tripped)
    (900, 4000)
    """
    from kompakt.strategies.base import token_budget_of
    from kompakt.triggers import TokensBelow, TokensExceed

    c = as_compactor(compactor)
    budget = token_budget_of(c.strategy)
    if budget is not None:
        return budget
    for rule in (c.target, c.trigger):
        if isinstance(rule, (TokensBelow, TokensExceed)):
            return rule.limit
    return None


def fit_overhead(
    text: str,
    compactor: Any,
    *,
    oversize: Oversize,
    what: str,
    share: float = 0.5,
    reserved: int = 0,
) -> str:
    """`text` (a system prompt or instructions a framework always sends), or, when it
    and the `reserved` tokens sent with it (tool schemas) take more than `share` of the
    budget, a clamped copy with a warning (``oversize="clamp"``) or `BudgetImpossible`
    (``oversize="raise"``).

    >>> from kompakt import Budgeted
    >>> fit_overhead("short", Budgeted(1_000), oversize="raise", what="instructions")
    'short'
    """
    oversize = oversize_option(oversize)
    budget = budget_of(compactor)
    if budget is None:
        return text
    tokens = count_text(compactor, text)
    room = int(budget * share)
    if tokens + reserved <= room:
        return text
    if oversize == "raise":
        parts = {what: tokens, "tool schemas": reserved}
        raise BudgetImpossible(budget, tokens + reserved, parts)
    keep = max(0, len(text) * max(room - reserved, 0) // max(tokens, 1) - 80)
    warnings.warn(
        f"kompakt: {what} and tool schemas take {tokens + reserved} tokens, more than "
        f"{share:.0%} of the {budget}-token budget; {what} cut to fit, to the first {keep} "
        "characters (oversize='raise' makes this an error)",
        stacklevel=3,
    )
    if not text:
        return text  # the tool schemas alone: nothing kompakt may cut
    return text[:keep] + f"\n[... {what} clamped by kompakt to fit the budget]"


def overhead_of(
    compactor: Any,
    instructions: str | None,
    schemas: Sequence[Mapping[str, Any]],
    *,
    oversize: Oversize,
) -> tuple[str | None, Overhead | None]:
    """`instructions` fitted to the budget (`fit_overhead`, the tool `schemas` counted
    with them), and the `Overhead` standing for both (None when there is neither).

    >>> from kompakt import Budgeted
    >>> text, head = overhead_of(Budgeted(1_000), "You debug.", [{"name": "ls"}],
    ...                          oversize="raise")
    >>> text, head.text.splitlines()
    ('You debug.', ['You debug.', '', '[{"name": "ls"}]'])
    """
    tools = dumps(list(schemas)) if schemas else ""
    reserved = count_text(compactor, tools)
    fitted = fit_overhead(
        instructions or "", compactor, oversize=oversize, what="instructions", reserved=reserved
    )
    text = "\n\n".join(t for t in (fitted, tools) if t)
    return (fitted if instructions is not None else None), (Overhead(text) if text else None)


def count_text(compactor: Any, text: str) -> int:
    """Tokens of `text` by `compactor`'s tokenizer (kompakt's estimate when it has none)."""
    tokenizer = getattr(as_compactor(compactor), "tokenizer", None)
    if tokenizer is None:
        from kompakt.tokens import CharEstimator

        tokenizer = CharEstimator()
    return int(tokenizer.count_text(text)) if text else 0


class Conversations:
    """One `Mirror` per conversation, the `limit` most recently used kept; every mirror
    appends its events to one shared list. A conversation is found by the framework's name
    for it (`get`: a thread id, a session) or, where it names none, by the messages it
    starts with (`find`); two conversations never share an index, so neither recompacts
    the other.

    >>> from kompakt import Budgeted
    >>> pool = Conversations(lambda events: Mirror(Budgeted(900), lambda m, p: [m], list,
    ...                                            events=events))
    >>> pool.get("a") is pool.get("a"), pool.get("a") is pool.get("b")
    (True, False)
    """

    def __init__(self, make: Callable[[list[Any]], Mirror], *, limit: int = 128) -> None:
        self._make = make
        self._limit = limit
        self._mirrors: OrderedDict[Hashable, Mirror] = OrderedDict()
        self._lock = threading.Lock()
        self.events: list[Any] = []
        """Every compaction of every conversation, oldest first."""

    def get(self, key: Hashable) -> Mirror:
        """The mirror of conversation `key` (made on first use)."""
        with self._lock:
            mirror = self._mirrors.pop(key, None)
            if mirror is None:
                mirror = self._new()
            self._mirrors[key] = mirror
            return mirror

    def find(self, source: Sequence[Any]) -> tuple[Mirror, bool]:
        """The mirror whose messages so far are the longest prefix of `source` (among
        those `find` made), or a new one; and whether it is new."""
        with self._lock:
            best: tuple[Hashable, Mirror] | None = None
            for key, mirror in self._mirrors.items():
                if isinstance(key, _Unnamed):
                    n = mirror.prefix_of(source)
                    if n > 0 and (best is None or n > len(best[1].source)):
                        best = key, mirror
            if best is not None:
                self._mirrors.move_to_end(best[0])
                return best[1], False
            mirror = self._new()
            self._mirrors[_Unnamed(id(mirror))] = mirror
            return mirror, True

    def _new(self) -> Mirror:
        while len(self._mirrors) >= self._limit:
            self._mirrors.popitem(last=False)
        return self._make(self.events)

    def move(self, old: Hashable, new: Hashable) -> None:
        """Conversation `old` is known as `new` from now on."""
        with self._lock:
            mirror = self._mirrors.pop(old, None)
            if mirror is not None:
                self._mirrors[new] = mirror

    def drop(self, key: Hashable) -> None:
        """Forget conversation `key` (its next call rebuilds from the framework's state)."""
        with self._lock:
            self._mirrors.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return key in self._mirrors

    def __len__(self) -> int:
        return len(self._mirrors)

    def __getitem__(self, key: Hashable) -> Mirror:
        return self._mirrors[key]


@dataclass(frozen=True)
class _Unnamed:
    """The key of a conversation `Conversations.find` recognised by its messages."""

    id: int
