"""Recognising a provider's "the request is over the context window" error.

`parse_overflow` reads an error (an SDK exception, an ``httpx.Response``, a dict, JSON
text or bytes) and returns an `Overflow` saying which provider refused, the context
limit and how many tokens were asked for when the error says so, or None for any other
error. It knows the bodies of OpenAI (Chat Completions and Responses), Azure OpenAI,
Anthropic, Gemini, vLLM, llama.cpp's server and Ollama.

>>> body = {"type": "error", "error": {"type": "invalid_request_error",
...         "message": "prompt is too long: 208310 tokens > 200000 maximum"}}
>>> o = parse_overflow(body)
>>> o.provider, o.limit, o.requested, o.tokens_over
('anthropic', 200000, 208310, 8310)
>>> parse_overflow({"error": {"type": "rate_limit_error", "message": "slow down"}}) is None
True

This module imports nothing else from kompakt (the proxy and adapters use it alone).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["DEFAULT_STEP", "PROVIDERS", "Overflow", "parse_overflow"]

PROVIDERS = ("openai", "azure", "anthropic", "gemini", "vllm", "llama.cpp", "ollama")
"""The providers whose overflow errors `parse_overflow` recognises."""

DEFAULT_STEP = 0.2
"""How much smaller a retry is made when the error does not say how far over it was."""


@dataclass(frozen=True, slots=True)
class Overflow:
    """A request the provider refused because it did not fit the context window.

    >>> Overflow("openai", "...", limit=128_000, requested=130_218).tokens_over
    2218
    >>> Overflow("vllm", "...", limit=4096, requested=5000, output_tokens=1000).input_tokens
    4000
    """

    provider: str
    """Who refused: one of `PROVIDERS`."""
    message: str
    """The provider's own message."""
    limit: int | None = None
    """The context window in tokens, when the error says it."""
    requested: int | None = None
    """Tokens the request needed (input, plus the answer reserve when the provider counts it)."""
    tokens_over: int | None = None
    """How far over the limit the request was (``requested - limit``) when known."""
    output_tokens: int | None = None
    """The answer reserve (``max_tokens``) the provider counted in `requested`, when it says so."""
    status_code: int | None = None
    """The HTTP status, when known."""

    def __post_init__(self) -> None:
        if self.tokens_over is None and self.limit is not None and self.requested is not None:
            object.__setattr__(self, "tokens_over", max(self.requested - self.limit, 0))

    @property
    def input_tokens(self) -> int | None:
        """The prompt's own tokens by the provider's count (`requested` less the reserve)."""
        if self.requested is None:
            return None
        return self.requested - (self.output_tokens or 0)

    @property
    def input_limit(self) -> int | None:
        """How many prompt tokens would have fit (the limit less the answer reserve)."""
        if self.limit is None:
            return None
        return self.limit - (self.output_tokens or 0)

    def retry_budget(self, sent: int, *, step: float = DEFAULT_STEP, margin: float = 0.05) -> int:
        """Tokens the retried request may take, in the units `sent` was counted in.

        `sent` is the size of the refused request by the caller's own count (an estimate
        is fine). When the error gives the provider's count and limit, the budget is
        `sent` scaled by how much would have fit, less `margin`, so a tokenizer that
        counts differently from the provider still lands below the limit; when it gives
        only how far over, that much less; otherwise `step` (20%) below `sent`. Never
        more than `sent` less `step`'s smallest bite (1 token), never below 0.

        >>> Overflow("anthropic", "...", limit=200_000, requested=250_000).retry_budget(100_000)
        76000
        >>> Overflow("openai", "...").retry_budget(100_000)
        80000
        """
        given, fits = self.input_tokens, self.input_limit
        if given and fits is not None:
            budget = sent * max(fits, 0) / given * (1 - margin)
        elif self.tokens_over is not None:
            budget = (sent - self.tokens_over) * (1 - margin)
        else:
            budget = sent * (1 - step)
        return max(0, min(int(budget), sent - 1))


def parse_overflow(error_or_body: Any, *, provider: str | None = None) -> Overflow | None:
    """The context overflow `error_or_body` reports, or None when it reports another error.

    Args:
        error_or_body: an exception from the ``openai``, ``anthropic`` or ``google-genai``
            SDK (also one raised from it, such as kompakt's `ModelError`), an
            ``httpx.Response``, a decoded JSON body (dict or list), JSON text or bytes,
            or plain error text.
        provider: who answered, when the body alone cannot tell (an OpenAI-shaped body
            also comes from Azure, vLLM and Ollama); otherwise guessed from the body and,
            for a response, its URL.

    >>> parse_overflow('{"error": {"code": 400, "message": "The input token count (1196265) '
    ...                'exceeds the maximum number of tokens allowed (1048576).", '
    ...                '"status": "INVALID_ARGUMENT"}}').provider
    'gemini'
    """
    for payload, status, hint in _sources(error_or_body, provider):
        found = _first(payload, status, hint)
        if found is not None:
            return found
    return None


