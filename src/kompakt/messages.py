"""The message model every other part of kompakt reads and writes.

A `Message` is immutable. Formats turn provider documents into messages and back;
strategies never edit a message, they put a new (synthetic) one in its place and
record which originals it covers.

>>> m = Message.user("fix the failing test")
>>> m.role, m.text
('user', 'fix the failing test')
>>> m.id == Message.user("fix the failing test").id
True
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from operator import attrgetter
from typing import Any, Literal, TypeAlias

from kompakt.errors import InputError

__all__ = [
    "Message",
    "Part",
    "PartKind",
    "Role",
    "Synthetic",
    "ToolCall",
]

Role: TypeAlias = Literal["system", "developer", "user", "assistant", "tool"]
"""Who said it. `developer` is OpenAI's newer name for a system-level instruction."""

PartKind: TypeAlias = Literal["text", "image", "audio", "file", "other"]

Synthetic: TypeAlias = Literal[
    "summary", "collapsed", "clamped", "superseded", "omitted", "facts", "rehydrated"
]
"""What a message made by kompakt stands for (None on every original)."""

ROLES: frozenset[str] = frozenset({"system", "developer", "user", "assistant", "tool"})

IMAGE_TOKENS = 765
"""Tokens counted for one image part: OpenAI's cost of a 512px high-detail tile set."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Part:
    """One piece of a message's content.

    Text is kept as `text`; anything else (an image, audio, a file) is kept whole in
    `data`, exactly as the source format gave it, so it is counted and never dropped.

    >>> Part(kind="image", data={"type": "image_url", "image_url": {"url": "x.png"}}).kind
    'image'
    """

    kind: PartKind = "text"
    """`text` or the kind of the non-text payload."""
    text: str = ""
    """The text of a text part (empty for others)."""
    data: Mapping[str, Any] = field(default_factory=dict)
    """The source block verbatim (provider fields such as `cache_control` included)."""

    def __hash__(self) -> int:
        return hash((self.kind, self.text))


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """A call the assistant asks for. `arguments` is the raw JSON text the model wrote.

    >>> ToolCall(id="c1", name="read_file", arguments='{"path": "a.py"}').parsed_arguments()
    {'path': 'a.py'}
    """

    id: str
    """The provider's call id; a tool result names it in `tool_call_id`."""
    name: str
    """The tool's name."""
    arguments: str = "{}"
    """Arguments as raw JSON text, kept byte for byte (models sometimes write invalid JSON)."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Unknown fields of the source call, kept verbatim (for example `index`)."""

    def __post_init__(self) -> None:
        if not isinstance(self.arguments, str):
            if not isinstance(self.arguments, (dict, list)):
                raise InputError(
                    f"tool call {self.id!r}: `arguments` must be JSON text or a dict, "
                    f"got {self.arguments!r}"
                )
            object.__setattr__(self, "arguments", json.dumps(self.arguments))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolCall:
        """A call from an OpenAI-style dict (``{"id", "function": {"name", "arguments"}}``)
        or a flat one (``{"id", "name", "arguments"}``).

        >>> ToolCall.from_dict({"id": "c1", "function": {"name": "ls", "arguments": "{}"}}).name
        'ls'
        """
        fn = data.get("function", data)
        if not isinstance(fn, Mapping) or "name" not in fn or "id" not in data:
            raise InputError(
                f"a tool call dict needs 'id' and a 'name' (or 'function.name'), got {dict(data)!r}"
            )
        return cls(id=str(data["id"]), name=str(fn["name"]), arguments=fn.get("arguments", "{}"))

    def parsed_arguments(self) -> Any:
        """The arguments as Python data, or the raw text when they are not valid JSON."""
        try:
            return json.loads(self.arguments)
        except (ValueError, TypeError, RecursionError):  # a model can nest without end
            return self.arguments

    def __hash__(self) -> int:
        return hash((self.id, self.name, self.arguments))


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """One message of a conversation.

    Build with the role helpers (`Message.user("...")`) or directly. `id` is derived
    from the content when not given; `MessageIndex` makes ids unique within a history.

    >>> call = ToolCall(id="c1", name="ls", arguments="{}")
    >>> a = Message.assistant("", tool_calls=[call])
    >>> r = Message.tool("a.py", tool_call_id="c1")
    >>> a.has_tool_calls, r.tool_call_id
    (True, 'c1')
    """

    role: Role
    """system, developer, user, assistant or tool."""
    content: tuple[Part, ...] = ()
    """Text and non-text parts, in order."""
    tool_calls: tuple[ToolCall, ...] = ()
    """Calls an assistant message asks for (parallel calls are several)."""
    tool_call_id: str | None = None
    """On a tool result: the id of the call it answers."""
    name: str | None = None
    """Optional participant or tool name (OpenAI `name`)."""
    id: str = ""
    """Stable id: given, or derived from the content (see `digest`)."""
    pinned: bool = False
    """Survives every strategy."""
    memory: bool = False
    """A memory message (facts the agent keeps); survives every strategy like a pinned one."""
    synthetic: Synthetic | None = None
    """Set on messages kompakt made; None on originals."""
    covers: tuple[str, ...] = ()
    """For a synthetic message: the ids of the originals it stands in for."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Fields of the source format kompakt does not model, kept verbatim for round trips."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    """Free-form data of the caller's; never sent to a provider."""
    digest: str = field(default="", compare=False, repr=False)
    """Hash of what the provider sees (role, parts, calls, result id); computed."""

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise InputError(f"`role` must be one of {sorted(ROLES)}, got {self.role!r}")
        if isinstance(self.content, str):  # tolerate Message(role=..., content="text")
            object.__setattr__(self, "content", (Part(text=self.content),) if self.content else ())
        elif not isinstance(self.content, tuple):
            object.__setattr__(self, "content", tuple(self.content))
        calls = self.tool_calls
        if not isinstance(calls, tuple) or (calls and not all(type(c) is ToolCall for c in calls)):
            object.__setattr__(self, "tool_calls", tuple(_as_call(c) for c in calls))
        if not isinstance(self.covers, tuple):
            object.__setattr__(self, "covers", tuple(self.covers))
        digest = _digest(self)
        _PUT["digest"](self, digest)
        if not self.id:
            _PUT["id"](self, "m_" + digest[:16])

    def __hash__(self) -> int:
        return hash((self.id, self.digest))

    def __repr__(self) -> str:
        """Role, a short text, calls and the fields that differ from their defaults.

        >>> repr(Message.user("fix the failing test", pinned=True))[:69]
        "Message(role='user', text='fix the failing test', pinned=True, id='m_"
        """
        text = self.text
        if len(text) > 60:
            text = text[:57] + "..."
        fields = [f"role={self.role!r}", f"text={text!r}"]
        if any(p.kind != "text" for p in self.content):
            fields.append(f"parts={[p.kind for p in self.content]!r}")
        if self.tool_calls:
            fields.append(f"tool_calls={[f'{c.name}#{c.id}' for c in self.tool_calls]!r}")
        for name in ("tool_call_id", "name", "synthetic"):
            value = getattr(self, name)
            if value is not None:
                fields.append(f"{name}={value!r}")
        for name in ("pinned", "memory"):
            if getattr(self, name):
                fields.append(f"{name}=True")
        if self.covers:
            fields.append(f"covers={len(self.covers)} ids")
        fields.append(f"id={self.id!r}")
        return f"Message({', '.join(fields)})"

    # -- constructors -------------------------------------------------------------

    @classmethod
    def system(cls, text: str, **kw: Any) -> Message:
        """A system message."""
        return cls(role="system", content=_text_parts(text), **kw)

    @classmethod
    def user(cls, text: str, **kw: Any) -> Message:
        """A user message."""
        return cls(role="user", content=_text_parts(text), **kw)

    @classmethod
    def assistant(
        cls, text: str = "", *, tool_calls: Iterable[ToolCall] = (), **kw: Any
    ) -> Message:
        """An assistant message, with optional tool calls."""
        return cls(role="assistant", content=_text_parts(text), tool_calls=tuple(tool_calls), **kw)

    @classmethod
    def tool(cls, text: str, *, tool_call_id: str, **kw: Any) -> Message:
        """A tool result answering `tool_call_id`."""
        return cls(role="tool", content=_text_parts(text), tool_call_id=tool_call_id, **kw)

    @classmethod
    def note(
        cls,
        text: str,
        *,
        synthetic: Synthetic,
        covers: tuple[str, ...] = (),
        role: Role = "assistant",
    ) -> Message:
        """A synthetic text-only message standing in for `covers`: the same message as
        ``Message(role=role, content=text, synthetic=synthetic, covers=covers)``, built
        at a fraction of the cost (strategies write one per group they replace).

        >>> n = Message.note("[3 files read]", synthetic="collapsed", covers=("m_1",))
        >>> n == Message.assistant("[3 files read]", synthetic="collapsed", covers=("m_1",))
        True
        """
        if not text or not synthetic or role not in ROLES or type(covers) is not tuple:
            return cls(role=role, content=_text_parts(text), synthetic=synthetic, covers=covers)
        put = _PUT
        m = object.__new__(cls)
        put["role"](m, role)
        put["content"](m, (_text_part(text),))
        put["tool_calls"](m, ())
        put["tool_call_id"](m, None)
        put["name"](m, None)
        put["pinned"](m, False)
        put["memory"](m, False)
        put["synthetic"](m, synthetic)
        put["covers"](m, covers)
        put["extra"](m, {})
        put["metadata"](m, {})
        # the bytes `_digest` hashes for a single text part, no calls, a synthetic kind
        data = "".join((role, "\x00ptext", text, "\x00s", synthetic, "\x01".join(covers)))
        digest = hashlib.sha1(data.encode("utf-8", "surrogatepass"), usedforsecurity=False)
        hexdigest = digest.hexdigest()
        put["digest"](m, hexdigest)
        put["id"](m, "m_" + hexdigest[:16])
        return m

    # -- reading ------------------------------------------------------------------

    @property
    def text(self) -> str:
        """The text parts joined with newlines (non-text parts are left out)."""
        content = self.content
        if len(content) == 1 and content[0].kind == "text":
            return content[0].text
        parts = [p.text for p in content if p.kind == "text"]
        return parts[0] if len(parts) == 1 else "\n".join(parts)

    @property
    def has_tool_calls(self) -> bool:
        """True for an assistant message that asks for tool calls."""
        return bool(self.tool_calls)

    @property
    def char_count(self) -> int:
        """Characters of text, tool-call names and arguments (what a char estimate sees)."""
        content = self.content
        if len(content) == 1:
            n = len(content[0].text)
        else:
            n = sum([len(p.text) for p in content]) if content else 0
        if self.tool_calls:
            for c in self.tool_calls:
                n += len(c.name) + len(c.arguments)
        return n

    @property
    def is_protected(self) -> bool:
        """Pinned or memory: no strategy may remove it."""
        return self.pinned or self.memory

    def evolve(self, **changes: Any) -> Message:
        """A copy with `changes` applied; the id is re-derived unless given.

        >>> Message.user("a").evolve(pinned=True).pinned
        True
        """
        if "id" not in changes and not changes.keys().isdisjoint(_CONTENT_FIELDS):
            changes["id"] = ""
        if isinstance(changes.get("content"), str):
            changes["content"] = _text_parts(changes["content"])
        if type(self) is not Message or not changes.keys() <= _FIELD_NAMES:
            return replace(self, **changes)  # a subclass's fields, or the error for a bad name
        # what `replace` does (every field copied, the changes applied, then __post_init__),
        # without building keyword arguments for __init__: strategies evolve one per group
        new = object.__new__(Message)
        put = _PUT
        for name, value in zip(_FIELDS, _ALL_FIELDS(self), strict=True):
            put[name](new, value)
        for name, value in changes.items():
            put[name](new, value)
        new.__post_init__()
        return new


