"""OpenAI Responses API items <-> `Message`, losslessly.

An input list is a sequence of *items*. kompakt reads them into messages so the index
groups them the way the API pairs them:

* a ``message`` item (or the short ``{"role", "content"}`` form) of a user, system or
  developer is one message; its content blocks (``input_text``, ``input_image``,
  ``input_file``, ...) are parts, each kept verbatim;
* a run of model output items becomes **one** assistant message: ``reasoning`` items
  and built-in tool items with no output of their own (``web_search_call``,
  ``file_search_call``, ``code_interpreter_call``, ``mcp_call``, ``mcp_list_tools``,
  ``image_generation_call``) are parts kept whole; assistant ``message`` items give
  their ``output_text`` / ``refusal`` blocks; every ``*_call`` with a ``call_id``
  (``function_call``, ``custom_tool_call``, ``computer_call``, ``local_shell_call``,
  ...) and ``mcp_approval_request`` is a `ToolCall`. A reasoning item therefore stays
  with the item it precedes, in its order: the whole run is kept or replaced together;
* each ``*_call_output`` (and ``mcp_approval_response``) is a role ``tool`` message
  answering its call;
* a ``compaction`` item (the provider's own encrypted summary) is a message of its own:
  the index makes it a ``compaction`` group no strategy edits.

The order of items inside a run and every field kompakt does not model are kept as
hints, so ``dump(loads(x)) == x``.

>>> items = [
...     {"role": "user", "content": "weather in Paris?"},
...     {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"},
...     {"type": "function_call", "id": "fc_1", "call_id": "call_1",
...      "name": "get_weather", "arguments": '{"city": "Paris"}'},
...     {"type": "function_call_output", "call_id": "call_1", "output": "18C"}]
>>> msgs = from_responses(items)
>>> [m.role for m in msgs], msgs[1].tool_calls[0].id, msgs[1].content[0].kind
(['user', 'assistant', 'tool'], 'call_1', 'other')
>>> to_responses(msgs) == items
True
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kompakt.errors import FormatError, MessageError
from kompakt.formats._hints import hints, public, with_hints
from kompakt.formats.usage import compact_output_tokens, with_tokens
from kompakt.messages import Message, Part, PartKind, ToolCall

__all__ = [
    "COMPACTION",
    "OPAQUE_ITEMS",
    "answer_kind",
    "call_kind",
    "from_responses",
    "from_responses_document",
    "is_responses_item",
    "last_item_type",
    "output_kind",
    "to_responses",
    "to_responses_document",
]

_FMT = "responses"
COMPACTION = "compaction"
"""The item (and Anthropic block) type of a provider's own compaction summary."""

OPAQUE_ITEMS = frozenset(
    {
        "reasoning", "web_search_call", "file_search_call", "code_interpreter_call",
        "mcp_call", "mcp_list_tools", "image_generation_call", "item_reference",
    }
)  # fmt: skip
"""Model output items with no separate output: kept whole, as parts of their run."""

_PART_KIND: dict[str, PartKind] = {
    "input_text": "text",
    "output_text": "text",
    "input_image": "image",
    "input_file": "file",
    "input_audio": "audio",
}
_SIDE_ROLES = frozenset({"user", "system", "developer"})
_VERBATIM_CALLS = frozenset({"function_call", "custom_tool_call"})  # rendered from fields


def is_responses_item(item: Any) -> bool:
    """True for an item only the Responses API writes (used by format detection).

    >>> is_responses_item({"type": "function_call_output", "call_id": "c1", "output": ""})
    True
    >>> is_responses_item({"role": "user", "content": "hi"})
    False
    """
    if not isinstance(item, Mapping):
        return False
    kind = item.get("type")
    if not isinstance(kind, str):
        return False
    if kind == "message":
        content = item.get("content")
        return isinstance(content, list) and any(
            isinstance(b, Mapping) and b.get("type") in _PART_KIND for b in content
        )
    return (
        kind in OPAQUE_ITEMS
        or kind == COMPACTION
        or kind.endswith(("_call", "_call_output"))
        or kind in ("mcp_approval_request", "mcp_approval_response")
    )


