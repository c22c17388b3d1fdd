"""`Conversation`: a message list that remembers the document it came from.

>>> from kompakt.messages import Message
>>> conv = Conversation([Message.user("hi")], format="mini-swe-agent", envelope={"info": {}})
>>> conv.format, len(conv), conv.with_messages([]).envelope
('mini-swe-agent', 1, {'info': {}})
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kompakt.messages import Message

__all__ = ["Conversation"]


class Conversation(list[Message]):
    """A `list[Message]` plus where it came from, so `dump` can write the same document.

    Attributes:
        format: the format it was loaded from (None when built by hand).
        envelope: the document around the messages (every other top-level key), or
            None when the source was a bare message list.
        records: entries of the message list that are not chat messages (mini-swe-agent's
            final ``{"role": "exit"}``), as ``(number of chat messages before it, entry)``.
    """

    def __init__(
        self,
        messages: Iterable[Message] = (),
        *,
        format: str | None = None,
        envelope: Mapping[str, Any] | None = None,
        records: Iterable[tuple[int, Any]] = (),
    ) -> None:
        super().__init__(messages)
        self.format = format
        self.envelope: dict[str, Any] | None = None if envelope is None else dict(envelope)
        self.records: list[tuple[int, Any]] = list(records)

    def with_messages(self, messages: Iterable[Message]) -> Conversation:
        """New messages in the same document (for example a compacted list)."""
        return Conversation(
            messages, format=self.format, envelope=self.envelope, records=self.records
        )

    def __repr__(self) -> str:
        return f"Conversation(format={self.format!r}, messages={len(self)})"
