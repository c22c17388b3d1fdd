"""LangChain / LangGraph adapter: real agents on LangChain's fake chat model."""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest

pytest.importorskip("langchain")
pytest.importorskip("langgraph")

from framework_checks import BIG, assert_valid_history, tool_result_count
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    trim_messages,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool

from kompakt import Budgeted, Compactor, TokensExceed
from kompakt.integrations.langchain import (
    KompaktMiddleware,
    from_langchain,
    pre_model_hook,
    to_langchain,
)
from kompakt.notes import NOTE_HEADER

TURNS = 12
FINAL = "All 12 files read; the bug is in f7.py."


class ToolCallingFake(FakeMessagesListChatModel):
    """LangChain's fake list model, made to call tools for `turns` steps and record its input."""

    turns: int = TURNS
    requests: list[list[BaseMessage]] = []  # noqa: RUF012 (a pydantic field)
    responses: list[BaseMessage] = [AIMessage("unused")]  # noqa: RUF012

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolCallingFake:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.requests.append(list(messages))
        step = len(self.requests)
        if step > self.turns:
            return ChatResult(generations=[ChatGeneration(message=AIMessage(FINAL))])
        calls = [{"name": "read_file", "args": {"path": f"f{step}.py"}, "id": f"call_{step}"}]
        if step % 4 == 0:  # a parallel batch now and then
            extra = {"name": "read_file", "args": {"path": f"g{step}.py"}, "id": f"par_{step}"}
            calls.append(extra)
        msg = AIMessage("", tool_calls=[{**c, "type": "tool_call"} for c in calls])
        return ChatResult(generations=[ChatGeneration(message=msg)])


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"{path}:\n{BIG}"


def _compactor() -> Compactor:
    return Compactor(trigger=TokensExceed(4_000), strategy=Budgeted(3_000))


def _check_requests(model: ToolCallingFake) -> int:
    """Every request valid; returns how many were compacted (fewer tool results than made)."""
    compacted = 0
    for i, request in enumerate(model.requests):
        msgs = from_langchain(request)
        assert_valid_history(msgs)
        if tool_result_count(msgs) < sum(2 if s % 4 == 0 else 1 for s in range(1, i + 1)):
            compacted += 1
    return compacted


# -- conversion -------------------------------------------------------------------------

_text = st.text(max_size=30)
_args = st.dictionaries(st.sampled_from(["path", "n", "q"]), st.one_of(_text, st.integers()))
_ids = st.one_of(st.none(), st.uuids().map(str))


@st.composite
def _conversation(draw: st.DrawFn) -> list[BaseMessage]:
    out: list[BaseMessage] = [SystemMessage(draw(_text))]
    for turn in range(draw(st.integers(1, 4))):
        content: Any = draw(
            st.one_of(
                _text,
                st.lists(
                    st.one_of(
                        _text,
                        _text.map(lambda t: {"type": "text", "text": t}),
                        st.just({"type": "image_url", "image_url": {"url": "data:x"}}),
                    ),
                    max_size=3,
                ),
            )
        )
        out.append(HumanMessage(content, id=draw(_ids)))
        for step in range(draw(st.integers(0, 3))):
            n = draw(st.integers(1, 3))
            ids = [f"c{turn}_{step}_{k}" for k in range(n)]
            calls = [{"name": "t", "args": draw(_args), "id": i, "type": "tool_call"} for i in ids]
            out.append(
                AIMessage(
                    draw(_text),
                    tool_calls=calls,
                    id=draw(_ids),
                    response_metadata={"model": "m"},
                    usage_metadata={"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
                )
            )
            for i in ids:
                status = draw(st.sampled_from(["success", "error"]))
                out.append(
                    ToolMessage(draw(_text), tool_call_id=i, status=status, artifact={"k": 1})
                )
        final = draw(st.sampled_from([AIMessage, AIMessageChunk]))  # streamed answers too
        out.append(final(draw(_text), name=draw(st.one_of(st.none(), _text))))
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_conversation())
def test_round_trip_is_identity(conversation: list[BaseMessage]) -> None:
    kompakt_msgs = from_langchain(conversation)
    back = to_langchain(kompakt_msgs)
    assert back == conversation
    assert [type(m) for m in back] == [type(m) for m in conversation]
    for a, b in zip(conversation, kompakt_msgs, strict=True):
        if isinstance(a, AIMessage):
            assert [c["id"] for c in a.tool_calls] == [c.id for c in b.tool_calls]
            args = [json.loads(c.arguments) for c in b.tool_calls]
            assert [c["args"] for c in a.tool_calls] == args


def test_synthetic_messages_keep_their_provenance() -> None:
    from kompakt.messages import Message

    note = Message.assistant("[Tool results: ls → a.py]", synthetic="collapsed", covers=("a", "b"))
    lc = to_langchain([note])[0]
    assert lc.response_metadata["kompakt"]["covers"] == ["a", "b"]
    again = from_langchain([lc])[0]
    assert (again.synthetic, again.covers, again.text) == ("collapsed", ("a", "b"), note.text)
    assert "kompakt" not in again.extra["langchain"]["fields"]["response_metadata"]


# -- LangChain v1 agent with middleware ---------------------------------------------------


