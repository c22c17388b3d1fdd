"""The agent's answer to a context overflow: compact tighter, retry the call once.

A provider may refuse a request the agent's estimate said would fit (another tokenizer,
tool schemas, hidden tokens). Then the view is compacted to a budget taken from the
error (`Overflow.retry_budget`) with the compactor's strategy held to it (`Budgeted`'s
default chain without a compactor), the provider's token count becomes the agent's
calibration, and the call is sent once more. The compaction is in
`RunResult.compactions` with its `overflow` set. A second overflow raises
`BudgetImpossible`: there is no loop.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from kompakt.models.base import ChatResponse
from kompakt.overflow import Overflow
from kompakt.recovery import retry_strategy, send_recovering
from kompakt.strategies.base import NO_OVERRIDES
from kompakt.triggers import TokensBelow
from kompakt.view import View

if TYPE_CHECKING:
    from kompakt.agent.agent import Agent
    from kompakt.agent.result import RunResult

__all__ = ["call_recovering"]

log = logging.getLogger("kompakt.agent")


async def call_recovering(
    agent: Agent, result: RunResult, send: Callable[[], Awaitable[ChatResponse]]
) -> ChatResponse:
    """`send()`; on a context overflow, compact the agent's view tighter and `send()` once
    more (`send_recovering`). Any other error, or an overflow with recovery off, is raised
    as it is."""

    async def tighten(overflow: Overflow) -> View:
        await _compact_tighter(agent, result, overflow)
        return agent.view

    return await send_recovering(send, tighten, enabled=agent.recover_from_overflow)


async def _compact_tighter(agent: Agent, result: RunResult, overflow: Overflow) -> None:
    view = agent.view
    sent = view.total_tokens
    if overflow.input_tokens:  # the provider's count of what it refused wins from now on
        agent._offset = overflow.input_tokens - sent
    budget = overflow.retry_budget(sent)
    strategy = retry_strategy(agent.compactor.strategy if agent.compactor else None, budget=budget)
    over = f"{overflow.tokens_over:,} tokens over" if overflow.tokens_over else "over the limit"
    reason = f"{overflow.provider} context overflow ({over}): retrying within {budget:,} tokens"
    log.info("session %s: %s", agent.session, reason)
    # the compactor's min_preserved holds in the retry too; its budget is the retry's
    overrides = agent.compactor.overrides if agent.compactor else NO_OVERRIDES
    event = await agent._compact(
        agent._driver(strategy),
        TokensBelow(budget),
        reason=reason,
        check_trigger=False,
        overrides=overrides,
    )
    event.overflow = overflow
    result.compactions.append(event)
