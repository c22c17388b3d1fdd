"""kompakt's own lossless message dicts: every `Message` field, JSON-ready.

Stores and the JSONL annotations use this shape. Default values are left out, so
a plain message stays small; `message_from_dict(message_to_dict(m)) == m` always.

>>> from kompakt.messages import Message
>>> d = message_to_dict(Message.user("hi", pinned=True))
>>> d["role"], d["content"], d["pinned"]
('user', [{'kind': 'text', 'text': 'hi'}], True)
>>> message_from_dict(d) == Message.user("hi", pinned=True)
True
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kompakt.errors import MessageError
from kompakt.messages import ROLES, Message, Part, ToolCall

__all__ = [
    "ANNOTATION_FIELDS",
    "annotation_kwargs",
    "derived_id",
    "kompakt_fields",
    "message_from_dict",
    "message_to_dict",
]

ANNOTATION_FIELDS = ("id", "pinned", "memory", "synthetic", "covers", "metadata")
"""kompakt-only fields (no provider format has them)."""

_PART_KINDS = frozenset({"text", "image", "audio", "file", "other"})
_SYNTHETIC = frozenset(
    {"summary", "collapsed", "clamped", "superseded", "omitted", "facts", "rehydrated"}
)


def derived_id(message: Message) -> str:
    """The id a message gets when none is given (see `Message.id`)."""
    return "m_" + message.digest[:16]


def message_to_dict(message: Message) -> dict[str, Any]:
    """Every field of `message` as JSON-ready data (defaults left out)."""
    m = message
    d: dict[str, Any] = {"id": m.id, "role": m.role}
    if m.content:
        d["content"] = [_part_to_dict(p) for p in m.content]
    if m.tool_calls:
        d["tool_calls"] = [_call_to_dict(c) for c in m.tool_calls]
    if m.tool_call_id is not None:
        d["tool_call_id"] = m.tool_call_id
    if m.name is not None:
        d["name"] = m.name
    d.update(kompakt_fields(m, with_id=False))
    if m.extra:
        d["extra"] = dict(m.extra)
    return d


def kompakt_fields(message: Message, *, with_id: bool) -> dict[str, Any]:
    """The kompakt-only fields that differ from their defaults (`id` when asked)."""
    m = message
    d: dict[str, Any] = {}
    if with_id:
        d["id"] = m.id
    if m.pinned:
        d["pinned"] = True
    if m.memory:
        d["memory"] = True
    if m.synthetic is not None:
        d["synthetic"] = m.synthetic
    if m.covers:
        d["covers"] = list(m.covers)
    if m.metadata:
        d["metadata"] = dict(m.metadata)
    return d


def message_from_dict(data: Any, index: int = 0) -> Message:
    """A `Message` from `message_to_dict` output; `index` names it in errors.

    >>> message_from_dict({"role": "robot"})
    Traceback (most recent call last):
    ...
    kompakt.errors.MessageError: message 0: field 'role': expected one of \
assistant, developer, system, tool, user, got 'robot'
    """
    d = _mapping(data, index, "message")
    role = d.get("role")
    if isinstance(role, (list, dict)) or role not in ROLES:  # a list or dict would not hash
        raise MessageError(index, "role", "one of " + ", ".join(sorted(ROLES)), role)
    content = tuple(
        _part_from_dict(p, index, f"content[{i}]")
        for i, p in enumerate(_list(d.get("content", []), index, "content"))
    )
    calls = tuple(
        _call_from_dict(c, index, f"tool_calls[{i}]")
        for i, c in enumerate(_list(d.get("tool_calls", []), index, "tool_calls"))
    )
    return Message(
        role=role,
        content=content,
        tool_calls=calls,
        tool_call_id=_opt_str(d, "tool_call_id", index),
        name=_opt_str(d, "name", index),
        extra=dict(_mapping(d.get("extra", {}), index, "extra")),
        **annotation_kwargs(d, index),
    )


def annotation_kwargs(d: Mapping[str, Any], index: int, prefix: str = "") -> dict[str, Any]:
    """`Message` keyword arguments for the kompakt-only fields found in `d`."""
    kw: dict[str, Any] = {}
    if "id" in d:
        kw["id"] = _str(d["id"], index, prefix + "id")
    for flag in ("pinned", "memory"):
        if flag in d:
            if not isinstance(d[flag], bool):
                raise MessageError(index, prefix + flag, "true or false", d[flag])
            kw[flag] = d[flag]
    if d.get("synthetic") is not None:
        if not isinstance(d["synthetic"], str) or d["synthetic"] not in _SYNTHETIC:
            expected = "one of " + ", ".join(sorted(_SYNTHETIC))
            raise MessageError(index, prefix + "synthetic", expected, d["synthetic"])
        kw["synthetic"] = d["synthetic"]
    if "covers" in d:
        covers = _list(d["covers"], index, prefix + "covers")
        kw["covers"] = tuple(_str(c, index, f"{prefix}covers[{i}]") for i, c in enumerate(covers))
    if "metadata" in d:
        kw["metadata"] = dict(_mapping(d["metadata"], index, prefix + "metadata"))
    return kw


def _part_to_dict(p: Part) -> dict[str, Any]:
    d: dict[str, Any] = {"kind": p.kind}
    if p.text:
        d["text"] = p.text
    if p.data:
        d["data"] = dict(p.data)
    return d


def _part_from_dict(data: Any, index: int, field: str) -> Part:
    d = _mapping(data, index, field)
    kind = d.get("kind", "text")
    if isinstance(kind, (list, dict)) or kind not in _PART_KINDS:  # would not hash
        raise MessageError(index, field + ".kind", "one of " + ", ".join(sorted(_PART_KINDS)), kind)
    text = _str(d.get("text", ""), index, field + ".text")
    return Part(
        kind=kind, text=text, data=dict(_mapping(d.get("data", {}), index, field + ".data"))
    )


def _call_to_dict(c: ToolCall) -> dict[str, Any]:
    d: dict[str, Any] = {"id": c.id, "name": c.name, "arguments": c.arguments}
    if c.extra:
        d["extra"] = dict(c.extra)
    return d


def _call_from_dict(data: Any, index: int, field: str) -> ToolCall:
    d = _mapping(data, index, field)
    return ToolCall(
        id=_str(d.get("id"), index, field + ".id"),
        name=_str(d.get("name"), index, field + ".name"),
        arguments=_str(d.get("arguments", "{}"), index, field + ".arguments"),
        extra=dict(_mapping(d.get("extra", {}), index, field + ".extra")),
    )


def _mapping(value: Any, index: int, field: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise MessageError(index, field, "an object", value)
    return value


def _list(value: Any, index: int, field: str) -> list[Any]:
    if not isinstance(value, list | tuple):
        raise MessageError(index, field, "a list", value)
    return list(value)


def _str(value: Any, index: int, field: str) -> str:
    if not isinstance(value, str):
        raise MessageError(index, field, "a string", value)
    return value


def _opt_str(d: Mapping[str, Any], key: str, index: int) -> str | None:
    value = d.get(key)
    return None if value is None else _str(value, index, key)