def _item_kind(item: Mapping[str, Any]) -> str:
    kind = item.get("type")
    if kind is None and "role" in item:
        return "message"
    return kind if isinstance(kind, str) else ""


def _is_call(kind: str, item: Mapping[str, Any]) -> bool:
    return (kind.endswith("_call") and "call_id" in item) or kind == "mcp_approval_request"


def _is_output(kind: str) -> bool:
    return kind.endswith("_call_output") or kind == "mcp_approval_response"


# -- loading ----------------------------------------------------------------------------


def from_responses(items: Iterable[Any], *, instructions: Any = None) -> list[Message]:
    """Messages from Responses input (or output) items.

    `instructions`, the request's own system text, becomes a system message first
    (marked, so rendering a document puts it back in ``instructions``).
    """
    out: list[Message] = []
    if isinstance(instructions, str):
        out.append(Message.system(instructions, extra=with_hints({}, _FMT, instructions=True)))
    run: list[tuple[int, Mapping[str, Any]]] = []
    call_ids: dict[str, str] = {}  # an item id -> the call_id it stands for
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise MessageError(i, "item", "an object with a 'type' or a 'role'", item)
        kind = _item_kind(item)
        if not kind:
            raise MessageError(i, "type", "an item type (or a 'role')", item.get("type"))
        if _assistant_side(kind, item):
            run.append((i, item))
            if _is_call(kind, item) and isinstance(item.get("id"), str):
                call_ids[item["id"]] = str(item.get("call_id", item["id"]))
            continue
        if run:
            out.append(_assistant(run))
            run = []
        if kind == "message":
            out.append(_side_message(item, i))
        elif kind == COMPACTION:
            out.append(_compaction(item))
        else:
            out.append(_output(item, i, kind, call_ids))
    if run:
        out.append(_assistant(run))
    return out


def _assistant_side(kind: str, item: Mapping[str, Any]) -> bool:
    """Model output (kept in its run); an item type kompakt does not know is too, whole."""
    if kind == "message":
        return item.get("role") == "assistant"
    return not (_is_output(kind) or kind == COMPACTION)


def _side_message(item: Mapping[str, Any], i: int) -> Message:
    role = item.get("role")
    if role not in _SIDE_ROLES:
        raise MessageError(i, "role", "'user', 'system', 'developer' or 'assistant'", role)
    extra = {k: v for k, v in item.items() if k not in ("role", "content")}
    parts, form = _content(item.get("content", _MISSING), i, "content")
    with_hints(extra, _FMT, content=form)
    return Message(role=role, content=parts, extra=extra)


_MISSING = object()


def _content(value: Any, i: int, field: str) -> tuple[tuple[Part, ...], str | None]:
    """Parts and how the source spelled them (None: the default a renderer writes)."""
    if value is _MISSING:
        return (), "absent"
    if isinstance(value, str):
        return ((Part(text=value),), None) if value else ((), "string")
    if isinstance(value, list):
        parts = tuple(_part(b, i, f"{field}[{j}]") for j, b in enumerate(value))
        return parts, None if parts else "list"
    raise MessageError(i, field, "a string or a list of content blocks", value)


def _part(block: Any, i: int, field: str) -> Part:
    if not isinstance(block, Mapping):
        raise MessageError(i, field, "a content block object with a 'type'", block)
    kind = block.get("type")
    if not isinstance(kind, str):
        raise MessageError(i, field + ".type", "a string", kind)
    if kind in ("input_text", "output_text"):
        text = block.get("text")
        if not isinstance(text, str):
            raise MessageError(i, field + ".text", "a string", text)
        return Part(text=text, data=dict(block))
    text = block.get("refusal") if kind == "refusal" else block.get("text")
    return Part(
        kind=_PART_KIND.get(kind, "other"),
        text=text if isinstance(text, str) else "",
        data=dict(block),
    )


