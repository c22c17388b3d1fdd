"""Compactors by name or from a config file: what the command line, serve, eval and batch share.

A budget ``B`` becomes a compactor that fires when the context passes ``B`` and
compacts it down to ``target * B`` (hysteresis: compactions are rare and the prompt
prefix stays stable between them, so provider prompt caches keep hitting).

``budgeted`` (default)    the default chain held to the budget (`Budgeted`)
``digest``                the extractive digest (no model), held to the budget
``summarize``             a model summary (``--model``), held to the budget
``truncation``            drop the oldest groups
``window``                sliding window: the newest 10 groups
``first-last``            keep the first user message and the newest groups
``collapse``              old tool results become one-line notes
``remove-tools``          drop old tool-call groups
``clamp``                 keep head and tail of oversized messages
``supersede``             stale re-reads become one line
========================  ==========================================================
=======
Strategy names (``kompakt replay --strategy NAME``) are the library's own (see
`kompakt.config.strategy_name`; the 0.1 short names such as ``collapse`` still work, with a
DeprecationWarning):

=========================  =========================================================
``budgeted`` (default)     the default chain held to the budget (`Budgeted`)
``extractive_digest``      the extractive digest (no model), held to the budget
``summarize``              a model summary (``--model``), held to the budget
``truncation``             drop the oldest groups
``sliding_window``         the newest 10 groups
``keep_first_and_last``    keep the first user message and the newest groups
``collapse_tool_results``  old tool results become one-line notes
``remove_tool_calls``      drop old tool-call groups
``clamp_oversized``        keep head and tail of oversized messages
``supersede_reads``        stale re-reads become one line
=========================  =========================================================

>>> sorted(STRATEGIES)[:3]
['budgeted', 'clamp_oversized', 'collapse_tool_results']
>>> load_tokenizer("chars:3")
CharEstimator(chars_per_token=3.0)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from math import isfinite
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kompakt.errors import ConfigError
from kompakt.index import MessageIndex
from kompakt.messages import Message
from kompakt.tokens import Tokenizer, tokenizer_from_string

if TYPE_CHECKING:
    from kompakt.compactor import CompactionEvent, Compactor
    from kompakt.models import ChatModel

__all__ = [
    "DEFAULT_STRATEGY",
    "DEFAULT_TARGET",
    "STRATEGIES",
    "Budget",
    "Compacted",
    "budget_warning",
    "compact_messages",
    "compact_once",
    "compactor_from_config",
    "load_model",
    "load_tokenizer",
    "make_compactor",
    "make_strategy",
    "parse_budgets",
    "registry_name",
]

DEFAULT_STRATEGY = "budgeted"
DEFAULT_TARGET = 0.75
"""Compaction brings the context down to this fraction of the budget."""

STRATEGIES: dict[str, str] = {
    "budgeted": "the default chain (clamp, digest, collapse) held to the budget",
    "extractive_digest": "extractive digest of the older span (no model), held to the budget",
    "summarize": "model summary of the older span (--model), held to the budget",
    "truncation": "drop the oldest groups",
    "sliding_window": "sliding window: the newest 10 groups",
    "keep_first_and_last": "keep the first user message and the newest groups",
    "collapse_tool_results": "old tool results become one-line notes",
    "remove_tool_calls": "drop old tool-call groups",
    "clamp_oversized": "keep head and tail of oversized messages",
    "supersede_reads": "stale re-reads become one line",
}
"""The strategies the command line and the evaluation offer (registry names, see
`kompakt.config.STRATEGY_NAMES`), with what each does."""


def load_tokenizer(spec: str | None) -> Tokenizer:
    """``chars`` (default), ``chars:N``, ``cl100k_base`` or a ``tokenizer.json`` path."""
    return tokenizer_from_string(spec, parameter="--tokenizer")


def load_model(spec: str | None) -> ChatModel | None:
    """The summarizer model for ``--model SPEC`` (None when not given)."""
    if not spec:
        return None
    from kompakt.models import model_from_string

    return model_from_string(spec)


def _digest(budget: int, summarizer: ChatModel | None) -> Any:
    from kompakt.strategies import Budgeted, ExtractiveDigest

    # keep_last_groups=2 (the engine's min_preserved) leaves the digest room under tight
    # budgets, so the fallback truncation (which would drop the digest itself) is rarely needed
    return Budgeted(budget, strategies=[ExtractiveDigest(keep_last_groups=2)])


def _summarize(budget: int, summarizer: ChatModel | None) -> Any:
    from kompakt.strategies import Budgeted, Summarize

    if summarizer is None:
        raise ConfigError("--strategy summarize needs --model (for example --model extractive)")
    return Budgeted(budget, strategies=[Summarize(summarizer=summarizer)])


def _budgeted(budget: int, summarizer: ChatModel | None) -> Any:
    from kompakt.strategies import Budgeted

    return Budgeted(budget)


def _clamp(budget: int, summarizer: ChatModel | None) -> Any:
    from kompakt.strategies import ClampOversized

    # the same share of the budget as the default chain's clamp
    return ClampOversized(max_message_tokens=max(16, min(4_000, budget // 10)))


def _window(budget: int, summarizer: ChatModel | None) -> Any:
    from kompakt.strategies import SlidingWindow

    return SlidingWindow(keep_last_groups=10)


_BUILDERS: dict[str, Callable[[int, ChatModel | None], Any]] = {
    "budgeted": _budgeted,
    "extractive_digest": _digest,
    "summarize": _summarize,
    "clamp_oversized": _clamp,
    "sliding_window": _window,
}
"""Strategies whose options here depend on the budget (or need one); the others are the
registry's with their defaults."""


