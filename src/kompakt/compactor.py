"""Deciding when to compact, compacting, and recording what happened.

A `Compactor` pairs a trigger (when) with a strategy (how) and a target (when to
stop; default: the trigger no longer fires). It keeps one `View` over the history
it is given, so each compaction builds on the previous one and messages appended
since are simply included. `check()` is O(1): it reads running totals.

>>> from kompakt import Message, MessageIndex, TokensBelow, TokensExceed
>>> from kompakt.strategies import Truncation
>>> idx = MessageIndex([Message.user(f"message {i} " + "x" * 200) for i in range(40)])
>>> compactor = Compactor(trigger=TokensExceed(1_000), strategy=Truncation(),
...                       target=TokensBelow(600))
>>> compactor.check(idx)
True
>>> view, event = compactor.compact(idx)
>>> view.total_tokens <= 600, compactor.check(idx)
(True, False)

For a list of messages in any format, `apply_compaction` returns the same format:

>>> out = apply_compaction([{"role": "user", "content": "hi"}], strategy=Truncation())
>>> out
[{'role': 'user', 'content': 'hi'}]
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from kompakt._deprecation import renamed_options
from kompakt.config import (
    STRATEGY_NAMES,
    _list,
    read_config,
    strategy_from_name,
    strategy_from_spec,
    target_from_table,
    trigger_from_table,
)
from kompakt.errors import ConfigError
from kompakt.index import MessageIndex
from kompakt.messages import Message
from kompakt.models.registry import as_model
from kompakt.overflow import Overflow
from kompakt.shortfall import explain_shortfall, kept_by
from kompakt.strategies._common import COMPOSITE, _token_limit, run_strategy_sync
from kompakt.strategies.base import (
    CompactionContext,
    Overrides,
    Step,
    StrategyLike,
    as_strategy,
    default_target,
    own_trigger,
    run_strategy,
    token_budget_of,
)
from kompakt.strategies.rehydrate import Rehydrate
from kompakt.tokens import CharEstimator, Tokenizer, tokenizer_from_string
from kompakt.triggers import Always, Never, TokensBelow, Trigger, TriggerLike, as_trigger
from kompakt.view import View

if TYPE_CHECKING:
    from kompakt.models.base import ChatModel

__all__ = [
    "STRATEGY_NAMES",
    "CompactionEvent",
    "Compactor",
    "HistoryProcessor",
    "apply_compaction",
    "apply_compaction_async",
    "as_history_processor",
    "strategy_from_name",
]


class _Default:
    """The type of `COMPACTOR_DEFAULT`."""

    def __repr__(self) -> str:
        return "COMPACTOR_DEFAULT"


COMPACTOR_DEFAULT = _Default()
"""`Compactor.run`'s ``summarizer=`` when not given: the compactor's own (None means none)."""

HistoryProcessor: TypeAlias = Callable[[list[Message]], list[Message]]
"""A transform from a message list to a new, compacted one (the input is never mutated)."""


@dataclass
class CompactionEvent:
    """What one compaction did: sizes before and after, each strategy's step, time, cost."""

    tokens_before: int
    tokens_after: int
    messages_before: int
    messages_after: int
    steps: list[Step] = field(default_factory=list)
    seconds: float = 0.0
    reason: str = ""
    """Why it ran (the trigger that fired, or "forced"), or why it did not."""
    model_calls: int = 0
    model_input_tokens: int = 0
    model_output_tokens: int = 0
    fallbacks: list[str] = field(default_factory=list)
    """Each fallback taken, as "Strategy: why"."""
    shortfall: str | None = None
    """Why the target was not reached, naming the option to change (None: reached)."""
    overflow: Overflow | None = None
    """The provider's context-overflow error this compaction answered (an overflow
    recovery: compacted tighter to retry the refused request), else None."""

    @classmethod
    def before(cls, view: View, reason: str = "") -> CompactionEvent:
        """An event opened on `view` as it is now (sizes after = before until `finish`).

        >>> from kompakt import Message, MessageIndex
        >>> view = View(MessageIndex([Message.user("hi")]))
        >>> event = CompactionEvent.before(view, "forced")
        >>> event.finish(view, [], seconds=0.001).summary()
        'no compaction (forced)'
        """
        tokens, messages = view.total_tokens, view.message_count
        return cls(tokens, tokens, messages, messages, reason=reason)

    def finish(self, view: View, steps: Iterable[Step], *, seconds: float) -> CompactionEvent:
        """Close the event: `view`'s sizes after, each step with its model calls, tokens
        and fallbacks, and the time taken. Returns the event."""
        self.seconds = seconds
        self.tokens_after, self.messages_after = view.total_tokens, view.message_count
        self.steps = list(steps)
        for s in self.steps:
            self.model_calls += s.model_calls
            self.model_input_tokens += s.model_input_tokens
            self.model_output_tokens += s.model_output_tokens
            if s.fallback:
                self.fallbacks.append(f"{s.strategy}: {s.fallback}")
        return self

    @property
    def changed(self) -> bool:
        """The view differs from before."""
        return any(s.changed for s in self.steps)

    @property
    def tokens_saved(self) -> int:
        return self.tokens_before - self.tokens_after

    def summary(self) -> str:
        """One line: sizes, time, what each strategy saved, fallbacks.

        >>> CompactionEvent(1200, 500, 40, 12, seconds=0.002, reason="TokensExceed(1000)",
        ...                 steps=[Step("Truncation", True, 1200, 500, 40, 12)]).summary()
        'compacted 1,200 → 500 tokens, 40 → 12 messages in 2.0 ms (TokensExceed(1000)): \
Truncation −700'
        """
        if not self.changed:
            return f"no compaction ({self.reason})" if self.reason else "no compaction"
        done = ", ".join(
            f"{s.strategy} {_delta(s.tokens_after - s.tokens_before)}"
            for s in self.steps
            if s.changed and s.tokens_before != s.tokens_after and s.detail != COMPOSITE
        )
        line = (
            f"compacted {self.tokens_before:,} → {self.tokens_after:,} tokens, "
            f"{self.messages_before:,} → {self.messages_after:,} messages in "
            f"{self.seconds * 1000:.1f} ms"
        )
        if self.reason:
            line += f" ({self.reason})"
        if done:
            line += f": {done}"
        if self.model_calls:
            line += f"; {self.model_calls} model call(s), {self.model_input_tokens:,} tokens in"
        if self.fallbacks:
            line += f"; fallback: {'; '.join(self.fallbacks)}"
        if self.shortfall:
            line += f"; {self.shortfall}"
        if self.overflow is not None:
            line += f"; overflow recovery ({self.overflow.provider})"
        return line


