"""Anthropic Messages documents <-> `Message`.

A document is ``{"system": str | blocks, "messages": [...], ...request keys}`` or a
bare message list. ``tool_use`` blocks become `ToolCall`s (arguments =
``json.dumps(input)``); each ``tool_result`` block inside a user message becomes a
role ``tool`` message (a user message mixing results and text is split, and merged
back on rendering); ``thinking``, ``redacted_thinking``, server-tool blocks
(``server_tool_use``, ``web_search_tool_result`` and every ``*_tool_result``), a
``compaction`` block, image and document blocks are kept as parts with the block
verbatim (``cache_control`` included), so they stay with their assistant turn and the
``tool_use`` they came with.

Rendering any messages for Anthropic: system (and developer) messages go to
``system``, consecutive tool results and user messages merge into one user message,
consecutive assistant messages merge, a tool result's ``is_error`` is kept.

>>> doc = {"system": "be brief", "messages": [
...     {"role": "user", "content": "list files"},
...     {"role": "assistant", "content": [
...         {"type": "tool_use", "id": "t1", "name": "ls", "input": {"path": "."}}]},
...     {"role": "user", "content": [
...         {"type": "tool_result", "tool_use_id": "t1", "content": "a.py"}]}]}
>>> msgs = from_anthropic(doc)
>>> [m.role for m in msgs]
['system', 'user', 'assistant', 'tool']
>>> msgs[2].tool_calls[0].arguments
'{"path": "."}'
>>> to_anthropic(msgs) == doc
True
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kompakt.errors import FormatError, MessageError
from kompakt.formats._hints import hints, public, with_hints
from kompakt.formats.responses import COMPACTION, OPAQUE_ITEMS
from kompakt.formats.usage import reply_tokens, with_tokens
from kompakt.messages import Message, Part, PartKind, ToolCall

__all__ = ["from_anthropic", "is_anthropic_block", "to_anthropic", "to_anthropic_messages"]

_FMT = "anthropic"
_PART_KIND: dict[str, PartKind] = {"text": "text", "image": "image", "document": "file"}
_MARKERS = frozenset(
    {
        "tool_use", "tool_result", "thinking", "redacted_thinking", "image", "document",
        "server_tool_use", "web_search_tool_result", "compaction",
    }
)  # fmt: skip
_PROVIDER_BLOCKS = frozenset(
    {
        "text", "image", "document", "thinking", "redacted_thinking", "search_result",
        "server_tool_use", "tool_use", "tool_result", "mcp_tool_use", "container_upload",
        "compaction",
    }
)  # fmt: skip
"""Blocks sent back verbatim (with every ``*_tool_result`` of a server tool)."""
_RESULT_KEYS = ("is_error", "cache_control")
_TEXT_KEY = {"thinking": "thinking", "compaction": "content"}
"""Where a non-text block keeps the text it costs (a compaction block: its summary)."""


def is_anthropic_block(block: Any) -> bool:
    """True for a content block only Anthropic writes (used by format detection)."""
    if not isinstance(block, Mapping):
        return False
    kind = block.get("type")
    if not isinstance(kind, str):  # a list or dict would not even hash
        return False
    return (kind in _MARKERS or kind.endswith("_tool_result")) and (
        kind != "image" or "source" in block
    )


# -- loading ----------------------------------------------------------------------------


def from_anthropic(doc: Any) -> list[Message]:
    """Messages from an Anthropic request document or a bare message list."""
    if isinstance(doc, Mapping):
        items = doc.get("messages")
        if not isinstance(items, list):
            raise FormatError("Anthropic document: 'messages' must be a list of messages")
        out = _system(doc.get("system"))
    elif isinstance(doc, list):
        items, out = doc, []
    else:
        raise FormatError(f"Anthropic input must be a document or a list, got {type(doc).__name__}")
    prev_side: str | None = None
    for i, item in enumerate(items):
        pieces = _message(item, i)
        side = "assistant" if pieces and pieces[0].role == "assistant" else "user"
        if pieces and prev_side == side:  # two source messages in a row on one side
            first = pieces[0]
            pieces[0] = first.evolve(extra=with_hints(dict(first.extra), _FMT, new=True))
        prev_side = side
        out.extend(pieces)
    return out


def _system(value: Any) -> list[Message]:
    if value is None:
        return []
    if isinstance(value, str):
        return [Message.system(value)]
    if isinstance(value, list):
        try:
            parts = tuple(_part(b, 0, f"system[{j}]") for j, b in enumerate(value))
        except MessageError as exc:  # not a message: name the document field instead
            raise FormatError(f"Anthropic document: {str(exc).split(': ', 1)[1]}") from None
        return [Message(role="system", content=parts)] if parts else []
    raise FormatError(f"Anthropic document: 'system' must be a string or blocks, got {value!r}")


def _message(item: Any, i: int) -> list[Message]:
    if not isinstance(item, Mapping):
        raise MessageError(i, "message", "an object with 'role' and 'content'", item)
    role = item.get("role")
    if role not in ("user", "assistant"):
        raise MessageError(i, "role", "'user' or 'assistant'", role)
    extra = {k: v for k, v in item.items() if k not in ("role", "content")}
    content = item.get("content")
    if isinstance(content, str):
        parts = (Part(text=content),) if content else ()
        return [Message(role=role, content=parts, extra=extra)]
    if not isinstance(content, list):
        raise MessageError(i, "content", "a string or a list of content blocks", content)
    if not content:
        return [Message(role=role, extra=with_hints(extra, _FMT, content="list"))]
    if role == "assistant":
        return [_assistant(content, i, extra)]
    return _user(content, i, extra)


def _assistant(blocks: list[Any], i: int, extra: dict[str, Any]) -> Message:
    parts: list[Part] = []
    calls: list[ToolCall] = []
    layout = ""
    for j, block in enumerate(blocks):
        if isinstance(block, Mapping) and block.get("type") == "tool_use":
            calls.append(_call(block, i, f"content[{j}]"))
            layout += "c"
        else:
            parts.append(_part(block, i, f"content[{j}]"))
            layout += "p"
    default = "p" * len(parts) + "c" * len(calls)
    with_hints(extra, _FMT, layout=None if layout == default else layout)
    m = Message(role="assistant", content=tuple(parts), tool_calls=tuple(calls), extra=extra)
    if "usage" in extra and any(p.data.get("type") == COMPACTION for p in parts):
        m = with_tokens(m, reply_tokens(extra["usage"]))  # a stored reply that compacted
    return m


def _user(blocks: list[Any], i: int, extra: dict[str, Any]) -> list[Message]:
    out: list[Message] = []
    parts: list[Part] = []
    for j, block in enumerate(blocks):
        if isinstance(block, Mapping) and block.get("type") == "tool_result":
            if parts:
                out.append(Message(role="user", content=tuple(parts)))
                parts = []
            out.append(_result(block, i, f"content[{j}]"))
        else:
            parts.append(_part(block, i, f"content[{j}]"))
    if parts:
        out.append(Message(role="user", content=tuple(parts)))
    if extra:  # message-level keys; a tool result's own extra is its block's keys
        first = out[0]
        new = with_hints(dict(first.extra), _FMT, message_extra=extra)
        out[0] = first.evolve(extra=new if first.role == "tool" else {**first.extra, **extra})
    return out


def _result(block: Mapping[str, Any], i: int, field: str) -> Message:
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str):
        raise MessageError(i, field + ".tool_use_id", "a string", call_id)
    extra = {k: v for k, v in block.items() if k not in ("type", "tool_use_id", "content")}
    content = block.get("content", _MISSING)
    parts: tuple[Part, ...] = ()
    if content is _MISSING:
        with_hints(extra, _FMT, content="absent")
    elif isinstance(content, str):
        parts = (Part(text=content),) if content else ()
    elif isinstance(content, list):
        parts = tuple(_part(b, i, f"{field}.content[{k}]") for k, b in enumerate(content))
        if not parts:
            with_hints(extra, _FMT, content="list")
    else:
        raise MessageError(i, field + ".content", "a string or a list of blocks", content)
    return Message(role="tool", content=parts, tool_call_id=call_id, extra=extra)


_MISSING = object()


def _part(block: Any, i: int, field: str) -> Part:
    if not isinstance(block, Mapping):
        raise MessageError(i, field, "a content block object with a 'type'", block)
    kind = block.get("type")
    if not isinstance(kind, str):
        raise MessageError(i, field + ".type", "a string", kind)
    if kind == "text":
        text = block.get("text")
        if not isinstance(text, str):
            raise MessageError(i, field + ".text", "a string", text)
        return Part(text=text, data=dict(block))
    text = block.get(_TEXT_KEY.get(kind, "text"))
    return Part(
        kind=_PART_KIND.get(kind, "other"),
        text=text if isinstance(text, str) else "",
        data=dict(block),
    )


def _call(block: Mapping[str, Any], i: int, field: str) -> ToolCall:
    call_id, name, args = block.get("id"), block.get("name"), block.get("input")
    if not isinstance(call_id, str):
        raise MessageError(i, field + ".id", "a string", call_id)
    if not isinstance(name, str):
        raise MessageError(i, field + ".name", "a string", name)
    if not isinstance(args, Mapping):
        raise MessageError(i, field + ".input", "an object", args)
    extra = {k: v for k, v in block.items() if k not in ("type", "id", "name", "input")}
    return ToolCall(
        id=call_id, name=name, arguments=json.dumps(args, ensure_ascii=False), extra=extra
    )


# -- rendering --------------------------------------------------------------------------


def to_anthropic(
    messages: Iterable[Message],
    *,
    provider: bool = False,
    envelope: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """An Anthropic request document ``{"system": ..., "messages": [...]}``.

    `provider=True` writes only what the Messages API accepts; otherwise unknown
    source fields and the `envelope` (other request keys of a loaded document) are
    written back too.
    """
    msgs = list(messages)
    system = [m for m in msgs if m.role in ("system", "developer")]
    doc: dict[str, Any] = {} if provider or envelope is None else dict(envelope)
    if system:
        doc["system"] = _render_system(system, provider)
    doc["messages"] = to_anthropic_messages(msgs, provider=provider)
    return doc


def to_anthropic_messages(
    messages: Sequence[Message], *, provider: bool = False
) -> list[dict[str, Any]]:
    """The ``messages`` array alone (system messages are left out: see `to_anthropic`)."""
    out: list[dict[str, Any]] = []
    last_side = ""
    for i, m in enumerate(messages):
        if m.role in ("system", "developer"):
            continue
        side = "assistant" if m.role == "assistant" else "user"
        h = hints(m.extra, _FMT)
        content = _render_content(m, h, provider, i)
        extra = {} if provider else _message_extra(m, h)
        if out and side == last_side and (provider or not h.get("new")):
            prev = out[-1]
            prev["content"] = _as_blocks(prev["content"]) + _as_blocks(content)
            for k, v in extra.items():  # a merged message's own fields are kept too
                prev.setdefault(k, v)
        else:
            out.append({"role": side, "content": content, **extra})
        last_side = side
    return out


def _message_extra(m: Message, h: Mapping[str, Any]) -> dict[str, Any]:
    """Message-level source fields (a tool result's own fields go in its block)."""
    if m.role == "tool":
        return dict(h.get("message_extra", {}))
    return {k: v for k, v in public(m.extra).items() if k not in ("role", "content")}


def _as_blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content)


