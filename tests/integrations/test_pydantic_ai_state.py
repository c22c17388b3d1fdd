"""Pydantic AI capability on the run's own history: budgets on what the model receives
(instructions and tool schemas included), concurrent runs, second runs and restarts from
the serialised history, permanent mode's notes, streaming."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from framework_checks import assert_valid_history
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from kompakt import Budgeted, BudgetImpossible, CharEstimator, Compactor, TokensExceed, validate
from kompakt.integrations._bridge import dumps
from kompakt.integrations.pydantic_ai import (
    KompaktCapability,
    from_pydantic_ai,
    stored_view,
    transcript,
)

BUDGET = 4_000
STEPS = 30
INSTRUCTIONS = "You are a careful debugger. Read what you are asked to, then answer. " * 6


class Script:
    """A FunctionModel body: read_file `steps` times per conversation (named by its first
    user prompt), a parallel pair every fifth step, then an answer; records its input."""

    def __init__(self, steps: int = STEPS) -> None:
        self.steps = steps
        self.requests: list[tuple[list[ModelMessage], AgentInfo]] = []
        self.counts: Counter[str] = Counter()

    def _step(self, messages: list[ModelMessage], info: AgentInfo) -> tuple[str, int]:
        self.requests.append((list(messages), info))
        who = next(
            str(p.content)
            for m in messages
            if isinstance(m, ModelRequest)
            for p in m.parts
            if isinstance(p, UserPromptPart)
        )
        self.counts[who] += 1
        return who.split(":")[0], self.counts[who]

    def _calls(self, tag: str, step: int) -> list[ToolCallPart]:
        calls = [
            ToolCallPart("read_file", {"path": f"{tag}/f{step}.py"}, tool_call_id=f"{tag}_{step}")
        ]
        if step % 5 == 0:
            path = {"path": f"{tag}/g{step}.py"}
            calls.append(ToolCallPart("read_file", path, tool_call_id=f"{tag}_p{step}"))
        return calls

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        tag, step = self._step(messages, info)
        if step > self.steps:
            return ModelResponse(parts=[TextPart(f"{tag} done")])
        return ModelResponse(parts=list(self._calls(tag, step)))

    async def stream(self, messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
        tag, step = self._step(messages, info)
        if step > self.steps:
            yield f"{tag} "
            yield "done"
            return
        for k, call in enumerate(self._calls(tag, step)):
            args = json.dumps(call.args)
            yield {k: DeltaToolCall(call.tool_name, args[:5], tool_call_id=call.tool_call_id)}
            yield {k: DeltaToolCall(None, args[5:], tool_call_id=call.tool_call_id)}


def read_file(path: str) -> str:
    """Read a file."""
    size = 3_000 + (sum(map(ord, path)) % 5) * 500  # 3-5 KB
    line = f"{path}: def handler(event): return event  # a long file read once\n"
    return (line * (size // len(line) + 1))[:size]


def _agent(script: Script, capability: Any, **kw: Any) -> Agent[None, str]:
    model = FunctionModel(script, stream_function=script.stream)
    return Agent(
        model, instructions=INSTRUCTIONS, tools=[read_file], capabilities=[capability], **kw
    )


def _received(messages: list[ModelMessage], info: AgentInfo) -> int:
    """Tokens the provider is sent: messages, instructions, tool schemas."""
    est = CharEstimator()
    tools = [
        {"name": t.name, "description": t.description, "parameters": t.parameters_json_schema}
        for t in [*info.function_tools, *info.output_tools]
    ]
    return (
        sum(est.count_message(m) for m in from_pydantic_ai(messages))
        + est.count_text(info.instructions or "")
        + est.count_text(dumps(tools))
    )


def _check(script: Script, budget: int = BUDGET) -> None:
    for messages, info in script.requests:
        msgs = from_pydantic_ai(messages)
        validate(msgs, format="openai")
        assert_valid_history(msgs)
        assert _received(messages, info) <= budget


def _compactor() -> Compactor:
    """Compact past 4k down to 3k: a small new turn then fits without compacting."""
    return Compactor(trigger=TokensExceed(BUDGET), strategy=Budgeted(3_000))


def test_a_30_step_run_holds_the_budget_with_instructions_and_tools() -> None:
    script = Script()
    capability = KompaktCapability(Budgeted(BUDGET))
    result = _agent(script, capability).run_sync("a: read 30 files")

    assert result.output == "a done"
    assert len(script.requests) == STEPS + 1
    _check(script)
    assert len(capability.events) >= 5
    history = result.all_messages()
    returns = [p for m in history if isinstance(m, ModelRequest) for p in m.parts]
    assert sum(isinstance(p, ToolReturnPart) for p in returns) == STEPS + STEPS // 5
    assert stored_view(history) is not None  # the view travels with the history


async def test_two_runs_at_once_on_one_capability() -> None:
    script = Script(steps=20)
    capability = KompaktCapability(Budgeted(BUDGET))
    agent = _agent(script, capability)
    results = await asyncio.gather(agent.run("a: read files"), agent.run("b: read files"))
    assert [r.output for r in results] == ["a done", "b done"]
    _check(script)
    for messages, _ in script.requests:
        ids = {c.id.split("_")[0] for m in from_pydantic_ai(messages) for c in m.tool_calls}
        assert len(ids) <= 1, ids  # never another conversation's calls

    alone = 0
    for who in ("a", "b"):
        solo = KompaktCapability(Budgeted(BUDGET))
        await _agent(Script(steps=20), solo).run(f"{who}: read files")
        alone += len(solo.events)
    assert len(capability.events) == alone  # each compacted as it does alone


def _first_request_of_second_run(history: list[ModelMessage]) -> list[Any]:
    script = Script()
    script.counts["a: read 30 files"] = STEPS + 1  # it answers at once
    agent = _agent(script, KompaktCapability(_compactor()))
    agent.run_sync("and f31?", message_history=history)
    return _plain(script.requests[0][0])


def _plain(messages: list[ModelMessage]) -> list[Any]:
    return [(m.role, m.text, m.tool_call_id, m.synthetic) for m in from_pydantic_ai(messages)]


def test_a_second_run_and_a_restart_send_what_the_first_run_would_have() -> None:
    script = Script()
    first = _agent(script, KompaktCapability(_compactor())).run_sync("a: read 30 files")
    history = first.all_messages()
    last = _plain(script.requests[-1][0])  # the first run's last (compacted) request
    assert any(s for *_, s in last)

    again = _first_request_of_second_run(history)
    stored = ModelMessagesTypeAdapter.dump_json(history)  # a restart reads it back
    restarted = _first_request_of_second_run(ModelMessagesTypeAdapter.validate_json(stored))

    assert restarted == again
    # what the first run sent, then its answer and the new prompt: nothing recompacted
    assert again[: len(last)] == last
    assert [text for _, text, *_ in again[len(last) :]] == ["a done", "and f31?"]


def test_permanent_mode_marks_its_notes_and_a_restart_keeps_them() -> None:
    script = Script()
    capability = KompaktCapability(_compactor(), mode="permanent")
    result = _agent(script, capability).run_sync("a: read 30 files")
    history = result.all_messages()
    _check(script)
    notes = [m for m in history if (m.metadata or {}).get("kompakt")]
    assert notes and len(transcript(history)) == len(history) - len(notes)
    assert all(m.synthetic for m in from_pydantic_ai(notes))
    stored = ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(history))
    # a second run from the stored history: the compacted history goes on, valid
    script = Script()
    script.counts["a: read 30 files"] = STEPS + 1
    agent = _agent(script, KompaktCapability(_compactor(), mode="permanent"))
    assert agent.run_sync("and f31?", message_history=stored).output == "a done"
    _check(script)
    sent = "\n".join(m.text for m in from_pydantic_ai(script.requests[0][0]))
    # no note was lost (consecutive notes may arrive merged into one response)
    assert all(m.text in sent for m in from_pydantic_ai(notes))


async def test_streaming_runs_compact_too() -> None:
    script = Script(steps=12)
    capability = KompaktCapability(Budgeted(BUDGET))
    async with _agent(script, capability).run_stream("a: read files") as run:
        output = await run.get_output()
    assert output == "a done"
    assert len(script.requests) == 13 and capability.events
    _check(script)


def test_instructions_over_budget_are_clamped_with_a_warning_or_refused() -> None:
    huge = "Follow the house style in every detail. " * 500  # ~5k tokens
    script = Script(steps=6)
    agent = Agent(
        FunctionModel(script),
        instructions=huge,
        tools=[read_file],
        capabilities=[KompaktCapability(Budgeted(BUDGET))],
    )
    with pytest.warns(UserWarning, match="instructions"):
        assert agent.run_sync("a: read files").output == "a done"
    _check(script)

    script = Script()
    strict = KompaktCapability(Budgeted(BUDGET), oversize="raise")
    agent = Agent(FunctionModel(script), instructions=huge, capabilities=[strict])
    with pytest.raises(BudgetImpossible, match="instructions"):
        agent.run_sync("a: read files")
    assert script.requests == []


async def test_the_agents_own_model_writes_the_summaries() -> None:
    from pydantic_ai.models.test import TestModel

    from kompakt.integrations.pydantic_ai import PydanticAIModel
    from kompakt.strategies import Summarize

    summarizer = PydanticAIModel(TestModel(custom_output_text="## Goal\n- the bug in a/f1..f8"))
    compactor = Compactor(
        trigger=TokensExceed(BUDGET), strategy=Summarize(keep_last_groups=2), summarizer=summarizer
    )
    script = Script(steps=10)
    await _agent(script, KompaktCapability(compactor)).run("a: read files")
    texts = [m.text for messages, _ in script.requests for m in from_pydantic_ai(messages)]
    assert any("the bug in a/f1..f8" in t for t in texts)
    assert summarizer.total_usage.calls >= 1
