"""The history store protocol: every original message, kept forever, plus which view is current.

A store holds *sessions*. Each session is an append-only list of original messages
numbered 0, 1, 2 ... (the sequence number), a list of *compaction records* (each says
which synthetic messages stand in for which originals, and which originals are not
sent at all), and free-form metadata. Nothing is ever rewritten: compaction adds a
record, the originals stay, and `search` / `recall` find them again verbatim.

>>> from kompakt.store import MemoryStore
>>> from kompakt.messages import Message
>>> store = MemoryStore()
>>> store.append("s1", [Message.user("the build fails with TimeoutError"), Message.assistant("ok")])
[0, 1]
>>> [m.role for m in store.messages("s1")]
['user', 'assistant']
>>> [m.text for m in store.search("s1", "TimeoutError")]
['the build fails with TimeoutError']

A writer that passes `expected_count` (the count it last read) never interleaves its
messages with another writer's:

>>> from kompakt.errors import SessionConflict
>>> try:
...     store.append("s1", [Message.user("late")], expected_count=1)
... except SessionConflict as e:
...     print(e.expected, e.found)
1 2
"""

from __future__ import annotations

import re
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, Self, TypeAlias, runtime_checkable

from kompakt._deprecation import renamed
from kompakt.errors import InputError, SessionConflict
from kompakt.index import MessageIndex
from kompakt.messages import Message
from kompakt.store import _codec
from kompakt.store.records import CompactionRecord, SessionInfo, apply_record, event_summary
from kompakt.tokens import CharEstimator, Tokenizer
from kompakt.view import View

__all__ = [
    "BaseStore",
    "CompactionRecord",
    "HistoryStore",
    "MessageLike",
    "SessionInfo",
    "apply_record",
    "event_summary",
]

MessageLike: TypeAlias = "Message | Mapping[str, Any]"
"""What `append` takes: a `Message`, or a dict in any format `kompakt.loads` parses."""


