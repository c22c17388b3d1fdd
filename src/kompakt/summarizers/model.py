"""`ModelSummarizer`: a `Summarizer` over any `ChatModel`.

It frames the request (`kompakt.summarizers.prompt`: the previous note and only the new
span, fenced as data, bounded in size), asks within a timeout, checks the answer (empty or
far too long is rejected) and falls back to the extractive digest when the model fails,
saying why. The user's standing instructions never go through the model, which could
paraphrase them: they are kept word for word before its text.

>>> import asyncio
>>> from kompakt.messages import Message
>>> from kompakt.models.scripted import ScriptedModel
>>> from kompakt.tokens import CharEstimator
>>> summarizer = ModelSummarizer(ScriptedModel("## Goal\\n- fix the parser"))
>>> written = asyncio.run(summarizer.write(
...     [Message.user("the parser fails on empty input")], limit=100, tokenizer=CharEstimator()))
>>> written.text, written.model_calls, written.fallback
('## Goal\\n- fix the parser', 1, None)
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from kompakt.errors import ConfigError
from kompakt.messages import Message
from kompakt.models.base import (
    ChatModel,
    ChatResponse,
    ask,
    describe_error,
    positive_int,
    positive_timeout,
)
from kompakt.notes import rolled_note, split_ledger, standing_instructions, with_ledger
from kompakt.summarizers.base import Written
from kompakt.summarizers.prompt import (
    DEFAULT_TEMPLATE,
    Rejected,
    bounded_chunks,
    strip_header,
    summary_request,
)
from kompakt.tokens import Tokenizer

__all__ = ["DEFAULT_INSTRUCTION", "ModelSummarizer"]

DEFAULT_INSTRUCTION = "Summarize the transcript."


class ModelSummarizer:
    """Writes notes with a chat model.

    Args:
        model: the chat model (a cheap one is fine) or a model spec string.
        instruction: what to ask for (summarizing strategies pass their own, e.g. a TL;DR).
        template: the sections the note should have (`DEFAULT_TEMPLATE`); None for prose.
        timeout: seconds one model call may take.
        max_input_tokens: the most one request may carry; a longer span is clamped and
            summarized in chunks, each folded into the note so far.

    >>> from kompakt.models.scripted import ScriptedModel
    >>> ModelSummarizer(ScriptedModel("ok"), timeout=30).name
    'scripted'
    """

    def __init__(
        self,
        model: ChatModel | str,
        *,
        instruction: str = DEFAULT_INSTRUCTION,
        template: str | None = DEFAULT_TEMPLATE,
        timeout: float | None = 120.0,
        max_input_tokens: int = 8_000,
    ) -> None:
        from kompakt.models.registry import as_model

        positive_timeout(timeout)
        positive_int("max_input_tokens", max_input_tokens, low=256)
        chat = as_model(model)
        if chat is None:
            raise ConfigError("ModelSummarizer needs a model, for example 'openai:gpt-4o-mini'")
        self.model: ChatModel = chat
        self.instruction = instruction
        self.template = template
        self.timeout = timeout
        self.max_input_tokens = max_input_tokens

    @property
    def name(self) -> str:
        return self.model.name

    async def summarize(
        self,
        span: Sequence[Message],
        *,
        previous: str = "",
        limit: int,
        tokenizer: Tokenizer,
    ) -> str:
        """The note's text; the digest's when the model fails (see `write`)."""
        return (await self.write(span, previous=previous, limit=limit, tokenizer=tokenizer)).text

    async def write(
        self,
        span: Sequence[Message],
        *,
        previous: str = "",
        limit: int,
        tokenizer: Tokenizer,
        merge: bool = True,
    ) -> Written:
        """The note and what it took: calls and tokens, and the fallback taken if any.

        With `merge` the model folds the span into `previous` (one updated note);
        without, `previous` stays as it is and the model's note of the span is appended.
        """
        written = Written()
        rules = standing_instructions(span, previous=previous)
        room = max(16, limit - tokenizer.count_text(with_ledger(rules, "")) - 1) if rules else limit
        try:
            text = await self._ask_all(
                written, span, split_ledger(previous)[1], room, tokenizer, merge
            )
            written.text = with_ledger(rules, text)
            return written
        except Exception as exc:  # any failure of the model falls back, never breaks
            reason = describe_error(exc).removeprefix(f"{self.name}: ")  # ModelError names it
        try:
            written.text = rolled_note(span, previous, limit, tokenizer=tokenizer).text
            written.fallback = f"{self.name}: {reason}; used the extractive digest"
        except Exception as exc:  # pragma: no cover - the digest is plain Python
            written.fallback = f"{self.name}: {reason}; digest failed ({exc}); truncated"
        return written

    async def _ask_all(
        self,
        written: Written,
        span: Sequence[Message],
        previous: str,
        limit: int,
        tok: Tokenizer,
        merge: bool,
    ) -> str:
        """Merge mode folds every chunk into the previous note; accumulate mode asks
        about the new span only (the previous note is context) and appends."""
        chunks = bounded_chunks(span, tok, self.max_input_tokens - tok.count_text(previous))
        if merge or not previous:
            text = previous
            for chunk in chunks:
                text = await self._ask(written, chunk, text, limit, tok)
            return text
        room = max(16, limit - tok.count_text(previous))
        new = await self._ask(written, chunks[0], previous, room, tok, merge=False)
        for chunk in chunks[1:]:
            new = await self._ask(written, chunk, new, room, tok)
        return f"{previous}\n\n{new}"

    async def _ask(
        self,
        written: Written,
        messages: Sequence[Message],
        previous: str,
        limit: int,
        tok: Tokenizer,
        *,
        merge: bool = True,
    ) -> str:
        """One model call within `timeout`, counted on `written`, its answer checked:
        raises `Rejected` for an unusable one. With `merge` the answer replaces
        `previous`; without, it adds to it."""
        request = summary_request(
            messages,
            previous,
            limit,
            instruction=self.instruction,
            template=self.template,
            merge=merge,
        )
        response = await self._call(written, request, max_output_tokens=limit + 16)
        text = strip_header(response.message.text.strip())
        if not text:
            raise Rejected("empty answer")
        size = tok.count_text(text)
        if size > limit * 1.5:  # tokenizers differ: ours only has to be roughly right
            raise Rejected(f"answer too long ({size} tokens, limit {limit})")
        return text

    async def _call(
        self, written: Written, request: Sequence[Message], **options: Any
    ) -> ChatResponse:
        written.model_calls += 1
        async with asyncio.timeout(self.timeout):
            response = await ask(self.model, request, **options)
        written.model_input_tokens += response.usage.input_tokens
        written.model_output_tokens += response.usage.output_tokens
        return response

    def __repr__(self) -> str:
        return f"ModelSummarizer({self.model!r})"
