"""Chat models: one small protocol and its adapters.

>>> from kompakt.models import ScriptedModel
>>> ScriptedModel("ok").chat_sync([]).message.text
'ok'
"""

from __future__ import annotations

from kompakt.models.base import BaseChatModel, ChatModel, ChatResponse, ToolSpec, Usage
from kompakt.models.extractive import ExtractiveModel
from kompakt.models.scripted import ScriptedModel, ScriptedRequest

__all__ = [
    "BaseChatModel",
    "ChatModel",
    "ChatResponse",
    "ExtractiveModel",
    "ScriptedModel",
    "ScriptedRequest",
    "ToolSpec",
    "Usage",
]
