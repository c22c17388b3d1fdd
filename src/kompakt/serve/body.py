"""A request body, parsed only where it is new.

An agent resends its whole conversation with every request: the last request's bytes
and a few messages more. `scan` parses a body once and notes where its messages array
and its last message end (a `Body`). `Body.follow` takes the next body of the same
conversation: when it starts with the same bytes up to the end of the last message (one
memory comparison), only what follows is parsed, the new messages and the fields after
the array; the fields before it are the last body's. Anything else (an edited or
shorter history, a body of another shape) is None, and the caller parses it whole.

>>> first = b'{"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": true}'
>>> body = scan(first, "messages")
>>> body.new, body.fields
([{'role': 'user', 'content': 'hi'}], {'model': 'm', 'stream': True})
>>> later = first.replace(b'}], "stream": true', b'}, {"role": "user", "content": "more"}]')
>>> nxt = body.follow(later)
>>> nxt.new, nxt.count, nxt.fields
([{'role': 'user', 'content': 'more'}], 2, {'model': 'm'})
>>> body.follow(first.replace(b'"hi"', b'"ho"')) is None  # an edited history
True
>>> nxt.splice(b'[]')
b'{"model": "m", "messages": []}'
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["Body", "scan"]

_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
_scanstring: Any = json.decoder.scanstring  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class Body:
    """A JSON object request body with its conversation array located (byte offsets)."""

    raw: bytes
    key: str
    """The member holding the conversation (``messages``)."""
    head: dict[str, Any]
    """The members before the array."""
    tail: dict[str, Any]
    """The members after the array."""
    open: int
    """Where the array's ``[`` is."""
    end: int
    """Just past the array's last element (just past ``[`` when it is empty)."""
    close: int
    """Where the array's ``]`` is."""
    count: int
    """Elements in the array."""
    new: list[Any]
    """The elements parsed for this body: all of them from `scan`, the new ones from `follow`."""

    @property
    def fields(self) -> dict[str, Any]:
        """Every member but the array."""
        return {**self.head, **self.tail}

    def follow(self, raw: bytes) -> Body | None:
        """The next body of the conversation, parsed from where this one's last element
        ended; None unless `raw` starts with this body's bytes up to there and goes on
        with more elements (or none) and the array's end."""
        end = self.end
        if not self.count or len(raw) <= end or not raw.startswith(memoryview(self.raw)[:end]):
            return None
        try:
            text = raw[end:].decode("utf-8")
            new: list[Any] = []
            last = 0
            i = _ws(text, 0)
            while text.startswith(",", i):
                value, last = _DECODER.raw_decode(text, _ws(text, i + 1))
                new.append(value)
                i = _ws(text, last)
            if not text.startswith("]", i):
                return None
            tail: dict[str, Any] = {}
            if _members(text, _ws(text, i + 1), tail, self.key, self.head) is None:
                return None
        except (ValueError, RecursionError):
            return None
        at = _Offsets(text)
        return Body(
            raw, self.key, self.head, tail, self.open, end + at(last), end + at(i),
            self.count + len(new), new,
        )  # fmt: skip

    def splice(self, array: bytes) -> bytes:
        """The body with `array` (JSON) in place of its conversation array."""
        return b"".join((self.raw[: self.open], array, self.raw[self.close + 1 :]))


def scan(raw: bytes, key: str) -> Body | None:
    """`raw` parsed, its `key` array located; None unless it is a UTF-8 JSON object
    holding `key` once, as an array."""
    try:
        text = raw.decode("utf-8")
        i = _ws(text, 0)
        if not text.startswith("{", i):
            return None
        head: dict[str, Any] = {}
        i = _ws(text, i + 1)
        while text.startswith('"', i):
            name, i = _scanstring(text, i + 1)
            i = _ws(text, i)
            if not text.startswith(":", i):
                return None
            i = _ws(text, i + 1)
            if name == key:
                return _found(raw, text, key, head, i)
            if name in head:
                return None
            head[name], i = _DECODER.raw_decode(text, i)
            i = _ws(text, i)
            if not text.startswith(",", i):
                return None
            i = _ws(text, i + 1)
    except (ValueError, RecursionError):
        return None
    return None


def _found(raw: bytes, text: str, key: str, head: dict[str, Any], i: int) -> Body | None:
    """The body once `key`'s value is found at `i`."""
    if not text.startswith("[", i):
        return None
    array, after = _DECODER.raw_decode(text, i)
    close = after - 1
    last = close
    while text[last - 1] in " \t\n\r":
        last -= 1
    tail: dict[str, Any] = {}
    if _members(text, _ws(text, after), tail, key, head) is None:
        return None
    at = _Offsets(text)
    return Body(raw, key, head, tail, at(i), at(last), at(close), len(array), array)


def _members(text: str, i: int, into: dict[str, Any], key: str, head: dict[str, Any]) -> int | None:
    """Read the members after a value at `i` (``, "name": value ... }``) into `into`;
    the end, or None when the object does not close there or names a member twice."""
    while text.startswith(",", i):
        i = _ws(text, i + 1)
        if not text.startswith('"', i):
            return None
        name, i = _scanstring(text, i + 1)
        i = _ws(text, i)
        if not text.startswith(":", i) or name == key or name in head or name in into:
            return None
        into[name], i = _DECODER.raw_decode(text, _ws(text, i + 1))
        i = _ws(text, i)
    if not text.startswith("}", i) or _ws(text, i + 1) != len(text):
        return None
    return i + 1


def _ws(text: str, i: int) -> int:
    return _WS.match(text, i).end()  # type: ignore[union-attr]


class _Offsets:
    """Byte offsets of character positions in `text` (the same for ASCII text)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.ascii = text.isascii()

    def __call__(self, i: int) -> int:
        return i if self.ascii else len(self.text[:i].encode("utf-8"))
