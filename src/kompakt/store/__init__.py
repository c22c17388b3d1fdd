"""History stores: every original message kept, compaction records, search and recall.

>>> from kompakt.store import MemoryStore
>>> MemoryStore().append("s", [{"role": "user", "content": "hi"}])
[0]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kompakt._deprecation import renamed
from kompakt.store.base import BaseStore, HistoryStore, MessageLike
from kompakt.store.memory import MemoryStore
from kompakt.store.records import CompactionRecord, SessionInfo, apply_record
from kompakt.store.sqlite import SQLiteStore

if TYPE_CHECKING:
    from kompakt.store.postgres import PostgresStore

__all__ = [
    "BaseStore",
    "CompactionRecord",
    "HistoryStore",
    "MemoryStore",
    "MessageLike",
    "PostgresStore",
    "SQLiteStore",
    "SessionInfo",
    "apply_record",
]


def __getattr__(name: str) -> Any:
    if name == "PostgresStore":  # imported on use: psycopg is an optional extra
        from kompakt.store.postgres import PostgresStore

        return PostgresStore
    if name == "StoreBase":  # the 0.1 name, kept for one release
        renamed("StoreBase", "BaseStore", owner="kompakt.store")
        return BaseStore
    raise AttributeError(f"module 'kompakt.store' has no attribute {name!r}")
