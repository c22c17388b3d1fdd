"""Summarizers: what turns a span of messages (and the note written before) into a note.

A summarizing strategy chooses the span, fits the note to the budget and places it; a
`Summarizer` only writes the text. Two kinds ship with kompakt: a `ChatModel` (the
strategy frames the request, asks with a timeout and checks the answer) and
`DigestSummarizer`, the model-free digest of `kompakt.notes`. Anything with the same
`summarize` method works too.

>>> import asyncio
>>> from kompakt.messages import Message
>>> from kompakt.tokens import CharEstimator
>>> text = asyncio.run(DigestSummarizer().summarize(
...     [Message.user("From now on, answer in French.")], limit=60, tokenizer=CharEstimator()))
>>> print(text)
## Standing instructions (the user's words)
- From now on, answer in French.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from kompakt.messages import Message
from kompakt.notes import rolled_note
from kompakt.notes.answer import answer
from kompakt.tokens import Tokenizer

__all__ = ["DigestSummarizer", "Summarizer"]


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


class DigestSummarizer:
    """The model-free summarizer: the extractive digest (`kompakt.notes.digest`).

    No weights, no key, no cost; the fallback of every model summarizer.
    """

    name = "digest"

    async def summarize(
        self,
        span: Sequence[Message],
        *,
        previous: str = "",
        limit: int,
        tokenizer: Tokenizer,
    ) -> str:
        return rolled_note(span, previous, limit, tokenizer=tokenizer).text

    def facts(
        self, span: Sequence[Message], question: str, *, tokenizer: Tokenizer, max_facts: int = 6
    ) -> list[str]:
        """The lines of `span` that best answer a focused `question` (fact retrieval)."""
        return answer(span, question, max_facts=max_facts, tokenizer=tokenizer)

    def __repr__(self) -> str:
        return "DigestSummarizer()"
