"""Hypothesis strategies for random *valid* conversations (reused across the test suite).

`conversations()` draws a `list[Message]` that every provider would accept
(`kompakt.validation.find_problems(msgs, format="openai") == []` and the same for
"anthropic"):

* 0..`max_systems` system (or developer) messages first;
* `min_turns`..`max_turns` turns, each a user message (plain text, or a content-part
  list with an image part when `images`), then 0..`max_tool_groups` tool-call groups
  (an assistant message with optional text and 1..`max_parallel` parallel calls,
  followed by all of their results in a random order), then an assistant text reply;
* the last turn may instead end with a *pending* call: an assistant message whose
  calls are followed by only some (maybe none) of their results (`pending`: None =
  sometimes, True = always, False = never);
* some messages pinned (`pinned`), some tool outputs huge (`huge_outputs`: a few
  thousand to `huge_size` characters), some text CJK or Cyrillic.

Call ids are unique within a conversation (``call_<n>``); message ids are derived
from content, so identical messages share an id (`MessageIndex` makes them unique).

>>> from hypothesis import given
>>> @given(conversations(max_turns=3))
... def test_something(msgs): ...
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

from kompakt.messages import Message, Part, Role, ToolCall

__all__ = ["IMAGE_PART", "conversations", "texts"]

IMAGE_PART = Part(
    kind="image",
    data={"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
)
"""The image part user messages carry when `images` is on."""

_WORDS = [
    "file", "test", "error", "def", "return", "import", "日本語", "テスト", "привет",
    "pytest", "self", "None", "{", "}", "(", ")", "\n", "  ", "42", "é",
]  # fmt: skip
_TOOLS = ["bash", "read_file", "edit", "search", "ls"]


def texts(min_words: int = 1, max_words: int = 12) -> st.SearchStrategy[str]:
    """Short texts built from a mixed-script word list (fast to draw, never empty)."""
    return st.lists(st.sampled_from(_WORDS), min_size=min_words, max_size=max_words).map(
        lambda ws: " ".join(ws).strip() or "x"
    )


@st.composite
def conversations(
    draw: st.DrawFn,
    *,
    min_turns: int = 1,
    max_turns: int = 5,
    max_systems: int = 3,
    max_tool_groups: int = 3,
    max_parallel: int = 4,
    pending: bool | None = None,
    pinned: bool = True,
    images: bool = True,
    huge_outputs: bool = True,
    huge_size: int = 20_000,
) -> list[Message]:
    """A random valid conversation (see the module docstring for the parameters)."""
    msgs: list[Message] = []
    for _ in range(draw(st.integers(0, max_systems))):
        role: Role = draw(st.sampled_from(["system", "system", "developer"]))
        msgs.append(Message(role=role, content=(Part(text=draw(texts())),)))
    calls = iter(range(1_000_000))
    n_turns = draw(st.integers(min_turns, max_turns))
    end_pending = pending if pending is not None else draw(st.booleans())
    for turn in range(n_turns):
        msgs.append(_user(draw, images, pinned))
        for _ in range(draw(st.integers(0, max_tool_groups))):
            msgs.extend(_tool_group(draw, calls, max_parallel, huge_outputs, huge_size))
        last = turn == n_turns - 1
        if last and end_pending:
            msgs.extend(_pending_group(draw, calls, max_parallel))
        else:
            msgs.append(Message.assistant(draw(texts()), pinned=pinned and draw(_rarely())))
    return msgs


def _rarely() -> st.SearchStrategy[bool]:
    return st.integers(0, 9).map(lambda n: n == 0)


def _user(draw: st.DrawFn, images: bool, pinned: bool) -> Message:
    text = draw(texts())
    pin = pinned and draw(_rarely())
    if images and draw(_rarely()):
        parts = (Part(text=text, data={"type": "text", "text": text}), IMAGE_PART)
        return Message(role="user", content=parts, pinned=pin)
    return Message.user(text, pinned=pin)


def _calls(draw: st.DrawFn, ids: Any, max_parallel: int) -> list[ToolCall]:
    out = []
    for _ in range(draw(st.integers(1, max_parallel))):
        name = draw(st.sampled_from(_TOOLS))
        args = json.dumps({"arg": draw(texts(1, 4))}, ensure_ascii=False)
        out.append(ToolCall(id=f"call_{next(ids)}", name=name, arguments=args))
    return out


def _assistant_with(draw: st.DrawFn, calls: list[ToolCall]) -> Message:
    text = draw(st.one_of(st.just(""), texts()))
    return Message.assistant(text, tool_calls=calls)


def _result(draw: st.DrawFn, call: ToolCall, huge: bool, huge_size: int) -> Message:
    if huge and draw(_rarely()):
        size = draw(st.integers(2_000, huge_size))
        text = ("line of output " * (size // 15 + 1))[:size]
    else:
        text = draw(texts(0, 20))
    return Message.tool(text, tool_call_id=call.id)


def _tool_group(
    draw: st.DrawFn, ids: Any, max_parallel: int, huge: bool, huge_size: int
) -> list[Message]:
    calls = _calls(draw, ids, max_parallel)
    order = draw(st.permutations(calls))
    return [_assistant_with(draw, calls), *(_result(draw, c, huge, huge_size) for c in order)]


def _pending_group(draw: st.DrawFn, ids: Any, max_parallel: int) -> list[Message]:
    calls = _calls(draw, ids, max_parallel)
    answered = draw(st.integers(0, len(calls) - 1))
    return [_assistant_with(draw, calls), *(_result(draw, c, False, 0) for c in calls[:answered])]
