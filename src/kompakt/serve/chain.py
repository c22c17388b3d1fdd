"""Recognising a conversation across requests: a hash chain over its messages.

Each provider message gets a fingerprint (a hash of its canonical JSON) and each
position a chain hash, ``chain[k] = H(chain[k-1] + fingerprint[k])``, so one chain hash
names a whole prefix. A conversation computes them once per message, as messages arrive.

A request is matched to the longest stored history it extends:

1. fast path: a request usually repeats the last one plus a few messages, so the last
   `PROBE` positions are looked up by (length, fingerprint of the message there) and the
   candidate verified by comparing its stored prefix (a C-speed list comparison);
2. otherwise the request's own chain is computed (O(n)) and looked up position by
   position: a match at a conversation's tip extends it; a match inside one (or a
   request shorter than it) is a fork, which starts a new branch.

>>> chains = Chains()
>>> a = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
>>> chains.add("c1", a, Chain(a))
>>> chains.find(a + [{"role": "user", "content": "more"}], {"c1": a})
Match(conversation='c1', length=2, fork=False)
>>> chains.find([a[0], {"role": "assistant", "content": "bye"}], {"c1": a})
Match(conversation='c1', length=1, fork=True)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["PROBE", "Chain", "Chains", "Match", "fingerprint"]

PROBE = 64
"""Positions looked up from the end of a request before computing its whole chain."""

_ROOT = b"\x00" * 16


def fingerprint(message: Any) -> bytes:
    """A 16-byte hash of a provider message's canonical JSON (key order ignored).

    >>> fingerprint({"a": 1, "b": 2}) == fingerprint({"b": 2, "a": 1})
    True
    """
    text = json.dumps(message, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def link(previous: bytes, print_: bytes) -> bytes:
    """The chain hash after `previous` for a message with fingerprint `print_`."""
    return hashlib.blake2b(previous + print_, digest_size=16).digest()


class Chain:
    """The fingerprints and chain hashes of one conversation's messages, grown by `extend`."""

    def __init__(self, messages: Sequence[Any] = ()) -> None:
        self.prints: list[bytes] = []
        self.hashes: list[bytes] = []
        self.extend(messages)

    def extend(self, messages: Sequence[Any]) -> None:
        last = self.hashes[-1] if self.hashes else _ROOT
        for m in messages:
            p = fingerprint(m)
            last = link(last, p)
            self.prints.append(p)
            self.hashes.append(last)

    def __len__(self) -> int:
        return len(self.hashes)


@dataclass(frozen=True)
class Match:
    """The stored conversation a request continues, and how much of it the request shares."""

    conversation: str
    length: int
    """Messages of the request that are the conversation's (a prefix of both)."""
    fork: bool
    """The request does not extend the conversation's whole history: a new branch."""


class Chains:
    """Chain hashes of every stored position of every conversation, for `find`."""

    def __init__(self) -> None:
        self._tips: dict[tuple[int, bytes], set[str]] = {}
        self._at: dict[bytes, tuple[str, int]] = {}
        self._tip_of: dict[str, tuple[int, bytes]] = {}

    def add(self, conversation: str, messages: Sequence[Any], chain: Chain, start: int = 0) -> None:
        """Register positions `start`.. of `conversation` (its `chain` already extended);
        `messages` is its whole stored message list."""
        for k in range(start, len(chain)):
            self._at.setdefault(chain.hashes[k], (conversation, k + 1))
        old = self._tip_of.pop(conversation, None)
        if old is not None:
            self._tips.get(old, set()).discard(conversation)
        if messages:
            tip = (len(messages), chain.prints[len(messages) - 1])
            self._tips.setdefault(tip, set()).add(conversation)
            self._tip_of[conversation] = tip

    def find(self, messages: Sequence[Any], stored: Mapping[str, Sequence[Any]]) -> Match | None:
        """The longest stored history `messages` shares a prefix with (`stored` maps a
        conversation to its messages), or None when they share nothing."""
        n = len(messages)
        for k in range(n, max(0, n - PROBE), -1):
            found = self._tips.get((k, fingerprint(messages[k - 1])))
            for cid in sorted(found or ()):
                have = stored.get(cid)
                if have is not None and len(have) == k and list(have) == list(messages[:k]):
                    return Match(cid, k, fork=False)
        best: Match | None = None
        last = _ROOT
        for k, m in enumerate(messages, 1):
            last = link(last, fingerprint(m))
            hit = self._at.get(last)
            if hit is None:
                break
            cid, _ = hit
            have = stored.get(cid)
            if have is None:
                break
            best = Match(cid, k, fork=len(have) != k)
        return best

    def forget(self, conversation: str, chain: Chain) -> None:
        """Drop a conversation's positions (when it leaves memory)."""
        for h in chain.hashes:
            if self._at.get(h, ("", 0))[0] == conversation:
                del self._at[h]
        tip = self._tip_of.pop(conversation, None)
        if tip is not None:
            self._tips.get(tip, set()).discard(conversation)
