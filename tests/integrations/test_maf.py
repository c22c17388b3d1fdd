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

    # like MAF's own summaries, kompakt's notes join the run's messages (MAF stores them)
    assert result.messages[-1].text == FINAL
    assert len(client.requests) == TURNS + 1
    assert _compacted(client.requests) >= 3, "compaction never reached the model"
    assert strategy.events
    last = client.requests[-1]
    assert last[0].role == "user" and last[0].text.startswith("Read f1")
    assert {m.tool_call_id for m in last[-2:]} == {"call_12", "par_12"}
    assert any(  # a kompakt note stands in for what was compacted
        m.extra["maf"]["message"]["additional_properties"].get("_kompakt_synthetic")
        for m in last
        if "message" in m.extra["maf"]
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
        assert result.messages[-1].text == FINAL
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
    assert result.messages[-1].text == FINAL
    assert _compacted(client.requests) >= 3
    assert all(e.tokens_after <= 3_000 for e in strategy.events)


# -- long runs, several sessions, restarts ------------------------------------------------------


class PerSession(FunctionInvocationLayer[Any], BaseChatClient[Any]):
    """Calls read_file `steps` times per user task (every fifth step two calls at once),
    then answers; records what each request sent, instructions and tools included."""

    def __init__(self, steps: int = 30, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.steps = steps
        self.done: dict[str, int] = {}
        self.requests: list[tuple[Any, list[Any]]] = []

    async def _respond(self, messages: list[Message], options: Any) -> ChatResponse:
        import asyncio

        self.requests.append((options, from_maf(messages)))
        task = [m.text for m in messages if m.role == "user" and m.text.startswith("task")][-1]
        k = self.done.get(task, 0) + 1
        self.done[task] = k
        await asyncio.sleep(0)  # let a concurrent session in
        if k > self.steps:
            return ChatResponse(messages=[Message("assistant", [f"done {task}"])])
        tag = task.split()[-1]
        calls = [
            Content.from_function_call(
                call_id=f"{tag}_{k}", name="read_big", arguments={"path": f"{tag}{k}.py"}
            )
        ]
        if k % 5 == 0:
            calls.append(
                Content.from_function_call(
                    call_id=f"{tag}_p{k}", name="read_big", arguments={"path": f"p{k}.py"}
                )
            )
        return ChatResponse(messages=[Message("assistant", calls)])

    def _inner_get_response(self, *, messages: Any, stream: bool, options: Any, **kw: Any) -> Any:
        if not stream:
            return self._respond(list(messages), options)
        from agent_framework import ChatResponseUpdate, ResponseStream

        async def updates() -> Any:
            response = await self._respond(list(messages), options)
            for m in response.messages:
                yield ChatResponseUpdate(role=m.role, contents=list(m.contents))  # type: ignore[arg-type]

        return ResponseStream(updates(), finalizer=ChatResponse.from_updates)


@tool
def read_big(path: str) -> str:
    """Read a file."""
    return f"{path}:\n" + "line of output that the model read once\n" * 100


INSTRUCTIONS = "You debug Python."


def _kompakt(**kw: Any) -> KompaktStrategy:
    compactor = Compactor(trigger=TokensExceed(4_000), strategy=Budgeted(3_000))
    return KompaktStrategy(compactor, instructions=INSTRUCTIONS, tools=[read_big], **kw)


def _agent(client: Any, strategy: KompaktStrategy, *, bound: bool = True) -> Agent[Any]:
    providers = [InMemoryHistoryProvider(), strategy.provider()] if bound else None
    return Agent(
        client=client,
        instructions=INSTRUCTIONS,
        tools=[read_big],
        compaction_strategy=strategy,
        context_providers=providers,
    )


def _sent(options: Any, messages: list[Any]) -> int:
    from kompakt import CharEstimator
    from kompakt.integrations._bridge import Overhead, dumps
    from kompakt.integrations.maf import tool_schemas

    tok = CharEstimator()
    schemas = tool_schemas(options.get("tools") or [])
    parts = [options.get("instructions") or "", dumps(schemas) if schemas else ""]
    extra = [Overhead("\n\n".join(p for p in parts if p)).message]
    return sum(tok.count_message(m) for m in [*extra, *messages])


async def test_a_long_run_stays_in_budget_with_instructions_and_tools_counted() -> None:
    client = PerSession()
    strategy = _kompakt()
    result = await _agent(client, strategy).run("task a", session=None)
    assert result.messages[-1].text == "done task a"
    assert len(client.requests) == 31
    for options, msgs in client.requests:
        assert_valid_history(msgs)
        assert _sent(options, msgs) <= 4_000
    assert strategy.events


@pytest.mark.parametrize("bound", [True, False])
async def test_two_sessions_at_once_each_compact_only_themselves(bound: bool) -> None:
    import asyncio

    alone = _kompakt()
    await _agent(PerSession(), alone, bound=bound).run("task a", session=None)
    client = PerSession()
    strategy = _kompakt()
    agent = _agent(client, strategy, bound=bound)
    one, two = agent.create_session(), agent.create_session()
    await asyncio.gather(agent.run("task a", session=one), agent.run("task b", session=two))
    assert len(client.requests) == 62
    for options, msgs in client.requests:
        assert_valid_history(msgs)
        assert _sent(options, msgs) <= 4_000
        tags = {m.tool_call_id.split("_")[0] for m in msgs if m.role == "tool"}
        assert len(tags) <= 1  # never the other session's results
    assert len(strategy.events) == 2 * len(alone.events)


def _texts(msgs: list[Any]) -> list[str]:
    return [m.text for m in msgs]


@pytest.mark.parametrize("restart", ["second run", "to_dict/from_dict"])
async def test_the_next_run_sends_what_the_last_would_have_sent_next(restart: str) -> None:
    from agent_framework import AgentSession

    client = PerSession()
    strategy = _kompakt()
    agent = _agent(client, strategy)
    session = agent.create_session()
    await agent.run("task a", session=session)
    last = _texts(client.requests[-1][1])
    client.requests.clear()
    if restart == "to_dict/from_dict":
        session = AgentSession.from_dict(session.to_dict())
        strategy = _kompakt()
        agent = _agent(client, strategy)
    await agent.run("task b", session=session)
    first = _texts(client.requests[0][1])
    assert first == [*last, "done task a", "task b"]
    stored = session.state["in_memory"]["messages"]
    assert tool_result_count(from_maf(stored)) == 2 * (30 + 6)  # every original kept


async def test_without_the_provider_notes_persist_as_maf_summaries() -> None:
    from agent_framework import AgentSession

    client = PerSession()
    strategy = _kompakt()
    agent = Agent(
        client=client, instructions=INSTRUCTIONS, tools=[read_big], compaction_strategy=strategy
    )
    session = agent.create_session()
    await agent.run("task a", session=session)
    last = _texts(client.requests[-1][1])
    client.requests.clear()
    restored = AgentSession.from_dict(session.to_dict())
    await agent.run("task b", session=restored)
    assert _texts(client.requests[0][1]) == [*last, "done task a", "task b"]
    stored = restored.state["in_memory"]["messages"]
    notes = [m for m in stored if "_kompakt_synthetic" in m.additional_properties]
    assert notes
    assert all(m.additional_properties["_group"]["_summary_of_message_ids"] for m in notes)


async def test_maf_tool_result_summaries_are_kept_as_messages() -> None:
    from agent_framework import TokenBudgetComposedStrategy, ToolResultCompactionStrategy

    client = PerSession(steps=8)
    from agent_framework import CharacterEstimatorTokenizer

    composed = TokenBudgetComposedStrategy(
        token_budget=100_000,
        strategies=[ToolResultCompactionStrategy(keep_last_tool_call_groups=4), _kompakt()],
        tokenizer=CharacterEstimatorTokenizer(),
    )
    agent = Agent(
        client=client, instructions=INSTRUCTIONS, tools=[read_big], compaction_strategy=composed
    )
    await agent.run("task a", session=None)
    for _, msgs in client.requests:
        assert_valid_history(msgs)


def test_oversized_instructions_are_refused_at_construction() -> None:
    from kompakt import BudgetImpossible, ConfigError

    compactor = Compactor(trigger=TokensExceed(4_000), strategy=Budgeted(3_000))
    with pytest.raises(BudgetImpossible, match="instructions"):
        KompaktStrategy(compactor, instructions="You debug. " * 2_000)
    with pytest.warns(UserWarning, match="cut to fit"):
        KompaktStrategy(compactor, instructions="You debug. " * 2_000, oversize="clamp")
    with pytest.raises(ConfigError, match="oversize"):
        KompaktStrategy(compactor, oversize="error")  # type: ignore[arg-type]


async def test_streaming_run_compacts_too() -> None:
    client = PerSession(steps=12)
    strategy = _kompakt()
    agent = _agent(client, strategy)
    session = agent.create_session()
    async for _ in agent.run("task a", session=session, stream=True):
        pass
    assert "view" in session.state["kompakt"]  # the provider bound the run to its session
    assert len(client.requests) == 13
    for options, msgs in client.requests:
        assert_valid_history(msgs)
        assert _sent(options, msgs) <= 4_000


async def test_the_agents_own_client_writes_the_summaries() -> None:
    from kompakt import Summarize
    from kompakt.integrations.maf import MAFChatModel

    class Writer(BaseChatClient[Any]):
        def __init__(self) -> None:
            super().__init__()
            self.seen: list[Any] = []

        async def _answer(self, messages: list[Any]) -> ChatResponse:
            self.seen.append(messages)
            return ChatResponse(messages=[Message("assistant", ["Goal: find the bug. Read f1."])])

        def _inner_get_response(
            self, *, messages: Any, stream: bool, options: Any, **kw: Any
        ) -> Any:
            return self._answer(list(messages))

    writer = Writer()
    compactor = Compactor(
        trigger=TokensExceed(4_000),
        strategy=Summarize(keep_last_groups=2),
        summarizer=MAFChatModel(writer),
    )
    client = PerSession(steps=10)
    strategy = KompaktStrategy(compactor)
    agent = _agent(client, strategy)
    await agent.run("task a", session=agent.create_session())
    assert writer.seen, "the client was never asked for a summary"
    assert any("Read f1." in m.text for m in client.requests[-1][1])
    for _, msgs in client.requests:
        assert_valid_history(msgs)


async def test_one_result_of_a_parallel_batch_clamped_keeps_ids_unique_and_resumes() -> None:
    from kompakt import ClampOversized
    from kompakt.triggers import Always

    def build() -> list[Any]:
        calls = [
            Content.from_function_call(call_id=c, name="read_big", arguments={"path": c})
            for c in ("big", "small")
        ]
        results = [
            Content.from_function_result(call_id="big", result="x" * 8_000),
            Content.from_function_result(call_id="small", result="tiny"),
        ]
        return [
            Message("user", ["task a"], message_id="u1"),
            Message("assistant", calls, message_id="a1"),
            Message("tool", results, message_id="t1"),
            Message("assistant", ["read both"], message_id="a2"),
            Message("user", ["task b"], message_id="u2"),
        ]

    def strategy() -> KompaktStrategy:
        clamp = ClampOversized(max_message_tokens=200, min_preserved=0)
        return KompaktStrategy(Compactor(trigger=Always(), strategy=clamp))

    messages = build()
    assert await strategy()(messages)
    sent = [m for m in messages if not m.additional_properties.get("_excluded")]
    ids = [m.message_id for m in messages]
    assert len(ids) == len(set(ids))
    assert_valid_history(from_maf(sent))
    assert "tiny" in json.dumps([m.to_dict() for m in sent])
    assert "x" * 8_000 not in json.dumps([m.to_dict() for m in sent])
    # a fresh strategy (a restart) reads the same view back from the marked list
    again = [Message.from_dict(m.to_dict()) for m in messages]
    await strategy()(again)
    resent = [m for m in again if not m.additional_properties.get("_excluded")]
    assert [m.text for m in from_maf(resent)] == [m.text for m in from_maf(sent)]


async def test_with_the_provider_the_agents_instructions_are_counted_and_checked() -> None:
    from kompakt import BudgetImpossible

    client = PerSession(steps=12)
    strategy = KompaktStrategy(Compactor(trigger=TokensExceed(4_000), strategy=Budgeted(3_000)))
    agent = _agent(client, strategy)  # the strategy is told nothing: the provider reads the agent
    await agent.run("task a", session=agent.create_session())
    for options, msgs in client.requests:
        assert _sent(options, msgs) <= 4_000

    too_long = Agent(
        client=PerSession(),
        instructions="Follow the style guide. " * 2_000,
        compaction_strategy=strategy,
        context_providers=[InMemoryHistoryProvider(), strategy.provider()],
    )
    with pytest.raises(BudgetImpossible, match="instructions"):
        await too_long.run("task b", session=too_long.create_session())
