"""What a summarizer is (`Summarizer`), what writing a note gives back (`Written`), and
`write_note`, the one way a strategy asks any summarizer for a note."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from kompakt.messages import Message
from kompakt.models.base import describe_error
from kompakt.notes import rolled_note, split_ledger, standing_instructions, with_ledger
from kompakt.tokens import Tokenizer

__all__ = ["Summarizer", "Written", "write_note"]


@runtime_checkable
class Summarizer(Protocol):
    """Writes a note of `span` within about `limit` tokens, given the `previous` note."""

    @property
    def name(self) -> str:
        """A label for events (``digest``, a model's name...)."""
        ...

    async def summarize(
        self,
        span: Sequence[Message],
        *,
        previous: str = "",
        limit: int,
        tokenizer: Tokenizer,
    ) -> str:
        """The note's text (without kompakt's header line)."""
        ...


@dataclass
class Written:
    """A note's text and what writing it took: what a strategy records on its step.

    >>> Written("## Goal\\n- ship it", model_calls=1).fallback is None
    True
    """

    text: str = ""
    model_calls: int = 0
    model_input_tokens: int = 0
    model_output_tokens: int = 0
    fallback: str | None = None
    """Why the text is the digest's and not the summarizer's (None: the summarizer's)."""
    instructions_dropped: int = 0
    """Oldest standing instructions a digest left out: its ledger passed its share."""


async def write_note(
    summarizer: Summarizer,
    span: Sequence[Message],
    *,
    previous: str = "",
    limit: int,
    tokenizer: Tokenizer,
    timeout: float | None = None,
    merge: bool = True,
) -> Written:
    """`summarizer`'s note of `span`, never an error: a summarizer with its own `write`
    (`ModelSummarizer`) writes it with its accounting; any other is asked within
    `timeout` for the note after the user's standing instructions, which are kept word
    for word before its text; when it fails or says nothing, the digest stands in and
    `fallback` says why. `merge` is for a summarizer that can also append to `previous`.

    >>> from kompakt.tokens import CharEstimator
    >>> class Silent:
    ...     name = "silent"
    ...     async def summarize(self, span, *, previous="", limit, tokenizer):
    ...         return ""
    >>> written = asyncio.run(write_note(Silent(), [Message.user("fix src/app.py")],
    ...                                  limit=80, tokenizer=CharEstimator()))
    >>> written.fallback, "src/app.py" in written.text
    ('silent: empty note; used the extractive digest', True)
    """
    own = getattr(summarizer, "write", None)
    if own is not None:
        written: Written = await own(
            span, previous=previous, limit=limit, tokenizer=tokenizer, merge=merge
        )
        return written
    rules = standing_instructions(span, previous=previous)
    room = max(16, limit - tokenizer.count_text(with_ledger(rules, "")) - 1) if rules else limit
    try:
        async with asyncio.timeout(timeout):
            text = await summarizer.summarize(
                span, previous=split_ledger(previous)[1], limit=room, tokenizer=tokenizer
            )
        if text.strip():
            return Written(with_ledger(rules, text.strip()))
        reason = "empty note"
    except Exception as exc:  # any failure falls back, never breaks
        reason = describe_error(exc)
    note = rolled_note(span, previous, room, tokenizer=tokenizer)
    return Written(
        with_ledger(rules, note.text),
        fallback=f"{summarizer.name}: {reason}; used the extractive digest",
        instructions_dropped=note.instructions_dropped,
    )
