"""`kompakt.repair`: any corruption of a valid conversation comes back valid, and every
change is listed (nothing the input had is lost silently)."""

from __future__ import annotations

from dataclasses import FrozenInstanceError

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kompakt
from kompakt.messages import Message, ToolCall
from kompakt.repair import MISSING_RESULT, Repair, repair
from kompakt.validation import find_problems
from strategies_conv import conversations

DROPS = ("dropped_orphan_result", "dropped_duplicate_result", "dropped_empty_assistant")
CALL_RULES = {
    "orphan_result",
    "result_before_call",
    "result_not_adjacent",
    "duplicate_result",
    "missing_result",
    "duplicate_call_id",
    "empty_assistant",
}


def call(cid: str, name: str = "ls") -> ToolCall:
    return ToolCall(id=cid, name=name, arguments="{}")


def _corrupt(msgs: list[Message], ops: list[tuple[int, int, int]]) -> list[Message]:
    """Apply random edits: delete, duplicate, move, re-point a result, reuse a call id."""
    out = list(msgs)
    for op, a, b in ops:
        if not out:
            break
        i, j = a % len(out), b % len(out)
        m = out[i]
        if op == 0:
            del out[i]
        elif op == 1:
            out.insert(j, m)
        elif op == 2:
            out.insert(j, out.pop(i))
        elif op == 3 and m.role == "tool":
            out[i] = m.evolve(tool_call_id=f"ghost_{j}")
        elif op == 4 and m.tool_calls:
            other = next(
                (c.id for x in out for c in x.tool_calls if c.id != m.tool_calls[0].id), None
            )
            if other is not None:
                first = m.tool_calls[0]
                new = ToolCall(id=other, name=first.name, arguments=first.arguments)
                out[i] = m.evolve(tool_calls=(new, *m.tool_calls[1:]))
        elif op == 5 and m.role == "tool":
            out[i] = m.evolve(tool_call_id=None)
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    conversations(max_turns=4),
    st.lists(
        st.tuples(st.integers(0, 5), st.integers(0, 10**6), st.integers(0, 10**6)), max_size=6
    ),
)
def test_any_corruption_comes_back_valid_and_every_change_is_listed(
    msgs: list[Message], ops: list[tuple[int, int, int]]
) -> None:
    broken = _corrupt(msgs, ops)
    fixed, repairs = repair(broken)
    for dialect in ("openai", "anthropic"):
        left = {p.rule for p in find_problems(fixed, format=dialect)} & CALL_RULES
        assert not left, (dialect, left, repairs)
    # nothing lost silently: every input message is in the output as it was, or changed
    # (same id) by a repair at its index, or dropped by a repair at its index
    same = {id(m) for m in fixed}
    ids = {m.id for m in fixed}
    dropped = {r.index for r in repairs if r.kind in DROPS}
    changed = {r.index for r in repairs if r.kind not in DROPS}
    for i, m in enumerate(broken):
        assert id(m) in same or i in dropped or (i in changed and m.id in ids), (i, m, repairs)
    assert len(fixed) == len(broken) - len(dropped) + sum(
        r.kind == "added_missing_result" for r in repairs
    )
    assert repair(fixed) == (fixed, [])  # a repaired conversation needs nothing more


@settings(max_examples=150, deadline=None)
@given(conversations(max_turns=5))
def test_a_valid_conversation_comes_back_unchanged(msgs: list[Message]) -> None:
    assert repair(msgs) == (msgs, [])


def test_an_unanswered_call_gets_a_clear_placeholder() -> None:
    msgs = [
        Message.user("go"),
        Message.assistant(tool_calls=[call("c1", "bash"), call("c2")]),
        Message.tool("ok", tool_call_id="c1"),
        Message.user("and then?"),
    ]
    fixed, repairs = repair(msgs)
    assert [(m.role, m.text, m.tool_call_id) for m in fixed[2:4]] == [
        ("tool", "ok", "c1"),
        ("tool", MISSING_RESULT, "c2"),
    ]
    assert [(r.index, r.kind) for r in repairs] == [(1, "added_missing_result")]
    assert "call 'c2' (ls) had no result" in str(repairs[0])


