"""The chat-model protocol every summarizer and agent talks to.

A `ChatModel` takes messages (and optionally tools and a JSON schema for structured
output) and returns one assistant `Message` with the `Usage` it cost. Adapters
subclass `BaseChatModel`, which adds a timeout, retries with exponential backoff on
transient failures (connection errors, timeouts, HTTP 429 and 5xx) and a running
usage total; they implement only `_request`, which gets one `ChatRequest`.

>>> import asyncio
>>> from kompakt.messages import Message
>>> class Echo(BaseChatModel):
...     async def _request(self, request):
...         return assistant_response(request.messages[-1].text, Usage(3, 1))
>>> model = Echo(name="echo")
>>> model.chat_sync([Message.user("hi")]).message.text
'hi'
>>> model.total_usage
Usage(input_tokens=3, output_tokens=1, calls=1)
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib.util
import inspect
import math
import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, runtime_checkable

from kompakt._deprecation import deprecated, renamed, renamed_options
from kompakt.errors import ConfigError, KompaktError, MissingDependency, ModelError
from kompakt.messages import Message, ToolCall
from kompakt.overflow import parse_overflow
from kompakt.tokens import CharEstimator, Tokenizer

__all__ = [
    "BaseChatModel",
    "ChatModel",
    "ChatRequest",
    "ChatResponse",
    "ToolSpec",
    "Usage",
    "assistant_response",
    "describe_error",
    "estimate_usage",
    "is_transient",
    "positive_int",
    "positive_timeout",
    "require_sdk",
    "run_sync",
]

T = TypeVar("T")

TRANSIENT_STATUS = frozenset({408, 409, 425, 429})
"""HTTP statuses worth retrying besides every 5xx."""


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens one or more model calls cost. Usages add up.

    >>> Usage(10, 2) + Usage(5, 1)
    Usage(input_tokens=15, output_tokens=3, calls=2)
    """

    input_tokens: int = 0
    """Prompt tokens (as the provider reports them, or estimated)."""
    output_tokens: int = 0
    """Completion tokens."""
    calls: int = 1
    """Model calls counted."""

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.calls + other.calls,
        )

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens


NO_USAGE = Usage(0, 0, 0)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool the model may call: a name, what it does, a JSON schema of its arguments.

    >>> ToolSpec("recall", "Fetch original messages by id", {"type": "object"}).name
    'recall'
    """

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    """JSON schema of the arguments object."""

    def as_function(self) -> dict[str, Any]:
        """The OpenAI function-tool form (also what llama.cpp takes)."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": dict(self.parameters),
            },
        }


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One call's arguments, as `BaseChatModel._request` receives them."""

    messages: Sequence[Message]
    tools: Sequence[ToolSpec] | None = None
    response_format: Mapping[str, Any] | None = None
    """A JSON schema the answer's text must match."""
    max_output_tokens: int | None = None
    """The answer's token limit (None: the provider's default)."""

    @property
    def max_tokens(self) -> int | None:
        """The 0.1 name of `max_output_tokens` (deprecated)."""
        renamed("max_tokens", "max_output_tokens", owner="ChatRequest")
        return self.max_output_tokens


@dataclass(frozen=True, slots=True)
class ChatResponse:
    """One model answer: the assistant message and what it cost."""

    message: Message
    usage: Usage = field(default_factory=Usage)

    @property
    def text(self) -> str:
        """The answer's text."""
        return self.message.text


def assistant_response(
    text: str,
    usage: Usage,
    *,
    tool_calls: Sequence[ToolCall] = (),
    metadata: Mapping[str, Any] | None = None,
) -> ChatResponse:
    """The response of an adapter: one assistant message and its usage.

    >>> assistant_response("hi", Usage(2, 1)).text
    'hi'
    """
    message = Message.assistant(text, tool_calls=tuple(tool_calls), metadata=dict(metadata or {}))
    return ChatResponse(message, usage)