def _assistant(run: list[tuple[int, Mapping[str, Any]]]) -> Message:
    parts: list[Part] = []
    calls: list[ToolCall] = []
    layout: list[Any] = []
    for i, item in run:
        kind = _item_kind(item)
        if kind == "message":
            fields = {k: v for k, v in item.items() if k != "content"}
            new, form = _content(item.get("content", _MISSING), i, "content")
            parts.extend(new)
            layout.append(["m", len(new), fields, form])
        elif _is_call(kind, item):
            calls.append(_call(item, i, kind))
            layout.append("c")
        else:
            parts.append(_opaque(item))
            layout.append("p")
    extra = with_hints({}, _FMT, items=layout)
    return Message(role="assistant", content=tuple(parts), tool_calls=tuple(calls), extra=extra)


def _opaque(item: Mapping[str, Any]) -> Part:
    """A reasoning or built-in tool item, whole; its readable text is what it counts."""
    return Part(kind="other", text=_readable(item), data=dict(item))


def _readable(item: Mapping[str, Any]) -> str:
    if item.get("type") == "reasoning":
        summary = item.get("summary")
        if isinstance(summary, list):
            texts = [s.get("text") for s in summary if isinstance(s, Mapping)]
            return "\n".join(t for t in texts if isinstance(t, str))
        return ""
    action = item.get("action") or item.get("queries") or item.get("code")
    return json.dumps(action, ensure_ascii=False) if action else ""


def _call(item: Mapping[str, Any], i: int, kind: str) -> ToolCall:
    key = "id" if kind == "mcp_approval_request" else "call_id"
    call_id = item.get(key)
    if not isinstance(call_id, str):
        raise MessageError(i, key, "a string", call_id)
    name = item.get("name")
    if kind in _VERBATIM_CALLS and not isinstance(name, str):
        raise MessageError(i, "name", "a string", name)
    if kind == "custom_tool_call":
        args = item.get("input")
        if not isinstance(args, str):
            raise MessageError(i, "input", "a string", args)
    elif kind in ("function_call", "mcp_approval_request"):
        args = item.get("arguments")
        if not isinstance(args, str):
            raise MessageError(i, "arguments", "a JSON string", args)
    else:
        args = json.dumps(item.get("action", {}), ensure_ascii=False)
    if kind in _VERBATIM_CALLS:
        extra = {
            k: v
            for k, v in item.items()
            if k not in ("type", "call_id", "name", "arguments", "input")
        }
        with_hints(extra, _FMT, kind=kind)
    else:  # built-in tools: written back exactly as the API sent them
        extra = with_hints({}, _FMT, kind=kind, item=dict(item))
    return ToolCall(
        id=call_id, name=name if isinstance(name, str) else kind, arguments=args, extra=extra
    )


def _output(item: Mapping[str, Any], i: int, kind: str, call_ids: Mapping[str, str]) -> Message:
    key = "approval_request_id" if kind == "mcp_approval_response" else "call_id"
    if key not in item and kind == "local_shell_call_output":
        key = "id"  # the shell output names its call by `id`
    ref = item.get(key)
    if not isinstance(ref, str):
        raise MessageError(i, key, "a string naming the call this output answers", ref)
    call_id = call_ids.get(ref, ref) if key == "id" else ref
    extra = {k: v for k, v in item.items() if k not in ("type", key, "output")}
    value = item.get("output", _MISSING)
    output_form: str | None = None
    if isinstance(value, Mapping):
        shape = str(value.get("type", ""))
        kind_of: PartKind = "image" if "image" in shape or "screenshot" in shape else "other"
        parts: tuple[Part, ...] = (Part(kind=kind_of, data=dict(value)),)
        output_form = "object"
    else:
        parts, output_form = _content(value, i, "output")
    with_hints(extra, _FMT, kind=kind, key=key, ref=ref if ref != call_id else None)
    with_hints(extra, _FMT, output=output_form)
    return Message(role="tool", content=parts, tool_call_id=call_id, extra=extra)


def _compaction(item: Mapping[str, Any]) -> Message:
    return Message(role="assistant", content=(Part(kind="other", data=dict(item)),))


# -- rendering --------------------------------------------------------------------------


