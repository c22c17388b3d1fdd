"""JSONL transcripts: one OpenAI-style message dict per line.

kompakt-only fields (id, pinned, memory, synthetic, covers, metadata) travel under a
``"kompakt"`` key of the line, so a compacted history written and read back keeps its
provenance.

>>> from kompakt.messages import Message
>>> text = to_jsonl([Message.user("hi", pinned=True)], annotate=None)
>>> text
'{"role": "user", "content": "hi", "kompakt": {"pinned": true}}\\n'
>>> from_jsonl(text)[0].pinned
True
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from kompakt.errors import FormatError
from kompakt.formats.openai import from_openai_indexed, to_openai
from kompakt.formats.reading import parse_json
from kompakt.messages import Message

__all__ = ["from_jsonl", "parse_jsonl", "to_jsonl"]


def parse_jsonl(text: str) -> list[Any]:
    """The JSON value of each non-blank line; a bad line is named in the error."""
    out: list[Any] = []
    # split on "\n" only: str.splitlines() would also split inside JSON strings holding
    # U+0085 or U+2028, which json.dumps(ensure_ascii=False) writes raw
    for n, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        try:
            out.append(parse_json(line, f"JSONL line {n}"))
        except ValueError as exc:
            raise FormatError(f"JSONL line {n}: not valid JSON ({exc})") from None
    return out


def from_jsonl(text: str) -> list[Message]:
    """Messages from JSONL text (message indexes in errors count non-blank lines)."""
    return from_openai_indexed(enumerate(parse_jsonl(text)))


def to_jsonl(
    messages: Iterable[Message], *, provider: bool = False, annotate: bool | None = None
) -> str:
    """JSONL text, one message a line, ending with a newline (empty for no messages)."""
    lines = [
        json.dumps(d, ensure_ascii=False)
        for d in to_openai(messages, provider=provider, annotate=annotate)
    ]
    return "".join(line + "\n" for line in lines)
