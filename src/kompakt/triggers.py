"""When to compact (a trigger) and when to stop (a target).

Triggers and targets are the same thing: a predicate on *metrics*, which both a
`MessageIndex` (the whole history) and a `View` (what would be sent) provide:
`total_tokens`, `message_count`, `group_count`, `turn_count`, `total_chars`,
`tool_call_group_count`. Any plain callable taking those metrics works too.

Hysteresis is the recommended setup: trigger high, target low, for example
``TokensExceed(100_000)`` with ``TokensBelow(60_000)``. Compaction then runs rarely,
and between two compactions the prompt only grows at its end, so the provider's
prompt cache (which matches a stable prefix) keeps hitting.

>>> from kompakt.index import MessageIndex
>>> from kompakt.messages import Message
>>> idx = MessageIndex([Message.user("x" * 400)])
>>> TokensExceed(50)(idx), TokensExceed(500)(idx), AnyOf(Never(), Always())(idx)
(True, False, True)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TypeAlias, runtime_checkable

from kompakt._deprecation import renamed, renamed_options
from kompakt.errors import ConfigError

__all__ = [
    "CONTEXT_WINDOWS",
    "AllOf",
    "Always",
    "AnyOf",
    "CharsExceed",
    "ContextFraction",
    "GroupsExceed",
    "HasToolCalls",
    "MessagesExceed",
    "Metrics",
    "Never",
    "Not",
    "TokensBelow",
    "TokensExceed",
    "Trigger",
    "TriggerLike",
    "TurnsExceed",
    "as_trigger",
    "context_window",
]


@runtime_checkable
class Metrics(Protocol):
    """What a trigger reads: implemented by `MessageIndex` and `View`."""

    @property
    def total_tokens(self) -> int: ...
    @property
    def message_count(self) -> int: ...
    @property
    def group_count(self) -> int: ...
    @property
    def turn_count(self) -> int: ...
    @property
    def total_chars(self) -> int: ...
    @property
    def tool_call_group_count(self) -> int: ...


class Trigger:
    """A predicate on metrics. Combine with `&`, `|` and `~`."""

    def __call__(self, m: Metrics) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def __and__(self, other: TriggerLike) -> Trigger:
        return AllOf(self, other)

    def __or__(self, other: TriggerLike) -> Trigger:
        return AnyOf(self, other)

    def __invert__(self) -> Trigger:
        return Not(self)


TriggerLike: TypeAlias = "Trigger | Callable[[Metrics], bool]"


def _check_limit(name: str, value: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ConfigError(f"`{name}` must be an int >= 0, got {value!r}")
    return value


@dataclass(frozen=True)
class TokensExceed(Trigger):
    """Fires when the tokens exceed `limit`."""

    limit: int

    def __post_init__(self) -> None:
        _check_limit("limit", self.limit)

    def __call__(self, m: Metrics) -> bool:
        return m.total_tokens > self.limit


@dataclass(frozen=True)
class TokensBelow(Trigger):
    """Holds when the tokens are at most `limit` (the usual target)."""

    limit: int

    def __post_init__(self) -> None:
        _check_limit("limit", self.limit)

    def __call__(self, m: Metrics) -> bool:
        return m.total_tokens <= self.limit


@dataclass(frozen=True)
class MessagesExceed(Trigger):
    """Fires when more than `limit` messages would be sent."""

    limit: int

    def __post_init__(self) -> None:
        _check_limit("limit", self.limit)

    def __call__(self, m: Metrics) -> bool:
        return m.message_count > self.limit


@dataclass(frozen=True)
class TurnsExceed(Trigger):
    """Fires when more than `limit` user turns would be sent."""

    limit: int

    def __post_init__(self) -> None:
        _check_limit("limit", self.limit)

    def __call__(self, m: Metrics) -> bool:
        return m.turn_count > self.limit


@dataclass(frozen=True)
class GroupsExceed(Trigger):
    """Fires when more than `limit` groups would be sent."""

    limit: int

    def __post_init__(self) -> None:
        _check_limit("limit", self.limit)

    def __call__(self, m: Metrics) -> bool:
        return m.group_count > self.limit


@dataclass(frozen=True)
class CharsExceed(Trigger):
    """Fires when more than `limit` characters would be sent."""

    limit: int

    def __post_init__(self) -> None:
        _check_limit("limit", self.limit)

    def __call__(self, m: Metrics) -> bool:
        return m.total_chars > self.limit


@dataclass(frozen=True)
class HasToolCalls(Trigger):
    """Fires when at least one tool-call group is still sent as calls and results."""

    def __call__(self, m: Metrics) -> bool:
        return m.tool_call_group_count > 0


@dataclass(frozen=True)
class Always(Trigger):
    """Always fires."""

    def __call__(self, m: Metrics) -> bool:
        return True


@dataclass(frozen=True)
class Never(Trigger):
    """Never fires (compaction off)."""

    def __call__(self, m: Metrics) -> bool:
        return False


class AllOf(Trigger):
    """Fires when every one of `triggers` fires."""

    def __init__(self, *triggers: TriggerLike) -> None:
        self.triggers = tuple(as_trigger(t) for t in triggers)

    def __call__(self, m: Metrics) -> bool:
        return all(t(m) for t in self.triggers)

    def __repr__(self) -> str:
        return f"AllOf{self.triggers!r}"


class AnyOf(Trigger):
    """Fires when any of `triggers` fires."""

    def __init__(self, *triggers: TriggerLike) -> None:
        self.triggers = tuple(as_trigger(t) for t in triggers)

    def __call__(self, m: Metrics) -> bool:
        return any(t(m) for t in self.triggers)

    def __repr__(self) -> str:
        return f"AnyOf{self.triggers!r}"


class Not(Trigger):
    """Fires when `trigger` does not."""

    def __init__(self, trigger: TriggerLike) -> None:
        self.trigger = as_trigger(trigger)

    def __call__(self, m: Metrics) -> bool:
        return not self.trigger(m)

    def __repr__(self) -> str:
        return f"Not({self.trigger!r})"


class _Callable(Trigger):
    def __init__(self, fn: Callable[[Metrics], bool]) -> None:
        self.fn = fn

    def __call__(self, m: Metrics) -> bool:
        return bool(self.fn(m))

    def __repr__(self) -> str:
        return f"Trigger({getattr(self.fn, '__name__', self.fn)!r})"


def as_trigger(t: TriggerLike) -> Trigger:
    """A `Trigger` from a trigger or any callable on metrics."""
    if isinstance(t, Trigger):
        return t
    if callable(t):
        return _Callable(t)
    raise ConfigError(f"a trigger must be a Trigger or a callable, got {t!r}")


CONTEXT_WINDOWS: dict[str, int] = {
    "gpt-4.1": 1_047_576,
    "gpt-4.1-mini": 1_047_576,
    "gpt-4.1-nano": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "gpt-5": 400_000,
    "gpt-5-mini": 400_000,
    "o1": 200_000,
    "o3": 200_000,
    "o3-mini": 200_000,
    "o4-mini": 200_000,
    "claude-3-5-sonnet": 200_000,
    "claude-3-5-haiku": 200_000,
    "claude-3-7-sonnet": 200_000,
    "claude-sonnet-4": 200_000,
    "claude-opus-4": 200_000,
    "claude-haiku-4": 200_000,
    "deepseek-chat": 128_000,
    "deepseek-reasoner": 128_000,
    "gemini-1.5-pro": 2_000_000,
    "gemini-2.0-flash": 1_000_000,
    "gemini-2.5-pro": 1_000_000,
    "gemini-2.5-flash": 1_000_000,
    "llama-3.1-8b": 128_000,
    "qwen2.5": 32_768,
    "smollm2": 8_192,
}
"""Context windows of well-known models, in tokens (prefix match on the model name)."""


def context_window(model: str) -> int:
    """The context window of a well-known model (longest prefix match).

    >>> context_window("gpt-4o-mini-2024-07-18")
    128000
    """
    name = model.split(":", 1)[-1].split("/")[-1].lower()
    best = ""
    for known in CONTEXT_WINDOWS:
        if name.startswith(known) and len(known) > len(best):
            best = known
    if not best:
        raise ConfigError(
            f"unknown context window for model {model!r}: "
            "pass context_window=<tokens> to ContextFraction"
        )
    return CONTEXT_WINDOWS[best]


_window_of = context_window  # ContextFraction's option of the same name shadows it


class ContextFraction(Trigger):
    """Fires when the tokens exceed `fraction` of a context window.

    >>> ContextFraction(0.8, model="gpt-4o").limit
    102400
    """

    @renamed_options(window="context_window")
    def __init__(
        self, fraction: float, *, context_window: int | None = None, model: str | None = None
    ) -> None:
        if not 0 < fraction <= 1:
            raise ConfigError(f"`fraction` must be in (0, 1], got {fraction!r}")
        if context_window is None:
            if model is None:
                raise ConfigError("ContextFraction needs `context_window=` or `model=`")
            context_window = _window_of(model)
        if _check_limit("context_window", context_window) == 0:
            raise ConfigError("`context_window` must be an int > 0, got 0")
        self.fraction = fraction
        self.context_window = context_window
        self.limit = int(context_window * fraction)

    @property
    def window(self) -> int:
        """The 0.1 name of `context_window` (deprecated)."""
        renamed("window", "context_window", owner="ContextFraction")
        return self.context_window

    def __call__(self, m: Metrics) -> bool:
        return m.total_tokens > self.limit

    def __repr__(self) -> str:
        return f"ContextFraction({self.fraction}, context_window={self.context_window})"


_RENAMED = {"Any": "AnyOf", "All": "AllOf"}
"""Old names, importable for one release (``Any`` shadowed `typing.Any`)."""


def __getattr__(name: str) -> type[Trigger]:
    new = _RENAMED.get(name)
    if new is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    renamed(name, new, owner="kompakt.triggers")
    return globals()[new]  # type: ignore[no-any-return]
