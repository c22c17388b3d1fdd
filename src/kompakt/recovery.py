"""Recovering from a context overflow: compact tighter, retry once.

When a provider refuses a request as too long (`parse_overflow` recognises the error),
`compact_for_retry` compacts what was sent to a tighter budget, taken from how far over
the request was (or 20% below it when the error does not say), and returns the
smaller request with a `CompactionEvent` whose `overflow` records the error. Retry
once: if the smaller request overflows too, give up (`BudgetImpossible`), never loop.
`send_recovering` is that rule around any model call; the `Agent` and every framework
adapter use it (``recover_from_overflow=True``).

>>> from kompakt import Message, Overflow
>>> sent = [Message.system("be brief")] + [Message.user(f"q{i} " + "x" * 400) for i in range(20)]
>>> overflow = Overflow("anthropic", "prompt is too long", limit=1_000, requested=2_000)
>>> smaller, event = compact_for_retry(sent, overflow=overflow)
>>> event.tokens_after <= overflow.retry_budget(event.tokens_before), event.overflow is overflow
(True, True)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from kompakt._deprecation import renamed_options
from kompakt.compactor import CompactionEvent, Compactor, _one_shot, _read, _strategy
from kompakt.errors import BudgetImpossible
from kompakt.index import MessageIndex
from kompakt.overflow import DEFAULT_STEP, Overflow, parse_overflow
from kompakt.strategies.base import StrategyLike, token_budget_of
from kompakt.strategies.budgeted import Budgeted, core_breakdown
from kompakt.tokens import CharEstimator, Tokenizer
from kompakt.triggers import Never
from kompakt.view import View

if TYPE_CHECKING:
    from kompakt.models.base import ChatModel

__all__ = [
    "compact_for_retry",
    "compact_for_retry_async",
    "retry_impossible",
    "retry_strategy",
    "send_recovering",
    "send_recovering_sync",
]

T = TypeVar("T")


async def send_recovering(
    send: Callable[[], Awaitable[T]],
    tighten: Callable[[Overflow], Awaitable[View | None]],
    *,
    enabled: bool = True,
) -> T:
    """`send()`; when the provider refuses it as over its context window, `tighten` the
    request (compact it tighter, returning the view that is sent next, or None when it
    cannot) and `send()` once more. Any other error, an overflow with `enabled` off, or
    one `tighten` cannot answer is raised as it is; a second overflow raises
    `BudgetImpossible` (from the provider's error): there is no loop.

    >>> import asyncio
    >>> from kompakt import Message, MessageIndex
    >>> calls = []
    >>> async def send():
    ...     calls.append(1)
    ...     if len(calls) == 1:
    ...         raise RuntimeError('{"error": {"code": "context_length_exceeded", '
    ...                            '"message": "Your input exceeds the context window"}}')
    ...     return "done"
    >>> async def tighten(overflow):
    ...     return View(MessageIndex([Message.user("smaller")]))
    >>> asyncio.run(send_recovering(send, tighten)), len(calls)
    ('done', 2)
    """
    try:
        return await send()
    except Exception as exc:
        overflow = parse_overflow(exc) if enabled else None
        if overflow is None:
            raise
        view = await tighten(overflow)
        if view is None:
            raise
    try:
        return await send()
    except Exception as again:
        second = parse_overflow(again)
        if second is None:
            raise
        raise retry_impossible(view, overflow=second) from again


def send_recovering_sync(
    send: Callable[[], T], tighten: Callable[[Overflow], View | None], *, enabled: bool = True
) -> T:
    """`send_recovering` for a synchronous model call."""
    try:
        return send()
    except Exception as exc:
        overflow = parse_overflow(exc) if enabled else None
        if overflow is None:
            raise
        view = tighten(overflow)
        if view is None:
            raise
    try:
        return send()
    except Exception as again:
        second = parse_overflow(again)
        if second is None:
            raise
        raise retry_impossible(view, overflow=second) from again


@renamed_options(positional=("budget",))
def retry_strategy(strategy: StrategyLike | str | None, *, budget: int) -> Budgeted:
    """The strategy that brings a refused request down to `budget`: a strict `Budgeted`
    at that budget, running a `Budgeted`'s own chain, any other strategy as its chain,
    or (None) the default chain. What must be kept and cannot fit raises `BudgetImpossible`.

    >>> from kompakt.strategies import SlidingWindow
    >>> s = retry_strategy(SlidingWindow(keep_last_turns=2), budget=5_000)
    >>> s.token_budget, [type(x).__name__ for x in s.strategies]
    (5000, ['SlidingWindow'])
    """
    if strategy is None:
        return Budgeted(budget)
    strat = _strategy(strategy)
    if isinstance(strat, Budgeted):
        return Budgeted(
            budget,
            strategies=strat.strategies,
            early_stop=strat.early_stop,
            min_preserved=strat.min_preserved,
        )
    return Budgeted(budget, strategies=[strat])


@renamed_options(positional=("overflow",))
def compact_for_retry(
    messages: Any,
    *,
    overflow: Overflow,
    strategy: StrategyLike | str | None = None,
    tokenizer: Tokenizer | None = None,
    format: str | None = None,
    summarizer: ChatModel | str | None = None,
    step: float = DEFAULT_STEP,
) -> tuple[Any, CompactionEvent]:
    """The refused request compacted to fit, and what was done.

    Args:
        messages: what was sent (a list of `Message`, anything `kompakt.load` reads,
            a `MessageIndex` or a `View`); the result has the same form (a list of
            `Message` for an index, a new `View` for a view). It is never mutated.
        overflow: the error, as `parse_overflow` read it.
        strategy: how to compact (default: `Budgeted`'s default chain); run inside a
            `Budgeted` at the tighter budget, so the result fits or `BudgetImpossible`
            names what alone does not.
        tokenizer, format, summarizer: as for `apply_compaction`.
        step: how much smaller to make it when the error does not say how far over.

    Returns:
        ``(smaller, event)``; ``event.overflow`` is `overflow`.

    Send `smaller` once. If the provider refuses it too, stop: `retry_impossible`
    makes the error to raise.
    """
    compactor, view, back = _start(
        messages, strategy, overflow, step, tokenizer, format, summarizer
    )
    event = compactor.run(view, target=Never(), reason=_reason(compactor, overflow))
    event.overflow = overflow
    return back(view), event


@renamed_options(positional=("overflow",))
async def compact_for_retry_async(
    messages: Any,
    *,
    overflow: Overflow,
    strategy: StrategyLike | str | None = None,
    tokenizer: Tokenizer | None = None,
    format: str | None = None,
    summarizer: ChatModel | str | None = None,
    step: float = DEFAULT_STEP,
) -> tuple[Any, CompactionEvent]:
    """`compact_for_retry` for strategies that await a model."""
    compactor, view, back = _start(
        messages, strategy, overflow, step, tokenizer, format, summarizer
    )
    event = await compactor.run_async(view, target=Never(), reason=_reason(compactor, overflow))
    event.overflow = overflow
    return back(view), event


@renamed_options(positional=("overflow",))
def retry_impossible(
    view: View, *, overflow: Overflow, step: float = DEFAULT_STEP
) -> BudgetImpossible:
    """The error for a retry the provider refused again: the budget it would need
    (by `view`'s own count) and what the view holds, by why it is kept.

    >>> from kompakt import Message, MessageIndex
    >>> view = View(MessageIndex([Message.user("x" * 400)]))
    >>> err = retry_impossible(view, overflow=Overflow("openai", "...", limit=50, requested=100))
    >>> err.budget, err.required
    (36, 76)
    """
    budget = overflow.retry_budget(view.total_tokens, step=step)
    return BudgetImpossible(budget, view.total_tokens, core_breakdown(view))


def _start(
    messages: Any,
    strategy: StrategyLike | str | None,
    overflow: Overflow,
    step: float,
    tokenizer: Tokenizer | None,
    format: str | None,
    summarizer: ChatModel | str | None,
) -> tuple[Compactor, View, Callable[[View], Any]]:
    """The `Compactor` that runs the retry's strict `Budgeted`, the view it edits (never
    `messages` itself) and how to give the result back in the form `messages` came in."""
    back: Callable[[View], Any]
    source: View | MessageIndex
    if isinstance(messages, View):
        source, back = messages, lambda v: v
    elif isinstance(messages, MessageIndex):
        source, back = messages, lambda v: v.render()
    else:
        msgs, read_back = _read(messages, format)
        source = MessageIndex(msgs, tokenizer=tokenizer or CharEstimator())
        back = lambda v: read_back(v.render())  # noqa: E731
    budget = overflow.retry_budget(source.total_tokens, step=step)
    compactor, view = _one_shot(source, retry_strategy(strategy, budget=budget), None, summarizer)
    return compactor, view, back


def _reason(compactor: Compactor, overflow: Overflow) -> str:
    budget = token_budget_of(compactor.strategy)
    over = f"{overflow.tokens_over:,} tokens over" if overflow.tokens_over else "over the limit"
    return f"{overflow.provider} context overflow ({over}): retrying within {budget:,} tokens"
