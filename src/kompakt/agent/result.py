"""What one agent run returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from kompakt.compactor import CompactionEvent
from kompakt.messages import Message
from kompakt.models.base import Usage

__all__ = ["RunResult", "StopReason"]

StopReason: TypeAlias = Literal["answer", "max_steps"]


@dataclass
class RunResult:
    """The outcome of `Agent.run`.

    >>> r = RunResult(output="done", steps=1, usage=[Usage(120, 8)])
    >>> r.total_usage, r.stopped
    (Usage(input_tokens=120, output_tokens=8, calls=1), False)
    """

    output: str = ""
    """The final answer's text (on `max_steps`: the last assistant text, maybe empty)."""
    messages: list[Message] = field(default_factory=list)
    """The originals this run added to the history (task, answers, calls, results)."""
    usage: list[Usage] = field(default_factory=list)
    """Tokens of each model call, in order."""
    compactions: list[CompactionEvent] = field(default_factory=list)
    """Every compaction this run did (checkpoints, requested, after the run)."""
    warnings: list[str] = field(default_factory=list)
    """Context-limit warnings and anything else worth a look."""
    steps: int = 0
    """Model calls made."""
    stopped_reason: StopReason = "answer"
    """``answer`` (the model answered without tool calls) or ``max_steps``."""
    session: str = ""
    request_tokens: list[int] = field(default_factory=list)
    """Tokens of each request as the agent estimated them (calibrated when the provider
    reported input tokens before)."""

    @property
    def total_usage(self) -> Usage:
        """All model calls added up."""
        total = Usage(0, 0, 0)
        for u in self.usage:
            total = total + u
        return total

    @property
    def stopped(self) -> bool:
        """The run ended without a final answer."""
        return self.stopped_reason != "answer"
