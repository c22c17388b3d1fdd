"""The strategy protocol, the context a strategy runs in, and what it records.

A strategy is one method: edit a `View`, return whether anything changed. It may
stop early when `context.done()` says the target holds.

>>> from kompakt.index import MessageIndex
>>> from kompakt.messages import Message
>>> class DropOldestAssistant(BaseStrategy):
...     def apply(self, view, context):
...         for g in view.candidates(kinds=["assistant_text"]):
...             view.drop(g)
...             return True
...         return False
>>> idx = MessageIndex([Message.user("q"), Message.assistant("a"), Message.user("q2")])
>>> view = View(idx)
>>> DropOldestAssistant().apply(view, CompactionContext(view))
True
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol, TypeAlias, runtime_checkable

from kompakt.errors import ConfigError
from kompakt.triggers import Never, Not, Trigger, TriggerLike, as_trigger
from kompakt.view import View

if TYPE_CHECKING:
    from kompakt.models.base import ChatModel

__all__ = [
    "AsyncStrategy",
    "BaseStrategy",
    "CompactionContext",
    "Overrides",
    "Step",
    "Strategy",
    "StrategyLike",
    "as_strategy",
    "own_target",
    "own_trigger",
    "run_strategy",
    "token_budget_of",
]

DEFAULT_MIN_PRESERVED = 2
"""Newest groups every built-in strategy leaves alone unless told otherwise."""


@dataclass
class Step:
    """What one strategy did during a compaction."""

    strategy: str
    changed: bool = False
    tokens_before: int = 0
    tokens_after: int = 0
    messages_before: int = 0
    messages_after: int = 0
    seconds: float = 0.0
    groups_dropped: int = 0
    groups_replaced: int = 0
    model_calls: int = 0
    model_input_tokens: int = 0
    model_output_tokens: int = 0
    fallback: str | None = None
    """Why the strategy fell back (a model error, a timeout, an empty answer...)."""
    detail: str = ""


@dataclass(frozen=True)
class Overrides:
    """What one compaction run changes in the strategies it runs, which stay as they were
    configured: the driver (`Compactor`, the `Agent`, a background preparation) passes
    these in the `CompactionContext` and each strategy reads its options through them.

    >>> o = Overrides(min_preserved=5, fewer_kept=2, budget_offset=300)
    >>> o.preserved(2), o.kept(4), o.budget(8_000)
    (3, 2, 7700)
    """

    min_preserved: int | None = None
    """Replaces every strategy's `min_preserved` (``Compactor(min_preserved=...)``)."""
    fewer_kept: int = 0
    """The newest groups each strategy keeps (`keep_last_groups`, `min_preserved`) lowered by
    this much: a compaction prepared that many steps before its trigger keeps what it
    would keep at the trigger."""
    budget_offset: int = 0
    """Tokens taken off every token budget of the run: the calibration to what the
    provider counts, and the room left for a rehydration after the compaction."""
    strict: bool | None = None
    """Replaces a `Budgeted`'s `strict` (None: its own)."""

    def preserved(self, min_preserved: int) -> int:
        """A strategy's `min_preserved` for this run."""
        n = min_preserved if self.min_preserved is None else self.min_preserved
        return max(0, n - self.fewer_kept)

    def kept(self, keep_last_groups: int) -> int:
        """A strategy's `keep_last_groups` (newest groups left alone) for this run."""
        return max(0, keep_last_groups - self.fewer_kept)

    def budget(self, token_budget: int) -> int:
        """A strategy's `token_budget` for this run (at least 1 when moved)."""
        return max(1, token_budget - self.budget_offset) if self.budget_offset else token_budget

    def shifted(self, tokens: int) -> Overrides:
        """These overrides with the token budget moved `tokens` lower."""
        return replace(self, budget_offset=self.budget_offset + tokens) if tokens else self

    def fewer(self, groups: int) -> Overrides:
        """These overrides keeping `groups` fewer of the newest groups (none for <= 0)."""
        return replace(self, fewer_kept=self.fewer_kept + groups) if groups > 0 else self


