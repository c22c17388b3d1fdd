"""Recovering from a context overflow: the agent against a real HTTP server on loopback
that refuses the first request with each provider's overflow error, and
`compact_for_retry` for callers of `apply_compaction`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

import kompakt
from fake_provider import ANTHROPIC_OK, OPENAI_OK, FakeProvider, serving
from kompakt import (
    Agent,
    AnthropicModel,
    BudgetImpossible,
    Message,
    MessageIndex,
    ModelError,
    OpenAIModel,
    Overflow,
    ToolCall,
    View,
    compact_for_retry,
    parse_overflow,
)
from kompakt.compactor import Compactor
from kompakt.store import MemoryStore
from kompakt.strategies import Budgeted, SlidingWindow
from kompakt.tokens import CharEstimator
from kompakt.validation import find_problems
from test_overflow import (
    ANTHROPIC,
    AZURE,
    GEMINI_LIST,
    LLAMA_CPP,
    OLLAMA,
    OPENAI_CHAT,
    OPENAI_RESPONSES,
    VLLM,
)


@pytest.fixture
def server() -> Iterator[FakeProvider]:
    yield from serving()


def long_session(store: MemoryStore, session: str, groups: int = 12) -> None:
    """A stored session of tool calls with large results (about 4k estimated tokens)."""
    msgs = [Message.system("You are a careful coding agent."), Message.user("fix the bug")]
    for i in range(groups):
        cid = f"call_{i}"
        msgs.append(
            Message.assistant(
                "", tool_calls=[ToolCall(id=cid, name="read_file", arguments=f'{{"n": {i}}}')]
            )
        )
        msgs.append(Message.tool(f"file {i}: " + "def f(): pass\n" * 90, tool_call_id=cid))
    store.append(session, msgs)


def agent_for(model: Any, **kwargs: Any) -> Agent:
    store = MemoryStore()
    long_session(store, "s")
    return Agent(model, store=store, session="s", recall=False, **kwargs)


OPENAI_SHAPED: list[tuple[str, Any, dict[str, str], str]] = [
    ("openai", OPENAI_CHAT, {}, "openai"),
    ("openai responses", OPENAI_RESPONSES, {}, "openai"),
    ("azure", AZURE, {"apim-request-id": "0c0f3a1e-7d2b"}, "azure"),
    ("gemini", GEMINI_LIST, {}, "gemini"),
    ("vllm", VLLM, {}, "vllm"),
    ("llama.cpp", LLAMA_CPP, {}, "llama.cpp"),
    ("ollama", OLLAMA, {}, "ollama"),
]


@pytest.mark.parametrize(
    ("body", "headers", "provider"),
    [c[1:] for c in OPENAI_SHAPED],
    ids=[c[0] for c in OPENAI_SHAPED],
)
def test_agent_recovers_once_from_each_openai_shaped_overflow(
    server: FakeProvider, body: Any, headers: dict[str, str], provider: str
) -> None:
    server.script = [(400, body, headers), (200, OPENAI_OK, {})]
    model = OpenAIModel("m", base_url=f"{server.url}/v1", api_key="k", max_retries=0)
    result = agent_for(model).run_sync("go on")
    assert_recovered_once(server, result, provider)


def test_agent_recovers_once_from_an_anthropic_overflow(server: FakeProvider) -> None:
    server.script = [(400, ANTHROPIC, {}), (200, ANTHROPIC_OK, {})]
    model = AnthropicModel("claude-haiku-4-5", base_url=server.url, api_key="k", max_retries=0)
    result = agent_for(model).run_sync("go on")
    assert_recovered_once(server, result, "anthropic")


def assert_recovered_once(server: FakeProvider, result: Any, provider: str) -> None:
    assert result.output == "done" and result.steps == 1
    assert len(server.requests) == 2
    first, second = (json.dumps(r["messages"]) for r in server.requests)
    assert len(second) < len(first)
    recoveries = [e for e in result.compactions if e.overflow is not None]
    assert len(recoveries) == 1
    event = recoveries[0]
    assert event.overflow.provider == provider
    assert event.tokens_after <= event.overflow.retry_budget(event.tokens_before)
    assert "context overflow" in event.reason and "context overflow" in event.summary()
    # the last user message is sent verbatim (Anthropic: after the results it follows)
    last = server.requests[1]["messages"][-1]["content"]
    assert last == "go on" or last[-1] == {"type": "text", "text": "go on"}


def test_a_second_overflow_raises_budget_impossible_without_a_third_request(
    server: FakeProvider,
) -> None:
    server.script = [(400, OPENAI_CHAT, {}), (400, OPENAI_CHAT, {})]
    model = OpenAIModel("m", base_url=f"{server.url}/v1", api_key="k", max_retries=0)
    with pytest.raises(BudgetImpossible) as info:
        agent_for(model).run_sync("go on")
    assert len(server.requests) == 2
    assert parse_overflow(info.value.__cause__) is not None
    assert info.value.required > info.value.budget


def test_recovery_off_raises_the_providers_error(server: FakeProvider) -> None:
    server.script = [(400, ANTHROPIC, {})]
    model = AnthropicModel("claude-haiku-4-5", base_url=server.url, api_key="k", max_retries=0)
    with pytest.raises(ModelError) as info:
        agent_for(model, recover_from_overflow=False).run_sync("go on")
    assert len(server.requests) == 1
    assert parse_overflow(info.value) is not None


def test_other_errors_are_not_retried(server: FakeProvider) -> None:
    bad_key = {
        "error": {
            "message": "Incorrect API key provided",
            "type": "invalid_request_error",
            "param": None,
            "code": "invalid_api_key",
        }
    }
    server.script = [(401, bad_key, {})]
    model = OpenAIModel("m", base_url=f"{server.url}/v1", api_key="k", max_retries=0)
    with pytest.raises(ModelError):
        agent_for(model).run_sync("go on")
    assert len(server.requests) == 1


def test_recovery_uses_the_compactors_strategy_and_calibrates(server: FakeProvider) -> None:
    server.script = [(400, ANTHROPIC, {}), (200, ANTHROPIC_OK, {})]
    model = AnthropicModel("claude-haiku-4-5", base_url=server.url, api_key="k", max_retries=0)
    compactor = Compactor(
        strategy=Budgeted(1_000_000, strategies=[SlidingWindow(keep_last_turns=1)])
    )
    agent = agent_for(model, compactor=compactor)
    result = agent.run_sync("go on")
    event = next(e for e in result.compactions if e.overflow is not None)
    assert {"Budgeted", "SlidingWindow"} <= {s.strategy for s in event.steps}
    assert not find_problems(agent.view.render())
    # the store keeps every original; the record of the recovery says what the provider said
    assert len(agent.history()) == 2 + 12 * 2 + 2
    agent.compact_now_sync(record=True)
    summary = agent.store.compactions("s")[-1].event
    assert "overflow" not in summary  # compact_now is no recovery


# -- compact_for_retry ------------------------------------------------------------------


def openai_dicts() -> list[dict[str, Any]]:
    store = MemoryStore()
    long_session(store, "s")
    return kompakt.to_dicts(store.messages("s"), format="openai")


def test_compact_for_retry_returns_the_same_format_within_the_retry_budget() -> None:
    sent = openai_dicts()
    overflow = parse_overflow(ANTHROPIC)
    assert overflow is not None
    before = View(MessageIndex(kompakt.loads(sent), tokenizer=CharEstimator())).total_tokens
    smaller, event = compact_for_retry(sent, overflow=overflow)
    assert isinstance(smaller[0], dict) and smaller[0]["role"] == "system"
    assert event.overflow is overflow and event.tokens_before == before
    assert event.tokens_after <= overflow.retry_budget(before) < before
    assert sent == openai_dicts()  # the input is untouched
    assert not find_problems(kompakt.loads(smaller))


def test_compact_for_retry_steps_20_percent_when_the_error_gives_no_numbers() -> None:
    overflow = parse_overflow(OPENAI_RESPONSES)
    assert overflow is not None and overflow.limit is None
    index = MessageIndex(kompakt.loads(openai_dicts()))
    smaller, event = compact_for_retry(index, overflow=overflow)
    assert all(isinstance(m, Message) for m in smaller)
    assert event.tokens_after <= int(event.tokens_before * 0.8)


def test_compact_for_retry_on_a_view_keeps_the_views_edits() -> None:
    index = MessageIndex(kompakt.loads(openai_dicts()))
    view = View(index)
    smaller, event = compact_for_retry(
        view, overflow=Overflow("openai", "x"), strategy="truncation"
    )
    assert isinstance(smaller, View) and smaller is not view
    assert view.total_tokens == event.tokens_before  # the given view is untouched


def test_compact_for_retry_raises_budget_impossible_when_the_core_cannot_fit() -> None:
    sent = [Message.system("s" * 4000), Message.user("go on")]
    with pytest.raises(BudgetImpossible) as info:
        compact_for_retry(sent, overflow=Overflow("anthropic", "x", limit=100, requested=200))
    assert info.value.breakdown["system"] > info.value.budget


def test_the_stored_compaction_record_names_the_overflow(server: FakeProvider) -> None:
    server.script = [(400, GEMINI_LIST, {}), (200, OPENAI_OK, {})]
    model = OpenAIModel("m", base_url=f"{server.url}/v1", api_key="k", max_retries=0)
    compactor = Compactor(strategy=Budgeted(1_000_000))
    agent = agent_for(model, compactor=compactor, hook="both")
    assert agent.run_sync("go on").output == "done"
    recorded = agent.store.compactions("s")[-1].event["overflow"]
    assert (recorded["provider"], recorded["limit"], recorded["requested"]) == (
        "gemini",
        131072,
        314175,
    )
