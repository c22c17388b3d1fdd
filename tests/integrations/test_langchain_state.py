"""LangChain middleware on the agent's own state: budgets on what the model receives,
concurrent conversations, restarts from the checkpointer, streaming."""

from __future__ import annotations

import asyncio
import copy
from collections import Counter
from typing import Any

import pytest

pytest.importorskip("langchain")
pytest.importorskip("langgraph")

from framework_checks import assert_valid_history
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver

from kompakt import Budgeted, BudgetImpossible, CharEstimator, validate
from kompakt.integrations._bridge import dumps
from kompakt.integrations.langchain import KompaktMiddleware, from_langchain

BUDGET = 4_000
STEPS = 30
SYSTEM = "You are a careful debugger. Read the files you are asked to read, then answer. " * 6


class Scripted(FakeMessagesListChatModel):
    """Calls read_file `steps` times per conversation (the conversation is named by its
    first human message), a parallel pair every fifth step, then answers; records input."""

    steps: int = STEPS
    requests: list[list[BaseMessage]] = []  # noqa: RUF012 (a pydantic field)
    counts: Counter[str] = Counter()  # noqa: RUF012
    responses: list[BaseMessage] = [AIMessage("unused")]  # noqa: RUF012

    def bind_tools(self, tools: Any, **kwargs: Any) -> Scripted:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.requests.append(list(messages))
        who = next(str(m.content) for m in messages if isinstance(m, HumanMessage))
        tag = who.split(":")[0]
        self.counts[who] += 1
        step = self.counts[who]
        if step > self.steps:
            return ChatResult(generations=[ChatGeneration(message=AIMessage(f"{tag} done"))])
        calls = [
            {"name": "read_file", "args": {"path": f"{tag}/f{step}.py"}, "id": f"{tag}_{step}"}
        ]
        if step % 5 == 0:
            path = {"path": f"{tag}/g{step}.py"}
            calls.append({"name": "read_file", "args": path, "id": f"{tag}_p{step}"})
        msg = AIMessage("", tool_calls=[{**c, "type": "tool_call"} for c in calls])
        return ChatResult(generations=[ChatGeneration(message=msg)])


