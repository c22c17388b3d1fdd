"""`load`, `loads`, `dump`, `detect_format` and `to_dicts`: every format behind one door.

`load` reads a file by its path; `loads` parses content (JSON or JSONL text, a parsed
document, a message list). A string is never guessed to be a path, nor a path to be text.

>>> conv = loads('[{"role": "user", "content": "hi"}]')
>>> conv.format, conv[0].text
('openai', 'hi')
>>> dump(conv, format="anthropic")
{'messages': [{'role': 'user', 'content': 'hi'}]}
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kompakt._deprecation import renamed_options
from kompakt.errors import ConfigError, FormatError, InputError
from kompakt.formats.anthropic import (
    from_anthropic,
    is_anthropic_block,
    to_anthropic,
    to_anthropic_messages,
)
from kompakt.formats.conversation import Conversation
from kompakt.formats.gemini import from_gemini, is_gemini_content, to_gemini, to_gemini_contents
from kompakt.formats.jsonl import from_jsonl, to_jsonl
from kompakt.formats.mini_swe_agent import from_mini_swe_agent, to_mini_swe_agent
from kompakt.formats.openai import from_openai, to_openai
from kompakt.formats.reading import MAX_BYTES, check_depth, decode, parse_json, read_file
from kompakt.formats.responses import (
    from_responses_document,
    is_responses_item,
    to_responses,
    to_responses_document,
)
from kompakt.formats.swe_agent import from_swe_agent, message_to_swe_agent, to_swe_agent
from kompakt.messages import Message

__all__ = ["FORMATS", "Content", "detect_format", "dump", "load", "loads", "to_dicts"]

FORMATS: tuple[str, ...] = (
    "openai", "anthropic", "responses", "gemini", "jsonl", "mini-swe-agent", "swe-agent",
)  # fmt: skip
"""Every format name `load` and `dump` accept."""

Content = str | bytes | Mapping[str, Any] | Sequence[Any]
"""What `loads` parses: JSON or JSONL text (str or UTF-8 bytes), a document, a list."""


def load(
    path: str | os.PathLike[str], *, format: str | None = None, max_bytes: int = MAX_BYTES
) -> Conversation:
    """Messages from the transcript file at `path`, in any format (detected when not given).

    Only regular files are read (never a device, a FIFO or a folder), at most
    `max_bytes` of them; errors name `path` as given. To parse content already in
    memory (text, bytes, a dict, a list), use `loads`.

    >>> load("no/such/file.json")
    Traceback (most recent call last):
    ...
    kompakt.errors.FormatError: file not found: 'no/such/file.json'
    """
    if not isinstance(path, str | os.PathLike):
        raise InputError(
            f"load() reads a file: expected a path, got {type(path).__name__} "
            "(parse content with kompakt.loads)"
        )
    if format is not None:
        _check(format)
    shown = repr(os.fspath(path))
    text = read_file(path, max_bytes=max_bytes)
    if Path(path).suffix == ".jsonl" and format in (None, "jsonl"):
        obj: Any = _Jsonl(text)
    else:
        obj = _parse_text(text, format, shown)
    _check_document(obj, shown)
    return _load(obj, format or detect_format(obj))


def loads(content: Content, *, format: str | None = None) -> Conversation:
    """Messages from content: JSON or JSONL text (str or UTF-8 bytes), a parsed document
    or a list of message dicts or `Message` objects. The format is detected when not
    given (see `detect_format`); a string is content, never a path (that is `load`).

    >>> loads({"history": [{"role": "user", "content": "hi"}]}).format
    'swe-agent'
    >>> loads("/etc/passwd")
    Traceback (most recent call last):
    ...
    kompakt.errors.FormatError: text is neither JSON nor JSONL (to read a file, use kompakt.load)
    """
    if format is not None:
        _check(format)
    if isinstance(content, Conversation):
        return content
    if (
        isinstance(content, list | tuple)
        and content
        and all(isinstance(m, Message) for m in content)
    ):
        return Conversation(list(content), format=format)
    if isinstance(content, os.PathLike):
        raise InputError(
            f"loads() parses content, got a path {os.fspath(content)!r}: read files with "
            "kompakt.load"
        )
    obj = _parse_content(content, format)
    _check_document(obj, "the content")
    return _load(obj, format or detect_format(obj))


def _parse_content(content: Any, format: str | None) -> Any:
    """Parse text and bytes; check the nesting of documents and lists."""
    if isinstance(content, bytes | bytearray):
        content = decode(bytes(content), "bytes")
    if isinstance(content, str):
        return _parse_string(content.removeprefix("\ufeff"), format)
    if isinstance(content, Mapping | Sequence):
        check_depth(content, "the document")
        return content
    raise InputError(
        f"loads() parses JSON text, bytes, a dict or a list, got {type(content).__name__}"
    )


def _parse_string(text: str, format: str | None) -> Any:
    stripped = text.lstrip()
    if format == "jsonl" and (not stripped or stripped.startswith("{")):
        return _Jsonl(text)
    if not stripped.startswith(("{", "[")):
        raise FormatError("text is neither JSON nor JSONL (to read a file, use kompakt.load)")
    return _parse_text(text, format, "JSON text")


def _check_document(obj: Any, what: str) -> None:
    if isinstance(obj, str | bytes) and not isinstance(obj, _Jsonl):
        raise FormatError(f"{what} holds no transcript: expected a JSON document or list, or JSONL")


class _Jsonl(str):
    """Text known to be JSONL (so detection and loading keep its line structure)."""


def _parse_text(text: str, format: str | None, what: str) -> Any:
    if format == "jsonl":
        return _Jsonl(text)
    try:
        return parse_json(text, what)
    except ValueError as exc:
        lines = [line for line in text.split("\n") if line.strip()]
        if len(lines) > 1 and all(line.lstrip().startswith("{") for line in lines):
            return _Jsonl(text)
        raise FormatError(f"{what} is not JSON: {exc}") from None


def detect_format(obj: Any) -> str:
    """The format of a parsed document, a message list, JSON or JSONL text, or the file
    at a `Path` (a string is content here, as in `loads`).

    >>> detect_format({"system": "be brief", "messages": []})
    'anthropic'
    >>> detect_format({"info": {}, "messages": [], "trajectory_format": "mini-swe-agent-1.1"})
    'mini-swe-agent'
    >>> detect_format([{"role": "user", "content": "hi"}])
    'openai'
    """
    if isinstance(obj, _Jsonl):
        return "jsonl"
    if isinstance(obj, os.PathLike):
        if Path(obj).suffix == ".jsonl":
            return "jsonl"
        shown = repr(os.fspath(obj))
        obj = _parse_text(read_file(obj), None, shown)
        _check_document(obj, shown)
        return detect_format(obj)
    if isinstance(obj, str | bytes):
        parsed = _parse_content(obj, None)
        _check_document(parsed, "the content")
        return detect_format(parsed)
    if isinstance(obj, Mapping):
        return _detect_document(obj)
    if isinstance(obj, Sequence):
        return _detect_list(obj)
    raise FormatError(f"cannot detect the format of a {type(obj).__name__}: pass format=")


def _detect_list(items: Sequence[Any]) -> str:
    if any(is_responses_item(m) for m in items):
        return "responses"
    if items and all(is_gemini_content(m) for m in items):
        return "gemini"
    return "anthropic" if _has_anthropic_blocks(items) else "openai"


def _detect_document(doc: Mapping[str, Any]) -> str:
    if isinstance(doc.get("history"), list):
        return "swe-agent"
    if isinstance(doc.get("contents"), list):
        return "gemini"
    messages = doc.get("messages")
    if isinstance(messages, list):
        if "trajectory_format" in doc or "info" in doc:
            return "mini-swe-agent"
        if "system" in doc or _has_anthropic_blocks(messages):
            return "anthropic"
        return "openai"
    if "role" in doc:
        return "openai"
    if "input" in doc or (isinstance(doc.get("output"), list) and "object" in doc):
        return "responses"
    keys = ", ".join(sorted(map(str, doc))[:8])
    raise FormatError(f"cannot detect the format of a document with keys [{keys}]: pass format=")


def _has_anthropic_blocks(items: Sequence[Any]) -> bool:
    for m in items:
        content = m.get("content") if isinstance(m, Mapping) else None
        if isinstance(content, list) and any(is_anthropic_block(b) for b in content):
            return True
    return False


def _load(obj: Any, fmt: str) -> Conversation:
    if fmt == "anthropic":
        # a `system` that makes no message (null, []) stays in the envelope: it is data too
        empty = isinstance(obj, Mapping) and obj.get("system") in (None, [])
        env = _envelope(obj, ("messages",) if empty else ("messages", "system"))
        return Conversation(from_anthropic(obj), format=fmt, envelope=env)
    if fmt == "responses":
        msgs, env = from_responses_document(obj)
        return Conversation(msgs, format=fmt, envelope=env)
    if fmt == "gemini":
        env = _envelope(obj, ("contents", "systemInstruction", "system_instruction"))
        return Conversation(from_gemini(obj), format=fmt, envelope=env)
    if fmt == "mini-swe-agent":
        msgs, env, records = from_mini_swe_agent(obj)
        return Conversation(msgs, format=fmt, envelope=env, records=records)
    if fmt == "swe-agent":
        msgs, env = from_swe_agent(obj)
        return Conversation(msgs, format=fmt, envelope=env)
    if isinstance(obj, str):
        return Conversation(from_jsonl(obj), format=fmt)
    if isinstance(obj, Mapping) and "role" in obj:
        obj = [obj]
    if isinstance(obj, Mapping):
        items = obj.get("messages")
        if not isinstance(items, list):
            raise FormatError(f"{fmt} document: 'messages' must be a list of messages")
        return Conversation(from_openai(items), format=fmt, envelope=_envelope(obj, ("messages",)))
    if not isinstance(obj, Sequence):
        raise FormatError(f"{fmt} input must be a list of messages, got {type(obj).__name__}")
    return Conversation(from_openai(obj), format=fmt)


def _envelope(obj: Any, keys: tuple[str, ...]) -> dict[str, Any] | None:
    if not isinstance(obj, Mapping):
        return None
    return {k: v for k, v in obj.items() if k not in keys}


@renamed_options(positional=("format",))
def dump(
    messages: Iterable[Message],
    *,
    format: str | None = None,
    provider: bool = False,
    annotate: bool | None = None,
) -> Any:
    """Render messages in `format` (default: the Conversation's own format, else openai).

    * ``openai``: a list of message dicts (the whole document when loaded from one);
    * ``anthropic``: ``{"system": ..., "messages": [...], ...}`` (a bare list when loaded
      from a bare list without system messages);
    * ``responses``: the item list, or the request / response document it came from
      (``provider=True``: ``{"instructions"?, "input": [...]}``);
    * ``gemini``: ``{"systemInstruction": ..., "contents": [...], ...}`` (a bare list
      when loaded from one without system messages);
    * ``jsonl``: text, one message a line;
    * ``mini-swe-agent`` / ``swe-agent``: the trajectory document, envelope included.

    `provider=True` writes only what the provider accepts: the request shape for
    ``anthropic``, ``responses`` and ``gemini``, OpenAI dicts for every other format.
    `annotate` adds kompakt fields (id, pinned, synthetic, covers, ...) under a
    ``"kompakt"`` key of each OpenAI-style message: True always, False never, None
    (default) only for ``jsonl`` and only the fields that differ from their defaults.

    >>> from kompakt.messages import Message
    >>> dump([Message.system("be brief"), Message.user("hi")], format="anthropic", provider=True)
    {'system': 'be brief', 'messages': [{'role': 'user', 'content': 'hi'}]}
    """
    conv = messages if isinstance(messages, Conversation) else None
    fmt = format or (conv.format if conv is not None and conv.format else "openai")
    _check(fmt)
    if provider and annotate:
        raise ConfigError("`annotate=True` cannot be combined with `provider=True`")
    same = conv is not None and conv.format == fmt
    envelope = conv.envelope if same and conv is not None else None
    records = conv.records if same and conv is not None else []
    msgs = list(messages)
    if fmt == "anthropic":
        if annotate:
            raise ConfigError("`annotate=True` is not supported for 'anthropic': use 'jsonl'")
        bare = same and envelope is None
        if bare and not provider and not any(m.role in ("system", "developer") for m in msgs):
            return to_anthropic_messages(msgs)
        return to_anthropic(msgs, provider=provider, envelope=envelope)
    if fmt in ("responses", "gemini") and annotate:
        raise ConfigError(f"`annotate=True` is not supported for {fmt!r}: use 'jsonl'")
    if fmt == "responses":
        return to_responses_document(msgs, envelope=envelope if same else None, provider=provider)
    if fmt == "gemini":
        bare = same and envelope is None and not provider
        if bare and not any(m.role in ("system", "developer") for m in msgs):
            return to_gemini_contents(msgs)
        return to_gemini(msgs, provider=provider, envelope=envelope)
    if provider and fmt != "jsonl":
        return to_openai(msgs, provider=True)
    if fmt == "jsonl":
        return to_jsonl(msgs, provider=provider, annotate=annotate)
    flag = bool(annotate)
    if fmt == "swe-agent":
        if annotate:
            raise ConfigError("`annotate=True` is not supported for 'swe-agent': use 'jsonl'")
        return to_swe_agent(msgs, envelope=envelope if same else {})
    if fmt == "mini-swe-agent":
        if not flag:
            return to_mini_swe_agent(msgs, envelope=envelope if same else {}, records=records)
        items = to_openai(msgs, annotate=True)
        return {**(envelope or {}), "messages": items}
    items = to_openai(msgs, annotate=flag)
    return items if envelope is None else {**envelope, "messages": items}


@renamed_options(positional=("format",))
def to_dicts(
    messages: Iterable[Message], *, format: str = "openai", provider: bool = False
) -> list[dict[str, Any]]:
    """The message dicts alone, without any document around them.

    ``anthropic`` gives the ``messages`` array and ``gemini`` the ``contents``, so system
    messages are refused (use `dump`, which puts them in ``system`` /
    ``systemInstruction``); ``responses`` gives input items (system messages as
    items); ``swe-agent`` gives history entries; the others give OpenAI dicts.
    """
    _check(format)
    msgs = list(messages)
    if format == "anthropic":
        if any(m.role in ("system", "developer") for m in msgs):
            raise FormatError("Anthropic messages cannot hold system messages: use dump()")
        return to_anthropic_messages(msgs, provider=provider)
    if format == "responses":
        return to_responses(msgs, provider=provider)
    if format == "gemini":
        if any(m.role in ("system", "developer") for m in msgs):
            raise FormatError("Gemini contents cannot hold system messages: use dump()")
        return to_gemini_contents(msgs, provider=provider)
    if format == "swe-agent" and not provider:
        return [message_to_swe_agent(m) for m in msgs]
    return to_openai(msgs, provider=provider)


def _check(fmt: str) -> None:
    if fmt not in FORMATS:
        raise FormatError(f"unknown format {fmt!r}: expected one of {', '.join(FORMATS)}")