@runtime_checkable
class HistoryStore(Protocol):
    """Where an agent's history lives: sessions of append-only originals, compaction
    records, metadata, full-text search and recall.

    Implementations: `MemoryStore`, `SQLiteStore` (the embedded default) and
    `PostgresStore`; all pass the same test suite.
    """

    def create_session(
        self, session: str | None = None, *, metadata: Mapping[str, Any] | None = None
    ) -> str:
        """Create a session (a fresh id when `session` is None); returns its id.

        Creating one that exists merges `metadata` into it.
        """
        ...

    def list_sessions(self) -> list[SessionInfo]:
        """Every session, oldest first."""
        ...

    def delete_session(self, session: str) -> bool:
        """Delete a session with its messages and records; False if it did not exist."""
        ...

    def metadata(self, session: str) -> dict[str, Any]:
        """The session's metadata ({} for an unknown session)."""
        ...

    def set_metadata(self, session: str, metadata: Mapping[str, Any]) -> None:
        """Merge `metadata` into the session's (a None value removes a key)."""
        ...

    def append(
        self,
        session: str,
        messages: Iterable[MessageLike],
        *,
        expected_count: int | None = None,
    ) -> list[int]:
        """Append originals (creating the session if needed); returns their sequence numbers.

        Ids already used in the session get ``~2``, ``~3`` ... as `MessageIndex` does.
        With `expected_count` (how many originals the writer last read, so the first new
        sequence number) the append is optimistic: when the session holds another count,
        another writer got there first, nothing is written and `SessionConflict` is raised.
        """
        ...

    def count(self, session: str) -> int:
        """How many originals the session holds."""
        ...

    def messages(self, session: str, start: int = 0, end: int | None = None) -> list[Message]:
        """Originals with sequence numbers in ``[start, end)``, in order."""
        ...

    def get(self, session: str, message_id: str) -> Message | None:
        """The original with this id, or None."""
        ...

    def record_compaction(self, session: str, record: CompactionRecord) -> int:
        """Store which view is current; returns the record's id."""
        ...

    def compactions(self, session: str) -> list[CompactionRecord]:
        """Every compaction record of the session, oldest first."""
        ...

    def current_view(self, session: str, *, tokenizer: Tokenizer | None = None) -> View:
        """The session's current view: all originals with the latest record applied."""
        ...

    def search(self, session: str, query: str, *, limit: int = 10) -> list[Message]:
        """Originals matching `query` (tool results included), best first."""
        ...

    def recall(
        self,
        session: str,
        query: str | None = None,
        *,
        ids: Sequence[str] = (),
        max_tokens: int = 2000,
        tokenizer: Tokenizer | None = None,
    ) -> list[Message]:
        """Verbatim originals by id and/or by query, in conversation order, within `max_tokens`."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


class BaseStore(ABC):
    """What every store shares; subclasses implement the primitives."""

    # -- primitives -----------------------------------------------------------------

    @abstractmethod
    def _rows_by_ids(self, session: str, ids: Sequence[str]) -> list[tuple[int, Message]]:
        """(seq, original) of the messages with these ids, in order."""

    @abstractmethod
    def _search_rows(self, session: str, query: str, limit: int) -> list[tuple[int, Message]]:
        """(seq, original) of the best full-text matches for `query`."""

    @abstractmethod
    def messages(self, session: str, start: int = 0, end: int | None = None) -> list[Message]:
        """Every original of `session` from `start` to `end`, in order."""

    @abstractmethod
    def compactions(self, session: str) -> list[CompactionRecord]:
        """Every compaction record of `session`, oldest first."""

    @abstractmethod
    def _create(self, session: str, metadata: Mapping[str, Any]) -> None:
        """Create `session` if missing and merge `metadata` into it, in one transaction."""

    # -- shared ---------------------------------------------------------------------

    def create_session(
        self, session: str | None = None, *, metadata: Mapping[str, Any] | None = None
    ) -> str:
        sid = session or uuid.uuid4().hex
        self._create(sid, metadata or {})
        return sid

    def set_metadata(self, session: str, metadata: Mapping[str, Any]) -> None:
        self.create_session(session, metadata=metadata)

    def get(self, session: str, message_id: str) -> Message | None:
        rows = self._rows_by_ids(session, [message_id])
        return rows[0][1] if rows else None

    def search(self, session: str, query: str, *, limit: int = 10) -> list[Message]:
        _check_limit(limit)
        if not query.strip():
            return []
        return [m for _, m in self._search_rows(session, _codec.utf8_safe(query), limit)]

    def current_view(self, session: str, *, tokenizer: Tokenizer | None = None) -> View:
        index = MessageIndex(self.messages(session), tokenizer=tokenizer)
        view = View(index)
        records = self.compactions(session)
        return apply_record(view, records[-1]) if records else view

    def recall(
        self,
        session: str,
        query: str | None = None,
        *,
        ids: Sequence[str] = (),
        max_tokens: int = 2000,
        tokenizer: Tokenizer | None = None,
    ) -> list[Message]:
        if max_tokens <= 0:
            raise InputError(f"`max_tokens` must be > 0, got {max_tokens!r}")
        tok = tokenizer or CharEstimator()
        found: dict[int, Message] = {}
        candidates = self._rows_by_ids(session, list(ids)) if ids else []
        if query and query.strip():
            candidates += self._search_rows(session, _codec.utf8_safe(query), 50)
        used = 0
        for seq, m in candidates:  # best first: ids asked for, then by relevance
            if seq in found:
                continue
            cost = tok.count_message(m)
            if used + cost <= max_tokens:
                found[seq] = m
                used += cost
        return [found[s] for s in sorted(found)]

    def close(self) -> None:
        return None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def check_expected(session: str, expected: int | None, found: int) -> None:
    """Raise `SessionConflict` when a writer expected the session to hold another count."""
    if expected is not None and expected != found:
        raise SessionConflict(session, expected=expected, found=found)


def _check_limit(limit: int) -> None:
    if limit <= 0:
        raise InputError(f"`limit` must be > 0, got {limit!r}")


def unique_ids(messages: Sequence[Message], taken: set[str]) -> list[Message]:
    """Messages with ids made unique against `taken` (updated), as `MessageIndex` does."""
    out: list[Message] = []
    for m in messages:
        mid = m.id
        if mid in taken:
            n = 2
            while f"{m.id}~{n}" in taken:
                n += 1
            mid = f"{m.id}~{n}"
            m = m.evolve(id=mid)
        taken.add(mid)
        out.append(m)
    return out


def merge_metadata(into: dict[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """`into` with `changes` merged in place (a None value removes the key)."""
    for k, v in changes.items():
        if v is None:
            into.pop(k, None)
        else:
            into[k] = v
    return into


def query_terms(query: str) -> list[str]:
    """The words of a query, as full-text search tokenizes them (letters, digits, _)."""
    return re.findall(r"\w+", query.lower())


def __getattr__(name: str) -> type[BaseStore]:
    if name == "StoreBase":  # the 0.1 name, kept for one release
        renamed("StoreBase", "BaseStore", owner="kompakt.store")
        return BaseStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
