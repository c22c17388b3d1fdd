"""`ScriptedModel`: an in-package test double of a remote chat model.

It answers from a script instead of the network, and records every request, so tests
can assert on exactly what a strategy or agent sent. It goes through the same
timeout/retry path as a real adapter, and `delay` sleeps asynchronously per call, so
concurrency can be measured.

A script entry is a `str` (the answer's text), a `Message` (for example one with tool
calls), an `Exception` (raised as the remote failure), or a callable taking the
messages and returning one of those (it may be async).

>>> from kompakt.messages import Message
>>> model = ScriptedModel(["first", "second"])
>>> model.chat_sync([Message.user("hi")]).message.text
'first'
>>> model.chat_sync([Message.user("again")]).message.text
'second'
>>> [r[-1].text for r in model.requests]
['hi', 'again']
>>> echo = ScriptedModel(lambda msgs: msgs[-1].text.upper())
>>> echo.chat_sync([Message.user("loud")]).message.text
'LOUD'
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeAlias

from kompakt._deprecation import renamed
from kompakt.errors import ModelError
from kompakt.messages import Message
from kompakt.models.base import (
    BaseChatModel,
    ChatRequest,
    ChatResponse,
    ToolSpec,
    Usage,
    estimate_usage,
)
from kompakt.tokens import CharEstimator, Tokenizer

__all__ = ["ScriptEntry", "ScriptedModel", "ScriptedRequest"]

Answer: TypeAlias = "str | Message | BaseException"
ScriptEntry: TypeAlias = (
    "str | Message | BaseException | Callable[[list[Message]], Answer | Awaitable[Answer]]"
)


class ScriptedRequest(list[Message]):
    """The messages of one request (it is that list), plus what came with them."""

    def __init__(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSpec] | None,
        response_format: Mapping[str, Any] | None,
        max_output_tokens: int | None,
        input_tokens: int,
    ) -> None:
        super().__init__(messages)
        self.tools = list(tools) if tools else []
        self.response_format = response_format
        self.max_output_tokens = max_output_tokens
        self.input_tokens = input_tokens

    @property
    def max_tokens(self) -> int | None:
        """The 0.1 name of `max_output_tokens` (deprecated)."""
        renamed("max_tokens", "max_output_tokens", owner="ScriptedRequest")
        return self.max_output_tokens


class ScriptedModel(BaseChatModel):
    """A scripted stand-in for a remote model.

    Args:
        responses: one entry (answers every call) or a list consumed in order; when a
            list runs out the call fails with `ModelError` (or starts over with
            `cycle=True`).
        delay: seconds each call sleeps (asynchronously) before answering.
        name: the model's label.
        tokenizer: counts input and output tokens for `Usage` (CharEstimator).
        timeout, max_retries: as on every adapter (no retries by default, so a
            scripted exception surfaces at once).

    Attributes:
        requests: every request received, in order: a list of messages with
            ``.tools``, ``.response_format``, ``.max_output_tokens`` and ``.input_tokens``.
        max_concurrent: the most calls that were in flight at once.
    """

    def __init__(
        self,
        responses: ScriptEntry | Sequence[ScriptEntry],
        *,
        delay: float = 0.0,
        name: str = "scripted",
        cycle: bool = False,
        tokenizer: Tokenizer | None = None,
        timeout: float | None = None,
        max_retries: int = 0,
    ) -> None:
        super().__init__(name=name, timeout=timeout, max_retries=max_retries, backoff=0.0)
        if isinstance(responses, (str, Message, BaseException)) or callable(responses):
            self._script: list[ScriptEntry] = [responses]
            self._cycle = True
        else:
            self._script = list(responses)
            self._cycle = cycle
        self.delay = delay
        self.tokenizer: Tokenizer = tokenizer or CharEstimator()
        self.requests: list[ScriptedRequest] = []
        self.max_concurrent = 0
        self._in_flight = 0
        self._next = 0

    @property
    def calls(self) -> int:
        """Requests received so far."""
        return len(self.requests)

    @property
    def input_tokens(self) -> int:
        """Input tokens of every request received."""
        return sum(r.input_tokens for r in self.requests)

    async def _request(self, request: ChatRequest) -> ChatResponse:
        messages, tools = request.messages, request.tools
        input_tokens = estimate_usage(messages, "", self.tokenizer).input_tokens
        for t in tools or ():
            input_tokens += self.tokenizer.count_text(t.name + t.description + str(t.parameters))
        self.requests.append(
            ScriptedRequest(
                messages,
                tools=tools,
                response_format=request.response_format,
                max_output_tokens=request.max_output_tokens,
                input_tokens=input_tokens,
            )
        )
        entry = self._take()
        self._in_flight += 1
        self.max_concurrent = max(self.max_concurrent, self._in_flight)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            answer = await _resolve(entry, list(messages))
        finally:
            self._in_flight -= 1
        if isinstance(answer, BaseException):
            raise answer
        message = Message.assistant(answer) if isinstance(answer, str) else answer
        output_tokens = self.tokenizer.count_message(message)
        return ChatResponse(message, Usage(input_tokens, output_tokens))

    def _take(self) -> ScriptEntry:
        if self._next >= len(self._script):
            if not self._cycle or not self._script:
                raise ModelError(
                    f"{self.name}: script exhausted after {len(self._script)} responses; "
                    "give more responses or cycle=True"
                )
            self._next = 0
        entry = self._script[self._next]
        self._next += 1
        return entry

    def __repr__(self) -> str:
        return (
            f"ScriptedModel(responses={len(self._script)}, delay={self.delay}, name={self.name!r})"
        )


async def _resolve(entry: ScriptEntry, messages: list[Message]) -> Answer:
    if isinstance(entry, (str, Message, BaseException)):
        return entry
    try:
        result = entry(messages)
        if inspect.isawaitable(result):
            result = await result
    except Exception as exc:  # a callable may raise instead of returning the failure
        return exc
    return result