def _render_system(system: list[Message], provider: bool) -> Any:
    only = system[0]
    if len(system) == 1 and (not only.content or _simple(only)):
        return only.text
    blocks: list[Any] = []
    for i, m in enumerate(system):
        blocks.extend(_render_parts(m.content, provider, i))
    return blocks


def _simple(m: Message) -> bool:
    return len(m.content) == 1 and m.content[0].kind == "text" and not m.content[0].data


def _render_content(m: Message, h: Mapping[str, Any], provider: bool, i: int) -> Any:
    if m.role == "tool":
        return [_render_result(m, h, provider, i)]
    if not m.content and not m.tool_calls:
        return [] if h.get("content") == "list" else ""
    if _simple(m) and not m.tool_calls:
        return m.text
    parts = _render_parts(m.content, provider, i)
    calls = [_render_call(c, provider) for c in m.tool_calls]
    layout = h.get("layout")
    if (
        isinstance(layout, str)
        and layout.count("p") == len(parts)
        and len(layout) == len(parts) + len(calls)
    ):
        ip, ic = iter(parts), iter(calls)
        return [next(ip) if ch == "p" else next(ic) for ch in layout]
    return parts + calls


def _render_result(m: Message, h: Mapping[str, Any], provider: bool, i: int) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": m.tool_call_id}
    if m.content or h.get("content") != "absent" or provider:
        if _simple(m) or not m.content:
            block["content"] = [] if h.get("content") == "list" and not m.content else m.text
        else:
            block["content"] = _render_parts(m.content, provider, i)
    extra = public(m.extra)
    if provider:
        block.update({k: extra[k] for k in _RESULT_KEYS if k in extra})
    else:
        block.update(extra)
    return block


