"""The validation oracle: every rule, both dialects, real transcripts, random conversations."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kompakt.errors import ConfigError, InvalidConversation, Problem
from kompakt.messages import Message, Part, ToolCall
from kompakt.validation import RULES, find_problems, validate
from strategies_conv import conversations


def call(i: str, name: str = "ls") -> ToolCall:
    return ToolCall(id=i, name=name, arguments="{}")


def ask(*ids: str, text: str = "") -> Message:
    return Message.assistant(text, tool_calls=[call(i) for i in ids])


def res(i: str, text: str = "ok") -> Message:
    return Message.tool(text, tool_call_id=i)


U, A, S = Message.user("hi"), Message.assistant("hello"), Message.system("be brief")


def rules(msgs: list[Message], dialect: str = "openai") -> list[tuple[int, str]]:
    return [(p.index, p.rule) for p in find_problems(msgs, format=dialect)]  # type: ignore[arg-type]


def test_valid_conversation_has_no_problems() -> None:
    msgs = [S, U, ask("a", "b"), res("b"), res("a"), A, Message.user("more"), A]
    assert rules(msgs) == []
    assert rules(msgs, "anthropic") == []
    validate(msgs)


def test_orphan_result() -> None:
    assert rules([U, res("x")]) == [(1, "orphan_result")]
    no_id = Message(role="tool", content=(Part(text="r"),))
    assert rules([U, no_id]) == [(1, "orphan_result")]


def test_missing_result_but_trailing_pending_call_is_allowed() -> None:
    assert rules([U, ask("a", "b"), res("a"), A]) == [(1, "missing_result")]
    assert rules([U, ask("a", "b"), res("a")]) == []  # pending: only results follow it
    assert rules([U, ask("a")]) == []
    assert rules([U, ask("a"), U]) == [(1, "missing_result")]


def test_missing_result_names_every_missing_call() -> None:
    (p,) = find_problems([U, ask("a", "b", "c"), res("b"), A])
    assert "'a'" in p.message and "'c'" in p.message and "'b'" not in p.message


def test_duplicate_call_ids() -> None:
    assert rules([U, ask("a"), res("a"), ask("a"), res("a"), A]) == [(3, "duplicate_call_id")]
    assert (1, "duplicate_call_id") in rules([U, ask("a", "a"), res("a"), A])


def test_duplicate_result() -> None:
    assert rules([U, ask("a"), res("a"), res("a"), A]) == [(3, "duplicate_result")]


def test_result_before_call() -> None:
    got = rules([U, res("a"), ask("a"), A])
    assert (1, "result_before_call") in got and (2, "missing_result") in got


def test_result_not_directly_after_call() -> None:
    got = rules([U, ask("a"), Message.user("wait"), res("a"), A])
    assert got == [(1, "missing_result"), (3, "result_not_adjacent")]
    got = rules([U, ask("a"), res("a"), ask("b"), res("a"), res("b"), A])
    assert (4, "result_not_adjacent") in got


def test_empty_assistant() -> None:
    assert rules([U, Message.assistant("")]) == [(1, "empty_assistant")]
    blank = Message(role="assistant", content=(Part(text=""),))
    assert rules([U, blank]) == [(1, "empty_assistant")]
    image = Message(role="assistant", content=(Part(kind="image", data={"type": "image"}),))
    assert rules([U, image]) == []
    assert rules([U, ask("a")]) == []  # calls alone are content


def test_anthropic_role_order() -> None:
    assert rules([S, A], "anthropic") == [(1, "first_not_user")]
    assert rules([S, A], "openai") == []
    assert rules([U, S], "anthropic") == [(1, "system_not_first")]
    dev = Message(role="developer", content=(Part(text="x"),))
    assert rules([dev, S, U], "anthropic") == []
    assert rules([U, dev], "anthropic") == [(1, "system_not_first")]
    assert rules([U, dev], "openai") == []
    got = rules([S, res("a"), U], "anthropic")  # a tool result is user-side only after a call
    assert got == [(1, "orphan_result"), (1, "first_not_user")]


def test_validate_raises_listing_every_problem() -> None:
    with pytest.raises(InvalidConversation) as info:
        validate([A, res("x"), Message.assistant("")], format="anthropic")
    err = info.value
    assert [(p.index, p.rule) for p in err.problems] == [
        (0, "first_not_user"),
        (1, "orphan_result"),
        (2, "empty_assistant"),
    ]
    assert str(err).startswith("invalid for anthropic: message 0: first_not_user:")
    assert "(and 2 more)" in str(err)


def test_accepts_anything_load_reads() -> None:
    doc = [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "x", "content": ""}]
    assert find_problems(doc) == [Problem(1, "orphan_result", "")]
    anthropic = {"system": "s", "messages": [{"role": "assistant", "content": "a"}]}
    assert [p.rule for p in find_problems(anthropic, format="anthropic")] == ["first_not_user"]
    assert find_problems(iter([U, A])) == []


def test_unknown_dialect() -> None:
    with pytest.raises(
        ConfigError, match="`format` must be one of openai, anthropic, responses, gemini"
    ):
        find_problems([U], format="bard")  # type: ignore[arg-type]


def test_rule_ids_are_documented() -> None:
    import kompakt.validation as v

    for rule in RULES:
        assert f"``{rule}``" in (v.__doc__ or "")


@settings(max_examples=60, deadline=None)
@given(conversations())
def test_generated_conversations_are_valid(msgs: list[Message]) -> None:
    assert find_problems(msgs, format="openai") == []
    assert find_problems(msgs, format="anthropic") == []


@settings(max_examples=60, deadline=None)
@given(conversations(pending=False, min_turns=2), st.data())
def test_removing_any_answered_result_is_caught(msgs: list[Message], data: st.DataObject) -> None:
    results = [i for i, m in enumerate(msgs) if m.role == "tool"]
    if not results:
        return
    i = data.draw(st.sampled_from(results))
    broken = msgs[:i] + msgs[i + 1 :]
    found = {p.rule for p in find_problems(broken)}
    assert "missing_result" in found


@settings(max_examples=60, deadline=None)
@given(conversations(min_turns=2), st.data())
def test_removing_a_call_orphans_its_results(msgs: list[Message], data: st.DataObject) -> None:
    asks = [i for i, m in enumerate(msgs) if m.tool_calls]
    if not asks:
        return
    i = data.draw(st.sampled_from(asks))
    broken = msgs[:i] + msgs[i + 1 :]
    answered = any(m.role == "tool" for m in msgs[i + 1 : i + 2])
    assert ("orphan_result" in {p.rule for p in find_problems(broken)}) == answered


def test_linear_time_on_a_long_history() -> None:
    msgs: list[Message] = [S, U]
    for n in range(25_000):
        msgs += [ask(f"c{n}"), res(f"c{n}")]
    start = time.perf_counter()
    assert find_problems(msgs, format="anthropic") == []
    assert time.perf_counter() - start < 5.0  # 50k messages; ~0.1 s on one core