def to_responses(
    messages: Iterable[Message], *, provider: bool = False, instructions: bool = False
) -> list[dict[str, Any]]:
    """Responses input items.

    `provider=True` writes only what the API accepts (kompakt's hints and unknown
    non-item fields left out; parts from other formats converted). With
    `instructions`, a system message loaded from ``instructions`` is left out (the
    document writes it there).
    """
    out: list[dict[str, Any]] = []
    kinds: dict[str, str] = {}  # call id -> the kind of its call, to name the output
    for i, m in enumerate(messages):
        h = hints(m.extra, _FMT)
        if instructions and h.get("instructions"):
            continue
        if m.role == "tool":
            out.append(_render_output(m, h, kinds, provider, i))
        elif m.role == "assistant":
            out.extend(_render_assistant(m, h, kinds, provider, i))
        else:
            out.append(_render_side(m, h, provider, i))
    return out


def _render_side(m: Message, h: Mapping[str, Any], provider: bool, i: int) -> dict[str, Any]:
    d: dict[str, Any] = {"role": m.role}
    content = _render_content(m.content, h.get("content"), m.role, provider, i)
    if content is not _ABSENT:
        d["content"] = content
    extra = public(m.extra)
    if provider:
        extra = {k: v for k, v in extra.items() if k in ("type", "id", "status")}
    d.update({k: v for k, v in extra.items() if k not in d})
    return d


class _Absent:
    pass


_ABSENT = _Absent()


def _render_content(parts: Sequence[Part], form: Any, role: str, provider: bool, i: int) -> Any:
    if not parts:
        if form == "absent" and not provider:
            return _ABSENT
        return [] if form == "list" else ""
    if len(parts) == 1 and parts[0].kind == "text" and not parts[0].data and form != "list":
        return parts[0].text
    return [b for p in parts if (b := _render_part(p, role, provider, i)) is not None]


def _render_part(p: Part, role: str, provider: bool, i: int) -> dict[str, Any] | None:
    """One content block; None for what the API takes no copy of (another provider's
    reasoning)."""
    kind = p.data.get("type")
    text_type = "output_text" if role == "assistant" else "input_text"
    if p.kind == "text":
        if kind in ("input_text", "output_text"):
            return {**p.data, "text": p.text}
        if kind == "refusal":
            return {**p.data, "refusal": p.text}
        block: dict[str, Any] = {"type": text_type, "text": p.text}
        if role == "assistant":
            block["annotations"] = []
        return block
    if kind in _PART_KIND or kind == "refusal" or (p.data and not provider):
        return dict(p.data)
    if kind in ("thinking", "redacted_thinking"):
        return None
    if kind == "image_url":  # a chat completions image
        url = p.data.get("image_url")
        url = url.get("url") if isinstance(url, Mapping) else url
        return {"type": "input_image", "image_url": url, "detail": "auto"}
    if kind == "image" and isinstance(p.data.get("source"), Mapping):  # an Anthropic image
        src = p.data["source"]
        if src.get("type") == "base64":
            url = f"data:{src.get('media_type')};base64,{src.get('data')}"
        else:
            url = src.get("url")
        return {"type": "input_image", "image_url": url, "detail": "auto"}
    if p.text:
        return {"type": text_type, "text": p.text}
    raise FormatError(f"message {i}: a {kind or p.kind!r} part cannot be sent to the Responses API")


def _render_assistant(
    m: Message, h: Mapping[str, Any], kinds: dict[str, str], provider: bool, i: int
) -> list[dict[str, Any]]:
    for c in m.tool_calls:
        kinds[c.id] = str(hints(c.extra, _FMT).get("kind", "function_call"))
    layout = h.get("items")
    if isinstance(layout, list) and _fits(layout, m):
        return _render_layout(m, layout, provider, i)
    # made by kompakt or another format: parts in order (runs of text as one message item),
    # then the calls
    out: list[dict[str, Any] | None] = []
    texts: list[Part] = []
    for p in m.content:
        if p.kind != "other" or not _item_part(p):
            texts.append(p)
            continue
        if texts:
            out.append(_assistant_message(texts, provider, i))
            texts = []
        out.append(_render_item_part(p, provider, i))
    if texts:
        out.append(_assistant_message(texts, provider, i))
    out.extend(_render_call(c, provider) for c in m.tool_calls)
    return [item for item in out if item is not None]


