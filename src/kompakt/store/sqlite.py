"""`SQLiteStore`: the embedded default history store, one file.

WAL journal (readers never block the writer), one transaction per call, the schema
version in ``PRAGMA user_version`` with a list of migrations, an FTS5 index over every
original's text (tool results included) kept in sync by triggers, and
``UNIQUE(session, seq)``: appends take the write lock first (``BEGIN IMMEDIATE``), so
several processes appending to one session lose nothing and agree on one order; a
conflict is retried. An append with ``expected_count`` checks the count under that lock
(optimistic concurrency: `SessionConflict` when another writer came first).

>>> import tempfile, os
>>> from kompakt.messages import Message
>>> path = os.path.join(tempfile.mkdtemp(), "agent.db")
>>> store = SQLiteStore(path)
>>> store.append("s1", [Message.user("pytest fails: TimeoutError in test_io.py")])
[0]
>>> [m.text[:12] for m in store.search("s1", "test_io.py")]
['pytest fails']
>>> store.close()
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from kompakt.errors import ConfigError, StoreError
from kompakt.messages import Message
from kompakt.store import _codec, _sql, base
from kompakt.store.base import BaseStore, MessageLike
from kompakt.store.records import CompactionRecord, SessionInfo

__all__ = ["MIGRATIONS", "SQLiteStore"]

MIGRATIONS: list[list[str]] = [
    [  # 1: sessions, messages with full-text search, compaction records
        """CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            created_at REAL NOT NULL,
            metadata TEXT NOT NULL DEFAULT '{}'
        )""",
        """CREATE TABLE messages (
            pk INTEGER PRIMARY KEY,
            session TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            id TEXT NOT NULL,
            role TEXT NOT NULL,
            body TEXT NOT NULL,
            text TEXT NOT NULL,
            created_at REAL NOT NULL,
            UNIQUE (session, seq),
            UNIQUE (session, id)
        )""",
        """CREATE VIRTUAL TABLE messages_fts USING fts5(
            text, content='messages', content_rowid='pk'
        )""",
        """CREATE TRIGGER messages_ai AFTER INSERT ON messages BEGIN
            INSERT INTO messages_fts(rowid, text) VALUES (new.pk, new.text);
        END""",
        """CREATE TRIGGER messages_ad AFTER DELETE ON messages BEGIN
            INSERT INTO messages_fts(messages_fts, rowid, text) VALUES ('delete', old.pk, old.text);
        END""",
        """CREATE TRIGGER messages_au AFTER UPDATE ON messages BEGIN
            INSERT INTO messages_fts(messages_fts, rowid, text) VALUES ('delete', old.pk, old.text);
            INSERT INTO messages_fts(rowid, text) VALUES (new.pk, new.text);
        END""",
        """CREATE TABLE compactions (
            id INTEGER PRIMARY KEY,
            session TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            upto INTEGER NOT NULL,
            body TEXT NOT NULL,
            created_at REAL NOT NULL
        )""",
        "CREATE INDEX compactions_session ON compactions (session, id)",
    ],
]
"""Schema migrations, in order; migration N brings ``user_version`` from N-1 to N."""

_RETRIES = 50


class SQLiteStore(BaseStore):
    """The history store in one SQLite file (or ``":memory:"``).

    Args:
        path: the database file; created with its schema on first use.
        timeout: seconds to wait for another process's write lock.

    Safe to share between threads; open one store per process.
    """

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 30.0) -> None:
        self.path = os.fspath(path)
        if not isinstance(self.path, str) or not self.path.strip():
            # sqlite3 would silently open a temporary database that vanishes on close
            raise ConfigError(
                f"SQLiteStore needs a database file path (or ':memory:'), got {path!r}"
            )
        self._lock = threading.RLock()
        try:
            self._conn = sqlite3.connect(
                self.path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
            self._conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = NORMAL")
            self._conn.execute("PRAGMA foreign_keys = ON")
            self._migrate()
        except sqlite3.Error as e:
            if hasattr(self, "_conn"):
                self._conn.close()
            raise StoreError(f"cannot open SQLite store {self.path!r}: {e}") from e

    # -- plumbing -------------------------------------------------------------------

    @contextmanager
    def _tx(self, immediate: bool = True) -> Iterator[sqlite3.Connection]:
        with self._lock:
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlite3.Error as e:
                raise StoreError(f"SQLite store {self.path!r}: {e}") from e

    def _migrate(self) -> None:
        with self._tx() as conn:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            _sql.check_schema(version, len(MIGRATIONS), repr(self.path))
            for n in range(version, len(MIGRATIONS)):
                for statement in MIGRATIONS[n]:
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {n + 1}")

    @property
    def schema_version(self) -> int:
        """The schema version of the file (``PRAGMA user_version``)."""
        return int(self._read("PRAGMA user_version")[0][0])

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # -- sessions -------------------------------------------------------------------

    def _create(self, session: str, metadata: Mapping[str, Any]) -> None:
        with self._tx() as conn:
            _ensure_session(conn, session)
            if metadata:
                _merge_metadata(conn, session, metadata)

    def list_sessions(self) -> list[SessionInfo]:
        rows = self._read(
            "SELECT s.id, s.created_at, s.metadata, "
            "(SELECT COUNT(*) FROM messages m WHERE m.session = s.id) "
            "FROM sessions s ORDER BY s.created_at, s.rowid"
        )
        return [SessionInfo(r[0], r[1], json.loads(r[2]), r[3]) for r in rows]

    def delete_session(self, session: str) -> bool:
        with self._tx() as conn:
            conn.execute("DELETE FROM messages WHERE session = ?", (session,))
            conn.execute("DELETE FROM compactions WHERE session = ?", (session,))
            return conn.execute("DELETE FROM sessions WHERE id = ?", (session,)).rowcount > 0

    def metadata(self, session: str) -> dict[str, Any]:
        rows = self._read("SELECT metadata FROM sessions WHERE id = ?", (session,))
        return dict(json.loads(rows[0][0])) if rows else {}

    # -- messages -------------------------------------------------------------------

    def append(
        self,
        session: str,
        messages: Iterable[MessageLike],
        *,
        expected_count: int | None = None,
    ) -> list[int]:
        msgs = _codec.to_messages(messages)
        for attempt in range(_RETRIES):
            try:
                with self._tx() as conn:
                    return _insert(conn, session, msgs, expected_count)
            except sqlite3.IntegrityError:
                pass  # another writer took the sequence number: read it again
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) and "busy" not in str(e):
                    raise StoreError(f"SQLite store {self.path!r}: {e}") from e
            time.sleep(0.001 * (attempt + 1))
        raise StoreError(f"append to session {session!r} conflicted {_RETRIES} times; retry later")

    def count(self, session: str) -> int:
        return int(self._read("SELECT COUNT(*) FROM messages WHERE session = ?", (session,))[0][0])

    def messages(self, session: str, start: int = 0, end: int | None = None) -> list[Message]:
        stop = end if end is not None else 2**62
        rows = self._read(
            "SELECT body FROM messages WHERE session = ? AND seq >= ? AND seq < ? ORDER BY seq",
            (session, start, stop),
        )
        return [_codec.decode(r[0]) for r in rows]

    def _rows_by_ids(self, session: str, ids: Sequence[str]) -> list[tuple[int, Message]]:
        out: dict[str, tuple[int, Message]] = {}
        for chunk in _chunks(list(ids), 500):
            marks = ",".join("?" * len(chunk))
            rows = self._read(
                f"SELECT id, seq, body FROM messages WHERE session = ? AND id IN ({marks})",
                (session, *chunk),
            )
            out.update((r[0], (r[1], _codec.decode(r[2]))) for r in rows)
        return [out[i] for i in ids if i in out]

    def _search_rows(self, session: str, query: str, limit: int) -> list[tuple[int, Message]]:
        terms = [t for t in base.query_terms(query.replace("_", " ")) if t]
        tiers: list[tuple[str, str]] = []
        if terms:
            quoted = [f'"{t}"' for t in terms]
            tiers.append(("fts", '"' + " ".join(terms) + '"'))
            tiers.append(("like", query.strip().lower()))
            tiers.append(("fts", " ".join(quoted)))
            tiers.append(("fts", " OR ".join(quoted)))
        else:
            tiers.append(("like", query.strip().lower()))
        return _sql.first_rows((self._tier(kind, session, q, limit) for kind, q in tiers), limit)

    def _tier(self, kind: str, session: str, q: str, limit: int) -> list[Any]:
        if kind == "like":
            return self._read(
                "SELECT seq, body FROM messages WHERE session = ? AND instr(lower(text), ?) > 0 "
                "ORDER BY seq LIMIT ?",
                (session, q, limit),
            )
        return self._read(
            "SELECT m.seq, m.body FROM messages_fts JOIN messages m ON m.pk = messages_fts.rowid "
            "WHERE messages_fts MATCH ? AND m.session = ? ORDER BY messages_fts.rank LIMIT ?",
            (q, session, limit),
        )

    # -- compaction records ---------------------------------------------------------

    def record_compaction(self, session: str, record: CompactionRecord) -> int:
        with self._tx() as conn:
            _ensure_session(conn, session)
            cur = conn.execute(
                "INSERT INTO compactions (session, upto, body, created_at) VALUES (?, ?, ?, ?)",
                (session, record.upto, json.dumps(record.to_dict()), record.created_at),
            )
            return int(cur.lastrowid or 0)

    def compactions(self, session: str) -> list[CompactionRecord]:
        rows = self._read(
            "SELECT id, body FROM compactions WHERE session = ? ORDER BY id", (session,)
        )
        return [CompactionRecord.from_dict(json.loads(r[1]), id=r[0]) for r in rows]

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r})"


def _ensure_session(conn: sqlite3.Connection, sid: str) -> None:
    conn.execute(
        "INSERT OR IGNORE INTO sessions (id, created_at) VALUES (?, ?)", (sid, time.time())
    )


def _merge_metadata(conn: sqlite3.Connection, sid: str, changes: Mapping[str, Any]) -> None:
    row = conn.execute("SELECT metadata FROM sessions WHERE id = ?", (sid,)).fetchone()
    current = base.merge_metadata(dict(json.loads(row[0])) if row else {}, changes)
    conn.execute(
        "UPDATE sessions SET metadata = ? WHERE id = ?", (json.dumps(current, default=str), sid)
    )


def _insert(
    conn: sqlite3.Connection, session: str, msgs: list[Message], expected: int | None
) -> list[int]:
    _ensure_session(conn, session)
    # the write lock is held (BEGIN IMMEDIATE): no other writer can append in between
    start = conn.execute(
        "SELECT COALESCE(MAX(seq) + 1, 0) FROM messages WHERE session = ?", (session,)
    ).fetchone()[0]
    base.check_expected(session, expected, start)
    if not msgs:
        return []
    taken = _sql.taken_ids(
        (m.id for m in msgs),
        lambda ids: _existing_ids(conn, session, ids),
        lambda mid: (
            r[0]
            for r in conn.execute(
                "SELECT id FROM messages WHERE session = ? AND substr(id, 1, ?) = ?",
                (session, len(mid) + 1, mid + "~"),
            )
        ),
    )
    now = time.time()
    rows = [
        (session, start + i, m.id, m.role, _codec.encode(m), _codec.search_text(m), now)
        for i, m in enumerate(base.unique_ids(msgs, taken))
    ]
    conn.executemany(
        "INSERT INTO messages (session, seq, id, role, body, text, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    return [r[1] for r in rows]


def _existing_ids(conn: sqlite3.Connection, session: str, ids: list[str]) -> set[str]:
    found: set[str] = set()
    for chunk in _chunks(ids, 500):
        marks = ",".join("?" * len(chunk))
        rows = conn.execute(
            f"SELECT id FROM messages WHERE session = ? AND id IN ({marks})", (session, *chunk)
        ).fetchall()
        found.update(r[0] for r in rows)
    return found


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]
