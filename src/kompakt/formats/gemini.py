"""Gemini ``contents`` <-> `Message`, losslessly.

A document is ``{"contents": [...], "systemInstruction": {"parts": [...]}, ...}`` (the
``generateContent`` request; ``system_instruction`` is read too) or a bare list of
contents. A content is ``{"role": "user" | "model", "parts": [...]}``:

* ``text`` parts (a ``thought`` part included), ``inlineData`` and ``fileData`` parts
  are parts, each kept verbatim (``thoughtSignature`` included);
* a ``functionCall`` part is a `ToolCall` (arguments = ``json.dumps(args)``); a call
  without an ``id`` gets one made up, never written back;
* each ``functionResponse`` part of a user content is a role ``tool`` message that
  answers its call: by ``id`` when it has one, else the oldest unanswered call of the
  same ``name`` in the model turn before it (how Gemini pairs them).

Rendering merges consecutive messages of one side into one content, as Gemini wants
(a turn's function responses together, in one user content).

>>> doc = {"contents": [
...     {"role": "user", "parts": [{"text": "weather in Paris?"}]},
...     {"role": "model", "parts": [
...         {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}]},
...     {"role": "user", "parts": [
...         {"functionResponse": {"name": "get_weather", "response": {"temp": 18}}}]}]}
>>> msgs = from_gemini(doc)
>>> [m.role for m in msgs], msgs[2].tool_call_id == msgs[1].tool_calls[0].id
(['user', 'assistant', 'tool'], True)
>>> to_gemini(msgs) == doc
True
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kompakt.errors import FormatError, MessageError
from kompakt.formats._hints import hints, public, with_hints
from kompakt.formats.responses import OPAQUE_ITEMS
from kompakt.messages import Message, Part, PartKind, ToolCall

__all__ = ["from_gemini", "is_gemini_content", "to_gemini", "to_gemini_contents"]

_FMT = "gemini"
_CALL = ("functionCall", "function_call")
_RESPONSE = ("functionResponse", "function_response")
_SYSTEM_KEYS = ("systemInstruction", "system_instruction")
MADE_UP_ID = "gemini_call_"
"""Prefix of the ids made up for calls that have none: ``gemini_call_<content>_<part>``."""


def is_gemini_content(item: Any) -> bool:
    """True for a Gemini content (``{"role", "parts": [...]}``), used by detection.

    >>> is_gemini_content({"role": "model", "parts": [{"text": "hi"}]})
    True
    """
    return isinstance(item, Mapping) and isinstance(item.get("parts"), list)


def _key(part: Mapping[str, Any], names: tuple[str, str]) -> str | None:
    for name in names:
        if name in part:
            return name
    return None


# -- loading ----------------------------------------------------------------------------


def from_gemini(doc: Any) -> list[Message]:
    """Messages from a ``generateContent`` request document or a bare list of contents."""
    if isinstance(doc, Mapping):
        contents = doc.get("contents")
        if not isinstance(contents, list):
            raise FormatError("Gemini document: 'contents' must be a list of contents")
        out = _system(doc)
    elif isinstance(doc, list):
        contents, out = doc, []
    else:
        raise FormatError(f"Gemini input must be a document or a list, got {type(doc).__name__}")
    open_calls: list[ToolCall] = []  # the calls of the last model turn, unanswered
    prev_side = ""
    for i, content in enumerate(contents):
        if not isinstance(content, Mapping):
            raise MessageError(i, "content", "an object with 'role' and 'parts'", content)
        role = content.get("role", "user")
        parts = content.get("parts")
        if role not in ("user", "model"):
            raise MessageError(i, "role", "'user' or 'model'", role)
        if not isinstance(parts, list):
            raise MessageError(i, "parts", "a list of parts", parts)
        extra = {k: v for k, v in content.items() if k not in ("parts", "role")}
        if role == "model":
            pieces = [_model(parts, i, extra)]
            open_calls = list(pieces[0].tool_calls)
        else:
            pieces = _user(parts, i, extra, open_calls)
        side = role
        first = pieces[0]
        new = True if prev_side == side else None
        no_role = True if "role" not in content else None
        pieces[0] = first.evolve(
            extra=with_hints(dict(first.extra), _FMT, new=new, no_role=no_role)
        )
        prev_side = side
        out.extend(pieces)
    return out


def _system(doc: Mapping[str, Any]) -> list[Message]:
    key = _key(doc, _SYSTEM_KEYS)
    if key is None:
        return []
    value = doc[key]
    if not isinstance(value, Mapping) or not isinstance(value.get("parts"), list):
        raise FormatError(f"Gemini document: {key!r} must be a content with 'parts'")
    parts = tuple(_part(p, 0, f"{key}.parts[{j}]") for j, p in enumerate(value["parts"]))
    extra = {k: v for k, v in value.items() if k != "parts"}
    return [Message(role="system", content=parts, extra=with_hints(extra, _FMT, key=key))]


def _part(part: Any, i: int, field: str) -> Part:
    if not isinstance(part, Mapping):
        raise MessageError(i, field, "a part object", part)
    if "text" in part:
        text = part["text"]
        if not isinstance(text, str):
            raise MessageError(i, field + ".text", "a string", text)
        return Part(text=text, data=dict(part))
    blob = part.get("inlineData") or part.get("inline_data") or part.get("fileData")
    mime = blob.get("mimeType", blob.get("mime_type", "")) if isinstance(blob, Mapping) else ""
    kind: PartKind = "image" if isinstance(mime, str) and mime.startswith("image/") else "file"
    return Part(kind=kind if blob else "other", data=dict(part))


def _model(parts: list[Any], i: int, extra: dict[str, Any]) -> Message:
    out: list[Part] = []
    calls: list[ToolCall] = []
    layout = ""
    for j, part in enumerate(parts):
        key = _key(part, _CALL) if isinstance(part, Mapping) else None
        if key is None:
            out.append(_part(part, i, f"parts[{j}]"))
            layout += "p"
            continue
        calls.append(_call(part, key, i, j))
        layout += "c"
    default = "p" * len(out) + "c" * len(calls)
    with_hints(extra, _FMT, layout=None if layout == default else layout)
    return Message(role="assistant", content=tuple(out), tool_calls=tuple(calls), extra=extra)


def _call(part: Mapping[str, Any], key: str, i: int, j: int) -> ToolCall:
    fn = part[key]
    field = f"parts[{j}].{key}"
    if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
        raise MessageError(i, field, "an object with a 'name'", fn)
    args = fn.get("args", {})
    if not isinstance(args, Mapping):
        raise MessageError(i, field + ".args", "an object", args)
    call_id = fn.get("id")
    made_up = not isinstance(call_id, str)
    extra = {k: v for k, v in part.items() if k != key}  # thoughtSignature and the like
    fn_extra = {k: v for k, v in fn.items() if k not in ("name", "args", "id")}
    with_hints(
        extra,
        _FMT,
        key=key if key != _CALL[0] else None,
        no_id=True if made_up else None,
        no_args=True if "args" not in fn else None,
        function=fn_extra or None,
    )
    return ToolCall(
        id=f"{MADE_UP_ID}{i}_{j}" if made_up else str(call_id),
        name=fn["name"],
        arguments=json.dumps(args, ensure_ascii=False),
        extra=extra,
    )


def _user(
    parts: list[Any], i: int, extra: dict[str, Any], open_calls: list[ToolCall]
) -> list[Message]:
    out: list[Message] = []
    pending: list[Part] = []
    for j, part in enumerate(parts):
        key = _key(part, _RESPONSE) if isinstance(part, Mapping) else None
        if key is None:
            pending.append(_part(part, i, f"parts[{j}]"))
            continue
        if pending:
            out.append(Message(role="user", content=tuple(pending)))
            pending = []
        out.append(_response(part, key, i, j, open_calls))
    if pending or not out:
        out.append(Message(role="user", content=tuple(pending)))
    if extra:
        first = out[0]
        out[0] = first.evolve(extra=with_hints(dict(first.extra), _FMT, content_extra=extra))
    return out


def _response(
    part: Mapping[str, Any], key: str, i: int, j: int, open_calls: list[ToolCall]
) -> Message:
    fn = part[key]
    field = f"parts[{j}].{key}"
    if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
        raise MessageError(i, field, "an object with a 'name'", fn)
    name = fn["name"]
    rid = fn.get("id")
    call_id = rid if isinstance(rid, str) else None
    for n, call in enumerate(open_calls):  # answer one call: by id, else by name
        if (call.id == call_id) if call_id is not None else (call.name == name):
            call_id = call.id
            del open_calls[n]
            break
    if call_id is None:
        call_id = f"{MADE_UP_ID}{i}_{j}"  # no call to answer: the validator says so
    response = fn.get("response", {})
    extra = {k: v for k, v in part.items() if k != key}
    fn_extra = {k: v for k, v in fn.items() if k not in ("name", "response", "id")}
    with_hints(
        extra,
        _FMT,
        key=key if key != _RESPONSE[0] else None,
        no_id=True if not isinstance(rid, str) else None,
        function=fn_extra or None,
        response=response,
    )
    text = json.dumps(response, ensure_ascii=False)
    return Message(
        role="tool", content=(Part(text=text),), tool_call_id=call_id, name=name, extra=extra
    )


# -- rendering --------------------------------------------------------------------------


def to_gemini(
    messages: Iterable[Message],
    *,
    provider: bool = False,
    envelope: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``generateContent`` request document: ``systemInstruction`` and ``contents``.

    `provider=True` writes only what the API accepts; otherwise unknown fields and the
    `envelope` (other request keys of a loaded document) are written back too.
    """
    msgs = list(messages)
    system = [m for m in msgs if m.role in ("system", "developer")]
    doc: dict[str, Any] = {} if provider or envelope is None else dict(envelope)
    if system:
        h = hints(system[0].extra, _FMT)
        key = "systemInstruction" if provider else str(h.get("key", "systemInstruction"))
        block: dict[str, Any] = {} if provider else public(system[0].extra)
        block["parts"] = [
            _render_part(p, provider, i) for i, m in enumerate(system) for p in m.content
        ]
        doc[key] = block
    doc["contents"] = to_gemini_contents(msgs, provider=provider)
    return doc


