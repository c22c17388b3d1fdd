"""`MemoryStore`: the history store in a dict, for tests and short-lived agents.

>>> from kompakt.messages import Message
>>> store = MemoryStore()
>>> store.append("s", [Message.user("read src/app.py")])
[0]
>>> store.get("s", store.messages("s")[0].id).text
'read src/app.py'
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from kompakt.messages import Message
from kompakt.store import _codec, base
from kompakt.store.base import BaseStore, MessageLike
from kompakt.store.records import CompactionRecord, SessionInfo

__all__ = ["MemoryStore"]


@dataclass
class _Session:
    created_at: float
    metadata: dict[str, Any] = field(default_factory=dict)
    messages: list[Message] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    positions: dict[str, int] = field(default_factory=dict)
    taken: set[str] = field(default_factory=set)
    """The ids in `positions`, kept as a set for `unique_ids` (not rebuilt per append)."""
    records: list[CompactionRecord] = field(default_factory=list)


class MemoryStore(BaseStore):
    """Every session in memory; thread-safe; gone when the process ends."""

    def __init__(self) -> None:
        self._sessions: dict[str, _Session] = {}
        self._lock = threading.Lock()
        self._next_record = 1

    def _create(self, session: str, metadata: Mapping[str, Any]) -> None:
        with self._lock:
            s = self._sessions.setdefault(session, _Session(created_at=time.time()))
            base.merge_metadata(s.metadata, metadata)

    def list_sessions(self) -> list[SessionInfo]:
        with self._lock:
            items = sorted(self._sessions.items(), key=lambda kv: kv[1].created_at)
            return [
                SessionInfo(sid, s.created_at, dict(s.metadata), len(s.messages))
                for sid, s in items
            ]

    def delete_session(self, session: str) -> bool:
        with self._lock:
            return self._sessions.pop(session, None) is not None

    def metadata(self, session: str) -> dict[str, Any]:
        with self._lock:
            s = self._sessions.get(session)
            return dict(s.metadata) if s else {}

    def append(
        self,
        session: str,
        messages: Iterable[MessageLike],
        *,
        expected_count: int | None = None,
    ) -> list[int]:
        msgs = _codec.to_messages(messages)
        self.create_session(session)
        with self._lock:
            s = self._sessions[session]
            start = len(s.messages)
            base.check_expected(session, expected_count, start)
            for m in base.unique_ids(msgs, s.taken):
                s.positions[m.id] = len(s.messages)
                s.messages.append(m)
                s.texts.append(_codec.search_text(m).lower())
            return list(range(start, len(s.messages)))

    def count(self, session: str) -> int:
        with self._lock:
            s = self._sessions.get(session)
            return len(s.messages) if s else 0

    def messages(self, session: str, start: int = 0, end: int | None = None) -> list[Message]:
        with self._lock:
            s = self._sessions.get(session)
            return list(s.messages[start:end]) if s else []

    def record_compaction(self, session: str, record: CompactionRecord) -> int:
        self.create_session(session)
        with self._lock:
            rid = self._next_record
            self._next_record += 1
            self._sessions[session].records.append(replace(record, id=rid))
            return rid

    def compactions(self, session: str) -> list[CompactionRecord]:
        with self._lock:
            s = self._sessions.get(session)
            return list(s.records) if s else []

    def _rows_by_ids(self, session: str, ids: Sequence[str]) -> list[tuple[int, Message]]:
        with self._lock:
            s = self._sessions.get(session)
            if s is None:
                return []
            found = (s.positions.get(i) for i in ids)
            return [(p, s.messages[p]) for p in found if p is not None]

    def _search_rows(self, session: str, query: str, limit: int) -> list[tuple[int, Message]]:
        needle = query.strip().lower()
        terms = base.query_terms(query)
        with self._lock:
            s = self._sessions.get(session)
            if s is None:
                return []
            scored: list[tuple[int, int, int]] = []
            for seq, text in enumerate(s.texts):
                hits = sum(text.count(t) for t in terms)
                if needle in text:
                    tier = 0
                elif terms and all(t in text for t in terms):
                    tier = 1
                elif hits:
                    tier = 2
                else:
                    continue
                scored.append((tier, -hits, seq))
            scored.sort()
            return [(seq, s.messages[seq]) for _, _, seq in scored[:limit]]
