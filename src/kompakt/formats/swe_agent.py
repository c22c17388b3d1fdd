"""SWE-agent trajectories (``*.traj``).

``{"history": [...], "trajectory": [...], "info": {...}, "environment": ..., ...}``.
``history`` entries are OpenAI-like messages with ``agent``, ``message_type``,
``thought`` and ``action`` fields (kept verbatim). Tool results name their call in a
``tool_call_ids`` list. In some files ``tool_calls`` / ``tool_call_ids`` are stored as
Python-repr strings, not JSON: they are parsed with `ast.literal_eval`, and what cannot
be parsed is rejected with a `MessageError` naming the entry and the field.

>>> doc = {"history": [
...     {"role": "assistant", "content": "look", "action": "ls", "agent": "main",
...      "tool_calls": "[{'id': 'c1', 'type': 'function', "
...                    "'function': {'name': 'bash', 'arguments': '{}'}}]"},
...     {"role": "tool", "content": "a.py", "agent": "main", "tool_call_ids": ['c1']}]}
>>> msgs, envelope = from_swe_agent(doc)
>>> msgs[0].tool_calls[0].name, msgs[1].tool_call_id
('bash', 'c1')
>>> to_swe_agent(msgs, envelope=envelope) == doc
True
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from typing import Any

from kompakt.errors import FormatError, MessageError
from kompakt.formats._hints import hints, with_hints
from kompakt.formats.openai import from_openai_indexed, message_to_openai
from kompakt.messages import Message

__all__ = ["from_swe_agent", "message_to_swe_agent", "to_swe_agent"]

_FMT = "swe-agent"


def from_swe_agent(doc: Any) -> tuple[list[Message], dict[str, Any] | None]:
    """Messages and the envelope (every key but ``history``; None for a bare list)."""
    if isinstance(doc, Mapping):
        items = doc.get("history")
        if not isinstance(items, list):
            raise FormatError("SWE-agent trajectory: 'history' must be a list of messages")
        envelope: dict[str, Any] | None = {k: v for k, v in doc.items() if k != "history"}
    elif isinstance(doc, list):
        items, envelope = doc, None
    else:
        raise FormatError(f"SWE-agent input must be a document, got {type(doc).__name__}")
    normalised = [_normalise(item, i) for i, item in enumerate(items)]
    msgs = from_openai_indexed((i, d) for i, (d, _) in enumerate(normalised))
    msgs = [
        m.evolve(extra=with_hints(dict(m.extra), _FMT, **h)) if h else m
        for m, (_, h) in zip(msgs, normalised, strict=True)
    ]
    return _pin_task(msgs), envelope


def _pin_task(msgs: list[Message]) -> list[Message]:
    """Pin the task when observations come back as user messages (SWE-agent's text mode).

    There the task (the first user message) is not the last user message, which every
    strategy keeps anyway; pinned, it is never truncated or dropped (the peers' "original
    request truncated away"). `pinned` is not written back: the document round-trips.
    """
    users = [i for i, m in enumerate(msgs) if m.role == "user"]
    if len(users) > 1:
        msgs[users[0]] = msgs[users[0]].evolve(pinned=True)
    return msgs


def _normalise(item: Any, i: int) -> tuple[Any, dict[str, Any]]:
    """The entry as an OpenAI dict, and hints to write it back as it was."""
    if not isinstance(item, Mapping):
        return item, {}
    d = dict(item)
    h: dict[str, Any] = {}
    if isinstance(d.get("tool_calls"), str):
        h["tool_calls_repr"] = d["tool_calls"]
        d["tool_calls"] = _literal(d["tool_calls"], i, "tool_calls", "a list of tool calls")
    ids = d.get("tool_call_ids")
    if isinstance(ids, str):
        ids = _literal(ids, i, "tool_call_ids", "a list of call ids")
    if d.get("role") == "tool" and "tool_call_id" not in d:
        if not isinstance(ids, list) or not ids or not isinstance(ids[0], str):
            expected = "a list holding the id of the call this result answers"
            raise MessageError(i, "tool_call_ids", expected, d.get("tool_call_ids"))
        d["tool_call_id"] = ids[0]
        h["derived_id"] = True
    return d, h


def _literal(text: str, i: int, field: str, expected: str) -> list[Any]:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise MessageError(i, field, f"{expected} (JSON or a Python repr)", text) from None
    if not isinstance(value, list):
        raise MessageError(i, field, f"{expected} (JSON or a Python repr)", text)
    return value


def to_swe_agent(messages: Iterable[Message], *, envelope: Mapping[str, Any] | None = None) -> Any:
    """The trajectory document (a bare history list when `envelope` is None)."""
    history = [message_to_swe_agent(m) for m in messages]
    return history if envelope is None else {**envelope, "history": history}


def message_to_swe_agent(m: Message) -> dict[str, Any]:
    """One history entry: an OpenAI dict plus SWE-agent's own spelling of calls and ids."""
    d = message_to_openai(m)
    h = hints(m.extra, _FMT)
    spelled = h.get("tool_calls_repr")
    if isinstance(spelled, str) and isinstance(d.get("tool_calls"), list):
        same = _safe_literal(spelled) == d["tool_calls"]
        d["tool_calls"] = spelled if same else repr(d["tool_calls"])
    if m.role == "tool" and m.tool_call_id is not None:
        ids = d.get("tool_call_ids")
        parsed = _safe_literal(ids) if isinstance(ids, str) else ids
        if not (isinstance(parsed, list) and parsed and parsed[0] == m.tool_call_id):
            d["tool_call_ids"] = [m.tool_call_id]
        if h.get("derived_id") or "tool_call_ids" not in m.extra:
            d.pop("tool_call_id", None)
    return d


def _safe_literal(text: str) -> Any:
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
