"""LangChain adapter: broken message lists repaired (orphan ToolMessages, unanswered calls)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

pytest.importorskip("langchain")
pytest.importorskip("langgraph")

from framework_checks import assert_valid_history
from langchain.agents import create_agent
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    trim_messages,
)
from test_langchain import FINAL, ToolCallingFake, _compactor, read_file

from kompakt import Budgeted, Compactor, ConfigError, TokensExceed, find_problems
from kompakt.integrations.langchain import (
    KompaktMiddleware,
    from_langchain,
    pre_model_hook,
    repair_messages,
)
from kompakt.repair import MISSING_RESULT


def _broken() -> list[BaseMessage]:
    """A history as LangChain users meet it: a result whose call was trimmed away, and a
    call whose result never came (a crash between the two)."""
    call = {"name": "read_file", "args": {"path": "x.py"}, "id": "c9", "type": "tool_call"}
    return [
        HumanMessage("Look at x.py first.", id="h1"),
        ToolMessage("stale output", tool_call_id="trimmed-away", id="t0"),
        AIMessage("", tool_calls=[call], id="a1"),
        HumanMessage("Read f1..f12 and find the bug.", id="h2"),
    ]


def test_repair_messages_fixes_orphans_and_unanswered_calls() -> None:
    broken = _broken()
    assert find_problems(from_langchain(broken))  # what a provider would reject

    fixed, repairs = repair_messages(broken)

    assert find_problems(from_langchain(fixed)) == []
    assert [r.kind for r in repairs] == ["dropped_orphan_result", "added_missing_result"]
    assert [r.index for r in repairs] == [1, 2]
    assert "trimmed-away" in str(repairs[0]) and "'stale output'" in str(repairs[0])
    answer = fixed[2]
    assert isinstance(answer, ToolMessage) and answer.tool_call_id == "c9"
    assert answer.content == MISSING_RESULT
    # what needed no repair comes back as the very same objects, in order
    assert len(fixed) == 4
    assert fixed[0] is broken[0] and fixed[1] is broken[2] and fixed[3] is broken[3]


def test_repair_messages_leaves_a_valid_list_alone() -> None:
    model = ToolCallingFake(requests=[], turns=3)
    history = create_agent(model, [read_file]).invoke({"messages": [HumanMessage("go")]})
    msgs = history["messages"]
    fixed, repairs = repair_messages(msgs)
    assert repairs == [] and len(fixed) == len(msgs)
    assert all(a is b for a, b in zip(fixed, msgs, strict=True))


def test_repair_messages_fixes_what_trim_messages_returns() -> None:
    """`trim_messages` can start the window with a ToolMessage whose AIMessage it cut."""
    model = ToolCallingFake(requests=[])
    history = create_agent(model, [read_file]).invoke({"messages": [HumanMessage("Read.")]})
    trimmed = trim_messages(
        history["messages"][:-1], max_tokens=6, token_counter=len, strategy="last"
    )
    assert isinstance(trimmed[0], ToolMessage)

    fixed, repairs = repair_messages(trimmed)

    assert_valid_history(from_langchain(fixed))
    assert not isinstance(fixed[0], ToolMessage)
    assert repairs and repairs[0].kind == "dropped_orphan_result" and repairs[0].index == 0


@pytest.mark.parametrize("repair", [False, True])
def test_middleware_repairs_the_messages_it_sends(
    repair: bool, caplog: pytest.LogCaptureFixture
) -> None:
    model = ToolCallingFake(requests=[], turns=2)
    middleware = KompaktMiddleware(_compactor(), repair=repair)
    agent = create_agent(model, [read_file], middleware=[middleware])
    with caplog.at_level(logging.WARNING, logger="kompakt.integrations"):
        state: Any = {"messages": _broken()}
        result = agent.invoke(state)

    assert result["messages"][-1].content == FINAL
    first = from_langchain(model.requests[0])
    if not repair:  # without the option the model is sent what its provider rejects
        assert find_problems(first)
        assert middleware.repairs == []
        return
    for request in model.requests:
        assert find_problems(from_langchain(request)) == []
    assert [r.kind for r in middleware.repairs] == ["dropped_orphan_result", "added_missing_result"]
    assert "dropped_orphan_result" in caplog.text and "KompaktMiddleware" in caplog.text
    # view mode: the state keeps what it had (the originals are never destroyed)
    assert [m.id for m in result["messages"][:4]] == ["h1", "t0", "a1", "h2"]


def test_permanent_hook_stores_the_repaired_messages() -> None:
    hook = pre_model_hook(
        Compactor(trigger=TokensExceed(100_000), strategy=Budgeted(90_000)),
        mode="permanent",
        repair=True,
    )
    update: dict[str, Any] = hook.invoke({"messages": _broken()})

    remove_all, *stored = update["messages"]
    assert type(remove_all).__name__ == "RemoveMessage"
    assert find_problems(from_langchain(stored)) == []
    assert [type(m).__name__ for m in stored] == [
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "HumanMessage",
    ]
    assert [r.kind for r in hook.kompakt.core.repairs] == [
        "dropped_orphan_result",
        "added_missing_result",
    ]


def test_a_bad_mode_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"^`mode` must be 'view' or 'permanent', got 'viwe'$"):
        KompaktMiddleware(_compactor(), mode="viwe")
    with pytest.raises(ConfigError, match="`mode` must be 'view' or 'permanent'"):
        pre_model_hook(_compactor(), mode="permanant")  # type: ignore[arg-type]