def to_gemini_contents(
    messages: Sequence[Message], *, provider: bool = False
) -> list[dict[str, Any]]:
    """The ``contents`` array alone (system messages are left out: see `to_gemini`)."""
    out: list[dict[str, Any]] = []
    names: dict[str, str] = {}  # call id -> function name (a response must repeat it)
    last = ""
    for i, m in enumerate(messages):
        if m.role in ("system", "developer"):
            continue
        side = "model" if m.role == "assistant" else "user"
        h = hints(m.extra, _FMT)
        for c in m.tool_calls:
            names[c.id] = c.name
        parts = _render_message(m, h, names, provider, i)
        if out and side == last and (provider or not h.get("new")):
            out[-1]["parts"].extend(parts)
        else:
            content: dict[str, Any] = {"role": side}
            if not provider:
                if h.get("no_role"):
                    del content["role"]
                content.update(_content_extra(m, h))
            content["parts"] = parts
            out.append(content)
        last = side
    return out


def _content_extra(m: Message, h: Mapping[str, Any]) -> dict[str, Any]:
    """Content-level source fields (a response's own part fields stay in its part)."""
    if m.role == "assistant":
        return public(m.extra)
    return dict(h.get("content_extra", {}))


def _render_message(
    m: Message, h: Mapping[str, Any], names: Mapping[str, str], provider: bool, i: int
) -> list[dict[str, Any]]:
    if m.role == "tool":
        return [_render_response(m, h, names, provider)]
    parts = [_render_part(p, provider, i) for p in m.content if not _foreign(p, provider)]
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


