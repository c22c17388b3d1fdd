"""The input tokens an upstream reports, from a JSON response or an SSE stream, and what
the reply cost when the upstream compacted the conversation itself.

OpenAI reports ``usage.prompt_tokens`` (in the last chunk of a stream, when the client
asked for it); Anthropic reports ``usage.input_tokens`` plus the cache reads and writes
(in ``message_start`` of a stream), and, when it compacted, a ``compaction`` step in
``usage.iterations`` (see `kompakt.formats.usage`).

>>> input_tokens({"usage": {"prompt_tokens": 120, "completion_tokens": 5}})
120
>>> sniff = UsageSniffer()
>>> sniff.feed(b'event: message_start\\ndata: {"type":"message_start","message":{"usage":')
>>> sniff.feed(b'{"input_tokens":90,"cache_read_input_tokens":10}}}\\n\\n')
>>> sniff.tokens
100
>>> sniff.feed(b'data: {"type":"message_delta","usage":{"output_tokens":40,"iterations":'
...            b'[{"type":"compaction","output_tokens":700},'
...            b'{"type":"message","output_tokens":40}]}}\\n')
>>> sniff.reply
740
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kompakt.formats.usage import reply_tokens

__all__ = ["UsageSniffer", "compacted_reply_tokens", "input_tokens"]

_CACHE = ("cache_read_input_tokens", "cache_creation_input_tokens")


def input_tokens(body: Any) -> int | None:
    """Input tokens reported in a response body or stream event, or None."""
    if not isinstance(body, Mapping):
        return None
    usage = body.get("usage")
    if not isinstance(usage, Mapping):
        message = body.get("message") or body.get("response")  # Anthropic / Responses events
        return input_tokens(message) if isinstance(message, Mapping) else None
    for key in ("prompt_tokens", "input_tokens"):
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            extra = sum(v for k in _CACHE if isinstance(v := usage.get(k), int))
            return value + extra
    return None


def compacted_reply_tokens(body: Any) -> int | None:
    """Tokens of a reply in which the upstream compacted the conversation (Anthropic's
    ``compaction`` iteration and what followed it), from a response body or stream event;
    None when it did not compact.

    >>> compacted_reply_tokens({"usage": {"output_tokens": 5}}) is None
    True
    """
    if not isinstance(body, Mapping):
        return None
    usage = body.get("usage")
    if not isinstance(usage, Mapping):
        message = body.get("message")
        return compacted_reply_tokens(message) if isinstance(message, Mapping) else None
    return reply_tokens(usage)


class UsageSniffer:
    """Reads ``data:`` lines of an SSE stream as it passes and keeps the last usage seen.

    Only lines mentioning ``usage`` are parsed, so a long stream costs a substring search.
    """

    def __init__(self) -> None:
        self.tokens: int | None = None
        self.reply: int | None = None
        """What the reply cost when the upstream compacted (`compacted_reply_tokens`)."""
        self._tail = b""

    def feed(self, chunk: bytes) -> None:
        data = self._tail + chunk
        lines = data.split(b"\n")
        self._tail = lines.pop()
        if len(self._tail) > 1 << 20:  # one line that long is no event we read
            self._tail = b""
        for line in lines:
            if line.startswith(b"data:") and b'"usage"' in line:
                self._read(line[5:])

    def _read(self, data: bytes) -> None:
        try:
            event = json.loads(data)
        except ValueError:
            return
        found = input_tokens(event)
        if found is not None:
            self.tokens = found
        reply = compacted_reply_tokens(event)
        if reply is not None:
            self.reply = reply
