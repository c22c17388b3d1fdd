"""The incremental index: totals equal a recount, groups partition, calls stay with results."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from data_files import TRANSCRIPTS
from kompakt.formats import load
from kompakt.index import MessageIndex
from kompakt.messages import Message, Part, ToolCall
from kompakt.tokens import CharEstimator, TiktokenTokenizer, Tokenizer
from kompakt.view import View
from strategies_conv import conversations


class CountingTokenizer(CharEstimator):
    """A CharEstimator that records every message it is asked to count."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    def count_message(self, message: Message) -> int:
        self.asked.append(message.id)
        return super().count_message(message)


def recount(index: MessageIndex, tok: Tokenizer) -> None:
    """Assert every running total of `index` equals a from-scratch recount."""
    msgs = list(index.messages)
    groups = list(index.groups)
    assert index.message_count == len(msgs) == len(index)
    assert index.total_tokens == sum(tok.count_message(m) for m in msgs)
    assert index.total_chars == sum(m.char_count for m in msgs)
    assert list(index.message_tokens) == [tok.count_message(m) for m in msgs]
    assert index.group_count == len(groups)
    assert sum(g.tokens for g in groups) == index.total_tokens
    assert sum(g.chars for g in groups) == index.total_chars
    users = [g for g in groups if g.kind == "user"]
    assert index.turn_count == len(users) == sum(m.role == "user" and not m.synthetic
                                                 for m in msgs)  # fmt: skip
    assert index.tool_call_group_count == sum(g.kind == "tool_call" for g in groups)
    assert index.last_user_group == (users[-1].index if users else None)
    assert index.first_user_group == (users[0].index if users else None)
    for g in groups:
        assert g.tokens == sum(tok.count_message(m) for m in index.group_messages(g))
        assert g.pinned == any(m.pinned or m.memory for m in index.group_messages(g))


def check_partition(index: MessageIndex) -> None:
    """Groups cover every message once, in order, and never split a call from a result."""
    end = 0
    for n, g in enumerate(index.groups):
        assert (g.index, g.start) == (n, end) and g.end > g.start
        end = g.end
        for pos in range(g.start, g.end):
            assert index.group_of(pos) is g
    assert end == index.message_count
    for pos, m in enumerate(index.messages):
        if m.role == "tool":
            g = index.group_of(pos)
            owner = index.messages[g.start]
            assert g.kind == "tool_call"
            assert m.tool_call_id in {c.id for c in owner.tool_calls}, "result split from call"
        if m.tool_calls:
            assert index.group_of(pos).start == pos


def check_kinds_and_turns(index: MessageIndex) -> None:
    turn = 0
    for g in index.groups:
        first = index.messages[g.start]
        if first.role == "user":
            turn += 1
        assert g.turn == turn
        expected = {"system": "system", "developer": "system", "user": "user"}.get(first.role)
        if first.role == "assistant":
            expected = "tool_call" if first.tool_calls else "assistant_text"
        assert g.kind == expected


def check_pending(index: MessageIndex, msgs: Sequence[Message]) -> None:
    groups = index.groups
    for g in groups[:-1]:
        assert not g.pending
    answered = {m.tool_call_id for m in msgs if m.role == "tool"}
    last = groups[-1] if groups else None
    if last is not None and last.kind == "tool_call":
        owner = index.messages[last.start]
        assert last.open_calls == {c.id for c in owner.tool_calls} - answered


@settings(max_examples=80, deadline=None)
@given(conversations(max_turns=6))
def test_index_totals_groups_and_pairs(msgs: list[Message]) -> None:
    tok = CharEstimator()
    index = MessageIndex(msgs, tokenizer=tok)
    recount(index, tok)
    check_partition(index)
    check_kinds_and_turns(index)
    check_pending(index, msgs)
    assert len({m.id for m in index.messages}) == len(msgs)
    assert not any(g.orphan for g in index.groups)


@settings(max_examples=40, deadline=None)
@given(conversations(max_turns=4), st.sampled_from([1, 2.5, 3, 4, 7.3]))
def test_extend_at_a_flat_rate_prices_each_message_as_its_tokenizer(
    msgs: list[Message], rate: float
) -> None:
    # the index prices plain messages from their lengths: the same numbers as counting them
    call = ToolCall(id="c9", name="lire", arguments='{"chemin": "é.py"}')
    odd = [
        Message.user("naïve café"),
        Message.assistant(tool_calls=[call]),
        Message.tool("é", tool_call_id="c9"),
        Message(role="user", content=(Part(text=""),)),
        Message.assistant("x" * 1001),
    ]
    tok = CharEstimator(chars_per_token=rate)
    index = MessageIndex([*msgs, *odd], tokenizer=tok)
    recount(index, tok)


def test_group_of_reads_positions_like_a_list() -> None:
    call = ToolCall(id="c1", name="ls")
    index = MessageIndex(
        [
            Message.user("go"),
            Message.assistant(tool_calls=[call]),
            Message.tool("a", tool_call_id="c1"),
        ]
    )
    assert [index.group_of(p).kind for p in range(3)] == ["user", "tool_call", "tool_call"]
    assert index.group_of(-1) is index.group_of(1) is index.groups[1]
    for outside in (3, -4):
        with pytest.raises(IndexError):
            index.group_of(outside)


@settings(max_examples=30, deadline=None)
@given(conversations(max_turns=4))
def test_appending_one_at_a_time_equals_extend(msgs: list[Message]) -> None:
    tok = CharEstimator()
    one = MessageIndex(tokenizer=tok)
    for n, m in enumerate(msgs, 1):
        one.append(m)
        assert one.message_count == n
        if n % 7 == 0 or n == len(msgs):
            recount(one, tok)
    both = MessageIndex(msgs, tokenizer=tok)
    assert [(g.kind, g.start, g.end, g.tokens) for g in one.groups] == [
        (g.kind, g.start, g.end, g.tokens) for g in both.groups
    ]