def test_a_trailing_call_stays_pending() -> None:
    msgs = [Message.user("go"), Message.assistant(tool_calls=[call("c1")])]
    assert repair(msgs) == (msgs, [])


def test_a_result_is_moved_next_to_its_call() -> None:
    msgs = [
        Message.tool("early", tool_call_id="c1"),
        Message.user("go"),
        Message.assistant(tool_calls=[call("c1")]),
        Message.user("where is it?"),
    ]
    fixed, repairs = repair(msgs)
    assert [m.role for m in fixed] == ["user", "assistant", "tool", "user"]
    assert fixed[2] is msgs[0]
    assert [(r.index, r.kind) for r in repairs] == [(0, "moved_result")]


def test_orphans_are_dropped_or_reattached() -> None:
    msgs = [
        Message.user("go"),
        Message.tool("from a trimmed window", tool_call_id="gone"),
        Message.assistant(tool_calls=[call("c1")]),
        Message.tool("ls output", tool_call_id="wrong-id"),
        Message.user("next"),
    ]
    fixed, repairs = repair(msgs)
    assert [(m.role, m.tool_call_id) for m in fixed] == [
        ("user", None),
        ("assistant", None),
        ("tool", "c1"),
        ("user", None),
    ]
    assert fixed[2].id == msgs[3].id  # the same message, answering its call
    assert [(r.index, r.kind) for r in repairs] == [
        (1, "dropped_orphan_result"),
        (3, "reattached_result"),
    ]
    assert "'from a trimmed window'" in repairs[0].detail


def test_a_reused_call_id_is_renamed_with_its_results() -> None:
    msgs = [
        Message.user("go"),
        Message.assistant(tool_calls=[call("c1")]),
        Message.tool("first", tool_call_id="c1"),
        Message.assistant(tool_calls=[call("c1")]),  # a retry reusing the id
        Message.tool("second", tool_call_id="c1"),
        Message.user("done?"),
    ]
    fixed, repairs = repair(msgs)
    assert [c.id for m in fixed for c in m.tool_calls] == ["c1", "c1~2"]
    assert [(m.text, m.tool_call_id) for m in fixed if m.role == "tool"] == [
        ("first", "c1"),
        ("second", "c1~2"),
    ]
    assert [(r.index, r.kind) for r in repairs] == [(3, "renamed_call_id"), (4, "renamed_call_id")]
    assert find_problems(fixed) == []


def test_a_second_result_is_dropped_and_named() -> None:
    msgs = [
        Message.user("go"),
        Message.assistant(tool_calls=[call("c1")]),
        Message.tool("once", tool_call_id="c1"),
        Message.tool("twice", tool_call_id="c1"),
        Message.assistant(""),
        Message.user("ok"),
    ]
    fixed, repairs = repair(msgs)
    assert [m.text for m in fixed] == ["go", "", "once", "ok"]
    assert [(r.index, r.kind) for r in repairs] == [
        (3, "dropped_duplicate_result"),
        (4, "dropped_empty_assistant"),
    ]


def test_repair_takes_dicts_and_is_exported() -> None:
    dicts = [
        {"role": "user", "content": "go"},
        {"role": "tool", "tool_call_id": "x", "content": "orphan"},
    ]
    fixed, repairs = kompakt.repair(dicts)
    assert [m.role for m in fixed] == ["user"]
    assert isinstance(repairs[0], kompakt.Repair)
    assert [(r.index, r.kind) for r in repairs] == [(1, "dropped_orphan_result")]
    with pytest.raises(FrozenInstanceError):
        repairs[0].index = 5  # type: ignore[misc]
    assert Repair(1, "moved_result", "x") == Repair(1, "moved_result", "x")