@tool
def read_file(path: str) -> str:
    """Read a file."""
    size = 3_000 + (sum(map(ord, path)) % 5) * 500  # 3-5 KB
    line = f"{path}: def handler(event): return event  # a long file read once\n"
    return (line * (size // len(line) + 1))[:size]


SCHEMAS = CharEstimator().count_text(dumps([convert_to_openai_tool(read_file)]))


def _received_tokens(request: list[BaseMessage]) -> int:
    """What the provider is sent: the messages and the tool schemas."""
    est = CharEstimator()
    return sum(est.count_message(m) for m in from_langchain(request)) + SCHEMAS


def _check(requests: list[list[BaseMessage]]) -> None:
    for request in requests:
        msgs = from_langchain(request)
        validate(msgs, format="openai")
        assert_valid_history(msgs)
        assert _received_tokens(request) <= BUDGET


def _agent(model: Scripted, middleware: Any, saver: Any = None) -> Any:
    return create_agent(
        model, [read_file], system_prompt=SYSTEM, middleware=[middleware], checkpointer=saver
    )


def test_a_30_step_run_holds_the_budget_on_what_the_model_receives() -> None:
    model = Scripted(requests=[], counts=Counter())
    middleware = KompaktMiddleware(Budgeted(BUDGET))
    result = _agent(model, middleware).invoke({"messages": [HumanMessage("a: read 30 files")]})

    assert result["messages"][-1].content == "a done"
    assert len(model.requests) == STEPS + 1
    _check(model.requests)
    assert len(middleware.events) >= 5
    # the state keeps every original; the view (notes) is in the state too
    assert sum(isinstance(m, ToolMessage) for m in result["messages"]) == STEPS + STEPS // 5
    assert result["kompakt"]["KompaktMiddleware"]["synthetic"]


async def test_two_conversations_at_once_on_one_middleware() -> None:
    model = Scripted(requests=[], counts=Counter(), steps=20)
    middleware = KompaktMiddleware(Budgeted(BUDGET))
    agent = _agent(model, middleware)  # no checkpointer, no thread id
    results = await asyncio.gather(
        agent.ainvoke({"messages": [HumanMessage("a: read files")]}),
        agent.ainvoke({"messages": [HumanMessage("b: read files")]}),
    )
    assert [r["messages"][-1].content for r in results] == ["a done", "b done"]
    _check(model.requests)
    for request in model.requests:
        users = [m for m in request if isinstance(m, HumanMessage)]
        tags = {str(m.content).split(":")[0] for m in users if not from_langchain([m])[0].synthetic}
        tags |= {m.tool_call_id.split("_")[0] for m in request if isinstance(m, ToolMessage)}
        assert len(tags) == 1, tags  # never another conversation's messages
    assert len(middleware.conversations) == 2
    # each compacted exactly as it does alone
    alone = []
    for who in ("a", "b"):
        solo = KompaktMiddleware(Budgeted(BUDGET))
        solo_model = Scripted(requests=[], counts=Counter(), steps=20)
        _agent(solo_model, solo).invoke({"messages": [HumanMessage(f"{who}: read files")]})
        alone.append([e.summary().split(" in ")[0] for e in solo.events])
    together = [[e.summary().split(" in ")[0] for e in m.own_events] for m in _mirrors(middleware)]
    assert sorted(alone) == sorted(together)
    assert sum(map(len, together)) == len(middleware.events)


def _mirrors(middleware: Any) -> list[Any]:
    return [middleware.conversations[k] for k in list(middleware.conversations._mirrors)]


def _second_run(saver: Any, middleware: Any) -> list[BaseMessage]:
    """The first request of a second run on thread t (a new model, same script state)."""
    model = Scripted(requests=[], counts=Counter({"a: read 30 files": STEPS + 1}), steps=STEPS)
    agent = _agent(model, middleware, saver)
    agent.invoke({"messages": [HumanMessage("and now f31?")]}, {"configurable": {"thread_id": "t"}})
    return model.requests[0]


def _plain(request: list[BaseMessage]) -> list[Any]:
    return [(type(m).__name__, m.content, getattr(m, "tool_call_id", None)) for m in request]


def test_a_restart_on_the_checkpointer_sends_what_the_first_run_would_have() -> None:
    saver = InMemorySaver()
    model = Scripted(requests=[], counts=Counter())
    middleware = KompaktMiddleware(Budgeted(BUDGET))
    _agent(model, middleware, saver).invoke(
        {"messages": [HumanMessage("a: read 30 files")]}, {"configurable": {"thread_id": "t"}}
    )
    restarted = copy.deepcopy(saver)  # the same checkpoints, as a restart reads them

    same = _second_run(saver, middleware)  # the middleware that ran the first run
    rebuilt = _second_run(restarted, KompaktMiddleware(Budgeted(BUDGET)))  # a new process
    assert _plain(rebuilt) == _plain(same)
    assert any(from_langchain([m])[0].synthetic for m in same)  # the notes came back
    _check([same, rebuilt])


def test_a_restart_from_sqlite_sends_the_same() -> None:
    sqlite = pytest.importorskip("langgraph.checkpoint.sqlite")
    import sqlite3

    conn = sqlite3.connect(":memory:", check_same_thread=False)
    saver = sqlite.SqliteSaver(conn)
    middleware = KompaktMiddleware(Budgeted(BUDGET))
    _agent(Scripted(requests=[], counts=Counter()), middleware, saver).invoke(
        {"messages": [HumanMessage("a: read 30 files")]}, {"configurable": {"thread_id": "t"}}
    )
    rebuilt = _second_run(sqlite.SqliteSaver(conn), KompaktMiddleware(Budgeted(BUDGET)))
    assert _plain(rebuilt) == _plain(_second_run(saver, middleware))[: len(rebuilt)]


def test_streaming_and_two_named_middlewares() -> None:
    model = Scripted(requests=[], counts=Counter(), steps=12)
    outer = KompaktMiddleware(Budgeted(BUDGET), name="outer")
    inner = KompaktMiddleware(Budgeted(BUDGET * 3 // 4), name="inner")
    agent = create_agent(model, [read_file], system_prompt=SYSTEM, middleware=[outer, inner])
    chunks = list(
        agent.stream({"messages": [HumanMessage("a: read files")]}, stream_mode="messages")
    )
    assert chunks and model.requests
    _check(model.requests)
    assert outer.events and inner.events
    last = max(_received_tokens(r) for r in model.requests)
    assert last <= BUDGET * 3 // 4  # the inner one, nearest the model, has the last word


def test_a_system_prompt_over_budget_is_clamped_with_a_warning_or_refused() -> None:
    huge = "Follow the house style in every detail. " * 500  # ~5k tokens
    model = Scripted(requests=[], counts=Counter(), steps=8)
    agent = create_agent(
        model, [read_file], system_prompt=huge, middleware=[KompaktMiddleware(Budgeted(BUDGET))]
    )
    with pytest.warns(UserWarning, match="system prompt"):
        agent.invoke({"messages": [HumanMessage("a: read files")]})
    _check(model.requests)

    model = Scripted(requests=[], counts=Counter())
    strict = KompaktMiddleware(Budgeted(BUDGET), oversize="raise")
    agent = create_agent(model, [read_file], system_prompt=huge, middleware=[strict])
    with pytest.raises(BudgetImpossible, match="system prompt"):
        agent.invoke({"messages": [HumanMessage("a: read files")]})
    assert model.requests == []  # refused before anything was sent


async def test_the_agents_own_chat_model_writes_the_summaries() -> None:
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from kompakt import Compactor, TokensExceed
    from kompakt.integrations.langchain import LangChainModel
    from kompakt.strategies import Summarize

    summarizer = FakeListChatModel(responses=["## Goal\n- find the bug in a/f1..f8"])
    compactor = Compactor(
        trigger=TokensExceed(BUDGET),
        strategy=Summarize(keep_last_groups=1),  # two kept file reads alone can fill the budget
        summarizer=LangChainModel(summarizer),
    )
    model = Scripted(requests=[], counts=Counter(), steps=10)
    await _agent(model, KompaktMiddleware(compactor)).ainvoke(
        {"messages": [HumanMessage("a: read files")]}
    )
    seen = [m.content for r in model.requests for m in r]
    assert any("find the bug in a/f1..f8" in str(c) for c in seen)
    _check(model.requests)


def _graph(hook: Any, saver: Any, seen: list[list[BaseMessage]]) -> Any:
    from langgraph.graph import START, StateGraph

    from kompakt.integrations.langchain import KompaktGraphState

    class State(KompaktGraphState):  # type: ignore[misc]  # the framework's untyped base
        llm_input_messages: list[BaseMessage]

    def model(state: State) -> dict[str, Any]:
        seen.append(list(state["llm_input_messages"]))
        return {"messages": [AIMessage(f"answer {len(seen)}")]}

    graph = StateGraph(State)
    graph.add_node("compact", hook)
    graph.add_node("model", model)
    graph.add_edge(START, "compact")
    graph.add_edge("compact", "model")
    return graph.compile(checkpointer=saver)


def test_a_graph_hook_keeps_its_view_in_the_checkpoint() -> None:
    from kompakt.integrations.langchain import pre_model_hook

    history: list[BaseMessage] = [HumanMessage("a: read files")]
    for step in range(1, 16):
        call: dict[str, Any] = {
            "name": "read_file",
            "args": {"path": f"a/f{step}.py"},
            "id": f"a_{step}",
        }
        history += [AIMessage("", tool_calls=[{**call, "type": "tool_call"}])]
        history += [ToolMessage(read_file.invoke(call["args"]), tool_call_id=f"a_{step}")]
    config = {"configurable": {"thread_id": "g"}}
    saver, seen = InMemorySaver(), list[list[BaseMessage]]()
    hook = pre_model_hook(Budgeted(BUDGET), tools=[read_file])
    _graph(hook, saver, seen).invoke({"messages": history}, config)
    assert hook.kompakt.events and seen[0] and _received_tokens(seen[0]) <= BUDGET
    restarted = copy.deepcopy(saver)

    _graph(hook, saver, seen).invoke({"messages": [HumanMessage("next")]}, config)
    new_seen: list[list[BaseMessage]] = []
    rebuilt = pre_model_hook(Budgeted(BUDGET), tools=[read_file])
    _graph(rebuilt, restarted, new_seen).invoke({"messages": [HumanMessage("next")]}, config)
    assert _plain(new_seen[0]) == _plain(seen[1])
    assert not rebuilt.kompakt.events  # the view came from the checkpoint, not recompacted
    _check([seen[1], new_seen[0]])
