"""LangChain: `KompaktMiddleware` recovers from a provider's context overflow. A real
`create_agent` with `ChatOpenAI` against a real HTTP server on loopback that refuses the
first request with OpenAI's overflow error and answers the second."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("langchain")
pytest.importorskip("langchain_openai")

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_openai import ChatOpenAI
from overflow_checks import FILE, GROUPS, assert_recovered_once
from pydantic import SecretStr

from fake_provider import OPENAI_OK, FakeProvider, serving
from kompakt import Budgeted, BudgetImpossible, Compactor, parse_overflow
from kompakt.integrations.langchain import KompaktMiddleware
from kompakt.validation import find_problems
from test_overflow import OPENAI_CHAT


@pytest.fixture
def server() -> Iterator[FakeProvider]:
    yield from serving()


def history() -> list[Any]:
    msgs: list[Any] = [HumanMessage("fix the bug", id="u0")]
    for i in range(GROUPS):
        call = {"name": "read_file", "args": {"n": i}, "id": f"call_{i}", "type": "tool_call"}
        msgs.append(AIMessage("", tool_calls=[call], id=f"a{i}"))
        msgs.append(ToolMessage(f"file {i}: {FILE}", tool_call_id=f"call_{i}", id=f"t{i}"))
    msgs.append(HumanMessage("go on", id="u1"))
    return msgs


def agent(server: FakeProvider, **options: Any) -> tuple[Any, Any]:
    model = ChatOpenAI(
        model="m", base_url=f"{server.url}/v1", api_key=SecretStr("k"), max_retries=0
    )
    middleware = KompaktMiddleware(Compactor(strategy=Budgeted(1_000_000)), **options)
    return create_agent(model, tools=[], middleware=[middleware]), middleware


@pytest.mark.parametrize("mode", ["view", "permanent"])
def test_the_middleware_compacts_tighter_and_retries_once(server: FakeProvider, mode: str) -> None:
    server.script = [(400, OPENAI_CHAT, {}), (200, OPENAI_OK, {})]
    graph, middleware = agent(server, mode=mode)
    state = graph.invoke({"messages": history()})
    assert state["messages"][-1].content == "done"
    if mode == "view":  # the state keeps every message
        assert len(state["messages"]) == len(history()) + 1
    else:  # the state is what was sent on the retry, and the answer
        assert len(state["messages"]) == len(server.requests[1]["messages"]) + 1
    assert_recovered_once(server, middleware.events, "openai")
    retried = server.requests[1]["messages"]
    assert retried[-1] == {"role": "user", "content": "go on"}
    assert not find_problems(retried)


async def test_the_async_middleware_recovers_too(server: FakeProvider) -> None:
    server.script = [(400, OPENAI_CHAT, {}), (200, OPENAI_OK, {})]
    graph, middleware = agent(server)
    state = await graph.ainvoke({"messages": history()})
    assert state["messages"][-1].content == "done"
    assert_recovered_once(server, middleware.events, "openai")


def test_a_second_overflow_raises_budget_impossible(server: FakeProvider) -> None:
    server.script = [(400, OPENAI_CHAT, {}), (400, OPENAI_CHAT, {})]
    graph, _ = agent(server)
    with pytest.raises(BudgetImpossible) as info:
        graph.invoke({"messages": history()})
    assert len(server.requests) == 2
    assert parse_overflow(info.value.__cause__) is not None


def test_a_request_whose_core_cannot_fit_raises_budget_impossible_unsent(
    server: FakeProvider,
) -> None:
    server.script = [(400, OPENAI_CHAT, {})]
    graph, middleware = agent(server)
    task = HumanMessage("x" * 40_000, id="u2")  # the last user message alone is too long
    with pytest.raises(BudgetImpossible) as info:
        graph.invoke({"messages": [*history()[:3], task]})
    assert len(server.requests) == 1 and middleware.events == []
    assert info.value.required > info.value.budget


def test_recovery_off_raises_the_providers_error(server: FakeProvider) -> None:
    server.script = [(400, OPENAI_CHAT, {})]
    graph, _ = agent(server, recover_from_overflow=False)
    with pytest.raises(Exception) as info:
        graph.invoke({"messages": history()})
    assert parse_overflow(info.value) is not None and len(server.requests) == 1
