"""One suite for every history store: in-memory, SQLite and a real PostgreSQL server."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import re
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from _postgres import ENV, reachable, throwaway_server
from kompakt.agent import Agent
from kompakt.errors import SessionConflict, StoreError
from kompakt.index import MessageIndex
from kompakt.messages import Message, Part, ToolCall
from kompakt.models import ScriptedModel
from kompakt.store import CompactionRecord, HistoryStore, MemoryStore, PostgresStore, SQLiteStore
from kompakt.strategies.base import CompactionContext
from kompakt.tokens import CharEstimator
from kompakt.validation import find_problems
from kompakt.view import View

DATA = Path(__file__).resolve().parent / "data"

AnyStore = MemoryStore | SQLiteStore | PostgresStore
StoreFactory = Callable[[], AnyStore]


# -- servers and stores ---------------------------------------------------------------


@pytest.fixture(scope="session")
def postgres_dsn() -> Iterator[str]:
    with ExitStack() as stack:
        dsn = os.environ.get(ENV)
        why: str | None = None
        if dsn is None:
            try:
                dsn = stack.enter_context(throwaway_server())
            except Exception as e:  # no binaries, no permission: say so
                why = f"no PostgreSQL server: {ENV} is unset and none could be started ({e})"
        if dsn is not None:
            why = reachable(dsn)
        if why is not None:
            if os.environ.get("CI"):
                pytest.fail(f"PostgreSQL is required in CI: {why}")
            print(f"\nSKIP PostgreSQL store tests: {why}")
            pytest.skip(why)
        assert dsn is not None
        yield dsn


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreFactory]:
    """A factory of store objects that all open the same backing storage."""
    opened: list[AnyStore] = []
    kind = request.param
    if kind == "memory":
        shared = MemoryStore()

        def factory() -> AnyStore:
            return shared
    elif kind == "sqlite":
        path = tmp_path / "history.db"

        def factory() -> AnyStore:
            opened.append(SQLiteStore(path))
            return opened[-1]
    else:
        dsn = request.getfixturevalue("postgres_dsn")
        schema = "t_" + uuid.uuid4().hex[:12]
        from kompakt.store.postgres import PostgresStore

        def factory() -> AnyStore:
            opened.append(PostgresStore(dsn, schema=schema))
            return opened[-1]

    factory.kind = kind  # type: ignore[attr-defined]
    factory.target = (  # type: ignore[attr-defined]
        str(tmp_path / "history.db")
        if kind == "sqlite"
        else (dsn, schema)
        if kind == "postgres"
        else None
    )
    yield factory
    for s in opened:
        s.close()
    if kind == "postgres":
        import psycopg

        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture
def store(make_store: StoreFactory) -> AnyStore:
    return make_store()


def convo() -> list[Message]:
    call = ToolCall(id="c1", name="bash", arguments='{"command": "pytest tests/test_io.py"}')
    return [
        Message.system("You are a coding agent."),
        Message.user("fix the failing test in src/pkg/io_utils.py"),
        Message.assistant("Running the tests.", tool_calls=[call]),
        Message.tool(
            "FAILED tests/test_io.py::test_read - ConnectionResetError: peer went away",
            tool_call_id="c1",
        ),
        Message.assistant("The read loop does not retry."),
        Message.user("ok, patch it"),
        Message.assistant("Done."),
    ]


# -- originals ------------------------------------------------------------------------


def test_is_a_history_store(store: AnyStore) -> None:
    assert isinstance(store, HistoryStore)


def test_append_numbers_and_reads_back_in_order(store: AnyStore) -> None:
    msgs = convo()
    assert store.append("s1", msgs[:3]) == [0, 1, 2]
    assert store.append("s1", msgs[3:]) == [3, 4, 5, 6]
    assert store.messages("s1") == msgs
    assert store.messages("s1", 2, 4) == msgs[2:4]
    assert store.messages("s1", start=5) == msgs[5:]
    assert store.count("s1") == 7
    assert store.messages("nope") == [] and store.count("nope") == 0


def test_every_field_survives(store: AnyStore) -> None:
    image = Part(kind="image", data={"type": "image_url", "image_url": {"url": "x.png"}})
    m = Message(
        role="assistant",
        content=(Part(text="see ✓ 日本語"), image),
        tool_calls=(ToolCall(id="c9", name="read", arguments='{"p": 1', extra={"index": 0}),),
        name="bot",
        pinned=True,
        memory=True,
        extra={"provider_specific_fields": {"x": [1, 2]}},
        metadata={"k": "v"},
    )
    store.append("s", [m])
    (back,) = store.messages("s")
    assert back == m and back.digest == m.digest
    assert back.extra == m.extra and back.metadata == m.metadata


def test_duplicate_ids_are_made_unique_like_the_index(store: AnyStore) -> None:
    same = [Message.user("again"), Message.user("again")]
    store.append("s", same)
    store.append("s", [Message.user("again")])
    ids = [m.id for m in store.messages("s")]
    assert ids == [m.id for m in MessageIndex([Message.user("again")] * 3).messages]
    assert len(set(ids)) == 3
    assert store.get("s", ids[2]) == Message.user("again").evolve(id=ids[2])
    assert store.get("s", "missing") is None


def test_append_takes_provider_dicts(store: AnyStore) -> None:
    store.append("s", [{"role": "user", "content": "hi"}, Message.assistant("hello")])
    assert [(m.role, m.text) for m in store.messages("s")] == [
        ("user", "hi"),
        ("assistant", "hello"),
    ]


# -- sessions -------------------------------------------------------------------------


def test_sessions_and_metadata(store: AnyStore) -> None:
    a = store.create_session("a", metadata={"user": "ana", "tag": 1})
    b = store.create_session(metadata={"user": "bo"})
    assert a == "a" and b
    store.append("a", convo()[:2])
    store.set_metadata("a", {"tag": None, "model": "m"})
    assert store.metadata("a") == {"user": "ana", "model": "m"}
    listed = {s.id: s for s in store.list_sessions()}
    assert set(listed) == {"a", b}
    assert listed["a"].message_count == 2 and listed[b].metadata == {"user": "bo"}
    assert store.metadata("unknown") == {}


def test_delete_session_removes_messages_records_and_search(store: AnyStore) -> None:
    store.append("a", convo())
    store.append("b", convo())
    store.record_compaction("a", CompactionRecord(dropped=("x",), upto=7))
    assert store.delete_session("a") is True
    assert store.delete_session("a") is False
    assert store.messages("a") == [] and store.compactions("a") == []
    assert store.search("a", "ConnectionResetError") == []
    assert len(store.search("b", "ConnectionResetError")) == 1


# -- search and recall -----------------------------------------------------------------


def test_search_covers_tool_results_paths_and_calls(store: AnyStore) -> None:
    msgs = convo()
    store.append("s", msgs)
    store.append("other", [Message.user("ConnectionResetError elsewhere")])
    assert store.search("s", "ConnectionResetError") == [msgs[3]]
    assert msgs[1] in store.search("s", "src/pkg/io_utils.py")
    assert msgs[2] in store.search("s", "pytest tests/test_io.py")
    assert store.search("s", "   ") == []
    assert store.search("s", "zebra") == []


def test_search_ranks_exact_phrase_first_and_limits(store: AnyStore) -> None:
    store.append(
        "s",
        [
            Message.user("error in the timeout handler"),
            Message.user("timeout error"),
            Message.user("an error, no time"),
        ],
    )
    hits = store.search("s", "timeout error")
    assert hits[0].text == "timeout error"
    assert {m.text for m in hits[:2]} == {"timeout error", "error in the timeout handler"}
    assert len(store.search("s", "error", limit=2)) == 2


def test_recall_by_id_and_query_within_budget(store: AnyStore) -> None:
    msgs = convo()
    store.append("s", msgs)
    tok = CharEstimator()
    got = store.recall("s", "ConnectionResetError", ids=[msgs[1].id], max_tokens=1000)
    assert got == [msgs[1], msgs[3]]  # conversation order, verbatim
    small = tok.count_message(msgs[1])
    assert store.recall("s", ids=[msgs[1].id, msgs[3].id], max_tokens=small) == [msgs[1]]
    big = [Message.tool("x" * 4000, tool_call_id="c2")]
    store.append("s", big)
    assert store.recall("s", ids=[big[0].id], max_tokens=100) == []


# -- compaction records ------------------------------------------------------------------


def test_record_and_rebuild_the_current_view(make_store: StoreFactory) -> None:
    store = make_store()
    msgs = convo()
    store.append("s", msgs)
    view = View(MessageIndex(store.messages("s")))
    view.summarize([1, 2], Message.assistant("[Summary] tests failed on io", synthetic="summary"))
    view.drop(3)
    rid = store.record_compaction("s", CompactionRecord.from_view(view, {"tokens_before": 9}))
    later = Message.user("and now?")
    store.append("s", [later])
    again = make_store().current_view("s")
    assert again.render() == [*view.render(), later]
    (rec,) = make_store().compactions("s")
    assert rec.id == rid and rec.upto == 7 and rec.event == {"tokens_before": 9}
    assert rec.synthetic[0].covers == tuple(m.id for m in msgs[1:4])
    view2 = View(MessageIndex(store.messages("s")))
    view2.drop(1)
    store.record_compaction("s", CompactionRecord.from_view(view2))
    assert [r.id for r in store.compactions("s")] == sorted(
        r.id or 0 for r in store.compactions("s")
    )
    assert store.current_view("s").render() == view2.render()
    assert store.messages("s") == [*msgs, later]  # originals untouched


def test_no_record_means_every_original(store: AnyStore) -> None:
    store.append("s", convo())
    assert store.current_view("s").render() == convo()


# -- persistence and schema (SQLite) -------------------------------------------------------


def test_sqlite_reopens_with_schema_version_and_wal(tmp_path: Path) -> None:
    from kompakt.store.sqlite import MIGRATIONS

    path = tmp_path / "a.db"
    with SQLiteStore(path) as s:
        s.append("s", convo())
    s2 = SQLiteStore(path)
    assert s2.schema_version == len(MIGRATIONS)
    assert s2._read("PRAGMA journal_mode")[0][0] == "wal"
    assert s2.messages("s") == convo()
    s2._conn.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    s2.close()
    with pytest.raises(StoreError, match="upgrade kompakt"):
        SQLiteStore(path)


UPGRADE = {
    "sqlite": ("kompakt.store.sqlite", "messages", "ALTER TABLE messages ADD COLUMN note TEXT"),
    "postgres": (
        "kompakt.store.postgres",
        "{s}.kompakt_messages",
        "ALTER TABLE {s}.kompakt_messages ADD COLUMN note TEXT",
    ),
}


def test_migrations_upgrade_an_older_schema(
    make_store: StoreFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Storage written at version 1 is upgraded in place by a newer kompakt: a migration
    that fails leaves it at version 1, whole; one that works brings it to version 2."""
    kind = make_store.kind  # type: ignore[attr-defined]
    if kind == "memory":
        pytest.skip("a MemoryStore has no schema")
    import importlib

    module_name, table, alter = UPGRADE[kind]
    module = importlib.import_module(module_name)
    v1 = list(module.MIGRATIONS)
    with make_store() as old:
        old.append("s", convo())
        assert old.schema_version == len(v1)  # type: ignore[union-attr]
    broken = [*v1, [alter, f"UPDATE {table} SET no_such_column = 1"]]
    monkeypatch.setattr(module, "MIGRATIONS", broken)
    with pytest.raises(StoreError):
        make_store()
    monkeypatch.setattr(module, "MIGRATIONS", v1)
    with make_store() as same:  # the failed upgrade rolled back entirely
        assert same.schema_version == len(v1)  # type: ignore[union-attr]
        assert same.messages("s") == convo()
    monkeypatch.setattr(module, "MIGRATIONS", [*v1, [alter, f"UPDATE {table} SET note = role"]])
    with make_store() as new:
        assert new.schema_version == len(v1) + 1  # type: ignore[union-attr]
        assert new.messages("s") == convo()
        assert [m.text for m in new.search("s", "ConnectionResetError")] == [convo()[3].text]
        where = table.format(s=f'"{getattr(new, "schema", "")}"')
        notes = new._read(f"SELECT note FROM {where} ORDER BY seq")  # type: ignore[union-attr]
        assert [r[0] for r in notes] == [m.role for m in convo()]
    with make_store() as again:  # opening at the current version changes nothing
        assert again.schema_version == len(v1) + 1  # type: ignore[union-attr]
        assert again.count("s") == len(convo())


