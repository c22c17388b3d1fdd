"""Helpers the built-in strategies share (not public API)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from math import inf

from kompakt.errors import ConfigError
from kompakt.messages import Message
from kompakt.strategies.base import (
    QUIET,
    CompactionContext,
    Step,
    StrategyLike,
    open_step,
    own_target,
    own_trigger,
    recording,
)
from kompakt.triggers import (
    Never,
    Not,
    TokensBelow,
    TokensExceed,
    Trigger,
    TriggerLike,
    as_trigger,
)
from kompakt.view import OMITTED_NOTE, View

ELLIPSIS = "…"
COMPOSITE = "composite: its strategies' steps are listed separately"
"""`Step.detail` of a strategy that runs others (Pipeline, Budgeted)."""
_NON_BLANK = re.compile(r"\S")


def optional_trigger(t: TriggerLike | None) -> Trigger | None:
    """`as_trigger` that lets None through."""
    return None if t is None else as_trigger(t)


def check_count(name: str, value: int | None, *, minimum: int = 0) -> None:
    """Raise a `ConfigError` naming the option unless it is an int >= `minimum`."""
    if value is None:
        return
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ConfigError(f"`{name}` must be an int >= {minimum}, got {value!r}")


def should_stop(strategy: object, view: View, context: CompactionContext) -> bool:
    """The compaction target holds, or the strategy's own trigger no longer fires.

    A strategy with its own trigger stops once that trigger is quiet (its default
    target is the trigger's negation, as in a pipeline of independently triggered
    strategies); an own `target` stops it too.
    """
    if context.done():
        return True
    target = own_target(strategy)
    if target is not None and target(view):
        return True
    trigger = own_trigger(strategy)
    return trigger is not None and not trigger(view)


class Stop:
    """`should_stop` for a loop that only removes tokens, cheap enough to ask per group.

    When every stop condition is a token limit (``TokensBelow``, the negation of
    ``TokensExceed``; ``Never`` is ignored), the loop reports the tokens it removes and
    the conditions are only evaluated once the running estimate is within the
    omission note's cost of the highest limit: until then none of them can hold.
    """

    def __init__(self, strategy: object, view: View, context: CompactionContext) -> None:
        self.strategy, self.view, self.context = strategy, view, context
        conditions: list[Trigger] = [context.target]
        target = own_target(strategy)
        if target is not None:
            conditions.append(target)
        trigger = own_trigger(strategy)
        limits = [_token_limit(c) for c in conditions if not isinstance(c, Never)]
        if trigger is not None:
            limits.append(trigger.limit if isinstance(trigger, TokensExceed) else None)
        self.never = not limits  # nothing but `Never`: run to the end
        self.limit: int | None = (
            None if not limits or None in limits else max(x for x in limits if x is not None)
        )
        self.margin = view.index.tokenizer.count_message(Message.user(OMITTED_NOTE))
        self.estimate = view.total_tokens
        self.quiet_above: float = (
            -inf if self.never else inf if self.limit is None else self.limit + self.margin
        )
        """While `estimate` is above this, no condition can hold: asking is False (a loop
        may skip the call, and put off its edits until it asks)."""

    def __call__(self) -> bool:
        """The target holds (or the strategy's own trigger is quiet): stop removing."""
        if self.never:
            return False
        if self.limit is not None and self.estimate > self.limit + self.margin:
            return False
        self.estimate = self.view.total_tokens
        return should_stop(self.strategy, self.view, self.context)

    def removed(self, tokens: int) -> None:
        """The loop took `tokens` out of the view."""
        self.estimate -= tokens


class Walk:
    """A strategy's resumable walk over a view (see `View.resume`).

    Groups it is `done` with need nothing more from it until edited; where it
    `stopped`, the next compaction picks up again.
    """

    def __init__(self, view: View, key: object) -> None:
        self.view, self.key = view, key
        self.revisit, self.start = view.resume(key)
        self.position = self.start
        self.left: list[int] = []

    def done(self, group: int) -> None:
        if group >= self.position:
            self.position = group + 1

    def stopped(self, group: int) -> None:
        """The walk ended before `group` (the target held)."""
        if group < self.start:  # still among the groups to revisit
            self.left = [g for g in self.revisit if g >= group]
        else:
            self.position = min(self.position, group)

    def settle(self, cap: int | None = None) -> None:
        """Record how far the walk got; never past `cap` (a group protected only for now)."""
        position = self.position
        if cap is not None and cap >= self.start:
            position = min(position, cap)
        self.view.settle(self.key, position, self.left)


def _token_limit(t: Trigger) -> int | None:
    if isinstance(t, TokensBelow):
        return t.limit
    if isinstance(t, Not) and isinstance(t.trigger, TokensExceed):
        return t.trigger.limit
    return None


def tool_name_set(names: Iterable[str] | str) -> frozenset[str]:
    """Tool names as a set; one name given as a plain string is one name, not its letters."""
    return frozenset((names,) if isinstance(names, str) else names)


def has_calls(messages: Sequence[Message]) -> bool:
    """The messages still send an assistant tool call (not collapsed or summarized)."""
    return any(m.tool_calls for m in messages)


def tool_names(messages: Iterable[Message]) -> set[str]:
    """Names of every tool called in `messages`."""
    return {c.name for m in messages for c in m.tool_calls}


def rendered_tokens(view: View, group: int) -> int:
    """Tokens the group currently contributes to the view."""
    return view.group_tokens(group)


def first_line(text: str) -> str:
    """The first non-empty line of `text`, stripped ('' when there is none)."""
    start, n = 0, len(text)
    while start < n:
        end = text.find("\n", start)
        end = n if end < 0 else end
        line = text[start:end].strip()
        if line:
            return line
        start = end + 1
    return ""


def abbreviate(text: str, limit: int) -> str:
    """`text` cut to `limit` characters with an ellipsis when longer."""
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 1)] + ELLIPSIS


def short_args(arguments: str, limit: int = 60) -> str:
    """Tool-call arguments as ``k=v, ...``, each value and the whole abbreviated."""
    key = (arguments, limit)
    cached = _SHORT_ARGS.get(key)
    if cached is None:
        if len(_SHORT_ARGS) >= 10_000:
            _SHORT_ARGS.clear()
        cached = _SHORT_ARGS[key] = _short_args(arguments, limit)
    return cached


_SHORT_ARGS: dict[tuple[str, int], str] = {}
"""Agents repeat arguments (the same file read again and again): parse each once."""


def _short_args(arguments: str, limit: int) -> str:
    try:
        data = json.loads(arguments)
    except (ValueError, TypeError, RecursionError):
        return abbreviate(" ".join(arguments.split()), limit)
    if isinstance(data, dict):
        parts = []
        for k, v in data.items():
            value = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
            parts.append(f"{k}={abbreviate(' '.join(value.split()), 40)}")
        return abbreviate(", ".join(parts), limit)
    return abbreviate(json.dumps(data, ensure_ascii=False), limit)


def run_strategy_sync(
    s: StrategyLike, view: View, context: CompactionContext, *, check_trigger: bool = True
) -> Step:
    """The synchronous twin of `run_strategy`: no event loop unless the strategy needs one."""
    strat, step = open_step(s, view, context, check_trigger=check_trigger)
    if step.detail == QUIET:
        return step
    apply = getattr(strat, "apply", None)
    if apply is None:
        raise ConfigError(f"{step.strategy} is async only: use the async compaction API")
    with recording(step, view, context):
        step.changed = bool(apply(view, context))
    return step