def _foreign(p: Part, provider: bool) -> bool:
    """Another provider's reasoning or built-in tool item: Gemini reads none of them."""
    kind = p.data.get("type")
    return provider and (kind in OPAQUE_ITEMS or kind in ("thinking", "redacted_thinking"))


def _render_part(p: Part, provider: bool, i: int) -> dict[str, Any]:
    if p.kind == "text":
        if p.data and ("text" in p.data or not provider):
            return {**p.data, "text": p.text} if "text" in p.data else {"text": p.text}
        return {"text": p.text}
    if any(k in p.data for k in ("inlineData", "inline_data", "fileData", "file_data")):
        return dict(p.data)
    if not provider and p.data:
        return dict(p.data)
    kind = p.data.get("type")
    if kind == "image_url":  # a chat completions image
        url = p.data.get("image_url")
        url = url.get("url") if isinstance(url, Mapping) else url
        if isinstance(url, str) and url.startswith("data:") and ";base64," in url:
            mime, data = url[5:].split(";base64,", 1)
            return {"inlineData": {"mimeType": mime, "data": data}}
        return {"fileData": {"fileUri": url}}
    if kind == "image" and isinstance(p.data.get("source"), Mapping):  # an Anthropic image
        src = p.data["source"]
        if src.get("type") == "base64":
            return {"inlineData": {"mimeType": src.get("media_type"), "data": src.get("data")}}
        return {"fileData": {"fileUri": src.get("url")}}
    if p.text:
        return {"text": p.text}
    raise FormatError(f"message {i}: a {kind or p.kind!r} part cannot be sent to Gemini")


