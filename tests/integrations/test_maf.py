"""Microsoft Agent Framework adapter: a real MAF Agent with a scripted chat client."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("agent_framework")

from agent_framework import (
    Agent,
    BaseChatClient,
    ChatResponse,
    CompactionProvider,
    Content,
    FunctionInvocationLayer,
    InMemoryHistoryProvider,
    Message,
    tool,
)
from framework_checks import BIG, assert_valid_history, tool_result_count
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kompakt import Budgeted, Compactor, TokensExceed
from kompakt.integrations.maf import KompaktStrategy, from_maf, to_maf

TURNS = 12
FINAL = "All 12 files read; the bug is in f7.py."


class ScriptedChatClient(FunctionInvocationLayer[Any], BaseChatClient[Any]):
    """A MAF chat client (with MAF's own function-invocation loop) that calls read_file
    for `turns` steps, then answers; it records what it was sent, converted at call time."""

    def __init__(self, turns: int = TURNS, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.turns = turns
        self.calls = 0
        self.requests: list[list[Any]] = []

    async def _respond(self, messages: list[Message]) -> ChatResponse:
        self.requests.append(from_maf(messages))  # messages are mutable: snapshot now
        self.calls += 1
        step = self.calls
        if step % (self.turns + 1) == 0:
            return ChatResponse(messages=[Message("assistant", [FINAL])])
        calls = [
            Content.from_function_call(
                call_id=f"call_{step}", name="read_file", arguments={"path": f"f{step}.py"}
            )
        ]
        if step % 4 == 0:
            calls.append(
                Content.from_function_call(
                    call_id=f"par_{step}", name="read_file", arguments={"path": f"g{step}.py"}
                )
            )
        return ChatResponse(messages=[Message("assistant", calls)])

    def _inner_get_response(self, *, messages: Any, stream: bool, options: Any, **kw: Any) -> Any:
        return self._respond(list(messages))


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"{path}:\n{BIG}"


def _strategy() -> KompaktStrategy:
    return KompaktStrategy(Compactor(trigger=TokensExceed(4_000), strategy=Budgeted(3_000)))


def _compacted(requests: list[list[Any]]) -> int:
    """Every request valid; returns how many were compacted."""
    compacted = 0
    for i, msgs in enumerate(requests):
        assert_valid_history(msgs)
        made = sum(2 if s % 4 == 0 else 1 for s in range(1, i + 1))
        compacted += tool_result_count(msgs) < made
    return compacted


# -- conversion -------------------------------------------------------------------------

_text = st.text(max_size=30)


@st.composite
def _messages(draw: st.DrawFn) -> list[Any]:
    out: list[Any] = [Message("system", [draw(_text)])]
    for turn in range(draw(st.integers(1, 3))):
        content: list[Any] = [draw(_text)]
        if draw(st.booleans()):
            content.append(Content.from_uri("https://x.test/a.png", media_type="image/png"))
        out.append(Message("user", content, message_id=draw(st.one_of(st.none(), _text))))
        for step in range(draw(st.integers(0, 3))):
            ids = [f"c{turn}{step}{k}" for k in range(draw(st.integers(1, 3)))]
            calls = []
            for i in ids:
                args = draw(st.one_of(st.just({"path": "a"}), st.just('{"q": 1}')))
                calls.append(Content.from_function_call(call_id=i, name="t", arguments=args))
            text = [Content.from_text(draw(_text))] if draw(st.booleans()) else []
            out.append(
                Message(
                    "assistant",
                    [*text, *calls],
                    message_id=f"a{turn}{step}",
                    author_name=draw(st.one_of(st.none(), st.just("bot"))),
                )
            )
            results = [
                Content.from_function_result(
                    call_id=i, result=draw(st.one_of(_text, st.just({"rows": [1, 2]})))
                )
                for i in ids
            ]
            out.append(Message("tool", results, message_id=draw(st.one_of(st.none(), _text))))
        out.append(Message("assistant", [draw(_text)]))
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_messages())
def test_round_trip_is_identity(messages: list[Any]) -> None:
    kompakt_msgs = from_maf(messages)
    back = to_maf(kompakt_msgs)
    assert [m.to_dict() for m in back] == [m.to_dict() for m in messages]
    ids = [c.call_id for m in messages for c in m.contents if c.type == "function_call"]
    assert ids == [c.id for m in kompakt_msgs for c in m.tool_calls]
    args = [c.arguments for m in messages for c in m.contents if c.type == "function_call"]
    got = [c.arguments for m in kompakt_msgs for c in m.tool_calls]
    assert [a if isinstance(a, str) else json.dumps(a) for a in args] == got


def test_a_clamped_result_is_not_resent_whole() -> None:
    msgs = from_maf([Message("tool", [Content.from_function_result(call_id="c", result=BIG)])])
    short = msgs[0].evolve(content="head … tail", synthetic="clamped", covers=(msgs[0].id,))
    (back,) = to_maf([short])
    assert BIG not in json.dumps(back.to_dict())


# -- agents ---------------------------------------------------------------------------------


def test_is_a_maf_compaction_strategy() -> None:
    from agent_framework._compaction import CompactionStrategy

    assert isinstance(_strategy(), CompactionStrategy)


async def test_agent_compaction_strategy() -> None:
    client = ScriptedChatClient()
    strategy = _strategy()
    agent = Agent(client=client, tools=[read_file], compaction_strategy=strategy)
    result = await agent.run("Read f1..f12 and find the bug.")

    assert result.text == FINAL
    assert len(client.requests) == TURNS + 1
    assert _compacted(client.requests) >= 3, "compaction never reached the model"
    assert strategy.events
    last = client.requests[-1]
    assert last[0].role == "user" and last[0].text.startswith("Read f1")
    assert {m.tool_call_id for m in last[-2:]} == {"call_12", "par_12"}
    assert any(
        m.extra["maf"]["message"]["additional_properties"].get("_kompakt_synthetic")
        for m in last
        if m.role == "assistant" and "message" in m.extra["maf"]
    )


@pytest.mark.parametrize("shared", [False, True])
async def test_compaction_provider_before_and_after_run(shared: bool) -> None:
    """kompakt in MAF's CompactionProvider, over three runs of one session."""
    client = ScriptedChatClient(turns=4)
    history = InMemoryHistoryProvider()
    before = _strategy()
    after = before if shared else _strategy()
    provider = CompactionProvider(
        before_strategy=before, after_strategy=after, history_source_id=history.source_id
    )
    agent = Agent(client=client, tools=[read_file], context_providers=[history, provider])
    session = agent.create_session()
    for run in range(3):
        result = await agent.run(f"task {run}", session=session)
        assert result.text == FINAL
    for msgs in client.requests:
        assert_valid_history(msgs)
    stored = session.state[history.source_id]["messages"]
    # every original is still stored; kompakt only marked some excluded
    assert (
        tool_result_count(
            from_maf([m for m in stored if "_kompakt_synthetic" not in m.additional_properties])
        )
        == 3 * 5
    )
    assert any(m.additional_properties.get("_exclude_reason") == "kompakt" for m in stored)


async def test_a_bare_kompakt_strategy_works_too() -> None:
    client = ScriptedChatClient()
    strategy = KompaktStrategy(Budgeted(3_000))  # a Compactor firing over the budget
    agent = Agent(client=client, tools=[read_file], compaction_strategy=strategy)
    result = await agent.run("Read f1..f12 and find the bug.")
    assert result.text == FINAL
    assert _compacted(client.requests) >= 3
    assert all(e.tokens_after <= 3_000 for e in strategy.events)
