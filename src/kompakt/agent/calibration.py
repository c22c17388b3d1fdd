"""Calibration: the provider's token count wins over the estimate.

After each model call the agent keeps ``offset = reported input tokens - estimate of
that request``. Triggers and targets then read the view's estimate plus that offset
(the provider's figure for what was sent, plus the estimate of what changed since),
and a token budget is moved by it (`Overrides.budget_offset` in the run's context),
so an estimating tokenizer cannot drift from what the provider bills.

>>> from kompakt.index import MessageIndex
>>> from kompakt.messages import Message
>>> from kompakt.triggers import TokensExceed
>>> from kompakt.view import View
>>> view = View(MessageIndex([Message.user("x" * 400)]))
>>> view.total_tokens, Calibrated(view, 300).total_tokens
(76, 376)
>>> TokensExceed(200)(view), Shifted(TokensExceed(200), 300)(view)
(False, True)
"""

from __future__ import annotations

from typing import Any

from kompakt.triggers import Trigger

__all__ = ["Calibrated", "Shifted"]


class Calibrated:
    """A view's (or index's) metrics with `offset` added to its tokens."""

    def __init__(self, metrics: Any, offset: int) -> None:
        self.metrics = metrics
        self.offset = offset

    @property
    def total_tokens(self) -> int:
        return int(self.metrics.total_tokens) + self.offset

    def __getattr__(self, name: str) -> Any:
        return getattr(self.metrics, name)


class Shifted(Trigger):
    """`trigger` evaluated on calibrated metrics."""

    def __init__(self, trigger: Trigger, offset: int) -> None:
        self.trigger = trigger
        self.offset = offset

    def __call__(self, m: Any) -> bool:
        return self.trigger(Calibrated(m, self.offset) if self.offset else m)

    def __repr__(self) -> str:
        return repr(self.trigger)
