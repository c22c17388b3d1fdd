"""Pydantic AI adapter: real agents on Pydantic AI's FunctionModel and TestModel."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from framework_checks import BIG, assert_valid_history, tool_result_count
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai import Agent
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import (
    ImageUrl,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from kompakt import Budgeted, Compactor, TokensExceed
from kompakt.integrations.pydantic_ai import (
    KompaktCapability,
    from_pydantic_ai,
    history_processor,
    to_pydantic_ai,
)
from kompakt.notes import is_note

TURNS = 12
FINAL = "All 12 files read; the bug is in f7.py."


def _dump(messages: list[ModelMessage]) -> Any:
    return ModelMessagesTypeAdapter.dump_python(messages, mode="json")


class Scripted:
    """A FunctionModel body: calls read_file for TURNS steps, then answers; records its input."""

    def __init__(self) -> None:
        self.requests: list[list[ModelMessage]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.requests.append(list(messages))
        step = len(self.requests)
        if step > TURNS:
            return ModelResponse(parts=[TextPart(FINAL)])
        calls = [ToolCallPart("read_file", {"path": f"f{step}.py"}, tool_call_id=f"call_{step}")]
        if step % 4 == 0:
            path = {"path": f"g{step}.py"}
            calls.append(ToolCallPart("read_file", path, tool_call_id=f"p{step}"))
        return ModelResponse(parts=calls)

    def check(self) -> int:
        """Every request valid; returns how many were compacted."""
        compacted = 0
        for i, request in enumerate(self.requests):
            msgs = from_pydantic_ai(request)
            assert_valid_history(msgs)
            made = sum(2 if s % 4 == 0 else 1 for s in range(1, i + 1))
            compacted += tool_result_count(msgs) < made
        return compacted


def _agent(model: Any, **kw: Any) -> Agent[None, str]:
    agent: Agent[None, str] = Agent(model, system_prompt="You debug.", **kw)

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file."""
        return f"{path}:\n{BIG}"

    return agent


def _compactor() -> Compactor:
    return Compactor(trigger=TokensExceed(4_000), strategy=Budgeted(3_000))


# -- conversion -------------------------------------------------------------------------

_text = st.text(max_size=30)
_args = st.one_of(
    st.dictionaries(st.sampled_from(["path", "n"]), st.one_of(_text, st.integers())),
    st.just('{"path": "raw json"}'),
)


@st.composite
def _history(draw: st.DrawFn) -> list[ModelMessage]:
    first: list[Any] = [SystemPromptPart(draw(_text))]
    out: list[ModelMessage] = []
    for turn in range(draw(st.integers(1, 3))):
        prompt = draw(st.one_of(_text, st.just(["look", ImageUrl("https://x.test/a.png")])))
        part = UserPromptPart(prompt)  # type: ignore[arg-type]  # a str or a list of parts
        out.append(ModelRequest(parts=[*first, part], instructions="be brief"))
        first = []
        for step in range(draw(st.integers(0, 3))):
            ids = [f"c{turn}_{step}_{k}" for k in range(draw(st.integers(1, 3)))]
            thinking = [ThinkingPart(draw(_text))] if draw(st.booleans()) else []
            calls = [ToolCallPart("t", draw(_args), tool_call_id=i) for i in ids]
            out.append(ModelResponse(parts=[*thinking, TextPart(draw(_text)), *calls]))
            results: list[Any] = []
            for i in ids:
                if draw(st.booleans()):
                    content = draw(st.one_of(_text, _args))
                    results.append(ToolReturnPart("t", content, tool_call_id=i))
                else:
                    retry = ToolReturnPart("t", draw(_text), tool_call_id=i, outcome="retried")
                    results.append(retry)
            out.append(ModelRequest(parts=results))
        out.append(ModelResponse(parts=[TextPart(draw(_text))], model_name="m"))
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_history())
def test_round_trip_is_identity(history: list[ModelMessage]) -> None:
    kompakt_msgs = from_pydantic_ai(history)
    assert _dump(to_pydantic_ai(kompakt_msgs)) == _dump(history)
    calls = [p for m in history if isinstance(m, ModelResponse) for p in m.parts]
    ids = [p.tool_call_id for p in calls if isinstance(p, ToolCallPart)]
    assert ids == [c.id for m in kompakt_msgs for c in m.tool_calls]


def test_a_real_run_round_trips() -> None:
    agent = _agent(TestModel())
    history = agent.run_sync(["read a.py", ImageUrl("https://x.test/a.png")]).all_messages()
    assert _dump(to_pydantic_ai(from_pydantic_ai(history))) == _dump(history)


