"""The agent loop with compaction checkpoints, background compaction, tools and recall.

>>> from kompakt.agent import Agent, RunResult
>>> from kompakt.models import ScriptedModel
>>> Agent(ScriptedModel("hi")).run_sync("hello").output
'hi'
"""

from __future__ import annotations

from kompakt.agent.agent import Agent, Hook
from kompakt.agent.background import BackgroundCompaction, BackgroundCompactor
from kompakt.agent.cadence import Cadence
from kompakt.agent.recall import RECALL_NOTE
from kompakt.agent.result import RunResult, StopReason
from kompakt.agent.tools import Tool, as_tool, execute_calls, tool

__all__ = [
    "RECALL_NOTE",
    "Agent",
    "BackgroundCompaction",
    "BackgroundCompactor",
    "Cadence",
    "Hook",
    "RunResult",
    "StopReason",
    "Tool",
    "as_tool",
    "execute_calls",
    "tool",
]
