"""`PostgresStore`: the history store on PostgreSQL (psycopg 3, extra ``[postgres]``).

The same semantics as `SQLiteStore`: tables ``kompakt_sessions``, ``kompakt_messages``
and ``kompakt_compactions`` in one schema, a schema version with a list of
migrations, ``UNIQUE(session, seq)``, and full-text search over a generated
``tsvector`` column with a GIN index. Appends to one session serialize on a
transaction-scoped advisory lock, and a unique-constraint conflict is retried, so
several processes appending at once lose nothing and agree on one order.

>>> store = PostgresStore("postgresql://postgres@127.0.0.1:5432/app")  # doctest: +SKIP
>>> store.append("s1", [{"role": "user", "content": "hello"}])  # doctest: +SKIP
[0]
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from kompakt.errors import ConfigError, MissingDependency, StoreError
from kompakt.messages import Message
from kompakt.store import _codec, _sql, base
from kompakt.store.base import BaseStore, MessageLike
from kompakt.store.records import CompactionRecord, SessionInfo

__all__ = ["MIGRATIONS", "PostgresStore"]

MIGRATIONS: list[list[str]] = [
    [  # 1: sessions, messages with full-text search, compaction records
        """CREATE TABLE {s}.kompakt_sessions (
            id TEXT PRIMARY KEY,
            created_at DOUBLE PRECISION NOT NULL,
            metadata TEXT NOT NULL DEFAULT '{{}}',
            ord BIGSERIAL
        )""",
        """CREATE TABLE {s}.kompakt_messages (
            pk BIGSERIAL PRIMARY KEY,
            session TEXT NOT NULL REFERENCES {s}.kompakt_sessions(id) ON DELETE CASCADE,
            seq INTEGER NOT NULL,
            id TEXT NOT NULL,
            role TEXT NOT NULL,
            body TEXT NOT NULL,
            text TEXT NOT NULL,
            tsv TSVECTOR GENERATED ALWAYS AS (to_tsvector('simple', left(text, 200000))) STORED,
            created_at DOUBLE PRECISION NOT NULL,
            UNIQUE (session, seq),
            UNIQUE (session, id)
        )""",
        "CREATE INDEX kompakt_messages_tsv ON {s}.kompakt_messages USING GIN (tsv)",
        """CREATE TABLE {s}.kompakt_compactions (
            id BIGSERIAL PRIMARY KEY,
            session TEXT NOT NULL REFERENCES {s}.kompakt_sessions(id) ON DELETE CASCADE,
            upto INTEGER NOT NULL,
            body TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL
        )""",
        "CREATE INDEX kompakt_compactions_session ON {s}.kompakt_compactions (session, id)",
    ],
]
"""Schema migrations, in order; ``{s}`` is the schema name."""

_RETRIES = 50
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


class PostgresStore(BaseStore):
    """The history store in a PostgreSQL database.

    Args:
        dsn: a libpq connection string, e.g. ``postgresql://user@host:5432/db``.
        schema: the PostgreSQL schema holding the tables (created if missing).
        connect_timeout: seconds to wait for the server.

    Safe to share between threads (one connection, serialized); open one store per process.
    """

    def __init__(self, dsn: str, *, schema: str = "public", connect_timeout: int = 10) -> None:
        try:
            import psycopg
        except ImportError as e:
            raise MissingDependency("PostgresStore", "postgres") from e
        if not _NAME.match(schema):
            raise ConfigError(f"`schema` must be a plain SQL identifier, got {schema!r}")
        self.schema = schema
        self._psycopg = psycopg
        self._lock = threading.RLock()
        self._dsn = dsn
        self._connect_timeout = connect_timeout
        self._closed = False
        self._conn = self._connect()
        try:
            self._migrate()
        except psycopg.Error as e:  # the migration rolled back: the schema is as it was
            self._conn.close()
            raise StoreError(f"cannot migrate schema {schema!r} in PostgreSQL: {e}") from e

    # -- plumbing -------------------------------------------------------------------

    def _t(self, table: str) -> str:
        return f'"{self.schema}".kompakt_{table}'

    def _connect(self) -> Any:
        try:
            return self._psycopg.connect(
                self._dsn, autocommit=True, connect_timeout=self._connect_timeout
            )
        except self._psycopg.Error as e:
            raise StoreError(f"cannot connect to PostgreSQL: {e}") from e

    def _live(self) -> Any:
        """The connection, opened again if the server dropped it (a restart, a timeout)."""
        if self._conn.closed and not self._closed:
            self._conn = self._connect()
        return self._conn

    @contextmanager
    def _tx(self) -> Iterator[Any]:
        with self._lock:
            conn = self._live()
            try:
                with conn.transaction():
                    yield conn
            except self._psycopg.errors.UniqueViolation:
                raise
            except self._psycopg.OperationalError as e:
                raise StoreError(f"PostgreSQL store: {e}") from e

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._lock:
            for attempt in (1, 2):
                try:
                    return list(self._live().execute(sql, params).fetchall())
                except self._psycopg.OperationalError as e:
                    if attempt == 2 or not self._conn.closed:
                        raise StoreError(f"PostgreSQL store: {e}") from e
                except self._psycopg.Error as e:
                    raise StoreError(f"PostgreSQL store: {e}") from e
            raise AssertionError("unreachable")

    def _migrate(self) -> None:
        s = f'"{self.schema}"'
        with self._tx() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"kompakt:{s}",))
            conn.execute(f"CREATE SCHEMA IF NOT EXISTS {s}")
            conn.execute(f"CREATE TABLE IF NOT EXISTS {s}.kompakt_schema (version INTEGER)")
            row = conn.execute(f"SELECT version FROM {s}.kompakt_schema").fetchone()
            version = row[0] if row else 0
            _sql.check_schema(version, len(MIGRATIONS), f"schema {self.schema!r}")
            for n in range(version, len(MIGRATIONS)):
                for statement in MIGRATIONS[n]:
                    conn.execute(statement.format(s=s))
            if row is None:
                conn.execute(
                    f"INSERT INTO {s}.kompakt_schema (version) VALUES (%s)", (len(MIGRATIONS),)
                )
            else:
                conn.execute(f"UPDATE {s}.kompakt_schema SET version = %s", (len(MIGRATIONS),))

    @property
    def schema_version(self) -> int:
        """The schema version of the tables."""
        return int(self._read(f'SELECT version FROM "{self.schema}".kompakt_schema')[0][0])

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._conn.close()

    # -- sessions -------------------------------------------------------------------

    def _create(self, sid: str, metadata: Mapping[str, Any]) -> None:
        with self._tx() as conn:
            self._ensure_session(conn, sid)
            if metadata:
                row = conn.execute(
                    f"SELECT metadata FROM {self._t('sessions')} WHERE id = %s FOR UPDATE", (sid,)
                ).fetchone()
                current = base.merge_metadata(dict(json.loads(row[0])), metadata)
                conn.execute(
                    f"UPDATE {self._t('sessions')} SET metadata = %s WHERE id = %s",
                    (json.dumps(current, default=str), sid),
                )

    def _ensure_session(self, conn: Any, sid: str) -> None:
        conn.execute(
            f"INSERT INTO {self._t('sessions')} (id, created_at) VALUES (%s, %s) "
            "ON CONFLICT (id) DO NOTHING",
            (sid, time.time()),
        )

    def list_sessions(self) -> list[SessionInfo]:
        rows = self._read(
            f"SELECT s.id, s.created_at, s.metadata, "
            f"(SELECT COUNT(*) FROM {self._t('messages')} m WHERE m.session = s.id) "
            f"FROM {self._t('sessions')} s ORDER BY s.created_at, s.ord"
        )
        return [SessionInfo(r[0], r[1], json.loads(r[2]), int(r[3])) for r in rows]

    def delete_session(self, session: str) -> bool:
        with self._tx() as conn:
            cur = conn.execute(f"DELETE FROM {self._t('sessions')} WHERE id = %s", (session,))
            return bool(cur.rowcount > 0)

    def metadata(self, session: str) -> dict[str, Any]:
        rows = self._read(f"SELECT metadata FROM {self._t('sessions')} WHERE id = %s", (session,))
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
        errors = self._psycopg.errors
        retry = (errors.UniqueViolation, errors.SerializationFailure, errors.DeadlockDetected)
        for attempt in range(_RETRIES):
            try:
                with self._tx() as conn:
                    return self._insert(conn, session, msgs, expected_count)
            except retry:
                time.sleep(0.001 * (attempt + 1))
            except self._psycopg.Error as e:
                raise StoreError(f"PostgreSQL store: append to {session!r}: {e}") from e
        raise StoreError(f"append to session {session!r} conflicted {_RETRIES} times; retry later")

    def _insert(
        self, conn: Any, session: str, msgs: list[Message], expected: int | None
    ) -> list[int]:
        self._ensure_session(conn, session)
        if not msgs and expected is None:
            return []
        # one writer per session at a time; other sessions are not blocked
        conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
            (f"kompakt:{self.schema}:{session}",),
        )
        t = self._t("messages")
        start = conn.execute(
            f"SELECT COALESCE(MAX(seq) + 1, 0) FROM {t} WHERE session = %s", (session,)
        ).fetchone()[0]
        base.check_expected(session, expected, start)
        if not msgs:
            return []
        taken = _sql.taken_ids(
            (m.id for m in msgs),
            lambda ids: (
                r[0]
                for r in conn.execute(
                    f"SELECT id FROM {t} WHERE session = %s AND id = ANY(%s)", (session, ids)
                ).fetchall()
            ),
            lambda mid: (
                r[0]
                for r in conn.execute(
                    f"SELECT id FROM {t} WHERE session = %s AND left(id, %s) = %s",
                    (session, len(mid) + 1, mid + "~"),
                ).fetchall()
            ),
        )
        now = time.time()
        rows = [
            (session, start + i, m.id, m.role, _codec.encode(m), _clean(_codec.search_text(m)), now)
            for i, m in enumerate(base.unique_ids(msgs, taken))
        ]
        with conn.cursor() as cur:
            cur.executemany(
                f"INSERT INTO {t} (session, seq, id, role, body, text, created_at) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s)",
                rows,
            )
        return [r[1] for r in rows]

    def count(self, session: str) -> int:
        rows = self._read(
            f"SELECT COUNT(*) FROM {self._t('messages')} WHERE session = %s", (session,)
        )
        return int(rows[0][0])

    def messages(self, session: str, start: int = 0, end: int | None = None) -> list[Message]:
        stop = end if end is not None else 2**31 - 1
        rows = self._read(
            f"SELECT body FROM {self._t('messages')} "
            "WHERE session = %s AND seq >= %s AND seq < %s ORDER BY seq",
            (session, start, stop),
        )
        return [_codec.decode(r[0]) for r in rows]

    def _rows_by_ids(self, session: str, ids: Sequence[str]) -> list[tuple[int, Message]]:
        rows = self._read(
            f"SELECT id, seq, body FROM {self._t('messages')} WHERE session = %s AND id = ANY(%s)",
            (session, list(ids)),
        )
        found = {r[0]: (int(r[1]), _codec.decode(r[2])) for r in rows}
        return [found[i] for i in ids if i in found]

    def _search_rows(self, session: str, query: str, limit: int) -> list[tuple[int, Message]]:
        t = self._t("messages")
        terms = base.query_terms(query)
        needle = _clean(query.strip().lower())
        ranked = (
            f"SELECT seq, body FROM {t} WHERE session = %s AND tsv @@ {{q}} "
            f"ORDER BY ts_rank(tsv, {{q}}) DESC, seq LIMIT %s"
        )
        tiers: list[tuple[str, tuple[Any, ...]]] = [
            (ranked.format(q="phraseto_tsquery('simple', %s)"), (session, needle, needle, limit)),
            (
                f"SELECT seq, body FROM {t} WHERE session = %s AND strpos(lower(text), %s) > 0 "
                "ORDER BY seq LIMIT %s",
                (session, needle, limit),
            ),
        ]
        if terms:
            every = " ".join(terms)
            anyof = " or ".join(terms)
            tiers.append(
                (ranked.format(q="plainto_tsquery('simple', %s)"), (session, every, every, limit))
            )
            tiers.append(
                (
                    ranked.format(q="websearch_to_tsquery('simple', %s)"),
                    (session, anyof, anyof, limit),
                )
            )
        return _sql.first_rows((self._read(sql, params) for sql, params in tiers), limit)

    # -- compaction records ---------------------------------------------------------

    def record_compaction(self, session: str, record: CompactionRecord) -> int:
        with self._tx() as conn:
            self._ensure_session(conn, session)
            row = conn.execute(
                f"INSERT INTO {self._t('compactions')} (session, upto, body, created_at) "
                "VALUES (%s, %s, %s, %s) RETURNING id",
                (session, record.upto, json.dumps(record.to_dict()), record.created_at),
            ).fetchone()
            return int(row[0])

    def compactions(self, session: str) -> list[CompactionRecord]:
        rows = self._read(
            f"SELECT id, body FROM {self._t('compactions')} WHERE session = %s ORDER BY id",
            (session,),
        )
        return [CompactionRecord.from_dict(json.loads(r[1]), id=int(r[0])) for r in rows]

    def __repr__(self) -> str:
        return f"PostgresStore(schema={self.schema!r})"


def _clean(text: str) -> str:
    """PostgreSQL text cannot hold NUL characters."""
    return text.replace("\x00", " ")