NO_OVERRIDES = Overrides()


@dataclass
class CompactionContext:
    """What a strategy may consult while it edits a view.

    `target` is the stop condition: strategies that remove groups one at a time stop
    as soon as `done()` is true. `budget` is set inside `Budgeted`. `overrides` are
    what this run changes in the strategies' own options (see `Overrides`).
    """

    view: View
    target: Trigger = field(default_factory=Never)
    budget: int | None = None
    summarizer: ChatModel | None = None
    steps: list[Step] = field(default_factory=list)
    current: Step | None = None
    """The step of the strategy running now (strategies add counts to it)."""
    overrides: Overrides = NO_OVERRIDES

    def done(self) -> bool:
        """The target holds: stop removing."""
        return self.target(self.view)

    @property
    def tokenizer(self) -> object:
        return self.view.index.tokenizer

    def note(self, **counts: int | str | None) -> None:
        """Add to the running step: ``context.note(groups_dropped=1)``."""
        step = self.current
        if step is None:
            return
        for key, value in counts.items():
            if isinstance(value, int) and not isinstance(value, bool):
                setattr(step, key, getattr(step, key) + value)
            else:
                setattr(step, key, value)


@runtime_checkable
class Strategy(Protocol):
    """Edits a view in place; returns True when it changed anything."""

    def apply(self, view: View, context: CompactionContext) -> bool: ...


@runtime_checkable
class AsyncStrategy(Protocol):
    """A strategy that awaits a model."""

    async def apply_async(self, view: View, context: CompactionContext) -> bool: ...


StrategyLike: TypeAlias = (
    "Strategy | AsyncStrategy | Callable[[View, CompactionContext], bool | Awaitable[bool]]"
)


class BaseStrategy:
    """Convenience base: a name, the options a compaction run reads (its own trigger
    and target, a token budget, `min_preserved`), and both sync and async entry points
    (implement either `apply` or `apply_async`)."""

    trigger: Trigger | None = None
    """Its own trigger: the strategy runs only when it fires, and stops once it is quiet."""
    target: Trigger | None = None
    """Its own stop condition, besides the compaction's."""
    token_budget: int | None = None
    """Tokens the view must fit in when it is done (a `Budgeted`'s), else None."""
    min_preserved: int = DEFAULT_MIN_PRESERVED
    """Newest groups it never touches (a run may override it: `Overrides`)."""

    def preserved(self, context: CompactionContext) -> int:
        """`min_preserved` for the run `context` belongs to."""
        return context.overrides.preserved(self.min_preserved)

    @property
    def name(self) -> str:
        return type(self).__name__

    def apply(self, view: View, context: CompactionContext) -> bool:
        if type(self).apply_async is BaseStrategy.apply_async:  # pragma: no cover
            raise ConfigError(f"{self.name} must implement apply() or apply_async()")
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.apply_async(view, context))
        raise ConfigError(
            f"{self.name} calls a model: inside a running event loop use the async API "
            "(await compactor.compact_async(...) or apply_compaction_async)"
        )

    async def apply_async(self, view: View, context: CompactionContext) -> bool:
        return self.apply(view, context)

    def fires(self, view: View) -> bool:
        """This strategy's own trigger (none = always)."""
        return self.trigger is None or self.trigger(view)

    def __repr__(self) -> str:
        return f"{self.name}()"


class _FunctionStrategy(BaseStrategy):
    def __init__(self, fn: Callable[[View, CompactionContext], bool | Awaitable[bool]]) -> None:
        self.fn = fn

    @property
    def name(self) -> str:
        return getattr(self.fn, "__name__", "custom")

    async def apply_async(self, view: View, context: CompactionContext) -> bool:
        result = self.fn(view, context)
        if isinstance(result, Awaitable):
            result = await result
        return bool(result)

    def apply(self, view: View, context: CompactionContext) -> bool:
        result = self.fn(view, context)
        if isinstance(result, Awaitable):
            raise ConfigError(f"{self.name} is async: use the async compaction API")
        return bool(result)