def _render_parts(parts: Sequence[Part], provider: bool, i: int) -> list[dict[str, Any]]:
    """Blocks of `parts`; in provider mode, another provider's reasoning and built-in
    tool items are left out (Anthropic reads none of them)."""
    if provider:
        parts = [p for p in parts if p.data.get("type") not in OPAQUE_ITEMS]
    return [_render_part(p, provider, i) for p in parts]


def _render_part(p: Part, provider: bool, i: int) -> dict[str, Any]:
    kind = p.data.get("type")
    if provider and kind == COMPACTION and "content" not in p.data:
        raise FormatError(f"message {i}: an OpenAI compaction item cannot be sent to Anthropic")
    if p.kind == "text":
        if provider:
            block: dict[str, Any] = {"type": "text", "text": p.text}
            if kind == "text" and "cache_control" in p.data:
                block["cache_control"] = p.data["cache_control"]
            return block
        return {**p.data, "text": p.text} if p.data else {"type": "text", "text": p.text}
    if not provider and p.data and kind not in ("image_url", "file"):
        return dict(p.data)  # verbatim; OpenAI image and file parts are converted below
    if kind in _PROVIDER_BLOCKS or (isinstance(kind, str) and kind.endswith("_tool_result")):
        return dict(p.data)
    if kind == "image_url":
        return {"type": "image", "source": _source(p.data.get("image_url"), i)}
    if kind == "file":
        return _file_to_document(p.data, i)
    if p.text:
        return {"type": "text", "text": p.text}
    raise FormatError(f"message {i}: a {kind or p.kind!r} part cannot be sent to Anthropic")