# -- where an error keeps its body --------------------------------------------------------

_Source = tuple[Any, "int | None", "str | None"]


def _sources(obj: Any, hint: str | None) -> Iterator[_Source]:
    if isinstance(obj, BaseException):
        yield from _exception_sources(obj, hint)
    elif _is_response(obj):
        yield from _response_sources(obj, hint)
    else:
        yield obj, None, hint


def _exception_sources(exc: BaseException, hint: str | None) -> Iterator[_Source]:
    seen: set[int] = set()
    chain: BaseException | None = exc
    texts: list[_Source] = []
    while chain is not None and id(chain) not in seen and len(seen) < 8:
        seen.add(id(chain))
        status = _int(getattr(chain, "status_code", None)) or _int(getattr(chain, "code", None))
        response = getattr(chain, "response", None)
        here = hint
        if _is_response(response):
            here = hint or _hint_from_response(response)
            status = status or _int(getattr(response, "status_code", None))
        if _is_response(response):  # the raw body first: an SDK's `body` may be cut down
            yield from _response_sources(response, here)
        for attr in ("body", "details"):  # openai/anthropic keep `body`; google-genai `details`
            body = getattr(chain, attr, None)
            if body is not None:
                yield body, status, here
        texts.append((str(chain), status, here))
        chain = chain.__cause__ or chain.__context__
    yield from texts  # plain text last: structured bodies say more


def _is_response(obj: Any) -> bool:
    """An ``httpx.Response`` (or alike), told by its attributes, never imported."""
    return (
        obj is not None
        and not isinstance(obj, BaseException)
        and hasattr(obj, "status_code")
        and hasattr(obj, "headers")
        and hasattr(obj, "content")
    )


def _response_sources(response: Any, hint: str | None) -> Iterator[_Source]:
    status = _int(getattr(response, "status_code", None))
    try:
        content = response.content
    except Exception:  # a streamed response not read yet has no content
        return
    yield content, status, hint or _hint_from_response(response)


def _hint_from_response(response: Any) -> str | None:
    """Azure answers in OpenAI's shape; its host and headers tell it apart."""
    headers = getattr(response, "headers", None) or {}
    try:
        host = str(response.request.url.host)
    except Exception:  # a response built by hand has no request
        host = ""
    if host.endswith(".azure.com") or "x-ms-region" in headers or "apim-request-id" in headers:
        return "azure"
    return None


# -- reading a body -----------------------------------------------------------------------


def _first(payload: Any, status: int | None, hint: str | None) -> Overflow | None:
    for err, wrapped in _error_objects(_decode(payload), False):
        found = _classify(err, status, hint, wrapped)
        if found is not None:
            return found
    if isinstance(payload, (str, bytes, bytearray)):
        text = payload.decode("utf-8", "replace") if not isinstance(payload, str) else payload
        return _classify({"message": text}, status, hint, False)
    return None


def _decode(payload: Any) -> Any:
    if isinstance(payload, (bytes, bytearray)):
        payload = payload.decode("utf-8", "replace")
    if isinstance(payload, str):
        parsed = _json(payload)
        return payload if parsed is None else parsed
    return payload


def _json(text: str) -> Any:
    text = text.strip()
    if not text or text[0] not in "[{":
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _error_objects(
    doc: Any, wrapped: bool, depth: int = 0
) -> Iterator[tuple[Mapping[str, Any], bool]]:
    """Every error-like object inside `doc`, innermost first.

    `wrapped` is True below an error given as a JSON string (Ollama passes llama.cpp's
    error body on that way).
    """
    if depth > 6:
        return
    if isinstance(doc, list):
        for item in doc:
            yield from _error_objects(item, wrapped, depth + 1)
        return
    if not isinstance(doc, Mapping):
        return
    err = doc.get("error")
    if isinstance(err, (Mapping, list)):
        yield from _error_objects(err, wrapped, depth + 1)
    elif isinstance(err, str):
        inner = _json(err)
        if inner is not None:
            yield from _error_objects(inner, True, depth + 1)
        else:
            yield {"message": err}, wrapped
    response = doc.get("response")  # Responses API: a failed response, or its stream event
    if isinstance(response, Mapping):
        yield from _error_objects(response, wrapped, depth + 1)
    message = doc.get("message")
    if isinstance(message, str) and _json(message) is not None:  # an error inside the message
        yield from _error_objects(_json(message), wrapped, depth + 1)
    if any(k in doc for k in ("message", "code", "type", "msg")):
        yield doc, wrapped


