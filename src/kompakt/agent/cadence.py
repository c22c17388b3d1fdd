"""Cadence: the measured pace of an agent loop, and when to start preparing a compaction.

A background compaction hides a summarizer's latency only if it starts early enough
to finish before the trigger fires, and no earlier than that (the earlier it starts,
the less of the span it covers). `Cadence` measures what decides it: seconds and
tokens per step of the loop, and seconds per summarizer call, each a moving average.
From them it says how many steps ahead of the trigger a preparation must start.

>>> c = Cadence()
>>> for _ in range(3):
...     c.step(seconds=0.3, tokens=800)     # one model call + tools, 800 tokens added
>>> c.summary(seconds=0.8, calls=1)         # a summarizer call took 800 ms
>>> c.steps_ahead(span_tokens=6_000)        # 0.8 s (+25% margin) is 4 steps of 0.3 s
4
>>> c.due(tokens=16_000, limit=20_000, span_tokens=6_000)   # the trigger is 6 steps away
False
>>> c.due(tokens=17_000, limit=20_000, span_tokens=6_000)   # 4 steps away: start now
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Cadence"]


@dataclass
class Cadence:
    """Seconds and tokens per step, seconds per summarizer call (moving averages).

    Args:
        smoothing: weight of the newest measurement in each average (0 < s <= 1).
        margin: how much longer than measured a summary may take (1.25 = 25% slack).
        prior_call_steps: before any summarizer call was measured, one call is taken
            to last this many steps of the loop (a summary writes far more than a
            step's tool call does).
        tokens_per_call: the most a summarizer request carries; a longer span is sent
            in several calls, one after another (a strategy's `max_input_tokens`).
    """

    smoothing: float = 0.5
    margin: float = 1.25
    prior_call_steps: float = 3.0
    tokens_per_call: int = 8_000
    step_seconds: float | None = None
    """Seconds from one checkpoint to the next (a model call and its tools)."""
    step_tokens: float | None = None
    """Tokens the history grows by per step."""
    call_seconds: float | None = None
    """Seconds one summarizer call takes."""

    def step(self, *, seconds: float, tokens: int) -> None:
        """Record one step of the loop: how long it took, how many tokens it added."""
        self.step_seconds = self._average(self.step_seconds, max(0.0, seconds))
        self.step_tokens = self._average(self.step_tokens, float(max(0, tokens)))

    def summary(self, *, seconds: float, calls: int) -> None:
        """Record a compaction that made `calls` summarizer calls in `seconds`."""
        if calls > 0 and seconds > 0:
            self.call_seconds = self._average(self.call_seconds, seconds / calls)

    def summary_seconds(self, span_tokens: int) -> float | None:
        """Expected seconds to summarize `span_tokens` (None before any step)."""
        per_call = self.call_seconds
        if per_call is None:
            if self.step_seconds is None:
                return None
            per_call = self.prior_call_steps * self.step_seconds
        calls = max(1, math.ceil(span_tokens / max(1, self.tokens_per_call)))
        return calls * per_call

    def steps_ahead(self, span_tokens: int) -> int | None:
        """Steps before the trigger a preparation of `span_tokens` must start (None
        while there is nothing measured to go by)."""
        seconds = self.summary_seconds(span_tokens)
        if seconds is None or not self.step_seconds:
            return None
        return max(1, math.ceil(seconds * self.margin / self.step_seconds))

    def steps_to(self, tokens: int, limit: int) -> int | None:
        """Steps until `tokens` passes `limit`, at the measured growth (None: unknown)."""
        if not self.step_tokens:
            return None
        return max(0, math.floor((limit - tokens) / self.step_tokens) + 1)

    def due(self, *, tokens: int, limit: int, span_tokens: int) -> bool:
        """A preparation of `span_tokens` must start now for a trigger at `limit`."""
        ahead = self.steps_ahead(span_tokens)
        left = self.steps_to(tokens, limit)
        return ahead is not None and left is not None and left <= ahead

    def _average(self, old: float | None, new: float) -> float:
        return new if old is None else old + self.smoothing * (new - old)