def _delta(tokens: int) -> str:
    """A step's change: −saved, or +added (a rehydration brings content back)."""
    return f"+{tokens:,}" if tokens > 0 else f"−{-tokens:,}"


class Compactor:
    """A trigger, a strategy and a target, applied to a growing history.

    Args:
        trigger: when to compact (default: the strategy's own trigger, e.g. a
            `Budgeted`'s budget, else always).
        strategy: how; a strategy object, a function ``(view, context) -> bool`` or a name.
        target: when to stop (default: the trigger no longer fires). Trigger high,
            target low (hysteresis) compacts rarely and keeps the prompt prefix stable
            for provider prompt caches.
        tokenizer: for histories given as plain message lists.
        summarizer: the model summary strategies use when they have none of their own.
        min_preserved: if given, every strategy of the run keeps this many of the newest
            groups instead of its own `min_preserved` (the strategies inside a `Pipeline`
            or `Budgeted` too); the strategy objects are not changed (`overrides`).
        rehydrate: after a compaction that changed the view, bring back the newest
            files the agent read or edited, its plan and pinned memory
            (`kompakt.strategies.Rehydrate`), within the budget.

    >>> from kompakt.strategies import Budgeted
    >>> Compactor(strategy=Budgeted(8_000)).trigger
    TokensExceed(limit=8000)
    """

    @renamed_options(positional=("strategy", "target"))
    def __init__(
        self,
        trigger: TriggerLike | None = None,
        *,
        strategy: StrategyLike | str,
        target: TriggerLike | None = None,
        tokenizer: Tokenizer | None = None,
        summarizer: ChatModel | str | None = None,
        min_preserved: int | None = None,
        rehydrate: Rehydrate | None = None,
    ) -> None:
        if strategy is None:  # typed as required; None from an untyped caller
            raise ConfigError("Compactor needs `strategy=`, for example Budgeted(100_000)")
        strat: Any = strategy_from_name(strategy) if isinstance(strategy, str) else strategy
        strat = as_strategy(strat)
        self.strategy = strat
        self.overrides = Overrides(min_preserved=_min_preserved(min_preserved))
        """What each run changes in the strategy's options (it stays as configured)."""
        if trigger is None:
            trigger = own_trigger(strat) or Always()
        self.trigger: Trigger = as_trigger(trigger)
        self.target: Trigger = (
            as_trigger(target) if target is not None else default_target(self.trigger)
        )
        self.tokenizer = tokenizer
        self.summarizer = as_model(summarizer)
        self.rehydrate = rehydrate
        self._view: View | None = None

    # -- the persistent view --------------------------------------------------------

    @property
    def view(self) -> View | None:
        """The view of the last history compacted or checked (None before any)."""
        return self._view

    def view_for(self, index: MessageIndex) -> View:
        """The persistent view over `index` (a new one when `index` is another history)."""
        if self._view is None or self._view.index is not index:
            self._view = View(index)
        return self._view

    def reset(self) -> None:
        """Forget the view: the next compaction starts from the originals."""
        self._view = None

    def adopt(self, view: View) -> None:
        """Make `view` the persistent view: one compacted outside this compactor (for
        example by `kompakt.recovery.compact_for_retry` after an overflow), so the next
        compaction builds on it.

        >>> from kompakt import Message, MessageIndex
        >>> from kompakt.strategies import Truncation
        >>> view = View(MessageIndex([Message.user("hi")]))
        >>> compactor = Compactor(strategy=Truncation())
        >>> compactor.adopt(view)
        >>> compactor.view_for(view.index) is view
        True
        """
        self._view = view

    def _index(self, source: MessageIndex | Sequence[Message] | Any) -> MessageIndex:
        if isinstance(source, MessageIndex):
            return source
        if self._view is not None and self._view.index.messages is source:
            return self._view.index
        if not (isinstance(source, Sequence) and all(isinstance(m, Message) for m in source)):
            from kompakt.formats import loads

            source = loads(source)  # dicts or a document in any format kompakt reads
        return MessageIndex(source, tokenizer=self.tokenizer or CharEstimator())

    # -- checking and compacting ----------------------------------------------------

    def check(self, source: MessageIndex | View | Sequence[Message]) -> bool:
        """Whether the trigger fires on what would be sent now.

        O(1) on a `MessageIndex` or `View`; a plain list is indexed first (O(n)).
        """
        if isinstance(source, View):
            return self.trigger(source)
        return self.trigger(self.view_for(self._index(source)))

    def compact(
        self, source: MessageIndex | Sequence[Message], *, force: bool = False
    ) -> tuple[View, CompactionEvent]:
        """Compact when the trigger fires (always with ``force=True``).

        Returns the (persistent) view and what happened. If the strategy raises (for
        example `BudgetImpossible`), the view is left as it was.
        """
        view, reason = self._fired(source, force)
        if reason is None:
            return view, CompactionEvent.before(view, f"{self.trigger!r} did not fire")
        work = view.copy()
        event = self.run(work, reason=reason)
        self._view = work
        return work, event

    async def compact_async(
        self, source: MessageIndex | Sequence[Message], *, force: bool = False
    ) -> tuple[View, CompactionEvent]:
        """`compact` for strategies that await a model."""
        view, reason = self._fired(source, force)
        if reason is None:
            return view, CompactionEvent.before(view, f"{self.trigger!r} did not fire")
        work = view.copy()
        event = await self.run_async(work, reason=reason)
        self._view = work
        return work, event

    def run(
        self,
        view: View,
        *,
        target: Trigger | None = None,
        overrides: Overrides | None = None,
        reason: str = "",
        check_trigger: bool = True,
        rehydrate: bool = True,
        summarizer: ChatModel | _Default | None = COMPACTOR_DEFAULT,
    ) -> CompactionEvent:
        """Compact `view` in place now, whatever the trigger says: the one driver every
        loop runs (`compact`, the `Agent`, a background preparation, the adapters).

        Args:
            view: the view to edit (`compact` passes a copy of its persistent one).
            target: when to stop (default: the compactor's, less the rehydration's room).
            overrides: what this run changes in the strategy's options (default: the
                compactor's `overrides`, its budget less the rehydration's room).
            reason: why it runs, for the event.
            check_trigger: skip the strategy while its own trigger is quiet.
            rehydrate: run the compactor's `rehydrate` after a compaction that changed
                the view (False: the caller rehydrates, e.g. after its own steps).
            summarizer: the model summary strategies use when they have none of their
                own (default: the compactor's; None: none).

        >>> from kompakt.strategies import Truncation
        >>> c = Compactor(strategy=Truncation(min_preserved=1))
        >>> view = View(MessageIndex([Message.user("a"), Message.user("b")]))
        >>> c.run(view, target=TokensBelow(1)).messages_after, [m.text for m in view.render()]
        (1, ['b'])
        """
        ctx, event, started = self._open(view, target, overrides, reason, summarizer)
        run_strategy_sync(self.strategy, view, ctx, check_trigger=check_trigger)
        rehydrated = False
        if rehydrate and self.rehydrate is not None and any(s.changed for s in ctx.steps):
            run_strategy_sync(self.rehydrate, view, self._rehydrate_context(ctx))
            rehydrated = True
        event.finish(view, ctx.steps, seconds=time.perf_counter() - started)
        return self._explained(event, view, ctx, target, rehydrated=rehydrated)

    async def run_async(
        self,
        view: View,
        *,
        target: Trigger | None = None,
        overrides: Overrides | None = None,
        reason: str = "",
        check_trigger: bool = True,
        rehydrate: bool = True,
        summarizer: ChatModel | _Default | None = COMPACTOR_DEFAULT,
    ) -> CompactionEvent:
        """`run` for strategies that await a model (the same arguments)."""
        ctx, event, started = self._open(view, target, overrides, reason, summarizer)
        await run_strategy(self.strategy, view, ctx, check_trigger=check_trigger)
        rehydrated = False
        if rehydrate and self.rehydrate is not None and any(s.changed for s in ctx.steps):
            await run_strategy(self.rehydrate, view, self._rehydrate_context(ctx))
            rehydrated = True
        event.finish(view, ctx.steps, seconds=time.perf_counter() - started)
        return self._explained(event, view, ctx, target, rehydrated=rehydrated)

    def explain(
        self,
        view: View,
        *,
        target: Trigger | None = None,
        overrides: Overrides | None = None,
        rehydrated: bool = False,
    ) -> str | None:
        """Why `target` (default: the compactor's) does not hold on `view`, naming the
        option of the strategy to change (see `kompakt.shortfall.explain_shortfall`);
        None when it holds. `rehydrated`: the compactor's rehydration ran on `view`.

        >>> from kompakt.strategies import Summarize
        >>> c = Compactor(strategy=Summarize(keep_last_groups=3), target=TokensBelow(5))
        >>> print(c.explain(View(MessageIndex([Message.user("hello " * 10)]))))
        target TokensBelow(limit=5) not reached (15 tokens after compaction): \
keep_last_groups=3 keeps the newest 3 groups verbatim (15 tokens); lower keep_last_groups
        """
        keep, option = kept_by(self.strategy, self.overrides if overrides is None else overrides)
        return explain_shortfall(
            view,
            keep=keep,
            option=option,
            target=self.target if target is None else target,
            rehydrate=rehydrated,
        )

    def _explained(
        self,
        event: CompactionEvent,
        view: View,
        ctx: CompactionContext,
        target: Trigger | None,
        *,
        rehydrated: bool,
    ) -> CompactionEvent:
        """`event` with its `shortfall`: measured against the target the run was given,
        else the compactor's own (not the one lowered to leave the rehydration room)."""
        event.shortfall = self.explain(
            view, target=target, overrides=ctx.overrides, rehydrated=rehydrated
        )
        return event

    def with_room(self) -> tuple[Overrides, Trigger]:
        """The overrides and target to compact with, leaving room for the rehydration
        after it: the strategy's token budget (a `Budgeted`'s) and a token target
        lowered by `Rehydrate.room_for` (unchanged without `rehydrate`).

        >>> from kompakt.strategies import Budgeted, Rehydrate
        >>> c = Compactor(strategy=Budgeted(8_000), rehydrate=Rehydrate(max_message_tokens=1_000))
        >>> overrides, target = c.with_room()
        >>> overrides.budget(c.strategy.token_budget), target
        (7000, TokensBelow(limit=7000))
        """
        if self.rehydrate is None:
            return self.overrides, self.target
        budget = self._budget()
        limit = _token_limit(self.target)
        overrides, target = self.overrides, self.target
        if budget is not None:
            overrides = overrides.shifted(self.rehydrate.room_for(budget))
        if limit is not None:
            target = TokensBelow(max(1, limit - self.rehydrate.room_for(limit)))
        return overrides, target

    def _budget(self) -> int | None:
        """The strategy's token budget for a run, the overrides applied (None: it has none)."""
        budget = token_budget_of(self.strategy)
        return None if budget is None else self.overrides.budget(budget)

    def _rehydrate_context(self, ctx: CompactionContext) -> CompactionContext:
        """The rehydration measures its room against the budget and target as given."""
        return CompactionContext(
            ctx.view,
            target=self.target,
            budget=self._budget(),
            summarizer=ctx.summarizer,
            steps=ctx.steps,
        )

    def _fired(
        self, source: MessageIndex | Sequence[Message], force: bool
    ) -> tuple[View, str | None]:
        """The persistent view over `source`, and why to compact it now (None: not now)."""
        view = self.view_for(self._index(source))
        if self.trigger(view):
            return view, f"{self.trigger!r} fired"
        return view, "forced" if force else None

    def _open(
        self,
        view: View,
        target: Trigger | None,
        overrides: Overrides | None,
        reason: str,
        summarizer: ChatModel | _Default | None,
    ) -> tuple[CompactionContext, CompactionEvent, float]:
        """A run's context, its event opened on `view` as it is, and when it started."""
        room_overrides, room_target = self.with_room()
        ctx = CompactionContext(
            view,
            target=room_target if target is None else target,
            summarizer=self.summarizer if isinstance(summarizer, _Default) else summarizer,
            overrides=room_overrides if overrides is None else overrides,
        )
        return ctx, CompactionEvent.before(view, reason), time.perf_counter()

    # -- configuration --------------------------------------------------------------

    @classmethod
    def from_config(cls, source: str | Path | Mapping[str, Any]) -> Compactor:
        """A compactor from a TOML file, TOML text or a dict (see `kompakt.config`).

        >>> c = Compactor.from_config({"trigger": {"tokens": 100_000},
        ...                            "target": {"tokens": 60_000},
        ...                            "strategy": [{"name": "collapse_tool_results"},
        ...                                         {"name": "truncation"}]})
        >>> c.target
        TokensBelow(limit=60000)
        >>> [type(s).__name__ for s in c.strategy.strategies]
        ['CollapseToolResults', 'Truncation']
        """
        data = read_config(source)
        known = {
            "trigger",
            "target",
            "strategy",
            "budget",
            "min_preserved",
            "tokenizer",
            "summarizer",
            "early_stop",
            "rehydrate",
        }
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"unknown key(s) in config: {', '.join(unknown)}")
        strategies = [strategy_from_spec(s) for s in _list(data.get("strategy", []), "strategy")]
        strategy: Any
        budget = data.get("budget")
        if isinstance(budget, Mapping):
            budget = budget.get("tokens")
        if budget is not None:
            strategy = strategy_from_name(
                "budgeted",
                token_budget=budget,
                strategies=strategies or None,
                early_stop=_bool(data.get("early_stop", True), "early_stop"),
            )
        elif not strategies:
            raise ConfigError("config needs a `[[strategy]]` table or a `budget`")
        elif len(strategies) == 1:
            strategy = strategies[0]
        else:
            strategy = strategy_from_name("pipeline", strategies=strategies)
        trigger = trigger_from_table(data["trigger"]) if "trigger" in data else None
        target = target_from_table(data["target"]) if "target" in data else None
        return cls(
            trigger,
            strategy=strategy,
            target=target,
            tokenizer=_tokenizer(data.get("tokenizer")),
            summarizer=_summarizer(data.get("summarizer")),
            min_preserved=_min_preserved(data.get("min_preserved")),
            rehydrate=_rehydrate(data.get("rehydrate")),
        )

    def __repr__(self) -> str:
        return f"Compactor(trigger={self.trigger!r}, strategy={self.strategy!r})"


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"`{where}` must be true or false, got {value!r}")
    return value