def text_stand_in(
    message: Message,
    text: str,
    *,
    synthetic: Synthetic,
    covers: tuple[str, ...],
    extra: Mapping[str, Any] | None = None,
) -> Message:
    """`message` with its content replaced by `text`, standing in for `covers`: the same
    message as ``message.evolve(content=text, synthetic=synthetic, covers=covers,
    extra=extra or {})`` (role, calls, result id, flags and metadata kept, the id
    re-derived), built at a fraction of the cost: strategies write one per stale result.

    >>> r = Message.tool("x" * 400, tool_call_id="c1")
    >>> stub = text_stand_in(r, "[stale]", synthetic="superseded", covers=(r.id,))
    >>> stub == r.evolve(content="[stale]", synthetic="superseded", covers=(r.id,), extra={})
    True
    """
    extra = {} if extra is None else extra
    if type(message) is not Message or not text or not synthetic or type(covers) is not tuple:
        return message.evolve(content=text, synthetic=synthetic, covers=covers, extra=extra)
    put = _PUT
    new = object.__new__(Message)
    put["role"](new, message.role)
    put["content"](new, (_text_part(text),))
    put["tool_calls"](new, message.tool_calls)
    put["tool_call_id"](new, message.tool_call_id)
    put["name"](new, message.name)
    put["pinned"](new, message.pinned)
    put["memory"](new, message.memory)
    put["synthetic"](new, synthetic)
    put["covers"](new, covers)
    put["extra"](new, extra)
    put["metadata"](new, message.metadata)
    call_id = message.tool_call_id
    if message.tool_calls or call_id is None:
        digest = _digest(new)
    else:  # a result's note: the bytes `_digest` hashes for it, joined at once
        data = "".join(
            (
                message.role,
                "\x00ptext",
                text,
                "\x00r",
                call_id,
                "\x00s",
                synthetic,
                "\x01".join(covers),
            )
        )
        hashed = hashlib.sha1(data.encode("utf-8", "surrogatepass"), usedforsecurity=False)
        digest = hashed.hexdigest()
    put["digest"](new, digest)
    put["id"](new, "m_" + digest[:16])
    return new


