"""OpenAI Agents SDK: a kompakt filter with `RecoveringModel` recovers from a provider's
context overflow. A real `Runner` with the SDK's `OpenAIChatCompletionsModel` against a
real HTTP server on loopback that refuses the first request with an overflow error and
answers the second."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    OpenAIProvider,
    RunConfig,
    Runner,
    set_tracing_disabled,
)
from openai import AsyncOpenAI
from overflow_checks import FILE, GROUPS, assert_recovered_once

from fake_provider import OPENAI_OK, FakeProvider, serving
from kompakt import Budgeted, BudgetImpossible, Compactor, parse_overflow
from kompakt.integrations.openai_agents import (
    KompaktSession,
    RecoveringModel,
    model_input_filter,
)
from kompakt.store import MemoryStore
from kompakt.validation import find_problems
from test_overflow import OPENAI_CHAT, VLLM

set_tracing_disabled(True)


@pytest.fixture
def server() -> Iterator[FakeProvider]:
    yield from serving()


def history() -> list[Any]:  # the SDK's input items, as plain dicts
    items: list[Any] = [{"role": "user", "content": "fix the bug"}]
    for i in range(GROUPS):
        call = {"type": "function_call", "call_id": f"call_{i}", "name": "read_file"}
        items.append({**call, "arguments": f'{{"n": {i}}}'})
        out = f"file {i}: {FILE}"
        items.append({"type": "function_call_output", "call_id": f"call_{i}", "output": out})
    return items


def client(server: FakeProvider) -> AsyncOpenAI:
    return AsyncOpenAI(base_url=f"{server.url}/v1", api_key="k", max_retries=0)


def compactor() -> Compactor:
    return Compactor(strategy=Budgeted(1_000_000))


def test_a_wrapped_model_compacts_tighter_and_retries_once(server: FakeProvider) -> None:
    server.script = [(400, OPENAI_CHAT, {}), (200, OPENAI_OK, {})]
    model = RecoveringModel(OpenAIChatCompletionsModel("m", client(server)))
    input_filter = model_input_filter(compactor())
    config = RunConfig(call_model_input_filter=input_filter)
    goal = [*history(), {"role": "user", "content": "go on"}]
    result = Runner.run_sync(Agent(name="coder", model=model), goal, run_config=config)
    assert result.final_output == "done"
    assert_recovered_once(server, input_filter.events, "openai")  # type: ignore[attr-defined]
    retried = server.requests[1]["messages"]
    assert retried[-1] == {"role": "user", "content": "go on"}
    assert not find_problems(retried)


async def test_a_session_run_config_recovers_named_models(server: FakeProvider) -> None:
    server.script = [(400, VLLM, {}), (200, OPENAI_OK, {})]
    session = KompaktSession("s", store=MemoryStore(), compactor=compactor())
    await session.add_items(history())
    provider = OpenAIProvider(openai_client=client(server), use_responses=False)
    config = session.run_config(model_provider=provider)
    result = await Runner.run(Agent(name="coder", model="m"), "go on", session=session,
                              run_config=config)  # fmt: skip
    assert result.final_output == "done"
    assert_recovered_once(server, session.events, "vllm")
    recorded = session.store.compactions("s")[-1].event
    assert recorded["overflow"]["provider"] == "vllm"


async def test_a_streamed_run_recovers_before_its_first_event(server: FakeProvider) -> None:
    server.script = [(400, OPENAI_CHAT, {}), (200, OPENAI_OK, {})]
    model = RecoveringModel(OpenAIChatCompletionsModel("m", client(server)))
    input_filter = model_input_filter(compactor())
    config = RunConfig(call_model_input_filter=input_filter)
    goal = [*history(), {"role": "user", "content": "go on"}]
    streamed = Runner.run_streamed(Agent(name="coder", model=model), goal, run_config=config)
    async for _ in streamed.stream_events():
        pass
    assert len(server.requests) == 2 and server.requests[1]["stream"] is True
    assert_recovered_once(server, input_filter.events, "openai")  # type: ignore[attr-defined]


def test_a_second_overflow_raises_budget_impossible(server: FakeProvider) -> None:
    server.script = [(400, OPENAI_CHAT, {}), (400, OPENAI_CHAT, {})]
    model = RecoveringModel(OpenAIChatCompletionsModel("m", client(server)))
    config = RunConfig(call_model_input_filter=model_input_filter(compactor()))
    goal = [*history(), {"role": "user", "content": "go on"}]
    with pytest.raises(BudgetImpossible) as info:
        Runner.run_sync(Agent(name="coder", model=model), goal, run_config=config)
    assert len(server.requests) == 2
    assert parse_overflow(info.value.__cause__) is not None


def test_input_no_kompakt_filter_made_is_not_retried(server: FakeProvider) -> None:
    server.script = [(400, OPENAI_CHAT, {})]
    model = RecoveringModel(OpenAIChatCompletionsModel("m", client(server)))
    goal = [*history(), {"role": "user", "content": "go on"}]
    with pytest.raises(Exception) as info:
        Runner.run_sync(Agent(name="coder", model=model), goal)
    assert parse_overflow(info.value) is not None and len(server.requests) == 1