def as_strategy(s: StrategyLike) -> BaseStrategy | Strategy | AsyncStrategy:
    """Accept a strategy object or a plain function ``(view, context) -> bool``."""
    if isinstance(s, (BaseStrategy, Strategy, AsyncStrategy)):
        return s
    if callable(s):
        return _FunctionStrategy(s)
    raise ConfigError(f"a strategy must have an apply(view, context) method, got {s!r}")


def own_trigger(s: object) -> Trigger | None:
    """A strategy's own trigger (`BaseStrategy.trigger`; None for one that declares none)."""
    t = s.trigger if isinstance(s, BaseStrategy) else getattr(s, "trigger", None)
    return t if isinstance(t, Trigger) or t is None else as_trigger(t)


def own_target(s: object) -> Trigger | None:
    """A strategy's own stop condition (`BaseStrategy.target`; None for one without)."""
    t = s.target if isinstance(s, BaseStrategy) else getattr(s, "target", None)
    return t if isinstance(t, Trigger) or t is None else as_trigger(t)


def token_budget_of(s: object) -> int | None:
    """A strategy's token budget (`BaseStrategy.token_budget`, a `Budgeted`'s), else None.

    >>> from kompakt.strategies import Budgeted, Truncation
    >>> token_budget_of(Budgeted(8_000)), token_budget_of(Truncation())
    (8000, None)
    """
    b = s.token_budget if isinstance(s, BaseStrategy) else getattr(s, "token_budget", None)
    return b if isinstance(b, int) and not isinstance(b, bool) else None


def strategy_name(s: object) -> str:
    return str(getattr(s, "name", type(s).__name__))


async def run_strategy(
    s: StrategyLike, view: View, context: CompactionContext, *, check_trigger: bool = True
) -> Step:
    """Run one strategy, recording a `Step` in `context.steps`."""
    strat, step = open_step(s, view, context, check_trigger=check_trigger)
    if step.detail == QUIET:
        return step
    with recording(step, view, context):
        if isinstance(strat, AsyncStrategy) or hasattr(strat, "apply_async"):
            step.changed = bool(await strat.apply_async(view, context))
        else:
            step.changed = bool(strat.apply(view, context))
    return step


QUIET = "own trigger did not fire"
"""`Step.detail` of a strategy skipped because its own trigger was quiet."""


def open_step(
    s: StrategyLike, view: View, context: CompactionContext, *, check_trigger: bool = True
) -> tuple[BaseStrategy | Strategy | AsyncStrategy, Step]:
    """The strategy and its new `Step`; a step whose own trigger is quiet is recorded
    already, with `detail` `QUIET` (both `run_strategy` and its sync twin start here)."""
    strat = as_strategy(s)
    step = Step(
        strategy=strategy_name(strat),
        tokens_before=view.total_tokens,
        messages_before=view.message_count,
    )
    own = own_trigger(strat)
    if check_trigger and own is not None and not own(view):
        step.tokens_after, step.messages_after = step.tokens_before, step.messages_before
        step.detail = QUIET
        context.steps.append(step)
    return strat, step


@contextmanager
def recording(step: Step, view: View, context: CompactionContext) -> Iterator[Step]:
    """Make `step` the running one, then record its time and sizes (not on an error)."""
    outer, context.current = context.current, step
    t0 = time.perf_counter()
    try:
        yield step
    finally:
        context.current = outer
    step.seconds = time.perf_counter() - t0
    step.tokens_after = view.total_tokens
    step.messages_after = view.message_count
    context.steps.append(step)


def default_target(trigger: TriggerLike) -> Trigger:
    """The default stop condition: the trigger no longer fires."""
    return Not(as_trigger(trigger))