_CONTENT_FIELDS = ("role", "content", "tool_calls", "tool_call_id", "synthetic", "covers")
_FIELDS = tuple(f.name for f in fields(Message))
_FIELD_NAMES = frozenset(_FIELDS)
_ALL_FIELDS = attrgetter(*_FIELDS)
_PUT: dict[str, Callable[[object, object], None]] = {
    name: vars(Message)[name].__set__ for name in _FIELDS
}
"""Each field's slot setter: how kompakt's own constructors fill a new (frozen) message,
at half the cost of `object.__setattr__` (no name lookup, no argument tuple to slice)."""
_PUT_PART: dict[str, Callable[[object, object], None]] = {
    f.name: vars(Part)[f.name].__set__ for f in fields(Part)
}


def _as_call(call: ToolCall | Mapping[str, Any]) -> ToolCall:
    if isinstance(call, ToolCall):
        return call
    if isinstance(call, Mapping):
        return ToolCall.from_dict(call)
    raise InputError(f"`tool_calls` items must be ToolCall objects or dicts, got {call!r}")


def _text_parts(text: str) -> tuple[Part, ...]:
    return (_text_part(text),) if text else ()


def _text_part(text: str) -> Part:
    """``Part(text=text)``, built without the dataclass `__init__` (one per note)."""
    part = object.__new__(Part)
    put = _PUT_PART
    put["kind"](part, "text")
    put["text"](part, text)
    put["data"](part, {})
    return part


def _digest(m: Message) -> str:
    # One join and one hash call: the same bytes (and so the same digest) as feeding
    # each field to the hash in turn, at a fraction of the calls.
    content = m.content
    if len(content) == 1 and content[0].kind == "text":
        pieces = [m.role, "\x00ptext", content[0].text]
    else:
        pieces = [m.role]
        for p in content:
            pieces += ("\x00p", p.kind, p.text)
            if p.kind != "text":
                pieces.append(json.dumps(p.data, sort_keys=True, default=str))
    for c in m.tool_calls:
        pieces += ("\x00c", c.id, c.name, c.arguments)
    if m.tool_call_id is not None:
        pieces += ("\x00r", m.tool_call_id)
    if m.synthetic:
        pieces += ("\x00s", m.synthetic, "\x01".join(m.covers))
    data = "".join(pieces).encode("utf-8", "surrogatepass")
    return hashlib.sha1(data, usedforsecurity=False).hexdigest()