def estimate_usage(
    messages: Sequence[Message], answer: str | Message, tokenizer: Tokenizer | None = None
) -> Usage:
    """Usage counted locally (a server that reports none, a scripted or extractive model).

    >>> estimate_usage([Message.user("x" * 40)], "y" * 8).output_tokens
    2
    """
    tok = tokenizer or CharEstimator()
    out = tok.count_text(answer) if isinstance(answer, str) else tok.count_message(answer)
    return Usage(sum(tok.count_message(m) for m in messages), out)


@runtime_checkable
class ChatModel(Protocol):
    """Anything kompakt can ask: async `chat`, and `chat_sync` for plain code.

    `response_format` is a JSON schema: the answer's text must be JSON matching it.
    """

    @property
    def name(self) -> str:
        """A label for logs and events (for example ``openai:gpt-4.1-mini``)."""
        ...

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSpec] | None = None,
        response_format: Mapping[str, Any] | None = None,
        max_output_tokens: int | None = None,
    ) -> ChatResponse:
        """Ask the model; returns its assistant message and usage."""
        ...

    def chat_sync(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSpec] | None = None,
        response_format: Mapping[str, Any] | None = None,
        max_output_tokens: int | None = None,
    ) -> ChatResponse:
        """`chat` for code without an event loop."""
        ...


async def ask(model: ChatModel, messages: Sequence[Message], **options: Any) -> ChatResponse:
    """``model.chat(messages, **options)``; a model whose `chat` still takes the 0.1
    ``max_tokens`` is given the answer limit under that name, with a DeprecationWarning.

    >>> from kompakt.models.scripted import ScriptedModel
    >>> model = ScriptedModel("ok")
    >>> run_sync(ask(model, [Message.user("hi")], max_output_tokens=5)).text
    'ok'
    """
    if "max_output_tokens" in options and _takes_old_limit(model):
        deprecated(
            f"{type(model).__name__}.chat: name the answer limit `max_output_tokens` "
            "(kompakt passes `max_tokens` to it until 0.3)",
            stacklevel=2,
        )
        options["max_tokens"] = options.pop("max_output_tokens")
    return await model.chat(messages, **options)


def _takes_old_limit(model: ChatModel) -> bool:
    """The model's `chat` names the answer limit ``max_tokens`` (a 0.1 `ChatModel`)."""
    if isinstance(model, BaseChatModel):
        return False
    try:
        params = inspect.signature(model.chat).parameters
    except (TypeError, ValueError):
        return False
    if "max_output_tokens" in params or any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return False
    return "max_tokens" in params


def is_transient(exc: BaseException) -> bool:
    """Worth retrying: connection trouble, a timeout, HTTP 429/408 or any 5xx.

    >>> is_transient(TimeoutError()), is_transient(ValueError("bad schema"))
    (True, False)
    """
    if isinstance(exc, (TimeoutError, ConnectionError)):
        return True
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        if status >= 500 and parse_overflow(exc) is not None:
            return False  # some servers answer an overflow with a 5xx: it never passes
        return status in TRANSIENT_STATUS or status >= 500
    kind = type(exc).__name__
    return "Timeout" in kind or "Connection" in kind or "Overloaded" in kind


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine from sync code, even when an event loop is already running
    in this thread (then it runs on a fresh loop in a worker thread)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