@settings(max_examples=40, deadline=None)
@given(conversations(max_turns=4))
def test_each_message_is_tokenized_once(msgs: list[Message]) -> None:
    tok = CountingTokenizer()
    index = MessageIndex(tokenizer=tok)
    for m in msgs:
        before = len(tok.asked)
        stored = index.append(m)
        assert tok.asked[before:] == [stored.id]
        _ = index.total_tokens, index.group_count, index.turn_count  # O(1) reads, no counting
        assert len(tok.asked) == before + 1


@settings(max_examples=40, deadline=None)
@given(conversations(max_turns=5))
def test_fresh_view_renders_the_messages(msgs: list[Message]) -> None:
    index = MessageIndex(msgs)
    view = View(index)
    assert view.render() == list(index.messages)
    assert [m.digest for m in view.render()] == [m.digest for m in msgs]
    assert view.total_tokens == index.total_tokens
    assert view.message_count == index.message_count
    assert view.group_count == index.group_count and not view.changed


@settings(max_examples=25, deadline=None)
@given(conversations(max_turns=3, huge_outputs=False))
def test_totals_with_an_exact_tokenizer(msgs: list[Message]) -> None:
    tok = TiktokenTokenizer("cl100k_base")
    index = MessageIndex(msgs, tokenizer=tok)
    recount(index, tok)


@settings(max_examples=30, deadline=None)
@given(conversations(min_turns=2, pending=False), st.data())
def test_orphans_get_their_own_group(msgs: list[Message], data: st.DataObject) -> None:
    asks = [i for i, m in enumerate(msgs) if m.tool_calls]
    if not asks:
        return
    i = data.draw(st.sampled_from(asks))
    index = MessageIndex(msgs[:i] + msgs[i + 1 :])
    orphans = [g for g in index.groups if g.orphan]
    assert orphans and all(g.kind == "tool_call" and g.size == 1 for g in orphans)
    check_partition_sizes(index)


def check_partition_sizes(index: MessageIndex) -> None:
    assert sum(g.size for g in index.groups) == index.message_count


def test_summaries_pinned_and_positions() -> None:
    call = ToolCall(id="c1", name="ls")
    msgs = [
        Message.system("s"),
        Message.user("task", pinned=True),
        Message.user("[summary]", synthetic="summary", covers=("x",)),
        Message.assistant(tool_calls=[call]),
        Message.tool("out", tool_call_id="c1"),
        Message.assistant("done"),
    ]
    index = MessageIndex(msgs)
    assert [g.kind for g in index.groups] == [
        "system", "user", "summary", "tool_call", "assistant_text",
    ]  # fmt: skip
    assert index.turn_count == 1 and index.groups[1].pinned
    assert index.position(msgs[4].id) == 4 and index.position("nope") is None
    assert [m.id for m in index.group_messages(3)] == [msgs[3].id, msgs[4].id]


def test_duplicate_messages_get_distinct_ids() -> None:
    index = MessageIndex([Message.user("hi"), Message.user("hi"), Message.user("hi")])
    first = index.messages[0].id
    assert [m.id for m in index.messages] == [first, first + "~2", first + "~3"]


def test_pending_parallel_call_is_its_own_group() -> None:
    calls = [ToolCall(id="a", name="f"), ToolCall(id="b", name="g")]
    index = MessageIndex([Message.user("go"), Message.assistant(tool_calls=calls)])
    assert index.groups[-1].pending and index.groups[-1].open_calls == {"a", "b"}
    index.append(Message.tool("1", tool_call_id="b"))
    assert index.groups[-1].open_calls == {"a"} and index.group_count == 2
    index.append(Message.tool("2", tool_call_id="a"))
    assert not index.groups[-1].pending and index.groups[-1].size == 3


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=[p.name[:48] for p in TRANSCRIPTS])
def test_real_transcripts_index(path: Path) -> None:
    conv = load(path)
    tok = CharEstimator()
    index = MessageIndex(conv, tokenizer=tok)
    recount(index, tok)
    check_partition(index)
    check_kinds_and_turns(index)
    check_pending(index, conv)
    assert index.tool_call_group_count == sum(1 for m in conv if m.tool_calls)
    if conv.format == "mini-swe-agent":  # ends on the submit call, whose result never came
        assert index.groups[-1].pending
    assert View(index).render() == list(index.messages)


def test_groups_with_no_call_waiting_hold_no_set_of_their_own() -> None:
    # a long history keeps one shared empty set, not one per group (memory, and objects
    # the garbage collector walks); appended one by one or built at once, the same
    msgs = [Message.user("go")]
    for i in range(3):
        calls = [ToolCall(id=f"c{i}a", name="f"), ToolCall(id=f"c{i}b", name="g")]
        msgs.append(Message.assistant(tool_calls=calls))
        msgs += [Message.tool("1", tool_call_id=f"c{i}a"), Message.tool("2", tool_call_id=f"c{i}b")]
        msgs.append(Message.assistant("done"))
    for index in (MessageIndex(msgs), _appended(msgs)):
        assert index.group_count == 7 and not any(g.pending for g in index.groups)
        assert len({id(g.open_calls) for g in index.groups}) == 1


def _appended(msgs: list[Message]) -> MessageIndex:
    index = MessageIndex()
    for m in msgs:
        index.append(m)
    return index
