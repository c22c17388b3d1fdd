"""Would a provider accept this conversation? `find_problems` says, rule by rule.

Rules (`Problem.rule`), each reported at the index of the message that breaks it:

* ``orphan_result``: a tool result whose call is nowhere in the conversation;
* ``result_before_call``: a tool result that comes before its call;
* ``result_not_adjacent``: a result not in the run of tool messages directly after its
  call (both providers reject it: OpenAI wants the results right after the call,
  Anthropic in the very next user message, before any text);
* ``duplicate_result``: a call answered twice;
* ``missing_result``: an assistant call with no result right after it. A *trailing*
  call (only tool results follow it) is pending, not broken;
* ``duplicate_call_id``: two tool calls with one id;
* ``empty_assistant``: an assistant message with no text, no parts and no calls;
* Anthropic only: ``first_not_user`` (the first non-system message must be a user
  message; a tool result there has no call before it) and ``system_not_first``
  (system/developer messages only before the first other message);
* Responses only: ``reasoning_orphaned`` (a ``reasoning`` item must be followed by the
  output item it led to: an assistant message whose last item is reasoning is rejected)
  and ``output_kind_mismatch`` (an output answers a call of another kind, such as a
  ``custom_tool_call_output`` for a ``function_call``);
* Gemini only: ``call_not_after_user`` (a model turn with function calls must follow a
  user turn or a function-response turn, never open the conversation) and
  ``result_name_mismatch`` (a ``functionResponse`` must name the function it answers).

``responses`` and ``gemini`` check the ``openai`` rules too: an output without its call
is an ``orphan_result`` there as well.

One pass over the messages plus one over the call ids: O(n).

>>> from kompakt.messages import Message, ToolCall
>>> msgs = [Message.user("hi"), Message.tool("a.py", tool_call_id="c9")]
>>> find_problems(msgs)
[Problem(1, 'orphan_result', "tool result answers call 'c9', which is not in the conversation")]
>>> validate([Message.assistant("hello")], format="anthropic")
Traceback (most recent call last):
...
kompakt.errors.InvalidConversation: invalid for anthropic: message 0: first_not_user: \
the first non-system message must be a user message, got assistant
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal, TypeAlias

from kompakt._deprecation import renamed_options
from kompakt.errors import ConfigError, InvalidConversation, Problem
from kompakt.messages import Message

__all__ = ["DIALECTS", "RULES", "Dialect", "find_problems", "validate"]

Dialect: TypeAlias = Literal["openai", "anthropic", "responses", "gemini"]

DIALECTS: tuple[str, ...] = ("openai", "anthropic", "responses", "gemini")
"""Every dialect `find_problems` checks (the format names of the providers)."""

RULES: tuple[str, ...] = (
    "orphan_result",
    "result_before_call",
    "result_not_adjacent",
    "duplicate_result",
    "missing_result",
    "duplicate_call_id",
    "empty_assistant",
    "first_not_user",
    "system_not_first",
    "reasoning_orphaned",
    "output_kind_mismatch",
    "call_not_after_user",
    "result_name_mismatch",
)
"""Every rule id `find_problems` can report."""

_RANK = {rule: n for n, rule in enumerate(RULES)}
_SYSTEM = ("system", "developer")


@renamed_options(positional=("dialect",), dialect="format")
def validate(messages: Iterable[Message] | Any, *, format: Dialect = "openai") -> None:
    """Raise `InvalidConversation` listing every problem for the provider `format`;
    return quietly when valid.

    `messages` is a message list or anything `kompakt.loads` parses.
    """
    problems = find_problems(messages, format=format)
    if problems:
        raise InvalidConversation(problems, format=format)


@renamed_options(positional=("dialect",), dialect="format")
def find_problems(
    messages: Iterable[Message] | Any, *, format: Dialect = "openai"
) -> list[Problem]:
    """Every rule the conversation breaks for the provider `format`.

    Ordered by message index, then by rule (in the order of `RULES`).
    """
    if format not in DIALECTS:
        raise ConfigError(f"`format` must be one of {', '.join(DIALECTS)}, got {format!r}")
    msgs = _messages(messages)
    problems = _call_problems(msgs)
    problems.extend(_order_problems(msgs, format))
    if format == "responses":
        problems.extend(_responses_problems(msgs))
    elif format == "gemini":
        problems.extend(_gemini_problems(msgs))
    problems.sort(key=lambda p: (p.index, _RANK[p.rule]))
    return problems


def _messages(messages: Iterable[Message] | Any) -> Sequence[Message]:
    if isinstance(messages, list | tuple) and all(isinstance(m, Message) for m in messages):
        return messages
    if not isinstance(messages, str | bytes | dict | list | tuple) and isinstance(
        messages, Iterable
    ):
        items = list(messages)
        if all(isinstance(m, Message) for m in items):
            return items
        messages = items
    from kompakt.formats import loads  # formats import validation lazily, not the reverse

    return loads(messages)


def _call_problems(msgs: Sequence[Message]) -> list[Problem]:
    problems: list[Problem] = []
    first_call: dict[str, int] = {}
    for i, m in enumerate(msgs):
        seen_here: set[str] = set()
        for c in m.tool_calls:
            if c.id in first_call or c.id in seen_here:
                problems.append(
                    Problem(i, "duplicate_call_id", f"tool call id {c.id!r} is used twice")
                )
            seen_here.add(c.id)
            first_call.setdefault(c.id, i)
    last_open = max((i for i, m in enumerate(msgs) if m.role != "tool"), default=-1)
    seen: dict[str, int] = {}  # call id -> position of its newest call so far
    answered: set[tuple[int, str]] = set()
    owner = -1  # the assistant message whose results run we are in
    for i, m in enumerate(msgs):
        if m.role != "tool":
            if owner >= 0:
                problems.extend(_missing(msgs[owner], owner, answered, owner == last_open))
            owner = i if m.tool_calls else -1
            for c in m.tool_calls:
                seen[c.id] = i
            continue
        problem = _result_problem(m, i, seen, first_call, owner, answered)
        if problem is not None:
            problems.append(problem)
    if owner >= 0:
        problems.extend(_missing(msgs[owner], owner, answered, owner == last_open))
    return problems


def _result_problem(
    m: Message,
    i: int,
    seen: dict[str, int],
    first_call: dict[str, int],
    owner: int,
    answered: set[tuple[int, str]],
) -> Problem | None:
    cid = m.tool_call_id
    if cid is None:
        return Problem(i, "orphan_result", "tool result without a tool_call_id")
    if cid not in first_call:
        return Problem(
            i,
            "orphan_result",
            f"tool result answers call {cid!r}, which is not in the conversation",
        )
    pos = seen.get(cid)
    if pos is None:
        return Problem(
            i, "result_before_call", f"result for {cid!r} comes before its call (message "
            f"{first_call[cid]})"
        )  # fmt: skip
    if pos != owner:
        return Problem(
            i, "result_not_adjacent", f"result for {cid!r} is not directly after its call "
            f"(message {pos})"
        )  # fmt: skip
    if (pos, cid) in answered:
        return Problem(i, "duplicate_result", f"call {cid!r} already has a result")
    answered.add((pos, cid))
    return None


def _missing(m: Message, pos: int, answered: set[tuple[int, str]], pending: bool) -> list[Problem]:
    if pending:
        return []
    missing = [c.id for c in m.tool_calls if (pos, c.id) not in answered]
    if not missing:
        return []
    ids = ", ".join(repr(c) for c in missing)
    return [Problem(pos, "missing_result", f"call {ids} has no result directly after it")]


def _order_problems(msgs: Sequence[Message], dialect: str) -> list[Problem]:
    problems: list[Problem] = []
    first_other = -1
    for i, m in enumerate(msgs):
        if m.role == "assistant" and not m.tool_calls and _empty(m):
            problems.append(Problem(i, "empty_assistant", "assistant message with no content"))
        if dialect != "anthropic":
            continue
        if m.role in _SYSTEM:
            if first_other >= 0:
                problems.append(
                    Problem(i, "system_not_first", f"{m.role} message after message {first_other}")
                )
        elif first_other < 0:
            first_other = i
            if m.role != "user":
                problems.append(
                    Problem(
                        i,
                        "first_not_user",
                        f"the first non-system message must be a user message, got {m.role}",
                    )
                )
    return problems


def _empty(m: Message) -> bool:
    return all(p.kind == "text" and not p.text for p in m.content)


def _responses_problems(msgs: Sequence[Message]) -> list[Problem]:
    from kompakt.formats.responses import answer_kind, call_kind, last_item_type, output_kind

    problems: list[Problem] = []
    kinds: dict[str, str] = {}
    for i, m in enumerate(msgs):
        if m.role == "assistant":
            kinds.update((c.id, call_kind(c)) for c in m.tool_calls)
            if last_item_type(m) == "reasoning":
                problems.append(
                    Problem(
                        i, "reasoning_orphaned", "a reasoning item is not followed by its output"
                    )
                )
        elif m.role == "tool":
            called = kinds.get(m.tool_call_id or "")
            kind = output_kind(m)
            if called is not None and kind is not None and kind != answer_kind(called):
                problems.append(
                    Problem(i, "output_kind_mismatch", f"a {kind} answers a {called} item")
                )
    return problems


def _gemini_problems(msgs: Sequence[Message]) -> list[Problem]:
    problems: list[Problem] = []
    opening = True  # no user or function-response turn yet
    names: dict[str, str] = {}
    for i, m in enumerate(msgs):
        if m.role in _SYSTEM:
            continue
        if m.role == "assistant":
            if opening and m.tool_calls:
                problems.append(
                    Problem(
                        i,
                        "call_not_after_user",
                        "a function call turn must follow a user or function response turn",
                    )
                )
            names.update((c.id, c.name) for c in m.tool_calls)
            continue
        opening = False
        called = names.get(m.tool_call_id or "")
        if m.role == "tool" and m.name is not None and called is not None and m.name != called:
            problems.append(
                Problem(
                    i,
                    "result_name_mismatch",
                    f"response names {m.name!r}, its call {m.tool_call_id!r} is {called!r}",
                )
            )
    return problems
