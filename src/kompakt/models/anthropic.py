"""`AnthropicModel`: Claude models on the `anthropic` SDK.

Tools are passed as Anthropic tools; structured output is asked for with a forced
``answer`` tool whose input schema is the JSON schema (the answer's text is that
tool input as JSON), or, when other tools are in play, with a JSON instruction.

>>> AnthropicModel("claude-haiku-4-5").name
'anthropic:claude-haiku-4-5'
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kompakt._deprecation import renamed_options
from kompakt.messages import ToolCall
from kompakt.models.base import (
    BaseChatModel,
    ChatRequest,
    ChatResponse,
    ToolSpec,
    Usage,
    assistant_response,
    require_sdk,
)

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

__all__ = ["AnthropicModel"]

ANSWER_TOOL = "answer"


class AnthropicModel(BaseChatModel):
    """A Claude model.

    Args:
        model: the model name (``claude-haiku-4-5``, ``claude-sonnet-4-5``...).
        api_key: the key (default ``ANTHROPIC_API_KEY``).
        base_url: another endpoint (default ``ANTHROPIC_BASE_URL`` or Anthropic's).
        timeout: seconds one attempt may take.
        max_retries: retries of transient failures (connection, timeout, 429, 5xx, 529).
        default_max_output_tokens: the answer limit when a call gives none (the API needs
            one).
        temperature: sampling temperature.
        http_client: an async HTTP client for the SDK (proxies, tests).
    """

    @renamed_options(default_max_tokens="default_max_output_tokens")
    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float | None = 60.0,
        max_retries: int = 2,
        default_max_output_tokens: int = 2048,
        temperature: float | None = None,
        name: str | None = None,
        http_client: Any = None,
    ) -> None:
        require_sdk("anthropic", "AnthropicModel", "anthropic")
        super().__init__(
            name=name or f"anthropic:{model}", timeout=timeout, max_retries=max_retries
        )
        self.model = model
        self.api_key = api_key or os.environ.get("ANTHROPIC_API_KEY") or None
        self.base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        self.default_max_output_tokens = default_max_output_tokens
        self.temperature = temperature
        self.http_client = http_client

    def client(self) -> AsyncAnthropic:
        """The SDK client for the running event loop."""
        from anthropic import AsyncAnthropic

        return self._loop_client(
            lambda: AsyncAnthropic(
                api_key=self.api_key,
                base_url=self.base_url,
                timeout=self.timeout,
                max_retries=0,
                http_client=self.http_client,
            )
        )

    async def _request(self, request: ChatRequest) -> ChatResponse:
        messages, tools, response_format = request.messages, request.tools, request.response_format
        from kompakt.formats.anthropic import to_anthropic

        doc = to_anthropic(messages, provider=True)
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": doc["messages"],
            "max_tokens": request.max_output_tokens or self.default_max_output_tokens,
        }
        system = doc.get("system")
        if self.temperature is not None:  # sent raw: newer SDKs dropped the parameter
            kwargs["extra_body"] = {"temperature": self.temperature}
        specs = [_tool(t) for t in tools or ()]
        forced = response_format is not None and not specs
        if forced:
            assert response_format is not None
            specs.append(
                {
                    "name": ANSWER_TOOL,
                    "description": "Give your answer.",
                    "input_schema": dict(response_format),
                }
            )
            kwargs["tool_choice"] = {"type": "tool", "name": ANSWER_TOOL}
        elif response_format is not None:
            note = "Answer with only a JSON object matching this JSON schema:\n" + json.dumps(
                dict(response_format)
            )
            system = f"{_system_text(system)}\n\n{note}".strip()
        if specs:
            kwargs["tools"] = specs
        if system:
            kwargs["system"] = system
        resp = await self.client().messages.create(**kwargs)
        text, calls = _read(resp.content, forced)
        return assistant_response(
            text,
            Usage(resp.usage.input_tokens, resp.usage.output_tokens),
            tool_calls=calls,
            metadata={"stop_reason": resp.stop_reason, "model": resp.model},
        )


def _tool(t: ToolSpec) -> dict[str, Any]:
    return {"name": t.name, "description": t.description, "input_schema": dict(t.parameters)}


def _system_text(system: Any) -> str:
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return "\n".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
    return ""


def _read(blocks: Sequence[Any], forced: bool) -> tuple[str, list[ToolCall]]:
    texts: list[str] = []
    calls: list[ToolCall] = []
    for b in blocks:
        kind = getattr(b, "type", None)
        if kind == "text":
            texts.append(b.text)
        elif kind == "tool_use":
            args = json.dumps(b.input, ensure_ascii=False)
            if forced and b.name == ANSWER_TOOL:
                return args, []
            calls.append(ToolCall(id=b.id, name=b.name, arguments=args))
    return "".join(texts), calls