def registry_name(name: str) -> str:
    """`name` as the registry spells it (a 0.1 short name warns once, here); an unknown
    name comes back as it is, for `make_strategy` to refuse with the list of names.

    >>> registry_name("Truncation"), registry_name("nonsense")
    ('truncation', 'nonsense')
    """
    from kompakt.config import strategy_name

    try:
        return strategy_name(name, stacklevel=3)
    except ConfigError:
        return name


def make_strategy(name: str, budget: int, *, summarizer: ChatModel | None = None) -> Any:
    """The strategy called `name` (a registry name, see `STRATEGIES`), held to `budget`
    tokens where it takes a budget; every other registry name (``pipeline`` aside) works
    too, with its default options.

    >>> make_strategy("collapse_tool_results", 1_000)
    CollapseToolResults(keep_last_groups=2)
    """
    from kompakt.config import STRATEGY_NAMES, strategy_from_name, strategy_name

    try:
        key = strategy_name(name, stacklevel=3)
    except ConfigError:
        key = None
    if key is None or key == "pipeline":
        known = ", ".join(STRATEGIES)
        others = ", ".join(n for n in STRATEGY_NAMES if n not in STRATEGIES and n != "pipeline")
        raise ConfigError(
            f"--strategy: unknown strategy {name!r}; choose one of: {known} (or: {others})"
        )
    builder = _BUILDERS.get(key)
    if builder is not None:
        return builder(budget, summarizer)
    return strategy_from_name(key)


def make_compactor(
    strategy: str,
    budget: int,
    *,
    target: float = DEFAULT_TARGET,
    tokenizer: Tokenizer | None = None,
    summarizer: ChatModel | None = None,
) -> Compactor:
    """Fire above `budget` tokens, compact down to ``target * budget`` with `strategy`."""
    from kompakt.compactor import Compactor
    from kompakt.triggers import TokensBelow, TokensExceed

    if not 0 < target <= 1:
        raise ConfigError(f"--target must be in (0, 1], got {target!r}")
    if budget < 1:
        raise ConfigError(f"--budget must be at least 1 token, got {budget!r}")
    goal = max(1, int(budget * target))
    return Compactor(
        trigger=TokensExceed(budget),
        strategy=make_strategy(strategy, goal, summarizer=summarizer),
        target=TokensBelow(goal),
        tokenizer=tokenizer,
        summarizer=summarizer,
    )


def compactor_from_config(source: str | Path | Mapping[str, Any]) -> Compactor:
    """`Compactor.from_config` with file errors turned into one-line `ConfigError`s."""
    from kompakt.compactor import Compactor

    if not isinstance(source, Mapping):
        path = Path(source)
        if not path.is_file():
            raise ConfigError(f"--config: file not found: {str(path)!r}")
        return Compactor.from_config(path)
    return Compactor.from_config(dict(source))


@dataclass
class Compacted:
    """One compaction's output: the messages, what happened, and the budget held to."""

    messages: list[Message]
    event: CompactionEvent | None
    """None when a config's trigger did not fire (nothing ran)."""
    budget: int | None
    """The token budget (None with a config: its target says when to stop)."""
    tokens: int
    """Tokens of `messages`."""
    models: tuple[str, ...] = ()
    """Names of the summarizer models in use (to name them in fallback warnings)."""

    @property
    def over_budget(self) -> bool:
        """The output is larger than the budget (a single strategy ran out of room)."""
        return self.budget is not None and self.tokens > self.budget