def _min_preserved(value: Any) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ConfigError(f"`min_preserved` must be an int >= 0, got {value!r}")
    return value


def _rehydrate(spec: Any) -> Rehydrate | None:
    """``rehydrate = true`` or a ``[rehydrate]`` table of `Rehydrate`'s options."""
    if spec is None or spec is False:
        return None
    if spec is True:
        return Rehydrate()
    if not isinstance(spec, Mapping):
        raise ConfigError(f"`rehydrate` must be true or a table, got {spec!r}")
    allowed = {"files", "max_file_tokens", "max_tokens", "plan", "pinned"}
    unknown = sorted(set(spec) - allowed)
    if unknown:
        raise ConfigError(
            f"unknown key(s) in [rehydrate]: {', '.join(unknown)} "
            f"(known: {', '.join(sorted(allowed))})"
        )
    for flag in ("plan", "pinned"):
        if flag in spec:
            _bool(spec[flag], f"rehydrate.{flag}")
    return Rehydrate(**spec)


def _tokenizer(spec: Any) -> Tokenizer | None:
    if spec is None:
        return None
    if not isinstance(spec, str):
        raise ConfigError(f"`tokenizer` must be a name or a path, got {spec!r}")
    return tokenizer_from_string(spec)


def _summarizer(spec: Any) -> Any:
    if spec is None:
        return None
    if isinstance(spec, Mapping):
        spec = spec.get("model")
    if not isinstance(spec, str):
        raise ConfigError(f"`summarizer` must be a model string, got {spec!r}")
    from kompakt import models

    factory = getattr(models, "model_from_string", None)
    if factory is None:
        raise ConfigError("`summarizer` needs kompakt.models.model_from_string")
    return factory(spec)


