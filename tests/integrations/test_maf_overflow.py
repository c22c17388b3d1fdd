"""Microsoft Agent Framework: `KompaktStrategy.middleware()` recovers from a provider's
context overflow. A real MAF `Agent` with MAF's `OpenAIChatCompletionClient` against a
real HTTP server on loopback that refuses the first request with an overflow error and
answers the second."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("agent_framework")
pytest.importorskip("agent_framework_openai")

from agent_framework import Agent, Content, InMemoryHistoryProvider, Message
from agent_framework.openai import OpenAIChatCompletionClient
from openai import AsyncOpenAI
from overflow_checks import FILE, GROUPS, assert_recovered_once

from fake_provider import OPENAI_OK, FakeProvider, serving
from kompakt import Budgeted, BudgetImpossible, Compactor, parse_overflow
from kompakt.integrations.maf import KompaktStrategy
from kompakt.validation import find_problems
from test_overflow import AZURE, OPENAI_CHAT


@pytest.fixture
def server() -> Iterator[FakeProvider]:
    yield from serving()


def history() -> list[Any]:
    msgs: list[Any] = [Message("user", ["fix the bug"])]
    for i in range(GROUPS):
        call = Content.from_function_call(call_id=f"call_{i}", name="read_file", arguments={})
        msgs.append(Message("assistant", [call]))
        result = Content.from_function_result(call_id=f"call_{i}", result=f"file {i}: {FILE}")
        msgs.append(Message("tool", [result]))
    msgs.append(Message("user", ["go on"]))
    return msgs


def agent(server: FakeProvider, **options: Any) -> tuple[Any, KompaktStrategy]:
    client = OpenAIChatCompletionClient(
        "m", async_client=AsyncOpenAI(base_url=f"{server.url}/v1", api_key="k", max_retries=0)
    )
    strategy = KompaktStrategy(Compactor(strategy=Budgeted(1_000_000)))
    maf = Agent(
        client=client,
        compaction_strategy=strategy,
        middleware=[strategy.middleware(**options)],
        context_providers=[InMemoryHistoryProvider(), strategy.provider()],
    )
    return maf, strategy


async def test_the_middleware_compacts_tighter_and_retries_once(server: FakeProvider) -> None:
    server.script = [(400, OPENAI_CHAT, {}), (200, OPENAI_OK, {})]
    maf, strategy = agent(server)
    session = maf.create_session()
    response = await maf.run(history(), session=session)
    assert response.text == "done"
    assert_recovered_once(server, strategy.events, "openai")
    retried = server.requests[1]["messages"]
    assert retried[-1] == {"role": "user", "content": "go on"}
    assert not find_problems(retried)
    assert "kompakt" in session.state  # the view after the recovery is the session's


async def test_a_second_overflow_raises_budget_impossible(server: FakeProvider) -> None:
    server.script = [(400, AZURE, {}), (400, OPENAI_CHAT, {})]
    maf, _ = agent(server)
    with pytest.raises(BudgetImpossible) as info:
        await maf.run(history(), session=maf.create_session())
    assert len(server.requests) == 2
    assert parse_overflow(info.value.__cause__) is not None


async def test_recovery_off_raises_the_providers_error(server: FakeProvider) -> None:
    server.script = [(400, OPENAI_CHAT, {})]
    maf, _ = agent(server, recover_from_overflow=False)
    with pytest.raises(Exception) as info:
        await maf.run(history(), session=maf.create_session())
    assert parse_overflow(info.value) is not None and len(server.requests) == 1


async def test_a_call_the_strategy_did_not_compact_is_not_retried(server: FakeProvider) -> None:
    server.script = [(400, OPENAI_CHAT, {})]
    client = OpenAIChatCompletionClient(
        "m", async_client=AsyncOpenAI(base_url=f"{server.url}/v1", api_key="k", max_retries=0)
    )
    strategy = KompaktStrategy(Compactor(strategy=Budgeted(1_000_000)))
    maf = Agent(client=client, middleware=[strategy.middleware()])  # no compaction_strategy
    with pytest.raises(Exception) as info:
        await maf.run(history())
    assert parse_overflow(info.value) is not None and len(server.requests) == 1
    assert strategy.events == []