def _source(image_url: Any, i: int) -> dict[str, Any]:
    url = image_url.get("url") if isinstance(image_url, Mapping) else image_url
    if not isinstance(url, str):
        raise FormatError(f"message {i}: image_url {image_url!r} has no url")
    if url.startswith("data:") and ";base64," in url:
        media_type, data = url[5:].split(";base64,", 1)
        return {"type": "base64", "media_type": media_type, "data": data}
    return {"type": "url", "url": url}


def _file_to_document(data: Mapping[str, Any], i: int) -> dict[str, Any]:
    file = data.get("file")
    file_data = file.get("file_data") if isinstance(file, Mapping) else None
    if not isinstance(file_data, str):
        raise FormatError(f"message {i}: a file part without file_data cannot go to Anthropic")
    block: dict[str, Any] = {"type": "document", "source": _source(file_data, i)}
    if isinstance(file, Mapping) and isinstance(file.get("filename"), str):
        block["title"] = file["filename"]
    return block


def _render_call(c: ToolCall, provider: bool) -> dict[str, Any]:
    parsed = c.parsed_arguments()
    args = parsed if isinstance(parsed, dict) else {"_raw_arguments": c.arguments}
    block: dict[str, Any] = {"type": "tool_use", "id": c.id, "name": c.name, "input": args}
    extra = public(c.extra)
    if provider:
        if "cache_control" in extra:
            block["cache_control"] = extra["cache_control"]
    else:
        block.update({k: v for k, v in extra.items() if k not in block})
    return block