# -- one-shot compaction of a list ------------------------------------------------------


def apply_compaction(
    messages: Any,
    strategy: StrategyLike | str,
    *,
    tokenizer: Tokenizer | None = None,
    format: str | None = None,
    summarizer: ChatModel | str | None = None,
) -> Any:
    """Compact a message list once; the format that comes in is the format that goes out.

    `messages` is a list of `Message`, or anything `kompakt.loads` parses (OpenAI or
    Anthropic dicts, a trajectory file's document); `format` forces the format. The
    strategy (the one input besides the messages, so it may come by position) runs
    once through a `Compactor`, with its own trigger (a `Budgeted` does nothing within
    budget). The input is never mutated.

    >>> from kompakt.strategies import Budgeted
    >>> from kompakt import CharEstimator
    >>> msgs = [Message.system("s")] + [Message.user("x" * 400) for _ in range(10)]
    >>> out = apply_compaction(msgs, Budgeted(300))
    >>> [m.synthetic for m in out], sum(CharEstimator().count_message(m) for m in out) <= 300
    ([None, 'summary', None, None], True)
    """
    msgs, back = _read(messages, format)
    compactor, view = _one_shot(msgs, strategy, tokenizer, summarizer)
    compactor.run(view, target=Never())
    return back(view.render())