class BaseChatModel(ABC):
    """Timeout, retries with exponential backoff and usage totals around `_request`.

    Args:
        name: label for logs and compaction events.
        timeout: seconds one attempt may take (None = no limit).
        max_retries: extra attempts after a transient failure.
        backoff: seconds before the first retry; doubles each time (with jitter),
            capped at `max_backoff`.

    Failures are raised as `ModelError` (after the retries), with the provider's
    exception as `__cause__`.
    """

    def __init__(
        self,
        *,
        name: str = "model",
        timeout: float | None = 60.0,
        max_retries: int = 2,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
    ) -> None:
        positive_int("max_retries", max_retries, low=0)
        positive_timeout(timeout)
        self._name = name
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.total_usage = NO_USAGE
        """Usage summed over every successful call of this model."""
        self._client: Any = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    @property
    def name(self) -> str:
        return self._name

    @abstractmethod
    async def _request(self, request: ChatRequest) -> ChatResponse:
        """Send one request to the provider (retries and timeouts are the caller's)."""

    def _loop_client(self, make: Callable[[], T]) -> T:
        """The SDK client for the running event loop, made by `make` when there is none
        yet or the loop changed (an async client is bound to the loop it was made on)."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            self._client = make()
            self._client_loop = loop
        return self._client  # type: ignore[no-any-return]

    def _transient(self, exc: BaseException) -> bool:
        """Adapters may widen or narrow what is retried."""
        return is_transient(exc)

    @renamed_options(max_tokens="max_output_tokens")
    async def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSpec] | None = None,
        response_format: Mapping[str, Any] | None = None,
        max_output_tokens: int | None = None,
    ) -> ChatResponse:
        """Ask the model, retrying transient failures; raises `ModelError` at the end."""
        request = ChatRequest(messages, tools, response_format, max_output_tokens)
        attempt = 0
        while True:
            try:
                async with asyncio.timeout(self.timeout):
                    response = await self._request(request)
            except KompaktError:  # our own errors (a bad path, a missing extra) say it all
                raise
            except Exception as exc:
                if attempt >= self.max_retries or not self._transient(exc):
                    raise ModelError(f"{self.name}: {describe_error(exc, 300)}") from exc
                await asyncio.sleep(self._delay(attempt))
                attempt += 1
                continue
            self.total_usage = self.total_usage + response.usage
            return response

    def _delay(self, attempt: int) -> float:
        base = min(self.max_backoff, math.ldexp(self.backoff, attempt))
        return base * (0.5 + random.random() / 2)  # jitter: spread retries of parallel calls

    @renamed_options(max_tokens="max_output_tokens")
    def chat_sync(
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSpec] | None = None,
        response_format: Mapping[str, Any] | None = None,
        max_output_tokens: int | None = None,
    ) -> ChatResponse:
        """`chat` for code without an event loop.

        Inside a running loop it runs on a fresh loop in a worker thread.
        """
        return run_sync(
            self.chat(
                messages,
                tools=tools,
                response_format=response_format,
                max_output_tokens=max_output_tokens,
            )
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def require_sdk(module: str, what: str, extra: str) -> None:
    """Raise `MissingDependency` now when `module` is not installed.

    An adapter checks at construction (without importing the SDK, which stays lazy) so
    that a missing extra fails where the model is named, not at its first call.

    >>> require_sdk("json", "a model", "json")
    >>> require_sdk("no_such_sdk", "Model", "x")
    Traceback (most recent call last):
    ...
    kompakt.errors.MissingDependency: Model needs the [x] extra: pip install "kompakt[x]"
    """
    if importlib.util.find_spec(module) is None:
        raise MissingDependency(what, extra)


def positive_int(name: str, value: object, *, low: int = 1) -> None:
    """Raise `ConfigError` naming the parameter unless `value` is an int >= `low`.

    >>> positive_int("n", 0)
    Traceback (most recent call last):
    kompakt.errors.ConfigError: `n` must be an int >= 1, got 0
    """
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise ConfigError(f"`{name}` must be an int >= {low}, got {value!r}")


def positive_timeout(timeout: float | None) -> None:
    """Raise `ConfigError` unless `timeout` is None (no limit) or > 0 seconds."""
    if timeout is not None and timeout <= 0:
        raise ConfigError(f"`timeout` must be > 0 or None, got {timeout!r}")


def describe_error(exc: BaseException, limit: int = 200) -> str:
    """One line for a failure: "timed out" for a timeout (also one raised as the cause),
    else its message (or type), cut to `limit` characters.

    >>> describe_error(TimeoutError()), describe_error(ValueError("x" * 9), limit=5)
    ('timed out', 'xx...')
    """
    if isinstance(exc, TimeoutError) or isinstance(exc.__cause__, TimeoutError):
        return "timed out"
    text = str(exc) or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."
