"""Lossless message <-> JSON for the stores, and the text the full-text index sees."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kompakt.errors import InputError
from kompakt.messages import Message

__all__ = ["decode", "encode", "search_text", "to_messages"]


def _to_dict(m: Message) -> dict[str, Any]:
    try:
        from kompakt.formats import message_to_dict
    except ImportError:  # formats not installed in this tree yet
        return _native_to_dict(m)
    return dict(message_to_dict(m))


def _from_dict(d: Mapping[str, Any]) -> Message:
    try:
        from kompakt.formats import message_from_dict
    except ImportError:
        return _native_from_dict(d)
    return message_from_dict(dict(d))


def encode(m: Message) -> str:
    """The message as JSON text, every field kept."""
    text = json.dumps(_to_dict(m), ensure_ascii=False, default=str)
    if _utf8(text):
        return text
    # a lone surrogate (from a "\\ud800" JSON escape) cannot be stored as UTF-8: escape it
    return json.dumps(_to_dict(m), ensure_ascii=True, default=str)


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def decode(text: str) -> Message:
    """The message `encode` wrote."""
    return _from_dict(json.loads(text))


def search_text(m: Message) -> str:
    """What full-text search indexes: text parts, tool names and raw arguments."""
    parts = [p.text for p in m.content if p.text]
    for c in m.tool_calls:
        parts.append(f"{c.name} {c.arguments}")
    if m.name:
        parts.append(m.name)
    return utf8_safe("\n".join(parts))


def utf8_safe(text: str) -> str:
    """`text` with each lone surrogate (which UTF-8 cannot encode) as ``?``: what search
    indexes, and so what a query must say to find it."""
    return text if _utf8(text) else text.encode("utf-8", "replace").decode("utf-8")


def to_messages(items: Iterable[Message | Mapping[str, Any]]) -> list[Message]:
    """Messages from Message objects and/or dicts in any format `kompakt.loads` parses."""
    out: list[Message] = []
    pending: list[Mapping[str, Any]] = []
    for item in items:
        if isinstance(item, Message):
            out.extend(_load(pending))
            pending = []
            out.append(item)
        elif isinstance(item, Mapping):
            pending.append(item)
        else:
            raise InputError(
                f"append() takes Message objects or dicts, got {type(item).__name__}: {item!r:.60}"
            )
    out.extend(_load(pending))
    return out


def _load(dicts: Sequence[Mapping[str, Any]]) -> list[Message]:
    if not dicts:
        return []
    try:
        from kompakt.formats import loads
    except ImportError:
        return [_native_from_dict(d) for d in dicts]
    return list(loads([dict(d) for d in dicts]))


# -- the native form (used until kompakt.formats provides message_to_dict) -------------


def _native_to_dict(m: Message) -> dict[str, Any]:
    d: dict[str, Any] = {"role": m.role, "id": m.id}
    d["content"] = [
        {"kind": p.kind, "text": p.text, **({"data": dict(p.data)} if p.data else {})}
        for p in m.content
    ]
    if m.tool_calls:
        d["tool_calls"] = [
            {"id": c.id, "name": c.name, "arguments": c.arguments, "extra": dict(c.extra)}
            for c in m.tool_calls
        ]
    for key in ("tool_call_id", "name", "synthetic"):
        if getattr(m, key) is not None:
            d[key] = getattr(m, key)
    for key in ("pinned", "memory"):
        if getattr(m, key):
            d[key] = True
    if m.covers:
        d["covers"] = list(m.covers)
    if m.extra:
        d["extra"] = dict(m.extra)
    if m.metadata:
        d["metadata"] = dict(m.metadata)
    return d


def _native_from_dict(d: Mapping[str, Any]) -> Message:
    from kompakt.messages import Part, ToolCall

    content = d.get("content", ())
    if isinstance(content, str):
        parts: tuple[Part, ...] = (Part(text=content),) if content else ()
    else:
        parts = tuple(
            Part(kind=p.get("kind", "text"), text=p.get("text", ""), data=p.get("data", {}))
            for p in content
        )
    calls = tuple(
        ToolCall(
            id=c["id"], name=c["name"], arguments=c.get("arguments", "{}"), extra=c.get("extra", {})
        )
        for c in d.get("tool_calls", ())
    )
    return Message(
        role=d["role"],
        content=parts,
        tool_calls=calls,
        tool_call_id=d.get("tool_call_id"),
        name=d.get("name"),
        id=d.get("id", ""),
        pinned=bool(d.get("pinned", False)),
        memory=bool(d.get("memory", False)),
        synthetic=d.get("synthetic"),
        covers=tuple(d.get("covers", ())),
        extra=d.get("extra", {}),
        metadata=d.get("metadata", {}),
    )