def _render_call(c: ToolCall, provider: bool) -> dict[str, Any]:
    h = hints(c.extra, _FMT)
    parsed = c.parsed_arguments()
    fn: dict[str, Any] = {"name": c.name}
    if not h.get("no_args") or parsed != {}:
        fn["args"] = parsed if isinstance(parsed, dict) else {"_raw_arguments": c.arguments}
    if not h.get("no_id"):
        fn = {"id": c.id, **fn}
    if not provider and isinstance(h.get("function"), Mapping):
        fn.update(h["function"])
    part: dict[str, Any] = {str(h.get("key") or _CALL[0]) if not provider else _CALL[0]: fn}
    extra = public(c.extra)
    if provider:  # a thought signature must go back with its call
        extra = {k: v for k, v in extra.items() if k in ("thoughtSignature", "thought_signature")}
    part.update(extra)
    return part


def _render_response(
    m: Message, h: Mapping[str, Any], names: Mapping[str, str], provider: bool
) -> dict[str, Any]:
    call_id = m.tool_call_id or ""
    fn: dict[str, Any] = {}
    if not h.get("no_id") and not call_id.startswith(MADE_UP_ID):
        fn["id"] = call_id
    fn["name"] = m.name or names.get(call_id, "")
    fn["response"] = _response_value(m, h)
    if not provider and isinstance(h.get("function"), Mapping):
        fn.update(h["function"])
    part: dict[str, Any] = {str(h.get("key") or _RESPONSE[0]) if not provider else _RESPONSE[0]: fn}
    if not provider:
        part.update(public(m.extra))
    return part


def _response_value(m: Message, h: Mapping[str, Any]) -> Any:
    original = h.get("response")
    text = m.text
    if original is not None and text == json.dumps(original, ensure_ascii=False):
        return original  # unchanged: the object as it came
    try:
        parsed = json.loads(text)
    except ValueError:
        parsed = None
    return parsed if isinstance(parsed, dict) else {"output": text}
