"""Compactors by name or from a config file: what the command line, eval and batch share.

A budget ``B`` becomes a compactor that fires when the context passes ``B`` and
compacts it down to ``target * B`` (hysteresis: compactions are rare and the prompt
prefix stays stable between them, so provider prompt caches keep hitting).

Strategy names (``kompakt replay --strategy NAME``):

========================  ==========================================================
``budgeted`` (default)    the gentle-first chain held to the budget (`Budgeted`)
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

>>> sorted(STRATEGIES)[:3]
['budgeted', 'clamp', 'collapse']
>>> load_tokenizer("chars:3")
CharEstimator(chars_per_token=3.0)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kompakt.errors import ConfigError
from kompakt.index import MessageIndex
from kompakt.messages import Message
from kompakt.tokens import CharEstimator, Tokenizer

if TYPE_CHECKING:
    from kompakt.compactor import Compactor
    from kompakt.models import ChatModel

__all__ = [
    "DEFAULT_STRATEGY",
    "DEFAULT_TARGET",
    "STRATEGIES",
    "compact_messages",
    "compactor_from_config",
    "load_model",
    "load_tokenizer",
    "make_compactor",
    "make_strategy",
]

DEFAULT_STRATEGY = "budgeted"
DEFAULT_TARGET = 0.75
"""Compaction brings the context down to this fraction of the budget."""

STRATEGIES: dict[str, str] = {
    "budgeted": "the gentle-first chain held to the budget",
    "digest": "extractive digest of the older span (no model), held to the budget",
    "summarize": "model summary of the older span (--model), held to the budget",
    "truncation": "drop the oldest groups",
    "window": "sliding window: the newest 10 groups",
    "first-last": "keep the first user message and the newest groups",
    "collapse": "old tool results become one-line notes",
    "remove-tools": "drop old tool-call groups",
    "clamp": "keep head and tail of oversized messages",
    "supersede": "stale re-reads become one line",
}


def load_tokenizer(spec: str | None) -> Tokenizer:
    """``chars`` (default), ``chars:N``, ``cl100k_base`` or a ``tokenizer.json`` path."""
    spec = (spec or "chars").strip()
    if spec == "chars":
        return CharEstimator()
    if spec.startswith("chars:"):
        try:
            return CharEstimator(float(spec.split(":", 1)[1]))
        except ValueError:
            raise ConfigError(f"--tokenizer: expected chars:<number>, got {spec!r}") from None
    if spec in ("tiktoken", "cl100k", "cl100k_base"):
        from kompakt.tokens import TiktokenTokenizer

        return TiktokenTokenizer("cl100k_base")
    if spec.endswith(".json"):
        from kompakt.tokens import HFTokenizer

        return HFTokenizer(spec)
    raise ConfigError(
        f"--tokenizer: expected chars, chars:N, cl100k_base or a tokenizer.json path, got {spec!r}"
    )


def load_model(spec: str | None) -> ChatModel | None:
    """The summarizer model for ``--model SPEC`` (None when not given)."""
    if not spec:
        return None
    from kompakt.models import model_from_string

    return model_from_string(spec)


def _digest(budget: int, summarizer: ChatModel | None) -> Any:
    from kompakt.strategies import Budgeted, ExtractiveDigest

    # keep_last=2 (the engine's min_preserved) leaves the digest room under tight budgets,
    # so the fallback truncation (which would drop the digest itself) is rarely needed
    return Budgeted(budget, [ExtractiveDigest(keep_last=2)])


def _summarize(budget: int, summarizer: ChatModel | None) -> Any:
    from kompakt.strategies import Budgeted, Summarize

    if summarizer is None:
        raise ConfigError("--strategy summarize needs --model (for example --model extractive)")
    return Budgeted(budget, [Summarize(summarizer=summarizer)])


def _simple(name: str) -> Callable[[int, ChatModel | None], Any]:
    def build(budget: int, summarizer: ChatModel | None) -> Any:
        import kompakt.strategies as s

        if name == "budgeted":
            return s.Budgeted(budget)
        if name == "clamp":  # the same share of the budget as the default chain's clamp
            return s.ClampOversized(max_tokens=max(16, min(4_000, budget // 10)))
        factories: dict[str, Callable[[], Any]] = {
            "truncation": s.Truncation,
            "window": lambda: s.SlidingWindow(keep_last_groups=10),
            "first-last": s.KeepFirstAndLast,
            "collapse": s.CollapseToolResults,
            "remove-tools": s.RemoveToolCalls,
            "clamp": s.ClampOversized,
            "supersede": s.SupersedeReads,
        }
        return factories[name]()

    return build


_BUILDERS: dict[str, Callable[[int, ChatModel | None], Any]] = {
    **{n: _simple(n) for n in STRATEGIES if n not in ("digest", "summarize")},
    "digest": _digest,
    "summarize": _summarize,
}


def make_strategy(name: str, budget: int, *, summarizer: ChatModel | None = None) -> Any:
    """The strategy called `name`, held to `budget` tokens where it takes a budget.

    Besides the short names above, the library's own names work too (the ones a
    config file's ``[[strategy]]`` tables use, such as ``collapse_tool_results``),
    with their default options.
    """
    key = name.strip().lower().replace("_", "-")
    builder = _BUILDERS.get(key)
    if builder is not None:
        return builder(budget, summarizer)
    from kompakt.config import STRATEGY_NAMES, strategy_from_name

    snake = key.replace("-", "_")
    if snake in STRATEGY_NAMES and snake not in ("pipeline", "budgeted"):
        return strategy_from_name(snake)
    known = ", ".join(STRATEGIES)
    raise ConfigError(
        f"--strategy: unknown strategy {name!r}; choose one of: {known} "
        f"(or a library name: {', '.join(STRATEGY_NAMES)})"
    )


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


def compact_messages(
    messages: Sequence[Message],
    *,
    tokenizer: Tokenizer,
    budget: int | None,
    strategy: str | None = None,
    config: str | Path | Mapping[str, Any] | None = None,
    summarizer: ChatModel | None = None,
) -> list[Message]:
    """Compact once: a named strategy held to `budget`, or a config's compactor."""
    if config is not None:
        compactor = compactor_from_config(config)
        index = MessageIndex(messages, tokenizer=tokenizer)
        if not compactor.check(index):
            return list(index.messages)
        view, _event = compactor.compact(index)
        return view.render()
    if budget is None:
        raise ConfigError("--budget is required (tokens like 8000, or a fraction like 0.2)")
    from kompakt.compactor import apply_compaction

    chosen = make_strategy(strategy or DEFAULT_STRATEGY, budget, summarizer=summarizer)
    out = apply_compaction(list(messages), chosen, tokenizer=tokenizer, summarizer=summarizer)
    return [m for m in out if isinstance(m, Message)]