# -- deciding what an error object says ---------------------------------------------------

_N = r"(\d[\d,]*)"
_ANTHROPIC = re.compile(rf"prompt is too long:\s*{_N} tokens?\s*>\s*{_N}\s*maximum", re.I)
_ANTHROPIC_WITH_OUTPUT = re.compile(
    rf"input length and `?max_tokens`? exceed context limit:\s*{_N}\s*\+\s*{_N}\s*>\s*{_N}", re.I
)
_GEMINI = re.compile(
    rf"input token count\s*\(?{_N}\)?\s*exceeds the maximum number of tokens allowed\s*\(?{_N}",
    re.I,
)
_LLAMA_CPP = re.compile(
    rf"request\s*\({_N} tokens\)\s*exceeds the available context size\s*\({_N} tokens\)", re.I
)
_LLAMA_CPP_PLAIN = re.compile(r"exceeds the available context size", re.I)
_OLLAMA = re.compile(r"input length exceeds (?:the )?(?:maximum )?context length", re.I)
_MAX_CONTEXT = re.compile(rf"maximum context length is\s*{_N}\s*tokens", re.I)
_REQUESTED = re.compile(
    rf"(?:you requested|your messages resulted in|your request has)\s*(?:about\s*)?{_N}"
    r"\s*(?:input\s*)?tokens",
    re.I,
)
_SPLIT = re.compile(rf"\(\s*{_N} in the messages,\s*{_N} in the completion", re.I)
_VLLM_MAX_TOKENS = re.compile(
    rf"max_(?:completion_)?tokens'? is too large:\s*{_N}.*?maximum context length is\s*{_N}"
    rf"\s*tokens and your request has\s*{_N}\s*input tokens",
    re.I | re.S,
)
_OPENAI_WINDOW = re.compile(r"exceeds the context window|context_length_exceeded", re.I)


def _classify(
    err: Mapping[str, Any], status: int | None, hint: str | None, wrapped: bool
) -> Overflow | None:
    message = str(err.get("message") or err.get("msg") or "")
    code = err.get("code")
    kind = str(err.get("type") or "")

    def make(provider: str, **numbers: int | None) -> Overflow:
        return Overflow(hint or provider, message, status_code=status, **numbers)

    if kind == "exceed_context_size_error" or _LLAMA_CPP_PLAIN.search(message):
        # llama.cpp's server; Ollama passes the same body on inside its own error string
        m = _LLAMA_CPP.search(message)
        limit = _int(err.get("n_ctx")) or (_num(m, 2) if m else None)
        requested = _int(err.get("n_prompt_tokens")) or (_num(m, 1) if m else None)
        return make("ollama" if wrapped else "llama.cpp", limit=limit, requested=requested)
    if m := _ANTHROPIC.search(message):
        return make("anthropic", limit=_num(m, 2), requested=_num(m, 1))
    if m := _ANTHROPIC_WITH_OUTPUT.search(message):
        given, reserve = _num(m, 1), _num(m, 2)
        return make("anthropic", limit=_num(m, 3), requested=given + reserve, output_tokens=reserve)
    if m := _GEMINI.search(message):
        return make("gemini", limit=_num(m, 2), requested=_num(m, 1))
    if _OLLAMA.search(message):
        return make("ollama")
    if m := _VLLM_MAX_TOKENS.search(message):
        reserve, given = _num(m, 1), _num(m, 3)
        return make("vllm", limit=_num(m, 2), requested=given + reserve, output_tokens=reserve)
    if (
        code == "context_length_exceeded"
        or _MAX_CONTEXT.search(message)
        or (_OPENAI_WINDOW.search(message))
    ):
        limit = _num(_MAX_CONTEXT.search(message), 1)
        requested = _num(_REQUESTED.search(message), 1)
        split = _SPLIT.search(message)
        reserve = _num(split, 2) if split else None
        return make(_openai_family(err), limit=limit, requested=requested, output_tokens=reserve)
    return None


def _openai_family(err: Mapping[str, Any]) -> str:
    """OpenAI's codes are strings; vLLM answers ``code: 400`` with ``type: BadRequestError``."""
    if err.get("type") == "BadRequestError" or err.get("object") == "error":
        return "vllm"
    if isinstance(err.get("code"), int):
        return "vllm"
    return "openai"


def _num(match: re.Match[str] | None, group: int) -> Any:
    if match is None:
        return None
    return int(match.group(group).replace(",", ""))


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return None
