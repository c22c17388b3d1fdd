"""`DigestSummarizer`: the model-free summarizer, the extractive digest of `kompakt.notes`."""

from __future__ import annotations

from collections.abc import Sequence

from kompakt.messages import Message
from kompakt.notes import rolled_note
from kompakt.notes.answer import answer
from kompakt.tokens import Tokenizer

__all__ = ["DigestSummarizer"]


class DigestSummarizer:
    """The model-free summarizer: the extractive digest (`kompakt.notes.digest`).

    No weights, no key, no cost; the fallback of every other summarizer.

    >>> import asyncio
    >>> from kompakt.tokens import CharEstimator
    >>> note = asyncio.run(DigestSummarizer().summarize(
    ...     [Message.user("Fix src/app.py")], limit=60, tokenizer=CharEstimator()))
    >>> "src/app.py" in note
    True
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
