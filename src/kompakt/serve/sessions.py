"""`Sessions`: which conversation a request belongs to, and its new originals taken in.

A request names its conversation with ``X-Kompakt-Session``, or is matched to the
longest stored history it extends (see `kompakt.serve.chain`). A request that shares
only part of a history (an edit, a retry of an older turn, two branches from one point)
starts a new branch with the parent recorded: two branches never mix.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from kompakt.compactor import Compactor
from kompakt.messages import Message
from kompakt.serve.chain import Chains
from kompakt.serve.config import Api
from kompakt.serve.conversation import Conversation

__all__ = ["Sessions"]

_ATTEMPTS = 3


class Sessions:
    """The conversations in memory, found by name or by chain."""

    def __init__(
        self,
        make_compactor: Callable[[], Compactor],
        *,
        exists: Callable[[str], bool] = lambda cid: False,
        max_timeline: int = 500,
    ) -> None:
        self.make_compactor = make_compactor
        self.exists = exists
        """Whether the store already holds a session with this id (a name used before a
        restart gets a new branch: originals of two runs never mix)."""
        self.max_timeline = max_timeline
        self.conversations: dict[str, Conversation] = {}
        self.chains = Chains()
        self._named: dict[str, str] = {}
        self._branches: dict[str, int] = {}

    def get(self, cid: str) -> Conversation | None:
        return self.conversations.get(cid)

    async def claim(
        self, api: Api, source: Sequence[Any], name: str | None
    ) -> tuple[Conversation, list[Message]]:
        """The conversation `source` continues (or a new one), locked, with `source`
        taken in; returns it and the originals that are new. Release with
        ``conversation.lock.release()``."""
        for _ in range(_ATTEMPTS):
            conv = self._find(api, source, name)
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
        new = conv.take(source)
        self.chains.add(conv.id, conv.items, conv.chain, n)
        return conv, new

    def _extends(self, conv: Conversation, source: Sequence[Any]) -> bool:
        have = conv.items
        return len(have) <= len(source) and have == list(source[: len(have)])

    def _find(self, api: Api, source: Sequence[Any], name: str | None) -> Conversation:
        if name is not None:
            cid = self._named.get(name)
            conv = self.conversations.get(cid) if cid is not None else None
            if conv is None:
                return self._new(api, name, parent=None, fork_at=0, id=name)
            if conv.api == api and self._extends(conv, source):
                return conv
            shared = _shared(conv.items, source)
            return self._new(api, name, parent=conv.id, fork_at=shared)
        stored = {c.id: c.items for c in self.conversations.values() if c.api == api}
        match = self.chains.find(source, stored)
        if match is None:
            return self._new(api, None, parent=None, fork_at=0)
        if not match.fork:
            return self.conversations[match.conversation]
        return self._new(api, None, parent=match.conversation, fork_at=match.length)

    def _new(
        self, api: Api, name: str | None, *, parent: str | None, fork_at: int, id: str | None = None
    ) -> Conversation:
        if id is not None and (id in self.conversations or self.exists(id)):
            id = None
        while id is None and name is not None:
            n = self._branches.get(name, 1) + 1
            self._branches[name] = n
            id = f"{name}~b{n}"
            if id in self.conversations or self.exists(id):
                id = None
        conv = Conversation(
            api,
            self.make_compactor(),
            id=id,
            parent=parent,
            fork_at=fork_at,
            max_timeline=self.max_timeline,
        )
        self.conversations[conv.id] = conv
        if name is not None:
            self._named[name] = conv.id
        return conv


def _shared(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many leading items `a` and `b` have in common."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
