"""Chat models: one small protocol and its adapters.

SDKs are imported when a model first talks to its server, so importing this package
is cheap. See `model_from_string` for the spec strings and environment variables.

>>> from kompakt.models import ScriptedModel
>>> ScriptedModel("ok").chat_sync([]).message.text
'ok'
"""

from __future__ import annotations

from kompakt.models.anthropic import AnthropicModel
from kompakt.models.base import BaseChatModel, ChatModel, ChatResponse, ToolSpec, Usage
from kompakt.models.extractive import ExtractiveModel
from kompakt.models.local import LocalModel, default_gguf
from kompakt.models.openai import OpenAIModel
from kompakt.models.registry import (
    default_summarizer,
    model_from_env,
    model_from_string,
    summarizer_from_env,
)
from kompakt.models.scripted import ScriptedModel, ScriptedRequest

__all__ = [
    "AnthropicModel",
    "BaseChatModel",
    "ChatModel",
    "ChatResponse",
    "ExtractiveModel",
    "LocalModel",
    "OpenAIModel",
    "ScriptedModel",
    "ScriptedRequest",
    "ToolSpec",
    "Usage",
    "default_gguf",
    "default_summarizer",
    "model_from_env",
    "model_from_string",
    "summarizer_from_env",
]
