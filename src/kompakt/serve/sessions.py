"""`Sessions`: which conversation a request belongs to, and its new originals taken in.

A request names its conversation with ``X-Kompakt-Session``, or is matched to the
longest stored history it extends (see `kompakt.serve.chain`). A request that shares
only part of a history (an edit, a retry of an older turn, two branches from one point)
starts a new branch with the parent recorded: two branches never mix.

Most requests repeat the last one's bytes and add a few messages: `follow` recognises
them by those bytes (`kompakt.serve.body`) and parses only what is new; `claim` is the
full path for everything else.

At most `max_conversations` are kept in memory, the least recently used let go first.
One let go is rebuilt from the store when a request continues it: its originals are
read back and checked against the request's, and its last compaction record puts back
the view it sent, so the prefix sent upstream is the same as before.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from kompakt.compactor import Compactor
from kompakt.errors import FormatError, KompaktError
from kompakt.messages import Message
from kompakt.serve.body import Body
from kompakt.serve.chain import PROBE, Chains, fingerprint
from kompakt.serve.config import Api
from kompakt.serve.conversation import SYSTEM_KEY, Conversation
from kompakt.store import CompactionRecord, HistoryStore

__all__ = ["Sessions"]

_ATTEMPTS = 3
_HEAD = 128
"""Bytes a body starts with that pick the conversations it may follow."""
_REMEMBERED = 16
"""Conversations let go whose tips (and names) are remembered, per one kept in memory."""


class Sessions:
    """The conversations in memory, found by name, by the bytes a request repeats, or by
    chain; the `max_conversations` most recently used are kept."""

    def __init__(
        self,
        make_compactor: Callable[[], Compactor],
        *,
        store: HistoryStore | None = None,
        max_conversations: int = 256,
        max_timeline: int = 500,
    ) -> None:
        self.make_compactor = make_compactor
        self.store = store
        """Where originals go; a name already used there gets a new branch unless the
        request continues it, and conversations let go are rebuilt from it."""
        self.max_conversations = max_conversations
        self.max_timeline = max_timeline
        self.conversations: OrderedDict[str, Conversation] = OrderedDict()
        """In memory, least recently used first."""
        self.chains = Chains()
        self.followed = 0
        """Requests read from where their conversation's last body ended (`follow`)."""
        self.released = 0
        """Conversations let go so far."""
        self.rebuilt = 0
        """Conversations rebuilt from the store so far."""
        self._named: OrderedDict[str, str] = OrderedDict()
        self._branches: dict[str, int] = {}
        self._heads: dict[bytes, set[str]] = {}
        self._head_of: dict[str, bytes] = {}
        self._gone: OrderedDict[tuple[int, bytes], str] = OrderedDict()

    def get(self, cid: str) -> Conversation | None:
        return self.conversations.get(cid)

    # -- the fast path: a request that repeats the last one's bytes ----------------------

    async def follow(
        self, api: Api, raw: bytes, name: str | None
    ) -> tuple[Conversation, Body, list[Message]] | None:
        """The conversation whose last request `raw` repeats byte for byte, with more
        messages after it: locked, the new messages taken in; the body (parsed only
        where new) and the new originals. None when no conversation's last body is a
        prefix of `raw`: use `claim`. Release with ``conversation.lock.release()``."""
        for conv in self._candidates(raw, name):
            known = conv.body
            body = known.follow(raw) if known is not None and conv.api == api else None
            if body is None:
                continue
            items = conv.continued(body.new)
            if items is None or _elsewhere(api, body.fields, conv):
                return None
            await conv.lock.acquire()
            if conv.body is not known:  # another request of it went first
                conv.lock.release()
                return None
            n = len(conv.items)
            try:
                new = conv.take(items)
            except BaseException:
                conv.lock.release()
                raise
            self._taken(conv, n, body)
            self.followed += 1
            return conv, body, new
        return None

    def _candidates(self, raw: bytes, name: str | None) -> list[Conversation]:
        if name is not None:
            cid = self._named.get(name)
            conv = self.conversations.get(cid) if cid is not None else None
            return [] if conv is None else [conv]
        ids = self._heads.get(raw[:_HEAD], ())
        convs = [self.conversations[c] for c in ids]
        convs.sort(key=lambda c: -c.body.end if c.body is not None else 0)
        return convs

    # -- the full path -----------------------------------------------------------------

    async def claim(
        self, api: Api, source: Sequence[Any], name: str | None, body: Body | None = None
    ) -> tuple[Conversation, list[Message]]:
        """The conversation `source` continues (or a new one), locked, with `source`
        taken in; returns it and the originals that are new. `body` is the request's
        body located, when it could be (the next request is then read from where it
        ends). Release with ``conversation.lock.release()``."""
        for _ in range(_ATTEMPTS):
            conv = await self._find(api, source, name)
            seen = len(conv.items)  # `_find` checked these against `source`
            await conv.lock.acquire()
            # items only ever grow: the same length means the same items
            if len(conv.items) == seen or self._extends(conv, source):
                break
            conv.lock.release()
        else:  # raced every time: a branch of its own is always right
            conv = self._new(api, name, parent=None, fork_at=0)
            await conv.lock.acquire()
        n = len(conv.items)
        try:
            new = conv.take(source[n:])
        except BaseException:
            conv.lock.release()
            raise
        self._taken(conv, n, body)
        return conv, new

    def _extends(self, conv: Conversation, source: Sequence[Any]) -> bool:
        have = conv.items
        return len(have) <= len(source) and have == list(source[: len(have)])

    async def _find(self, api: Api, source: Sequence[Any], name: str | None) -> Conversation:
        if name is not None:
            cid = self._named.get(name)
            conv = self.conversations.get(cid) if cid is not None else None
            if conv is None:
                rebuilt = await self._rebuild(api, cid or name, source)
                if rebuilt is not None:
                    self._name(name, rebuilt.id)
                    return rebuilt
                return self._new(api, name, parent=None, fork_at=0, id=name)
            if conv.api == api and self._extends(conv, source):
                return conv
            shared = _shared(conv.items, source)
            return self._new(api, name, parent=conv.id, fork_at=shared)
        stored = {c.id: c.items for c in self.conversations.values() if c.api == api}
        match = self.chains.find(source, stored)
        if match is not None and not match.fork:
            return self.conversations[match.conversation]
        gone = self._let_go_tip(source)
        if gone is not None and (match is None or gone[1] > match.length):
            rebuilt = await self._rebuild(api, gone[0], source)
            if rebuilt is not None:
                return rebuilt
        if match is None:
            return self._new(api, None, parent=None, fork_at=0)
        return self._new(api, None, parent=match.conversation, fork_at=match.length)

    def _taken(self, conv: Conversation, n: int, body: Body | None) -> None:
        """Note what `conv` took in from position `n` on, and that it was used."""
        self.chains.add(conv.id, conv.items, conv.chain, n)
        self._unhead(conv.id)
        conv.body = body
        if body is not None and body.end >= _HEAD:
            head = body.raw[:_HEAD]
            self._heads.setdefault(head, set()).add(conv.id)
            self._head_of[conv.id] = head
        self._keep(conv)

    # -- memory: the most recently used, the rest rebuilt from the store ----------------

    def _keep(self, conv: Conversation) -> None:
        """`conv` is the most recently used; let go of the least used over the limit."""
        self.conversations[conv.id] = conv
        self.conversations.move_to_end(conv.id)
        over = len(self.conversations) - self.max_conversations
        if over <= 0:
            return
        idle = [c for c in self.conversations.values() if c is not conv and c.idle]
        for old in idle[:over]:
            self._let_go(old)

    def _let_go(self, conv: Conversation) -> None:
        del self.conversations[conv.id]
        self.chains.forget(conv.id, conv.chain)
        self._unhead(conv.id)
        conv.body = None
        if conv.items:
            self._gone[(len(conv.items), conv.chain.prints[-1])] = conv.id
            while len(self._gone) > self.max_conversations * _REMEMBERED:
                self._gone.popitem(last=False)
        self.released += 1

    def _let_go_tip(self, source: Sequence[Any]) -> tuple[str, int] | None:
        """A conversation let go whose whole history `source` may extend, and its length."""
        if not self._gone:
            return None
        n = len(source)
        for k in range(n, max(0, n - PROBE), -1):
            cid = self._gone.get((k, fingerprint(source[k - 1])))
            if cid is not None:
                return cid, k
        return None

    async def _rebuild(self, api: Api, cid: str, source: Sequence[Any]) -> Conversation | None:
        """Conversation `cid` read back from the store, when `source` continues it."""
        if self.store is None or cid in self.conversations:
            return None
        loaded = await asyncio.to_thread(_load, self.store, cid)
        if loaded is None or cid in self.conversations:  # rebuilt by another meanwhile
            return None
        stored, records, meta = loaded
        if meta.get("api", api) != api:
            return None
        conv = Conversation(
            api,
            self.make_compactor(),
            id=cid,
            parent=meta.get("parent"),
            fork_at=int(meta.get("fork_at", 0)),
            max_timeline=self.max_timeline,
        )
        conv.model = str(meta.get("model", ""))
        try:
            if conv.rebuild(source, stored) is None:
                return None
        except FormatError:
            return None
        if records:
            conv.restore(records[-1])
            conv.stats.compactions = len(records)
        self._gone = OrderedDict((k, v) for k, v in self._gone.items() if v != cid)
        self._taken(conv, 0, None)
        self.rebuilt += 1
        return conv

    # -- new conversations ---------------------------------------------------------------

    def _new(
        self, api: Api, name: str | None, *, parent: str | None, fork_at: int, id: str | None = None
    ) -> Conversation:
        if id is not None and (id in self.conversations or self._exists(id)):
            id = None
        while id is None and name is not None:
            n = self._branches.get(name, 1) + 1
            self._branches[name] = n
            id = f"{name}~b{n}"
            if id in self.conversations or self._exists(id):
                id = None
        conv = Conversation(
            api,
            self.make_compactor(),
            id=id,
            parent=parent,
            fork_at=fork_at,
            max_timeline=self.max_timeline,
        )
        self._keep(conv)
        if name is not None:
            self._name(name, conv.id)
        return conv

    def _exists(self, cid: str) -> bool:
        """The store holds a session `cid` (a name used before a restart that the request
        does not continue gets a new branch: originals of two runs never mix)."""
        return self.store is not None and self.store.count(cid) > 0

    def _name(self, name: str, cid: str) -> None:
        self._named[name] = cid
        self._named.move_to_end(name)
        while len(self._named) > self.max_conversations * _REMEMBERED:
            self._named.popitem(last=False)

    def _unhead(self, cid: str) -> None:
        head = self._head_of.pop(cid, None)
        if head is not None:
            ids = self._heads.get(head)
            if ids is not None:
                ids.discard(cid)
                if not ids:
                    del self._heads[head]


def _elsewhere(api: Api, fields: dict[str, Any], conv: Conversation) -> bool:
    """A request's fields put part of its conversation outside the array, other than
    `conv` has it: Anthropic's ``system``, the Responses ``instructions``, or a Responses
    request continuing a response the upstream holds."""
    if api == "anthropic":
        return bool(fields.get("system") != conv.items[0][SYSTEM_KEY])
    if api == "responses":
        return bool(
            fields.get("instructions") != conv.items[0][SYSTEM_KEY]
            or fields.get("previous_response_id") is not None
        )
    return False


def _load(
    store: HistoryStore, cid: str
) -> tuple[list[Message], list[CompactionRecord], dict[str, Any]] | None:
    """A session's originals, compaction records and metadata (None when it has none)."""
    try:
        if store.count(cid) == 0:
            return None
        return store.messages(cid), store.compactions(cid), dict(store.metadata(cid))
    except KompaktError:
        return None


def _shared(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many leading items `a` and `b` have in common."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
