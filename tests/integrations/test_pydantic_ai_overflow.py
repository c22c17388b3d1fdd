"""Pydantic AI: `KompaktCapability` recovers from a provider's context overflow. A real
`Agent` with `OpenAIChatModel` against a real HTTP server on loopback that refuses the
first request with OpenAI's overflow error and answers the second."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from openai import AsyncOpenAI
from overflow_checks import FILE, GROUPS, assert_recovered_once
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from fake_provider import OPENAI_OK, FakeProvider, serving
from kompakt import Budgeted, BudgetImpossible, Compactor, parse_overflow
from kompakt.integrations.pydantic_ai import KompaktCapability, stored_view
from kompakt.validation import find_problems
from test_overflow import GEMINI_LIST, OPENAI_CHAT


@pytest.fixture
def server() -> Iterator[FakeProvider]:
    yield from serving()


def history() -> list[Any]:
    msgs: list[Any] = [ModelRequest(parts=[UserPromptPart("fix the bug")])]
    for i in range(GROUPS):
        call = ToolCallPart("read_file", {"n": i}, tool_call_id=f"call_{i}")
        msgs.append(ModelResponse(parts=[call]))
        result = ToolReturnPart("read_file", f"file {i}: {FILE}", tool_call_id=f"call_{i}")
        msgs.append(ModelRequest(parts=[result]))
    return msgs


def agent(server: FakeProvider, **options: Any) -> tuple[Agent[None, str], Any]:
    client = AsyncOpenAI(base_url=f"{server.url}/v1", api_key="k", max_retries=0)
    model = OpenAIChatModel("m", provider=OpenAIProvider(openai_client=client))
    capability = KompaktCapability(Compactor(strategy=Budgeted(1_000_000)), **options)
    return Agent(model, capabilities=[capability]), capability


@pytest.mark.parametrize("mode", ["view", "permanent"])
async def test_the_capability_compacts_tighter_and_retries_once(
    server: FakeProvider, mode: str
) -> None:
    server.script = [(400, OPENAI_CHAT, {}), (200, OPENAI_OK, {})]
    pyd, capability = agent(server, mode=mode)
    result = await pyd.run("go on", message_history=history())
    assert result.output == "done"
    assert_recovered_once(server, capability.events, "openai")
    retried = server.requests[1]["messages"]
    assert retried[-1] == {"role": "user", "content": "go on"}
    assert not find_problems(retried)
    if mode == "view":  # the run's history keeps every message, and the view it sent
        assert len(result.all_messages()) == len(history()) + 2
        assert stored_view(result.all_messages()) is not None


async def test_a_second_overflow_raises_budget_impossible(server: FakeProvider) -> None:
    server.script = [(400, GEMINI_LIST, {}), (400, OPENAI_CHAT, {})]
    pyd, _ = agent(server)
    with pytest.raises(BudgetImpossible) as info:
        await pyd.run("go on", message_history=history())
    assert len(server.requests) == 2
    assert parse_overflow(info.value.__cause__) is not None


async def test_recovery_off_raises_the_providers_error(server: FakeProvider) -> None:
    server.script = [(400, OPENAI_CHAT, {})]
    pyd, _ = agent(server, recover_from_overflow=False)
    with pytest.raises(Exception) as info:
        await pyd.run("go on", message_history=history())
    assert parse_overflow(info.value) is not None and len(server.requests) == 1