# -- agents ---------------------------------------------------------------------------------


def test_capability_view_mode() -> None:
    script = Scripted()
    capability = KompaktCapability(_compactor())
    agent = _agent(FunctionModel(script), capabilities=[capability])
    result = agent.run_sync("Read f1..f12 and find the bug.")

    assert result.output == FINAL
    assert len(script.requests) == TURNS + 1
    assert script.check() >= 3, "compaction never reached the model"
    assert capability.events
    # the run's history keeps every original
    assert tool_result_count(from_pydantic_ai(result.all_messages())) == TURNS + TURNS // 4
    last = from_pydantic_ai(script.requests[-1])
    assert last[0].role == "system" and last[1].text.startswith("Read f1")
    assert {m.tool_call_id for m in last[-2:]} == {"call_12", "p12"}


async def test_capability_permanent_mode() -> None:
    script = Scripted()
    capability = KompaktCapability(_compactor(), mode="permanent")
    agent = _agent(FunctionModel(script), capabilities=[capability])
    result = await agent.run("Read f1..f12 and find the bug.")

    assert result.output == FINAL
    assert script.check() >= 3
    history = from_pydantic_ai(result.all_messages())
    assert_valid_history(history)
    assert tool_result_count(history) < TURNS


async def test_history_processor_with_process_history() -> None:
    script = Scripted()
    processor = history_processor(_compactor())
    agent = _agent(FunctionModel(script), capabilities=[ProcessHistory(processor)])
    result = await agent.run("Read f1..f12 and find the bug.")

    assert result.output == FINAL
    assert script.check() >= 3
    assert processor.events  # type: ignore[attr-defined]


def test_test_model_agent_with_compaction() -> None:
    """Pydantic AI's TestModel calls every tool once, then answers: a short run stays valid."""
    model = TestModel()
    tiny = Compactor(trigger=TokensExceed(400), strategy=Budgeted(300))
    capability = KompaktCapability(tiny)
    agent = _agent(model, capabilities=[capability])
    result = agent.run_sync("Read a file. " + "Context. " * 30)
    assert "read_file" in result.output
    assert len(capability.events) == 1  # the tool's long result was clamped once
    assert_valid_history(from_pydantic_ai(result.all_messages()))


async def test_concurrent_runs_of_one_agent_do_not_mix() -> None:
    capability = KompaktCapability(_compactor())
    agent = _agent(FunctionModel(Scripted()), capabilities=[capability])
    scripts = [Scripted(), Scripted()]
    results = await asyncio.gather(
        *(
            agent.run(f"Conversation {k}: read f1..f12.", model=FunctionModel(s))
            for k, s in enumerate(scripts)
        )
    )
    assert [r.output for r in results] == [FINAL, FINAL]
    for k, script in enumerate(scripts):
        assert script.check() >= 3
        for request in script.requests:
            said = [m for m in from_pydantic_ai(request) if m.role == "user"]
            users = [m.text for m in said if not is_note(m)]
            assert users == [f"Conversation {k}: read f1..f12."]
            # a note of this conversation's own past, never of the other's
            assert not any(f"Conversation {1 - k}" in m.text for m in said)
    assert len(capability.events) >= 4  # both conversations compacted, more than once


async def test_a_summarizing_strategy_runs_inside_the_agent() -> None:
    """A strategy that awaits a model (kompakt's Summarize on a scripted summarizer)."""
    from kompakt.models import ScriptedModel
    from kompakt.strategies import Summarize

    summarizer = ScriptedModel("## Goal\n- find the bug\n## Artifacts\n- read f1..f8", cycle=True)
    compactor = Compactor(
        trigger=TokensExceed(4_000), strategy=Summarize(keep_last_groups=2, summarizer=summarizer)
    )
    script = Scripted()
    capability = KompaktCapability(compactor)
    result = await _agent(FunctionModel(script), capabilities=[capability]).run("Find the bug.")

    assert result.output == FINAL
    assert summarizer.requests, "the summarizer was never asked"
    seen = [from_pydantic_ai(r) for r in script.requests]
    summaries = [m for msgs in seen for m in msgs if "read f1..f8" in m.text]
    assert summaries, "the summary never reached the model"
    for msgs in seen:
        assert_valid_history(msgs)


def test_a_bad_mode_is_a_config_error() -> None:
    from kompakt import ConfigError

    with pytest.raises(ConfigError, match=r"^`mode` must be 'view' or 'permanent', got 'viwe'$"):
        KompaktCapability(_compactor(), mode="viwe")  # type: ignore[arg-type]