async def apply_compaction_async(
    messages: Any,
    strategy: StrategyLike | str,
    *,
    tokenizer: Tokenizer | None = None,
    format: str | None = None,
    summarizer: ChatModel | str | None = None,
) -> Any:
    """`apply_compaction` for strategies that await a model."""
    msgs, back = _read(messages, format)
    compactor, view = _one_shot(msgs, strategy, tokenizer, summarizer)
    await compactor.run_async(view, target=Never())
    return back(view.render())


def as_history_processor(
    strategy: StrategyLike | str, *, tokenizer: Tokenizer | None = None
) -> HistoryProcessor:
    """A `HistoryProcessor` (list in, new list out) applying `strategy`.

    >>> from kompakt.strategies import SlidingWindow
    >>> process = as_history_processor(SlidingWindow(keep_last_turns=1))
    >>> [m.text for m in process([Message.user("a"), Message.user("b")])]
    ['b']
    """
    strat = _strategy(strategy)

    def process(messages: list[Message]) -> list[Message]:
        out: list[Message] = apply_compaction(messages, strat, tokenizer=tokenizer)
        return out

    return process


def _strategy(strategy: StrategyLike | str) -> Any:
    return strategy_from_name(strategy) if isinstance(strategy, str) else strategy


def _one_shot(
    messages: Sequence[Message] | MessageIndex | View,
    strategy: StrategyLike | str,
    tokenizer: Tokenizer | None,
    summarizer: ChatModel | str | None,
) -> tuple[Compactor, View]:
    """A `Compactor` for one run of `strategy`, and the view it runs on (a copy of a
    view given): the one-shot functions drive compaction through it like every loop."""
    compactor = Compactor(strategy=strategy, tokenizer=tokenizer, summarizer=summarizer)
    if isinstance(messages, View):
        return compactor, messages.copy()
    if isinstance(messages, MessageIndex):
        return compactor, View(messages)
    return compactor, View(MessageIndex(messages, tokenizer=tokenizer or CharEstimator()))


def _read(
    messages: Any, format: str | None
) -> tuple[list[Message], Callable[[list[Message]], Any]]:
    """The messages, and how to turn the result back into the input's format."""
    is_list = isinstance(messages, Sequence) and not isinstance(messages, (str, bytes))
    if is_list and all(map(isinstance, messages, repeat(Message))):
        if hasattr(messages, "format"):  # a Conversation: keep its format and envelope
            return list(messages), lambda out: _like(messages, out)
        return list(messages), lambda out: out
    from kompakt import formats

    conv = formats.loads(messages, format=format)
    fmt = getattr(conv, "format", None) or format
    return list(conv), lambda out: formats.dump(_like(conv, out), format=fmt)


def _like(conv: Any, out: list[Message]) -> Any:
    """`out` as a Conversation carrying `conv`'s format and envelope."""
    with_messages = getattr(conv, "with_messages", None)
    if with_messages is not None:
        return with_messages(out)
    new = copy.copy(conv)
    new[:] = out
    return new