def compact_once(
    messages: Sequence[Message],
    *,
    tokenizer: Tokenizer,
    budget: int | None,
    strategy: str | None = None,
    config: str | Path | Mapping[str, Any] | None = None,
    summarizer: ChatModel | None = None,
) -> Compacted:
    """Compact once: a named strategy stopped at `budget`, or a config's compactor.

    Every named strategy runs with the target "at most `budget` tokens", so it removes
    only what the budget needs (nothing when the run fits already). A single strategy
    may run out of things to remove before that (`clamp` only shortens oversized
    messages): the result then says so with `over_budget`.

    >>> from kompakt import Message
    >>> msgs = [Message.user(f"message {i} " + "x" * 400) for i in range(10)]
    >>> from kompakt.tokens import CharEstimator
    >>> done = compact_once(msgs, tokenizer=CharEstimator(), budget=500, strategy="truncation")
    >>> len(done.messages), done.tokens <= 500, done.over_budget
    (6, True, False)
    """
    from kompakt.compactor import Compactor
    from kompakt.triggers import TokensBelow, TokensExceed

    index = MessageIndex(messages, tokenizer=tokenizer)
    if config is not None:
        compactor = compactor_from_config(config)
        budget = None  # the config's own target says when to stop
    elif budget is None:
        raise ConfigError("--budget is required (tokens like 8000, or a fraction like 0.2)")
    else:
        if budget < 1:
            raise ConfigError(f"--budget must be at least 1 token, got {budget!r}")
        compactor = Compactor(
            trigger=TokensExceed(budget),
            strategy=make_strategy(strategy or DEFAULT_STRATEGY, budget, summarizer=summarizer),
            target=TokensBelow(budget),
            tokenizer=tokenizer,
            summarizer=summarizer,
        )
    name = getattr(compactor.summarizer, "name", None)
    models = (name,) if isinstance(name, str) else ()
    if not compactor.check(index):
        return Compacted(list(index.messages), None, budget, index.total_tokens, models)
    view, event = compactor.compact(index)
    out = view.render()
    tokens = MessageIndex(out, tokenizer=tokenizer).total_tokens
    return Compacted(out, event, budget, tokens, models)


def compact_messages(
    messages: Sequence[Message],
    *,
    tokenizer: Tokenizer,
    budget: int | None,
    strategy: str | None = None,
    config: str | Path | Mapping[str, Any] | None = None,
    summarizer: ChatModel | None = None,
) -> list[Message]:
    """The messages of `compact_once`."""
    return compact_once(
        messages,
        tokenizer=tokenizer,
        budget=budget,
        strategy=strategy,
        config=config,
        summarizer=summarizer,
    ).messages


def budget_warning(done: Compacted, strategy: str | None) -> str | None:
    """The warning line when `strategy` alone could not reach the budget, else None.

    >>> budget_warning(Compacted([], None, 100, 150), "clamp")
    'warning: clamp reached 150 tokens, over the budget of 100; --strategy budgeted holds it'
    """
    if not done.over_budget:
        return None
    name = strategy or DEFAULT_STRATEGY
    return (
        f"warning: {name} reached {done.tokens:,} tokens, over the budget of {done.budget:,}; "
        "--strategy budgeted holds it"
    )


@dataclass(frozen=True)
class Budget:
    """A token budget: absolute (`tokens`) or a fraction of each run's tokens."""

    label: str
    fraction: float | None = None
    tokens: int | None = None

    def resolve(self, total_tokens: int) -> int:
        """The budget in tokens for a run of `total_tokens`."""
        if self.tokens is not None:
            return self.tokens
        return max(1, int(total_tokens * (self.fraction or 1.0)))


def parse_budgets(text: str) -> list[Budget]:
    """Parse ``"0.5,0.2"`` (fractions), ``"20%"`` or ``"8000"`` (tokens), comma-separated.

    >>> [b.label for b in parse_budgets("0.5, 20%, 8000")]
    ['50%', '20%', '8000']
    >>> parse_budgets("1.5")
    Traceback (most recent call last):
    ...
    kompakt.errors.ConfigError: --budget in tokens must be a whole number, got '1.5' (...)
    """
    out: list[Budget] = []
    for raw in (p.strip() for p in str(text).split(",")):
        if not raw:
            continue
        try:
            if raw.endswith("%"):
                value = float(raw[:-1]) / 100
                is_fraction = True
            else:
                value = float(raw)
                is_fraction = (value <= 1 and "." in raw) or value < 1
        except ValueError:
            raise ConfigError(
                f"--budget: expected tokens (8000) or a fraction (0.2, 20%), got {raw!r}"
            ) from None
        if not isfinite(value) or value <= 0:
            raise ConfigError(f"--budget must be a finite number > 0, got {raw!r}")
        if is_fraction:
            if value > 1:
                raise ConfigError(f"--budget fraction must be at most 100%, got {raw!r}")
            out.append(Budget(f"{value * 100:g}%", fraction=value))
        elif value != int(value):  # 1.5 would silently mean 1 token
            raise ConfigError(
                f"--budget in tokens must be a whole number, got {raw!r} "
                "(a fraction of the run is at most 1, like 0.2)"
            )
        else:
            out.append(Budget(f"{int(value)}", tokens=int(value)))
    if not out:
        raise ConfigError("--budget: give at least one budget, for example 8000 or 0.2")
    return out
