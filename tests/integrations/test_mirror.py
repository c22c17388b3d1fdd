"""The shared adapter core: incremental indexing and render reuse never change the output."""

from __future__ import annotations

from typing import Any

from framework_checks import assert_valid_history
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kompakt import Budgeted, BudgetImpossible, Compactor, TokensExceed
from kompakt.integrations._bridge import Mirror
from kompakt.messages import Message
from strategies_conv import conversations


def _mirror(budget: int, **options: Any) -> Mirror:
    compactor = Compactor(trigger=TokensExceed(budget), strategy=Budgeted(budget * 3 // 4))
    return Mirror(compactor, lambda m, pos: [m], list, **options)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    conversations(max_turns=4, pending=False),
    st.integers(300, 3_000),
    st.lists(st.integers(1, 6), min_size=1, max_size=30),
)
def test_growing_history_renders_as_a_full_render_would(
    msgs: list[Message], budget: int, steps: list[int]
) -> None:
    """Append in random steps, compacting when due: every render (reused or not) equals a
    fresh render of the view, and every one is valid."""
    mirror = _mirror(budget)
    source: list[Any] = []
    at = 0
    for step in [*steps, len(msgs)]:
        source = source + msgs[at : at + step]
        at += step
        try:
            out = mirror.process(source)
        except BudgetImpossible:  # the protected core alone exceeds the budget: the engine's answer
            return
        full = mirror._render_all()
        assert [id(m) for m in out] == [id(m) for m in full]
        if at >= len(msgs):
            break
    assert_valid_history(out)


def test_rebuilds_when_the_history_is_edited() -> None:
    mirror = _mirror(10_000)
    a, b, c = Message.user("a"), Message.assistant("b"), Message.user("c")
    assert mirror.process([a, b, c]) == [a, b, c]
    first = mirror.index
    assert mirror.process([a, c]) == [a, c]  # b removed: a new index, nothing stale
    assert mirror.index is not first
    assert mirror.process([a, c, b]) == [a, c, b]


def test_a_changed_message_is_never_sent_as_its_stale_original() -> None:
    """A strategy that edits a message but keeps its id (and no `synthetic`) still gets
    its edit sent: originals are reused only when their content is what was recorded."""

    def shorten(view: Any, context: Any) -> bool:
        g = view.index.groups[1]
        (m,) = view.index.group_messages(g)
        view.replace(1, [m.evolve(content="short", id=m.id)])
        return True

    def render(msgs: Any) -> list[Any]:
        return [("converted", m.text) for m in msgs]

    from kompakt.triggers import Always

    mirror = Mirror(Compactor(trigger=Always(), strategy=shorten), lambda m, pos: [m], render)
    out = mirror.process([Message.user("a"), Message.assistant("long " * 50), Message.user("c")])
    assert out[1] == ("converted", "short")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    conversations(max_turns=3, pending=False),
    conversations(max_turns=3, pending=False),
    st.lists(st.tuples(st.booleans(), st.integers(1, 4)), min_size=1, max_size=30),
)
def test_conversations_never_mix_two_histories(
    a: list[Message], b: list[Message], steps: list[tuple[bool, int]]
) -> None:
    """Two histories grown in any interleaving through one `Conversations` render exactly
    as each would through a mirror of its own."""
    from hypothesis import assume

    from kompakt.integrations._bridge import Conversations

    assume(a[:1] != b[:1])  # conversations starting alike share an index until they part
    shared = Conversations(lambda events: _mirror(800, events=events, same=lambda x, y: x == y))
    alone = {True: _mirror(800), False: _mirror(800)}
    grown = {True: 0, False: 0}
    for first, step in steps:
        msgs = a if first else b
        grown[first] = min(len(msgs), grown[first] + step)
        source = msgs[: grown[first]]
        if not source:
            continue
        try:
            want = alone[first].process(source)
        except BudgetImpossible:
            return
        mirror, _ = shared.find(source)
        assert mirror.process(source) == want


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    conversations(max_turns=4, pending=False),
    st.integers(300, 3_000),
    st.lists(st.integers(1, 6), min_size=1, max_size=30),
)
def test_a_mirror_rebuilt_from_its_record_sends_the_same(
    msgs: list[Message], budget: int, steps: list[int]
) -> None:
    """Whenever a framework calls its model (every call answered), a new mirror given the
    same messages and the JSON record of the old one's view renders the same."""
    import json

    old, at = _mirror(budget), 0
    source: list[Message] = []
    for step in [*steps, len(msgs)]:
        source = source + msgs[at : at + step]
        at += step
        calls = {c.id for m in source for c in m.tool_calls}
        if calls != {m.tool_call_id for m in source if m.role == "tool"}:
            continue  # a batch still waiting for results: frameworks do not call the model
        try:
            out = old.process(source)
        except BudgetImpossible:
            return
        record = old.record()
        new = _mirror(budget)
        new.sync(source)
        if record is not None:
            new.restore(json.loads(json.dumps(record)))
            assert new.rev == old.rev
        assert [m.digest for m in new.render()] == [m.digest for m in out]
        if at >= len(msgs):
            break
    assert_valid_history(out)


def test_overhead_counts_but_is_not_sent() -> None:
    from kompakt.integrations._bridge import Overhead, strip_overhead

    mirror = _mirror(1_000)
    schemas = Overhead("tool schemas " * 200)
    msgs = [Message.user("a"), Message.assistant("b")]
    out = strip_overhead(mirror.process([schemas, *msgs]))
    assert out == msgs
    assert mirror.view.total_tokens > 200  # the schemas were counted
    again = strip_overhead(mirror.process([Overhead("tool schemas " * 200), *msgs]))
    assert again == msgs and mirror.last_render_reused  # an equal overhead is not a new history


def test_find_recognises_only_the_conversations_it_made() -> None:
    """A conversation the framework names (`get`) is never handed to one it does not name
    (`find`), even when their messages agree, and `find` still tells its own apart."""
    from kompakt.integrations._bridge import Conversations

    pool = Conversations(lambda events: _mirror(800, events=events))
    msgs = [Message.user("a"), Message.assistant("b"), Message.user("c")]
    named = pool.get("thread-1")
    named.process(msgs[:2])
    found, new = pool.find(msgs)
    assert new and found is not named
    found.process(msgs[:2])
    again, new = pool.find(msgs)
    assert again is found and not new
    other, new = pool.find([Message.user("z")])
    assert new and other is not found
    assert len(pool) == 3 and pool.get("thread-1") is named