def test_middleware_view_mode_compacts_what_the_model_sees() -> None:
    model = ToolCallingFake(requests=[])
    middleware = KompaktMiddleware(_compactor())
    agent = create_agent(model, [read_file], system_prompt="You debug.", middleware=[middleware])
    result = agent.invoke({"messages": [HumanMessage("Read f1..f12 and find the bug.")]})

    assert result["messages"][-1].content == FINAL
    assert len(model.requests) == TURNS + 1
    assert _check_requests(model) >= 3, "compaction never reached the model"
    assert middleware.events and all(e.tokens_after < e.tokens_before for e in middleware.events)
    # view mode: the agent state keeps every original tool result
    assert tool_result_count(from_langchain(result["messages"])) == TURNS + TURNS // 4
    last = model.requests[-1]
    assert isinstance(last[0], SystemMessage) and str(last[1].content).startswith("Read f1")
    # the freshest results always arrive (step 12 was a parallel batch of two)
    assert {m.tool_call_id for m in last[-2:]} == {"call_12", "par_12"}  # type: ignore[attr-defined]
    total = sum(len(str(m.content)) for m in last)
    assert total < 5_000 * 4


async def test_middleware_async_and_permanent_mode() -> None:
    model = ToolCallingFake(requests=[])
    middleware = KompaktMiddleware(_compactor(), mode="permanent")
    agent = create_agent(model, [read_file], middleware=[middleware])
    result = await agent.ainvoke({"messages": [HumanMessage("Read f1..f12 and find the bug.")]})

    assert result["messages"][-1].content == FINAL
    assert _check_requests(model) >= 3
    # permanent mode: the state itself was compacted, and is still valid
    state = from_langchain(result["messages"])
    assert_valid_history(state)
    assert tool_result_count(state) < TURNS
    assert any(m.synthetic for m in state)


# -- LangGraph pre_model_hook --------------------------------------------------------------


def _react_agent(model: ToolCallingFake, hook: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from langgraph.prebuilt import create_react_agent

        return create_react_agent(model, [read_file], pre_model_hook=hook)


@pytest.mark.parametrize("mode", ["view", "permanent"])
def test_langgraph_pre_model_hook(mode: str) -> None:
    model = ToolCallingFake(requests=[])
    agent = _react_agent(model, pre_model_hook(_compactor(), mode=mode))  # type: ignore[arg-type]
    result = agent.invoke({"messages": [HumanMessage("Read f1..f12 and find the bug.")]})

    assert result["messages"][-1].content == FINAL
    assert _check_requests(model) >= 3
    kept = tool_result_count(from_langchain(result["messages"]))
    if mode == "view":
        assert kept == TURNS + TURNS // 4
    else:
        assert kept < TURNS
        assert_valid_history(from_langchain(result["messages"]))


def test_trim_messages_orphans_but_kompakt_does_not() -> None:
    """The peer failure this adapter exists for, shown on one history."""
    model = ToolCallingFake(requests=[])
    agent = create_agent(model, [read_file])
    history = agent.invoke({"messages": [HumanMessage("Read f1..f12.")]})["messages"][:-1]

    trimmed = trim_messages(history, max_tokens=6, token_counter=len, strategy="last")
    assert isinstance(trimmed[0], ToolMessage)  # the call it answers was cut
    hook = pre_model_hook(Compactor(trigger=TokensExceed(2_000), strategy=Budgeted(1_500)))
    ours = hook.invoke({"messages": history})["llm_input_messages"]
    assert_valid_history(from_langchain(ours))
    assert len(ours) < len(history)


def test_one_middleware_serves_several_threads() -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    model = ToolCallingFake(requests=[], turns=10_000)  # answers on request 13, 26, ...
    middleware = KompaktMiddleware(_compactor())
    agent = create_agent(model, [read_file], middleware=[middleware], checkpointer=InMemorySaver())
    for thread in ("a", "b"):
        config = {"configurable": {"thread_id": thread}}
        model.turns = len(model.requests) + TURNS
        agent.invoke({"messages": [HumanMessage(f"thread {thread}")]}, config)  # type: ignore[call-overload]
    assert len(middleware.conversations) == 2
    for request in model.requests:
        said = [str(m.content) for m in request if isinstance(m, HumanMessage)]
        users = {s for s in said if not NOTE_HEADER.match(s)}
        assert len(users) == 1  # never another thread's messages (nor its notes)
        (thread,) = users
        other = "thread b" if thread == "thread a" else "thread a"
        assert not any(other in s for s in said)
    assert _check_requests_per_thread(model.requests) >= 6


def _check_requests_per_thread(requests: list[list[BaseMessage]]) -> int:
    """Every request valid; returns how many carried kompakt's synthetic messages."""
    compacted = 0
    for request in requests:
        msgs = from_langchain(request)
        assert_valid_history(msgs)
        compacted += any(m.synthetic for m in msgs)
    return compacted


def test_a_system_prompt_rebuilt_per_call_is_not_a_new_history() -> None:
    hook = pre_model_hook(_compactor())
    node = hook.kompakt  # the hook behind the runnable
    history: list[BaseMessage] = [HumanMessage("go", id="h")]
    indexes = []
    for step in range(12):
        call = {"name": "read_file", "args": {}, "id": f"c{step}", "type": "tool_call"}
        history += [
            AIMessage("", tool_calls=[call], id=f"a{step}"),
            ToolMessage(BIG, tool_call_id=f"c{step}", id=f"t{step}"),
        ]
        system = SystemMessage("You debug.")  # a new object every call, as dynamic prompts make
        out = hook.invoke({"messages": [system, *history]})["llm_input_messages"]
        assert out[0] is system
        indexes.append(node.core.conversations["first:h"].index)
    assert all(i is indexes[0] for i in indexes)  # indexed incrementally, never rebuilt
    assert node.events  # and compacted on the way
