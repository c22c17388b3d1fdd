"""OpenAI chat completions messages <-> `Message`, losslessly.

Handles ``content: null``, string content, content-part lists (text, image_url,
input_audio, file; each block kept verbatim in `Part.data`), parallel `tool_calls`,
the legacy ``function_call`` / role ``function`` pair, ``name``, and any unknown key
(kept in `Message.extra` and written back). A ``kompakt`` key carries kompakt-only
fields (id, pinned, ...) written by ``annotate``.

>>> msgs = from_openai([
...     {"role": "user", "content": "list files"},
...     {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
...      "function": {"name": "ls", "arguments": "{}"}}]},
...     {"role": "tool", "tool_call_id": "c1", "content": "a.py"}])
>>> msgs[1].tool_calls[0].name, msgs[2].tool_call_id
('ls', 'c1')
>>> to_openai(msgs)[1]["content"] is None
True
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kompakt.errors import FormatError, MessageError
from kompakt.formats._hints import hints, public, with_hints
from kompakt.formats.native import annotation_kwargs, derived_id, kompakt_fields
from kompakt.formats.responses import OPAQUE_ITEMS
from kompakt.messages import Message, Part, PartKind, ToolCall

__all__ = [
    "LEGACY_ID_PREFIX",
    "OPENAI_ROLES",
    "from_openai",
    "from_openai_indexed",
    "message_to_openai",
    "to_openai",
]

LEGACY_ID_PREFIX = "legacy_call_"
"""Ids made up for legacy ``function_call``s (which have none): prefix + message index."""

_FMT = "openai"
_ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
OPENAI_ROLES = _ROLES | {"function"}
"""Roles an OpenAI message may have (``function`` is the legacy result role)."""
_KNOWN = frozenset({"role", "content", "tool_calls", "tool_call_id", "name", "kompakt"})
_PART_KIND: dict[str, PartKind] = {
    "text": "text",
    "image_url": "image",
    "input_audio": "audio",
    "file": "file",
}
_ANNOTATION = "kompakt"


# -- loading ----------------------------------------------------------------------------


def from_openai(items: Iterable[Any], *, start: int = 0) -> list[Message]:
    """Messages from OpenAI message dicts; `start` is the index of the first (for errors)."""
    return from_openai_indexed(enumerate(items, start))


def from_openai_indexed(pairs: Iterable[tuple[int, Any]]) -> list[Message]:
    """Like `from_openai`, from ``(index in the source, message dict)`` pairs."""
    out: list[Message] = []
    legacy_id: str | None = None
    for i, item in pairs:
        m = _message(item, i, legacy_id)
        if m.extra and hints(m.extra, _FMT).get("legacy") == "function_call":
            legacy_id = m.tool_calls[0].id
        out.append(m)
    return out


def _message(item: Any, i: int, legacy_id: str | None) -> Message:
    if not isinstance(item, Mapping):
        raise MessageError(i, "message", "an object with a 'role'", item)
    role = item.get("role")
    if role == "function":
        return _legacy_result(item, i, legacy_id)
    if isinstance(role, (list, dict)) or role not in _ROLES:  # a list or dict would not hash
        expected = "one of " + ", ".join(sorted(_ROLES | {"function"}))
        raise MessageError(i, "role", expected, role)
    extra = _unknown(item)
    calls, calls_hint = _tool_calls(item, i)
    legacy = None
    if not calls and isinstance(item.get("function_call"), Mapping):
        calls = (_legacy_call(item["function_call"], i),)
        del extra["function_call"]
        legacy = "function_call"
    content, content_hint = _content(item, i, has_calls=bool(calls))
    tool_call_id = item.get("tool_call_id")
    if role == "tool" and not isinstance(tool_call_id, str):
        raise MessageError(
            i, "tool_call_id", "a string naming the call this result answers", tool_call_id
        )
    if tool_call_id is not None and not isinstance(tool_call_id, str):
        raise MessageError(i, "tool_call_id", "a string", tool_call_id)
    with_hints(extra, _FMT, content=content_hint, tool_calls=calls_hint, legacy=legacy)
    return Message(
        role=role,
        content=content,
        tool_calls=calls,
        tool_call_id=tool_call_id,
        name=_name(item, i),
        extra=extra,
        **_annotation(item, i),
    )


def _legacy_result(item: Mapping[str, Any], i: int, legacy_id: str | None) -> Message:
    extra = _unknown(item)
    # fields a `function` message does not use are still data: kept verbatim
    extra.update({k: item[k] for k in ("tool_call_id", "tool_calls") if k in item})
    content, content_hint = _content(item, i, has_calls=False)
    with_hints(extra, _FMT, content=content_hint, legacy="function")
    return Message(
        role="tool",
        content=content,
        tool_call_id=legacy_id if legacy_id is not None else f"{LEGACY_ID_PREFIX}{i}",
        name=_name(item, i),
        extra=extra,
        **_annotation(item, i),
    )


def _unknown(item: Mapping[str, Any]) -> dict[str, Any]:
    """Keys kompakt does not model, plus ``name: null`` / ``tool_call_id: null`` (which
    the model cannot tell from absent), kept verbatim."""
    return {
        k: v
        for k, v in item.items()
        if k not in _KNOWN or (v is None and k in ("name", "tool_call_id"))
    }


def _name(item: Mapping[str, Any], i: int) -> str | None:
    name = item.get("name")
    if name is not None and not isinstance(name, str):
        raise MessageError(i, "name", "a string", name)
    return name


def _annotation(item: Mapping[str, Any], i: int) -> dict[str, Any]:
    block = item.get(_ANNOTATION)
    if block is None:
        return {}
    if not isinstance(block, Mapping):
        raise MessageError(i, _ANNOTATION, "an object of kompakt fields", block)
    return annotation_kwargs(block, i, prefix=_ANNOTATION + ".")


def _content(item: Mapping[str, Any], i: int, *, has_calls: bool) -> tuple[tuple[Part, ...], Any]:
    """Parts, and a hint when the spelling is not the one rendering would choose."""
    if "content" not in item:
        return (), "absent"
    value = item["content"]
    assistant_calls = has_calls and item.get("role") == "assistant"
    if value is None:
        return (), None if assistant_calls else "null"
    if isinstance(value, str):
        if not value:
            return (), "string" if assistant_calls else None
        return (Part(text=value),), None
    if isinstance(value, list):
        parts = tuple(_part(b, i, f"content[{j}]") for j, b in enumerate(value))
        return parts, None if parts else "list"
    raise MessageError(i, "content", "a string, a list of content parts or null", value)


def _part(block: Any, i: int, field: str) -> Part:
    if not isinstance(block, Mapping):
        raise MessageError(i, field, "a content part object with a 'type'", block)
    kind = block.get("type")
    if not isinstance(kind, str):
        raise MessageError(i, field + ".type", "a string", kind)
    data = dict(block)
    if kind == "text":
        text = block.get("text")
        if not isinstance(text, str):
            raise MessageError(i, field + ".text", "a string", text)
        return Part(text=text, data=data)
    if kind == "refusal":
        refusal = block.get("refusal")
        return Part(kind="other", text=refusal if isinstance(refusal, str) else "", data=data)
    text = block.get("text")
    return Part(
        kind=_PART_KIND.get(kind, "other"), text=text if isinstance(text, str) else "", data=data
    )


def _tool_calls(item: Mapping[str, Any], i: int) -> tuple[tuple[ToolCall, ...], Any]:
    if "tool_calls" not in item:
        return (), None
    value = item["tool_calls"]
    if value is None:
        return (), "null"
    if not isinstance(value, list):
        raise MessageError(i, "tool_calls", "a list of tool calls", value)
    if not value:
        return (), "empty"
    return tuple(_call(c, i, f"tool_calls[{j}]") for j, c in enumerate(value)), None


def _call(value: Any, i: int, field: str) -> ToolCall:
    if not isinstance(value, Mapping):
        raise MessageError(i, field, "a tool call object", value)
    call_id = value.get("id")
    if not isinstance(call_id, str):
        raise MessageError(i, field + ".id", "a string", call_id)
    fn = value.get("function")
    if not isinstance(fn, Mapping):
        raise MessageError(i, field + ".function", "an object with 'name' and 'arguments'", fn)
    name, arguments = _name_args(fn, i, field + ".function")
    # "type": "function" is what rendering writes anyway: keep extra empty for plain calls
    extra = {
        k: v
        for k, v in value.items()
        if k not in ("id", "function") and not (k == "type" and v == "function")
    }
    fn_extra = {k: v for k, v in fn.items() if k not in ("name", "arguments")}
    with_hints(
        extra, _FMT, no_type=True if "type" not in value else None, function=fn_extra or None
    )
    return ToolCall(id=call_id, name=name, arguments=arguments, extra=extra)


def _legacy_call(fn: Mapping[str, Any], i: int) -> ToolCall:
    name, arguments = _name_args(fn, i, "function_call")
    fn_extra = {k: v for k, v in fn.items() if k not in ("name", "arguments")}
    return ToolCall(
        id=f"{LEGACY_ID_PREFIX}{i}",
        name=name,
        arguments=arguments,
        extra=with_hints({}, _FMT, function=fn_extra or None),
    )


def _name_args(fn: Mapping[str, Any], i: int, field: str) -> tuple[str, str]:
    name = fn.get("name")
    if not isinstance(name, str):
        raise MessageError(i, field + ".name", "a string", name)
    arguments = fn.get("arguments")
    if not isinstance(arguments, str):
        raise MessageError(i, field + ".arguments", "a JSON string", arguments)
    return name, arguments


# -- rendering --------------------------------------------------------------------------


def to_openai(
    messages: Iterable[Message], *, provider: bool = False, annotate: bool | None = False
) -> list[dict[str, Any]]:
    """OpenAI message dicts.

    `provider=True` writes only what the chat completions API accepts (no unknown
    keys, no kompakt fields, Anthropic-only blocks converted or left out). `annotate`:
    True adds every message's kompakt fields under ``"kompakt"``; None adds them only
    where they differ from the defaults; False never.
    """
    return [
        message_to_openai(m, provider=provider, annotate=annotate, index=i)
        for i, m in enumerate(messages)
    ]


def message_to_openai(
    m: Message, *, provider: bool = False, annotate: bool | None = False, index: int = 0
) -> dict[str, Any]:
    """One message as an OpenAI dict (see `to_openai`)."""
    h = hints(m.extra, _FMT)
    legacy = None if provider else h.get("legacy")
    d: dict[str, Any] = {}
    if legacy == "function":
        d["role"] = "function"
    else:
        d["role"] = m.role
    content = _render_content(m, h, provider, index)
    if content is not _ABSENT:
        d["content"] = content
    if m.name is not None and (not provider or m.role != "tool"):  # tool results take no name
        d["name"] = m.name
    if m.tool_calls:
        if legacy == "function_call" and len(m.tool_calls) == 1:
            d["function_call"] = _render_function(m.tool_calls[0], provider)
        else:
            d["tool_calls"] = [_render_call(c, provider) for c in m.tool_calls]
    elif not provider and h.get("tool_calls") in ("null", "empty"):
        d["tool_calls"] = None if h["tool_calls"] == "null" else []
    if m.tool_call_id is not None and legacy != "function":
        d["tool_call_id"] = m.tool_call_id
    if not provider:
        for k, v in public(m.extra).items():
            d.setdefault(k, v)
        block = _annotations(m, annotate)
        if block:
            d[_ANNOTATION] = block
    return d


def _annotations(m: Message, annotate: bool | None) -> dict[str, Any]:
    if annotate is False:
        return {}
    block = kompakt_fields(m, with_id=bool(annotate) or m.id != derived_id(m))
    return block


class _Absent:
    pass


_ABSENT = _Absent()


def _render_content(m: Message, h: Mapping[str, Any], provider: bool, index: int) -> Any:
    form = h.get("content")
    if not m.content:
        if form == "absent" and not provider:
            return _ABSENT
        if form == "list":
            return []
        if form == "string":
            return ""
        if form == "null" or (m.role == "assistant" and m.tool_calls):
            return None
        return ""
    if len(m.content) == 1 and m.content[0].kind == "text" and not m.content[0].data:
        return m.content[0].text
    blocks = [b for p in m.content if (b := _render_part(p, provider, index)) is not None]
    if not blocks:  # provider mode left only reasoning blocks out
        return None if m.role == "assistant" and m.tool_calls else ""
    return blocks


def _render_part(p: Part, provider: bool, index: int) -> dict[str, Any] | None:
    kind = p.data.get("type")
    if not provider and kind not in ("image", "document"):  # Anthropic spellings: convert
        if p.data:
            return {**p.data, "text": p.text} if p.kind == "text" else dict(p.data)
        return {"type": "text", "text": p.text} if p.kind == "text" else {"type": p.kind}
    if p.kind == "text":
        return {"type": "text", "text": p.text}
    if kind in _PART_KIND or kind == "refusal":
        return dict(p.data)
    if kind == "image":
        return {"type": "image_url", "image_url": {"url": _data_url(p.data, index)}}
    if kind == "document":
        return _document_to_file(p, index)
    if kind in ("thinking", "redacted_thinking") or kind in OPAQUE_ITEMS:
        return None  # reasoning and built-in tool items: chat completions takes none back
    if p.text:
        return {"type": "text", "text": p.text}
    raise FormatError(f"message {index}: a {kind or p.kind!r} part cannot be sent to OpenAI")


def _data_url(block: Mapping[str, Any], index: int) -> str:
    source = block.get("source")
    if isinstance(source, Mapping):
        if source.get("type") == "url" and isinstance(source.get("url"), str):
            return str(source["url"])
        if source.get("type") == "base64":
            return f"data:{source.get('media_type')};base64,{source.get('data')}"
    raise FormatError(f"message {index}: image source {source!r} cannot be sent to OpenAI")


def _document_to_file(p: Part, index: int) -> dict[str, Any]:
    source = p.data.get("source")
    if isinstance(source, Mapping) and source.get("type") == "text":
        return {"type": "text", "text": str(source.get("data", ""))}
    if isinstance(source, Mapping) and source.get("type") == "base64":
        file: dict[str, Any] = {"file_data": _data_url(p.data, index)}
        if isinstance(p.data.get("title"), str):
            file["filename"] = p.data["title"]
        return {"type": "file", "file": file}
    raise FormatError(f"message {index}: document source {source!r} cannot be sent to OpenAI")


def _render_call(c: ToolCall, provider: bool) -> dict[str, Any]:
    d: dict[str, Any] = {"id": c.id, "type": "function", "function": _render_function(c, provider)}
    if provider:
        return d
    d.update(public(c.extra))
    if hints(c.extra, _FMT).get("no_type"):
        d.pop("type", None)
    return d


def _render_function(c: ToolCall, provider: bool) -> dict[str, Any]:
    fn: dict[str, Any] = {"name": c.name, "arguments": c.arguments}
    extra = hints(c.extra, _FMT).get("function")
    if extra and not provider:
        fn.update(extra)
    return fn
