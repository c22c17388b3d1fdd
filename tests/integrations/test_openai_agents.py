"""OpenAI Agents SDK adapter: a real Runner on the SDK's ScriptedModel, with a kompakt session."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, RunConfig, Runner, function_tool, set_tracing_disabled
from agents.memory import Session
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from framework_checks import BIG, assert_valid_history, tool_result_count
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kompakt import Budgeted, CharEstimator, Compactor, TokensExceed
from kompakt.integrations.openai_agents import (
    KompaktSession,
    from_openai_agents,
    model_input_filter,
    to_openai_agents,
)
from kompakt.store import MemoryStore, SQLiteStore

set_tracing_disabled(True)

RUNS = 4
STEPS = 3  # tool-calling steps per run
NO_TRACING = RunConfig(tracing_disabled=True)


@function_tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"{path}:\n{BIG}"


FULL = len(f"f0.py:\n{BIG}")  # an uncut result (every path here has five characters)


def _script(run: int) -> list[ModelStep]:
    steps = []
    for s in range(STEPS):
        calls = [function_call("read_file", {"path": f"r{run}s{s}.py"}, call_id=f"c{run}_{s}")]
        if s == 1:  # a parallel batch
            calls.append(function_call("read_file", {"path": f"p{run}.py"}, call_id=f"p{run}_{s}"))
        steps.append(ModelStep(output=calls))
    steps.append(ModelStep(output=[assistant_message(f"answer {run}", item_id=f"msg{run}")]))
    return steps


def _compactor() -> Compactor:
    # thresholds sized for four characters a token
    flat = CharEstimator(chars_per_token=4)
    return Compactor(trigger=TokensExceed(4_000), strategy=Budgeted(3_000), tokenizer=flat)


def _plain(item: Any) -> dict[str, Any]:
    return item if isinstance(item, dict) else item.model_dump(exclude_unset=True)


async def _conversation(session: KompaktSession) -> list[list[dict[str, Any]]]:
    """RUNS user turns on one session; returns what the model received at each call."""
    received: list[list[dict[str, Any]]] = []
    for run in range(RUNS):
        model = ScriptedModel(_script(run))
        agent = Agent(name="debugger", instructions="You debug.", model=model, tools=[read_file])
        result = await Runner.run(
            agent, f"task {run}: read the files", session=session, run_config=NO_TRACING
        )
        assert result.final_output == f"answer {run}"
        received.extend([_plain(i) for i in call.input] for call in model.calls)
    return received


# -- conversion -------------------------------------------------------------------------

_text = st.text(max_size=30)


@st.composite
def _items(draw: st.DrawFn) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": draw(_text)}]
    for turn in range(draw(st.integers(1, 3))):
        content: Any = draw(
            st.one_of(
                _text,
                st.just(
                    [
                        {"type": "input_text", "text": "hi"},
                        {"type": "input_image", "image_url": "x"},
                    ]
                ),
            )
        )
        out.append({"role": "user", "content": content})
        for step in range(draw(st.integers(0, 3))):
            if draw(st.booleans()):
                out.append({"type": "reasoning", "id": f"rs{turn}{step}", "summary": []})
            if draw(st.booleans()):
                out.append(
                    {
                        "type": "message",
                        "role": "assistant",
                        "id": f"m{turn}{step}",
                        "status": "completed",
                        "content": [
                            {"type": "output_text", "text": draw(_text), "annotations": []}
                        ],
                    }
                )
            ids = [f"c{turn}{step}{k}" for k in range(draw(st.integers(1, 3)))]
            for i in ids:
                args = json.dumps({"path": draw(_text)})
                out.append(
                    {
                        "type": "function_call",
                        "call_id": i,
                        "name": "t",
                        "arguments": args,
                        "id": f"fc_{i}",
                        "status": "completed",
                    }
                )
            for i in ids:
                out.append({"type": "function_call_output", "call_id": i, "output": draw(_text)})
        out.append(
            {
                "type": "message",
                "role": "assistant",
                "id": f"end{turn}",
                "content": [{"type": "output_text", "text": draw(_text), "annotations": []}],
            }
        )
        if draw(st.booleans()):  # the easy form, as code and kompakt's notes write it
            out.append({"role": "assistant", "content": draw(_text)})
    return out


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_items())
def test_round_trip_is_identity(items: list[dict[str, Any]]) -> None:
    msgs = from_openai_agents(items)
    assert to_openai_agents(msgs) == items
    calls = [i["call_id"] for i in items if i.get("type") == "function_call"]
    assert calls == [c.id for m in msgs for c in m.tool_calls]


# -- the session --------------------------------------------------------------------------


def test_is_a_session() -> None:
    assert isinstance(KompaktSession("s"), Session)


async def test_runner_gets_a_compacted_valid_history_and_originals_are_kept() -> None:
    store = MemoryStore()
    session = KompaktSession("s1", store=store, compactor=_compactor())
    received = await _conversation(session)

    made = RUNS * (STEPS + 1)  # tool results produced in all
    for request in received:
        assert_valid_history(from_openai_agents(request))
    first_calls = received[:: STEPS + 1][1:]  # the first request of every later run
    compacted = [
        r
        for r in first_calls
        if sum(1 for i in r if i.get("type") == "function_call_output") < made
    ]
    assert compacted, "the runner never received a compacted history"
    assert session.events and store.compactions("s1")
    # every original is in the store, verbatim
    originals = store.messages("s1")
    assert tool_result_count(originals) == made
    assert store.search("s1", "r0s0.py")
    assert [m.text for m in originals if m.role == "user"] == [
        f"task {r}: read the files" for r in range(RUNS)
    ]
    # what get_items returns is what kompakt renders, and smaller than the originals
    items = await session.get_items()
    assert len(items) < len(to_openai_agents(originals))
    assert items[-1]["content"][0]["text"] == f"answer {RUNS - 1}"


async def test_sqlite_session_survives_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "agents.db"
    session = KompaktSession("s1", store=SQLiteStore(path), compactor=_compactor())
    await _conversation(session)
    before = await session.get_items()

    again = KompaktSession("s1", store=SQLiteStore(path), compactor=_compactor())
    after = await again.get_items()
    assert after == before
    assert again.events == []  # the stored view was resumed, not recomputed
    assert_valid_history(from_openai_agents(after))


async def test_limit_pop_and_clear() -> None:
    session = KompaktSession("s1")
    await session.add_items(
        [
            {"role": "user", "content": "hi"},
            {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
            {"type": "function_call", "call_id": "c2", "name": "ls", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "a"},
            {"type": "function_call_output", "call_id": "c2", "output": "b"},
        ]
    )
    # outputs whose call falls outside the newest `limit` items are left out
    assert [i.get("call_id") for i in await session.get_items(limit=3)] == ["c2", "c2"]
    assert await session.get_items(limit=2) == []
    popped = await session.pop_item()
    assert popped == {"type": "function_call_output", "call_id": "c2", "output": "b"}
    assert len(await session.get_items()) == 4
    await session.clear_session()
    assert await session.get_items() == []
    assert session.store.count("s1") == 4  # nothing is deleted (4 kompakt messages)


async def test_model_input_filter_compacts_within_one_long_run() -> None:
    steps = [
        ModelStep(output=[function_call("read_file", {"path": f"f{s}.py"}, call_id=f"c{s}")])
        for s in range(12)
    ]
    model = ScriptedModel([*steps, ModelStep(output=[assistant_message("done", item_id="m")])])
    agent = Agent(name="debugger", instructions="You debug.", model=model, tools=[read_file])
    kompakt_input = model_input_filter(_compactor())
    config = RunConfig(tracing_disabled=True, call_model_input_filter=kompakt_input)
    session = KompaktSession("s1")
    result = await Runner.run(
        agent, "read f0..f11", session=session, run_config=config, max_turns=20
    )

    assert result.final_output == "done"
    inputs = [[_plain(i) for i in call.input] for call in model.calls]
    compacted = 0
    for made, request in enumerate(inputs):
        assert_valid_history(from_openai_agents(request))
        outputs = [i for i in request if i.get("type") == "function_call_output"]
        # compacted: results gone (into a note) or cut short (clamped)
        compacted += len(outputs) < made or any(len(str(o["output"])) < FULL for o in outputs)
        if made:
            assert outputs[-1]["call_id"] == f"c{made - 1}"  # the fresh result always arrives
    assert compacted >= 3
    assert kompakt_input.events  # type: ignore[attr-defined]
    # the session still received every original
    assert tool_result_count(session.store.messages("s1")) == 12


# -- long runs, several conversations, restarts ----------------------------------------------

LONG = 30


def _long_script(tag: str, steps: int = LONG) -> ScriptedModel:
    calls = []
    for i in range(steps):
        batch = [function_call("read_file", {"path": f"{tag}{i}.py"}, call_id=f"{tag}c{i}")]
        if i % 7 == 3:  # a parallel batch
            path = {"path": f"{tag}p{i}.py"}
            batch.append(function_call("read_file", path, call_id=f"{tag}p{i}"))
        calls.append(ModelStep(output=batch))
    return ScriptedModel([*calls, ModelStep(output=[assistant_message(f"done {tag}")])])


def _sent_tokens(call: Any, agent: Agent[Any]) -> int:
    """What the provider receives: input items, instructions and tool schemas."""
    from kompakt import CharEstimator
    from kompakt.integrations._bridge import Overhead, dumps
    from kompakt.integrations.openai_agents import _tool_schemas

    tok = CharEstimator()
    items = from_openai_agents([_plain(i) for i in call.input])
    schemas = _tool_schemas(agent)
    parts = [call.system_instructions or "", dumps(schemas) if schemas else ""]
    extra = [Overhead("\n\n".join(p for p in parts if p)).message]
    return sum(tok.count_message(m) for m in [*extra, *items])


def _agent(model: ScriptedModel) -> Agent[Any]:
    return Agent(name="debugger", instructions="You debug Python.", model=model, tools=[read_file])


async def test_one_long_run_stays_in_budget_with_instructions_counted(tmp_path: Path) -> None:
    session = KompaktSession("s1", store=SQLiteStore(tmp_path / "a.db"), compactor=_compactor())
    model = _long_script("a")
    agent = _agent(model)
    result = await Runner.run(
        agent, "task a", session=session, run_config=session.run_config(), max_turns=40
    )
    assert result.final_output == "done a"
    assert len(model.calls) == LONG + 1
    for call in model.calls:
        assert_valid_history(from_openai_agents([_plain(i) for i in call.input]))
        assert _sent_tokens(call, agent) <= 4_000
    assert session.events


async def test_second_run_and_restart_continue_the_view(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    session = KompaktSession("s1", store=SQLiteStore(path), compactor=_compactor())
    first = _long_script("a")
    await Runner.run(
        _agent(first), "task a", session=session, run_config=session.run_config(), max_turns=40
    )
    last = [_plain(i) for i in first.calls[-1].input]
    second = _long_script("b", 2)
    await Runner.run(
        _agent(second), "task b", session=session, run_config=session.run_config(), max_turns=9
    )
    start = [_plain(i) for i in second.calls[0].input]
    assert start[: len(last)] == last  # what the first run would have sent next
    assert start[-1] == {"role": "user", "content": "task b"}
    assert len(start) == len(last) + 2  # its answer, the new task

    again = KompaktSession("s1", store=SQLiteStore(path), compactor=_compactor())
    third = _long_script("c", 1)
    before = [_plain(i) for i in second.calls[-1].input]
    await Runner.run(
        _agent(third), "task c", session=again, run_config=again.run_config(), max_turns=9
    )
    resumed = [_plain(i) for i in third.calls[0].input]
    assert resumed[: len(before)] == before
    assert len(resumed) == len(before) + 2


async def test_one_filter_serves_two_conversations_at_once() -> None:
    import asyncio

    alone = model_input_filter(_compactor())
    model = _long_script("a")
    await Runner.run(
        _agent(model), "task a", run_config=RunConfig(call_model_input_filter=alone), max_turns=40
    )
    shared = model_input_filter(_compactor())
    config = RunConfig(tracing_disabled=True, call_model_input_filter=shared)
    a, b = _long_script("a"), _long_script("b")
    await asyncio.gather(
        Runner.run(_agent(a), "task a", run_config=config, max_turns=40),
        Runner.run(_agent(b), "task b", run_config=config, max_turns=40),
    )
    for call in [*a.calls, *b.calls]:
        items = [_plain(i) for i in call.input]
        assert_valid_history(from_openai_agents(items))
        own = "a" if call in a.calls else "b"
        assert all(i.get("call_id", own)[0] == own for i in items)  # never the other's items
    assert len(shared.events) == 2 * len(alone.events)  # type: ignore[attr-defined]


async def test_oversized_instructions_are_cut_with_a_warning_or_refused() -> None:
    from kompakt import BudgetImpossible, ConfigError

    model = ScriptedModel([ModelStep(output=[assistant_message("ok")])])
    agent = Agent(name="x", instructions="You debug. " * 2_000, model=model)
    clamp = RunConfig(call_model_input_filter=model_input_filter(_compactor()))
    with pytest.warns(UserWarning, match="cut to fit"):
        await Runner.run(agent, "hi", run_config=clamp)
    assert len(model.calls[0].system_instructions or "") < 4 * 3_000
    strict = RunConfig(call_model_input_filter=model_input_filter(_compactor(), oversize="raise"))
    with pytest.raises(BudgetImpossible, match="instructions"):
        await Runner.run(agent, "hi", run_config=strict)
    with pytest.raises(ConfigError, match="oversize"):
        model_input_filter(_compactor(), oversize="error")  # type: ignore[arg-type]


async def test_streamed_run_compacts_too() -> None:
    session = KompaktSession("s1", compactor=_compactor())
    model = _long_script("a", 12)
    agent = _agent(model)
    result = Runner.run_streamed(
        agent, "task a", session=session, run_config=session.run_config(), max_turns=20
    )
    async for _ in result.stream_events():
        pass
    assert result.final_output == "done a"
    for call in model.calls:
        assert_valid_history(from_openai_agents([_plain(i) for i in call.input]))
        assert _sent_tokens(call, agent) <= 4_000


async def test_the_agents_own_model_writes_the_summaries() -> None:
    from kompakt import Summarize
    from kompakt.integrations.openai_agents import AgentsChatModel

    writer = ScriptedModel(
        [ModelStep(output=[assistant_message("Goal: read files. Read r0s0.py so far.")])] * 20
    )
    summarizer = AgentsChatModel(writer)
    compactor = Compactor(trigger=TokensExceed(4_000), strategy=Summarize(keep_last_groups=2))
    compactor.summarizer = summarizer
    session = KompaktSession("s1", compactor=compactor)
    await _conversation(session)
    assert writer.calls, "the agent's model was never asked for a summary"
    items = await session.get_items()
    assert any("Read r0s0.py so far" in json.dumps(i) for i in items)
    assert summarizer.total_usage.calls == len(writer.calls)


async def test_a_restart_from_the_sdks_own_sqlite_session_continues_the_view(
    tmp_path: Path,
) -> None:
    from agents import SQLiteSession

    db = str(tmp_path / "sdk.db")
    first = _long_script("a")
    config = RunConfig(call_model_input_filter=model_input_filter(_compactor()))
    session = SQLiteSession("user-42", db)
    await Runner.run(_agent(first), "task a", session=session, run_config=config, max_turns=40)
    last = [_plain(i) for i in first.calls[-1].input]
    assert len(last) < 2 * LONG  # it was compacted

    # a new process: a new session object on the same file, a new filter
    again = SQLiteSession("user-42", db)
    fresh = RunConfig(call_model_input_filter=model_input_filter(_compactor()))
    second = _long_script("b", 1)
    await Runner.run(_agent(second), "task b", session=again, run_config=fresh, max_turns=9)
    start = [_plain(i) for i in second.calls[0].input]
    assert start[: len(last)] == last
    assert start[len(last) + 1] == {"role": "user", "content": "task b"}
