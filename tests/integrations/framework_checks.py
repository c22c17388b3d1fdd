"""Checks every framework test makes on what its model received."""

from __future__ import annotations

from collections.abc import Sequence

from kompakt.messages import Message
from kompakt.validation import find_problems

BIG = "line of tool output that the model read once and no longer needs\n" * 40
"""A tool result of ~2.6k characters: a few of them push a history over the budget."""


def assert_valid_history(messages: Sequence[Message]) -> None:
    """No orphan result, no answered call without its result, valid for OpenAI."""
    problems = find_problems(list(messages), format="openai")
    assert not problems, problems
    called: set[str] = set()
    for m in messages:
        called.update(c.id for c in m.tool_calls)
        if m.role == "tool":
            assert m.tool_call_id in called, f"orphan tool result {m.tool_call_id!r}"


def tool_result_count(messages: Sequence[Message]) -> int:
    return sum(1 for m in messages if m.role == "tool")