def _render_item_part(p: Part, provider: bool, i: int) -> dict[str, Any] | None:
    """An item kept whole; an Anthropic compaction block becomes its summary as text."""
    data = p.data
    if provider and data.get("type") == COMPACTION and "encrypted_content" not in data:
        summary = data.get("content")
        if not isinstance(summary, str):
            raise FormatError(f"message {i}: a compaction block without a summary cannot be sent")
        return _assistant_message([Part(text=summary)], provider, i)
    return dict(data)


def _item_part(p: Part) -> bool:
    kind = p.data.get("type")
    return isinstance(kind, str) and (kind in OPAQUE_ITEMS or kind == COMPACTION)


def _fits(layout: list[Any], m: Message) -> bool:
    n_parts = sum(1 if e == "p" else e[1] for e in layout if e != "c")
    n_calls = sum(1 for e in layout if e == "c")
    return n_parts == len(m.content) and n_calls == len(m.tool_calls)


def _render_layout(m: Message, layout: list[Any], provider: bool, i: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    parts, calls = iter(m.content), iter(m.tool_calls)
    for entry in layout:
        if entry == "c":
            out.append(_render_call(next(calls), provider))
        elif entry == "p":
            out.append(dict(next(parts).data))
        else:
            _, n, fields, form = entry
            own = [next(parts) for _ in range(n)]
            item = dict(fields)
            content = _render_content(own, form, "assistant", provider, i)
            if content is not _ABSENT:
                item["content"] = content
            out.append(item)
    return out


def _assistant_message(parts: list[Part], provider: bool, i: int) -> dict[str, Any] | None:
    content = [b for p in parts if (b := _render_part(p, "assistant", provider, i)) is not None]
    if not content:
        return None
    return {"type": "message", "role": "assistant", "content": content}


def _render_call(c: ToolCall, provider: bool) -> dict[str, Any]:
    h = hints(c.extra, _FMT)
    item = h.get("item")
    if isinstance(item, Mapping):
        return dict(item)
    kind = h.get("kind", "function_call")
    d: dict[str, Any] = {"type": kind, "call_id": c.id, "name": c.name}
    d["input" if kind == "custom_tool_call" else "arguments"] = c.arguments
    extra = public(c.extra)
    if provider:
        extra = {k: v for k, v in extra.items() if k in ("id", "status")}
    d.update({k: v for k, v in extra.items() if k not in d})
    return d


def _render_output(
    m: Message, h: Mapping[str, Any], kinds: Mapping[str, str], provider: bool, i: int
) -> dict[str, Any]:
    call_id = m.tool_call_id or ""
    kind = h.get("kind") or answer_kind(kinds.get(call_id, "function_call"))
    key = h.get("key") or ("approval_request_id" if kind == "mcp_approval_response" else "call_id")
    d: dict[str, Any] = {"type": kind, key: h.get("ref") or call_id}
    form = h.get("output")
    if form == "object" and len(m.content) == 1 and m.content[0].data:
        d["output"] = dict(m.content[0].data)
    elif form != "absent" or m.content:
        content = _render_content(m.content, form, "user", provider, i)
        d["output"] = "" if content is _ABSENT else content
    extra = public(m.extra)
    if provider:
        extra = {k: v for k, v in extra.items() if k in ("id", "status", "approve", "reason")}
    d.update({k: v for k, v in extra.items() if k not in d})
    return d


# -- documents --------------------------------------------------------------------------


def from_responses_document(doc: Any) -> tuple[list[Message], dict[str, Any] | None]:
    """Messages and the envelope (every other key) of an item list, a request document
    (``{"input": [...], "instructions": ...}``) or a response object (``"output"``)."""
    if isinstance(doc, list):
        return from_responses(doc), None
    if not isinstance(doc, Mapping):
        raise FormatError(f"Responses input must be a list or a document, got {type(doc).__name__}")
    key = _items_key(doc)
    items = doc.get(key)
    envelope = {k: v for k, v in doc.items() if k != key}
    instructions = doc.get("instructions") if key == "input" else None
    if isinstance(instructions, str):
        del envelope["instructions"]
    if isinstance(items, str):  # `input` may be a plain user text
        msg = Message.user(items, extra=with_hints({}, _FMT, input="string"))
        return [*from_responses([], instructions=instructions), msg], envelope
    if not isinstance(items, list):
        raise FormatError(f"Responses document: {key!r} must be a list of items")
    messages = from_responses(items, instructions=instructions)
    if key == "output" and _compacted_output(items):  # a `/responses/compact` answer
        tokens = compact_output_tokens(doc.get("usage"))
        messages = [with_tokens(m, tokens) if _is_compaction(m) else m for m in messages]
    return messages, envelope


def _compacted_output(items: list[Any]) -> bool:
    """The output is one ``compaction`` item beside the input messages it kept: all the
    output tokens are the compaction's."""
    kinds = [_item_kind(i) if isinstance(i, Mapping) else "" for i in items]
    kept = all(
        k == COMPACTION or (k == "message" and i.get("role") != "assistant")
        for k, i in zip(kinds, items, strict=True)
    )
    return kept and kinds.count(COMPACTION) == 1


def _is_compaction(m: Message) -> bool:
    return any(p.kind == "other" and p.data.get("type") == COMPACTION for p in m.content)


def _items_key(doc: Mapping[str, Any]) -> str:
    kind = doc.get("object")
    if isinstance(kind, str) and kind.startswith("response") and "input" not in doc:
        return "output"
    return "input"


def to_responses_document(
    messages: Sequence[Message], *, envelope: Mapping[str, Any] | None, provider: bool = False
) -> Any:
    """The document `from_responses_document` read (a bare item list without an envelope).

    `provider=True` writes a request body: ``{"input": [...]}`` (plus ``instructions``
    when the history has them), nothing else.
    """
    if provider:
        doc: dict[str, Any] = {}
        text = _instructions(messages)
        if text is not None:
            doc["instructions"] = text
        doc["input"] = to_responses(messages, provider=True, instructions=text is not None)
        return doc
    if envelope is None:
        return to_responses(messages)
    key = _items_key(envelope)
    out = dict(envelope)
    text = _instructions(messages) if key == "input" else None
    if text is not None:
        out["instructions"] = text
    items: Any = to_responses(messages, instructions=text is not None)
    rest = [m for m in messages if not hints(m.extra, _FMT).get("instructions")]
    if len(rest) == 1 and hints(rest[0].extra, _FMT).get("input") == "string":
        items = rest[0].text
    out[key] = items
    return out


def _instructions(messages: Sequence[Message]) -> str | None:
    for m in messages:
        if m.role in ("system", "developer") and hints(m.extra, _FMT).get("instructions"):
            return m.text
    return None


def last_item_type(m: Message) -> str | None:
    """The type of the last item an assistant message renders to (None when it renders
    to none, or cannot be rendered)."""
    try:
        items = _render_assistant(m, hints(m.extra, _FMT), {}, False, 0)
    except FormatError:
        return None
    kind = items[-1].get("type") if items else None
    return kind if isinstance(kind, str) else None


def call_kind(c: ToolCall) -> str:
    """The item type a call is written as (``function_call`` unless loaded otherwise)."""
    return str(hints(c.extra, _FMT).get("kind", "function_call"))


def output_kind(m: Message) -> str | None:
    """The item type a loaded tool result was (None for a result from elsewhere)."""
    kind = hints(m.extra, _FMT).get("kind")
    return kind if isinstance(kind, str) else None


def answer_kind(call_kind: str) -> str:
    """The output item type that answers a call of `call_kind`.

    >>> answer_kind("custom_tool_call"), answer_kind("mcp_approval_request")
    ('custom_tool_call_output', 'mcp_approval_response')
    """
    if call_kind == "mcp_approval_request":
        return "mcp_approval_response"
    return call_kind + "_output"