# -- concurrency --------------------------------------------------------------------------


def _append_worker(kind: str, target: Any, worker: int, n: int) -> None:
    if kind == "sqlite":
        store: AnyStore = SQLiteStore(target)
    else:
        from kompakt.store.postgres import PostgresStore

        store = PostgresStore(target[0], schema=target[1])
    for i in range(n):
        store.append("shared", [Message.user(f"w{worker} #{i}")])
    store.close()


@pytest.mark.slow
def test_concurrent_appends_from_processes(make_store: StoreFactory) -> None:
    kind = make_store.kind  # type: ignore[attr-defined]
    if kind == "memory":
        pytest.skip("a MemoryStore lives in one process")
    store = make_store()  # creates the schema before the workers race
    workers, per = 4, 500
    ctx = multiprocessing.get_context("spawn")
    procs = [
        ctx.Process(target=_append_worker, args=(kind, make_store.target, w, per))  # type: ignore[attr-defined]
        for w in range(workers)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
        assert p.exitcode == 0
    texts = [m.text for m in store.messages("shared")]
    assert len(texts) == workers * per == store.count("shared")
    assert len(set(texts)) == len(texts)  # no duplicates
    assert set(texts) == {f"w{w} #{i}" for w in range(workers) for i in range(per)}
    for w in range(workers):  # each writer's own order is kept
        mine = [int(t.split("#")[1]) for t in texts if t.startswith(f"w{w} ")]
        assert mine == list(range(per))
    assert store.messages("shared", workers * per - 1) != []  # seq runs 0..1999, no gaps
    assert len(store.messages("shared", 0, workers * per)) == workers * per


# -- recall on a real transcript -----------------------------------------------------------


def test_recall_finds_what_compaction_evicted_in_a_real_transcript(store: AnyStore) -> None:
    import kompakt
    from kompakt.strategies import Budgeted

    msgs = list(kompakt.load(DATA / "mini-swe-agent" / "django__django-11797.traj.json"))
    store.append("run", msgs)
    originals = store.messages("run")
    view = View(MessageIndex(originals))
    budget = view.total_tokens // 10
    Budgeted(budget).apply(view, CompactionContext(view))
    assert view.total_tokens <= budget
    store.record_compaction("run", CompactionRecord.from_view(view))
    sent = store.current_view("run").render()
    sent_ids = {m.id for m in sent}
    sent_text = "\n".join(m.text for m in sent)
    evicted = [m for m in originals if m.id not in sent_ids]
    all_text = [m.text for m in originals]

    # an error line only one evicted tool result contained
    error_hit = _unique_evicted(evicted, all_text, sent_text, r"[^\n]*(?:Error|Exception)[^\n]*")
    # a file path that only evicted messages mention
    path_hit = _unique_evicted(evicted, all_text, sent_text, r"[\w./-]+/[\w.-]+\.py")
    for needle, original in (error_hit, path_hit):
        got = store.recall("run", needle, max_tokens=20_000)
        assert original in got, needle
        again = next(m for m in got if m.id == original.id)
        assert again == original and again.text == original.text  # verbatim
    assert error_hit[1].role == "tool"
    print(f"\nrecalled by error {error_hit[0]!r} and by path {path_hit[0]!r}")


def _unique_evicted(
    evicted: list[Message], all_text: list[str], sent_text: str, pattern: str
) -> tuple[str, Message]:
    for m in evicted:
        if pattern.endswith("]*") and m.role != "tool":
            continue
        for found in re.findall(pattern, m.text):
            needle = found.strip()
            if len(needle) < 12 or needle in sent_text:
                continue
            if sum(needle in t for t in all_text) == 1:
                return needle, m
    raise AssertionError(f"no evicted message has a unique match of {pattern}")


def test_records_serialize_as_json() -> None:
    rec = CompactionRecord(
        synthetic=(Message.assistant("s", synthetic="summary", covers=("a", "b")),),
        dropped=("c",),
        upto=3,
        event={"x": 1},
    )
    back = CompactionRecord.from_dict(json.loads(json.dumps(rec.to_dict())))
    assert back.synthetic == rec.synthetic and back.dropped == ("c",) and back.upto == 3


# -- properties ----------------------------------------------------------------------------

texts = st.sampled_from(["a", "b", "TimeoutError", "src/x.py", "日本"])
batches = st.lists(st.lists(texts, max_size=4), min_size=1, max_size=5)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(batches=batches)
def test_appends_concatenate_with_unique_ids_and_contiguous_seq(
    store: AnyStore, batches: list[list[str]]
) -> None:
    session = uuid.uuid4().hex
    expected: list[str] = []
    seqs: list[int] = []
    for batch in batches:
        seqs += store.append(session, [Message.user(t) for t in batch])
        expected += batch
    got = store.messages(session)
    assert [m.text for m in got] == expected
    assert seqs == list(range(len(expected)))
    assert len({m.id for m in got}) == len(got)
    assert all(store.get(session, m.id) == m for m in got)
    index = MessageIndex([Message.user(t) for t in expected])
    assert [m.id for m in got] == [m.id for m in index.messages]  # the index's rule


def test_postgres_store_without_psycopg_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from kompakt.errors import MissingDependency
    from kompakt.store.postgres import PostgresStore

    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(MissingDependency, match=r'pip install "kompakt\[postgres\]"'):
        PostgresStore("postgresql://nowhere/db")


def test_nul_bytes_and_huge_tool_output_survive(store: AnyStore) -> None:
    weird = Message.tool("binary\x00junk then NeedleError", tool_call_id="c1")
    huge = Message.tool("y " * 1_000_000 + "TailMarker", tool_call_id="c2")
    store.append("s", [weird, huge])
    assert store.messages("s") == [weird, huge]
    assert store.search("s", "NeedleError") == [weird]
    assert store.search("s", "TailMarker") == [huge]  # beyond what the text index holds


def test_append_takes_anthropic_blocks(store: AnyStore) -> None:
    store.append(
        "s",
        [
            {"role": "user", "content": "list files"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.py"}],
            },
        ],
    )
    got = store.messages("s")
    assert got[1].tool_calls[0].name == "ls"
    assert any(m.role == "tool" and m.tool_call_id == "t1" and m.text == "a.py" for m in got)
    assert store.search("s", "a.py")[0].tool_call_id == "t1"


def test_postgres_store_reconnects_after_the_server_drops_it(make_store: StoreFactory) -> None:
    if make_store.kind != "postgres":  # type: ignore[attr-defined]
        pytest.skip("PostgreSQL only")
    import psycopg

    store = make_store()
    assert isinstance(store, PostgresStore)
    store.append("s", convo())
    pid = store._conn.info.backend_pid
    with psycopg.connect(make_store.target[0], autocommit=True) as admin:  # type: ignore[attr-defined]
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    assert store.messages("s") == convo()  # read again on a new connection
    store.append("s", [Message.user("after")])
    assert store.count("s") == 8


# -- one writer at a time: optimistic appends ---------------------------------------------------


def test_an_append_expecting_a_stale_count_conflicts_and_writes_nothing(
    make_store: StoreFactory,
) -> None:
    first, second = make_store(), make_store()  # two handles on one storage
    two = [Message.user("a"), Message.assistant("b")]
    assert first.append("s", two, expected_count=0) == [0, 1]
    assert second.append("s", [Message.user("c")], expected_count=2) == [2]
    with pytest.raises(SessionConflict) as caught:
        first.append("s", [Message.user("late")], expected_count=2)
    assert isinstance(caught.value, StoreError)
    assert (caught.value.session, caught.value.expected, caught.value.found) == ("s", 2, 3)
    assert "session 's' holds 3 messages, not the 2" in str(caught.value)
    assert [m.text for m in second.messages("s")] == ["a", "b", "c"]
    with pytest.raises(SessionConflict):
        first.append("fresh", [], expected_count=1)  # an empty append checks too
    assert first.append("s", [Message.user("d")]) == [3]  # without it: appended as before


def _slow_tool_agent(store: HistoryStore, label: str) -> Agent:
    async def run_step(n: int) -> str:
        """Run one step of the work.

        Args:
            n: which step.
        """
        await asyncio.sleep(0.01)
        return f"{label} step {n} done"

    script: list[Message | str] = [
        Message.assistant(
            tool_calls=[ToolCall(id=f"{label}{i}", name="run_step", arguments=f'{{"n": {i}}}')]
        )
        for i in range(4)
    ]
    model = ScriptedModel([*script, f"{label} finished"], delay=0.005)
    return Agent(model, tools=[run_step], store=store, session="shared", system="be careful")


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
async def test_two_agents_at_once_on_one_session_never_interleave(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if kind == "sqlite":
        handles: list[HistoryStore] = [SQLiteStore(tmp_path / "h.db") for _ in range(2)]
    else:
        from kompakt.store.postgres import PostgresStore

        dsn = request.getfixturevalue("postgres_dsn")
        schema = "t_" + uuid.uuid4().hex[:12]
        handles = [PostgresStore(dsn, schema=schema) for _ in range(2)]
    try:
        agents = [_slow_tool_agent(h, label) for h, label in zip(handles, "ab", strict=True)]
        results = await asyncio.gather(
            *(a.run(f"task {a.session}") for a in agents), return_exceptions=True
        )
        conflicts = [r for r in results if isinstance(r, SessionConflict)]
        finished = [r for r in results if not isinstance(r, BaseException)]
        assert len(conflicts) == 1 and len(finished) == 1, results
        assert "another writer appended to it" in str(conflicts[0])
        stored = handles[0].messages("shared")
        assert not find_problems(stored), find_problems(stored)
        # the winner's tool run is whole and in order; the loser wrote nothing after the conflict
        winner = finished[0].output[0]
        loser = "b" if winner == "a" else "a"
        ids = [m.tool_call_id for m in stored if m.role == "tool"]
        assert ids == [f"{winner}{i}" for i in range(4)]
        assert not any(m.text.startswith(f"{loser} step") for m in stored)
        # the agent that lost loads the session afresh and goes on from there
        again = _slow_tool_agent(handles[1], "c")
        assert (await again.run("one more")).output == "c finished"
        assert not find_problems(handles[1].messages("shared"))
    finally:
        for h in handles:
            h.close()
        if kind == "postgres":
            import psycopg

            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
