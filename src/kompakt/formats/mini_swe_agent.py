"""mini-swe-agent trajectories (``*.traj.json``).

``{"info": {...}, "messages": [...], "trajectory_format": "mini-swe-agent-1.1", ...}``
whose ``messages`` are OpenAI dicts with extra fields (``extra``,
``provider_specific_fields``, ``function_call: null``). The final
``{"role": "exit", ...}`` entry is not a chat message: it is kept as a *record* and
written back where it was, as is every other field of the document.

>>> doc = {"info": {"exit_status": "Submitted"}, "trajectory_format": "mini-swe-agent-1.1",
...        "messages": [{"role": "user", "content": "fix it"},
...                     {"role": "exit", "content": "done", "extra": {}}]}
>>> msgs, envelope, records = from_mini_swe_agent(doc)
>>> len(msgs), records
(1, [(1, {'role': 'exit', 'content': 'done', 'extra': {}})])
>>> to_mini_swe_agent(msgs, envelope=envelope, records=records) == doc
True
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kompakt.errors import FormatError, MessageError
from kompakt.formats.openai import OPENAI_ROLES, from_openai_indexed, to_openai
from kompakt.messages import Message

__all__ = ["from_mini_swe_agent", "insert_records", "to_mini_swe_agent"]

Records = list[tuple[int, Any]]


def from_mini_swe_agent(doc: Any) -> tuple[list[Message], dict[str, Any] | None, Records]:
    """Messages, the envelope (every other key; None for a bare list) and the records."""
    if isinstance(doc, Mapping):
        items = doc.get("messages")
        if not isinstance(items, list):
            raise FormatError("mini-swe-agent trajectory: 'messages' must be a list")
        envelope: dict[str, Any] | None = {k: v for k, v in doc.items() if k != "messages"}
    elif isinstance(doc, list):
        items, envelope = doc, None
    else:
        raise FormatError(f"mini-swe-agent input must be a document, got {type(doc).__name__}")
    chat: list[tuple[int, Any]] = []
    records: Records = []
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise MessageError(i, "message", "an object with a 'role'", item)
        if not isinstance(item.get("role"), str):
            raise MessageError(i, "role", "a string", item.get("role"))
        if item["role"] in OPENAI_ROLES:
            chat.append((i, item))
        else:
            records.append((len(chat), item))
    return from_openai_indexed(chat), envelope, records


def to_mini_swe_agent(
    messages: Iterable[Message],
    *,
    envelope: Mapping[str, Any] | None = None,
    records: Sequence[tuple[int, Any]] = (),
) -> Any:
    """The trajectory document (a bare list when `envelope` is None)."""
    items = insert_records(to_openai(messages), records)
    if envelope is None:
        return items
    return {**envelope, "messages": items}


def insert_records(items: list[Any], records: Sequence[tuple[int, Any]]) -> list[Any]:
    """`items` with each record put back before the chat message it preceded.

    A record whose position is past the end (the usual final ``exit``) goes last.
    """
    if not records:
        return items
    out: list[Any] = []
    pending = sorted(records, key=lambda r: r[0])
    k = 0
    for pos, item in enumerate(items):
        while k < len(pending) and pending[k][0] <= pos:
            out.append(pending[k][1])
            k += 1
        out.append(item)
    out.extend(r[1] for r in pending[k:])
    return out
