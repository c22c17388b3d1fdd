"""`OpenAIModel`: any OpenAI-compatible chat completions server, on the `openai` SDK.

That covers OpenAI itself and, through `base_url`, Ollama, vLLM, LM Studio and
llama.cpp's server. Tools are passed as functions; a JSON schema asks for structured
output (``response_format`` ``json_schema``), falling back to ``json_object`` with the
schema in the prompt for servers that lack it.

>>> model = OpenAIModel("qwen3", base_url="http://localhost:8080/v1")
>>> model.name, model.base_url
('openai:qwen3', 'http://localhost:8080/v1')
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kompakt.messages import Message, ToolCall
from kompakt.models.base import (
    BaseChatModel,
    ChatRequest,
    ChatResponse,
    Usage,
    assistant_response,
    estimate_usage,
    require_sdk,
)

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["OpenAIModel"]

_NO_KEY = "not-needed"  # local servers take any key; the SDK insists on one


class OpenAIModel(BaseChatModel):
    """A model behind an OpenAI-compatible API.

    Args:
        model: the model name the server knows (``gpt-4.1-mini``, ``qwen3``...).
        base_url: the server (default ``OPENAI_BASE_URL`` or OpenAI's own).
        api_key: the key (default ``OPENAI_API_KEY``; local servers need none).
        timeout: seconds one attempt may take.
        max_retries: retries of transient failures (connection, timeout, 429, 5xx),
            with exponential backoff.
        temperature: sampling temperature (0 keeps summaries stable).
        extra_body: extra request fields for server-specific options.
        http_client: an async HTTP client for the SDK (proxies, tests).
        max_tokens_param: the request field for the answer limit (default
            ``max_completion_tokens`` on OpenAI, ``max_tokens`` elsewhere).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float | None = 60.0,
        max_retries: int = 2,
        temperature: float | None = 0.0,
        extra_body: Mapping[str, Any] | None = None,
        name: str | None = None,
        http_client: Any = None,
        max_tokens_param: str | None = None,
    ) -> None:
        require_sdk("openai", "OpenAIModel", "openai")
        super().__init__(name=name or f"openai:{model}", timeout=timeout, max_retries=max_retries)
        self.model = model
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        self.api_key = api_key or os.environ.get("OPENAI_API_KEY") or None
        self.temperature = temperature
        self.extra_body = dict(extra_body or {})
        self.max_tokens_param = max_tokens_param or (
            "max_completion_tokens" if self.base_url is None else "max_tokens"
        )
        """OpenAI's own API wants ``max_completion_tokens``; compatible servers ``max_tokens``."""
        self.json_schema_supported: bool | None = None
        """None until a server answered a schema request; False once it refused one."""
        self.http_client = http_client

    def client(self) -> AsyncOpenAI:
        """The SDK client for the running event loop (a client is bound to its loop)."""
        from openai import AsyncOpenAI

        return self._loop_client(
            lambda: AsyncOpenAI(
                api_key=self.api_key or (_NO_KEY if self.base_url else None),
                base_url=self.base_url,
                timeout=self.timeout,
                max_retries=0,
                http_client=self.http_client,
            )
        )

    async def _request(self, request: ChatRequest) -> ChatResponse:
        messages, response_format = request.messages, request.response_format
        from openai import APIStatusError

        from kompakt.formats.openai import to_openai

        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": to_openai(messages, provider=True),
        }
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        if request.max_output_tokens is not None:
            kwargs[self.max_tokens_param] = request.max_output_tokens
        if request.tools:
            kwargs["tools"] = [t.as_function() for t in request.tools]
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        if response_format is not None and self.json_schema_supported is not False:
            kwargs["response_format"] = _json_schema(response_format)
            try:
                return await self._send(kwargs, messages)
            except APIStatusError as exc:  # llama.cpp's server says 500, others 400 or 422
                if "response_format" not in str(exc) and "json_schema" not in str(exc):
                    raise
                self.json_schema_supported = False
        if response_format is not None:  # the server lacks json_schema: JSON mode + the schema
            # `schema` is llama.cpp's extension (a grammar); other servers ignore it
            kwargs["response_format"] = json_object_format(response_format)
            kwargs["messages"] = [
                *kwargs["messages"],
                {"role": "system", "content": _schema_instruction(response_format)},
            ]
        return await self._send(kwargs, messages)

    async def _send(self, kwargs: dict[str, Any], messages: Sequence[Message]) -> ChatResponse:
        resp = await self.client().chat.completions.create(**kwargs)
        if not resp.choices:
            return assistant_response("", estimate_usage(messages, ""))
        choice = resp.choices[0]
        out = choice.message
        calls = [
            ToolCall(id=c.id, name=c.function.name, arguments=c.function.arguments or "{}")
            for c in (out.tool_calls or [])
            if getattr(c, "function", None) is not None
        ]
        text = out.content or ""
        usage = (
            estimate_usage(messages, text)
            if resp.usage is None
            else Usage(resp.usage.prompt_tokens, resp.usage.completion_tokens or 0)
        )
        metadata = {"finish_reason": choice.finish_reason, "model": resp.model}
        return assistant_response(text, usage, tool_calls=calls, metadata=metadata)


def json_object_format(schema: Mapping[str, Any]) -> dict[str, Any]:
    """JSON mode with the schema attached (llama.cpp turns it into a grammar; other
    servers ignore it)."""
    return {"type": "json_object", "schema": dict(schema)}


def _json_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": dict(schema), "strict": False},
    }


def _schema_instruction(schema: Mapping[str, Any]) -> str:
    return "Answer with only a JSON object matching this JSON schema:\n" + json.dumps(
        dict(schema), separators=(",", ":")
    )
