"""Strategies and triggers by name, and compactors from TOML.

The names are the snake_case of the class names, one registry for the whole library:
the ``[[strategy]]`` tables of a config file, the CLI's ``--strategy NAME`` and the
evaluation use them.

>>> strategy_from_name("collapse_tool_results", keep_last_groups=3)
CollapseToolResults(keep_last_groups=3)
>>> trigger_from_table({"tokens": 100_000})
TokensExceed(limit=100000)

A config file:

```toml
min_preserved = 2
[trigger]
tokens = 100000
[target]
tokens = 60000
[[strategy]]
name = "collapse_tool_results"
keep_last_groups = 3
[[strategy]]
name = "truncation"
```

Several ``[[strategy]]`` tables make a `Pipeline`; a ``budget = 80000`` key makes a
`Budgeted` of them (of the default chain when there are none).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kompakt._deprecation import renamed
from kompakt.errors import ConfigError
from kompakt.triggers import (
    AllOf,
    Always,
    AnyOf,
    CharsExceed,
    ContextFraction,
    GroupsExceed,
    HasToolCalls,
    MessagesExceed,
    Not,
    TokensBelow,
    TokensExceed,
    Trigger,
    TurnsExceed,
)

__all__ = [
    "STRATEGY_ALIASES",
    "STRATEGY_NAMES",
    "read_config",
    "strategy_from_name",
    "strategy_name",
    "target_from_table",
    "trigger_from_table",
]

_REGISTRY: dict[str, str] = {
    "truncation": "Truncation",
    "sliding_window": "SlidingWindow",
    "keep_first_and_last": "KeepFirstAndLast",
    "collapse_tool_results": "CollapseToolResults",
    "remove_tool_calls": "RemoveToolCalls",
    "clamp_oversized": "ClampOversized",
    "supersede_reads": "SupersedeReads",
    "pipeline": "Pipeline",
    "budgeted": "Budgeted",
    "summarize": "Summarize",
    "whole_history": "WholeHistory",
    "from_last_n": "FromLastN",
    "chunked": "Chunked",
    "extractive_digest": "ExtractiveDigest",
    "fact_retrieval": "FactRetrieval",
}

STRATEGY_NAMES: tuple[str, ...] = tuple(sorted(_REGISTRY))
"""Every name `strategy_from_name` knows (summary strategies need their module present)."""

STRATEGY_ALIASES: dict[str, str] = {
    "digest": "extractive_digest",
    "window": "sliding_window",
    "first_last": "keep_first_and_last",
    "collapse": "collapse_tool_results",
    "remove_tools": "remove_tool_calls",
    "clamp": "clamp_oversized",
    "supersede": "supersede_reads",
}
"""The short names ``kompakt replay/eval --strategy`` took in 0.1, accepted for one release."""

_EXCEED = {
    "tokens": TokensExceed,
    "messages": MessagesExceed,
    "turns": TurnsExceed,
    "groups": GroupsExceed,
    "chars": CharsExceed,
}


def _snake(name: str) -> str:
    """``CollapseToolResults``, ``collapse-tool-results`` and ``Collapse-Tool-Results`` alike
    become ``collapse_tool_results``."""
    name = name.strip().replace("-", "_")
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i and name[i - 1] != "_" and not name[i - 1].isupper():
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


def strategy_name(name: str, *, stacklevel: int = 2) -> str:
    """The registry's name for `name` (snake_case, kebab-case or the class name); a 0.1
    short name is accepted with a DeprecationWarning. Raises `ConfigError` when unknown.

    >>> strategy_name("CollapseToolResults"), strategy_name("sliding-window")
    ('collapse_tool_results', 'sliding_window')
    """
    key = _snake(name)
    if key in _REGISTRY:
        return key
    if key in STRATEGY_ALIASES:
        new = STRATEGY_ALIASES[key]
        renamed(name, new, owner="strategy names", stacklevel=stacklevel)
        return new
    raise ConfigError(f"unknown strategy {name!r}: use one of {', '.join(STRATEGY_NAMES)}")


def strategy_from_name(name: str, **options: Any) -> Any:
    """A strategy from its snake_case name (or class name) and keyword options.

    A `trigger` option may be a table (``{"tokens": 512}``); the `strategies` of
    ``pipeline`` and ``budgeted`` may be names or tables with a ``name`` key.

    >>> strategy_from_name("budgeted", token_budget=8000, strategies=["truncation"])
    Budgeted(8000, strategies=[Truncation(min_preserved=2, trigger=None)])
    """
    import kompakt.strategies as strategies

    key = strategy_name(name, stacklevel=3)
    cls = getattr(strategies, _REGISTRY[key], None)
    if cls is None:
        raise ConfigError(f"strategy {name!r} is not available in this installation")
    if isinstance(options.get("trigger"), Mapping):
        options["trigger"] = trigger_from_table(options["trigger"], where=f"{key}.trigger")
    if isinstance(options.get("target"), Mapping):
        options["target"] = target_from_table(options["target"], where=f"{key}.target")
    if options.get("strategies") is not None:
        options["strategies"] = [
            strategy_from_spec(s) for s in _list(options["strategies"], f"{key}.strategies")
        ]
    try:
        return cls(**options)
    except TypeError as exc:
        raise ConfigError(f"bad options for strategy {name!r}: {exc}") from exc


def strategy_from_spec(spec: Any) -> Any:
    """A strategy from a name or a table ``{"name": ..., **options}``."""
    if isinstance(spec, str):
        return strategy_from_name(spec)
    if isinstance(spec, Mapping):
        options = dict(spec)
        name = options.pop("name", None)
        if not isinstance(name, str):
            raise ConfigError(f"a strategy table needs a `name`, got {dict(spec)!r}")
        return strategy_from_name(name, **options)
    if hasattr(spec, "apply") or hasattr(spec, "apply_async") or callable(spec):
        return spec
    raise ConfigError(f"a strategy must be a name or a table with `name`, got {spec!r}")


def trigger_from_table(table: Mapping[str, Any], *, where: str = "trigger") -> Trigger:
    """A trigger from ``{tokens = N, messages = N, turns, groups, chars, fraction, ...}``.

    Several keys fire when any of them does. ``fraction`` takes ``context_window`` or
    ``model``; ``tool_calls = true`` fires while tool-call groups are sent;
    ``always = true``.
    """
    found: list[Trigger] = []
    rest = _table(table, where)
    for key, cls in _EXCEED.items():
        if key in rest:
            found.append(cls(_int(rest.pop(key), f"{where}.{key}")))
    if "fraction" in rest:
        found.append(
            ContextFraction(
                _float(rest.pop("fraction"), f"{where}.fraction"),
                context_window=_context_window(rest, where),
                model=rest.pop("model", None),
            )
        )
    if rest.pop("tool_calls", False):
        found.append(HasToolCalls())
    if rest.pop("always", False):
        found.append(Always())
    _no_rest(rest, where)
    if not found:
        raise ConfigError(f"`[{where}]` names no condition: use tokens, messages, turns, ...")
    return found[0] if len(found) == 1 else AnyOf(*found)


def _context_window(rest: dict[str, Any], where: str) -> Any:
    """``context_window`` (or the 0.1 key ``window``, with a DeprecationWarning)."""
    if "window" in rest:
        renamed("window", "context_window", owner=f"[{where}]", stacklevel=3)
        if "context_window" in rest:
            raise ConfigError(f"`[{where}]` has both `window` and `context_window`: keep one")
        return rest.pop("window")
    return rest.pop("context_window", None)


def target_from_table(table: Mapping[str, Any], *, where: str = "target") -> Trigger:
    """A target from ``{tokens = N, messages = N, ...}``: holds when all are at or below."""
    found: list[Trigger] = []
    rest = _table(table, where)
    if "tokens" in rest:
        found.append(TokensBelow(_int(rest.pop("tokens"), f"{where}.tokens")))
    for key, cls in _EXCEED.items():
        if key in rest:
            found.append(Not(cls(_int(rest.pop(key), f"{where}.{key}"))))
    _no_rest(rest, where)
    if not found:
        raise ConfigError(f"`[{where}]` names no condition: use tokens, messages, turns, ...")
    return found[0] if len(found) == 1 else AllOf(*found)


def read_config(source: str | Path | Mapping[str, Any]) -> dict[str, Any]:
    """The config as a dict: from a mapping, a TOML file path, or TOML text."""
    if isinstance(source, Mapping):
        return dict(source)
    text: str
    path = Path(source)
    if isinstance(source, Path) or ("\n" not in str(source) and path.suffix == ".toml"):
        if not path.is_file():
            raise ConfigError(f"config file not found: {str(path)!r}")
        text = path.read_text(encoding="utf-8")
    else:
        text = str(source)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config is not valid TOML: {exc}") from exc


def _int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"`{where}` must be an integer, got {value!r}")
    return value


def _float(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"`{where}` must be a number, got {value!r}")
    return float(value)


def _table(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"`{where}` must be a table like {{tokens = 100000}}, got {value!r}")
    return dict(value)


def _list(value: Any, where: str) -> list[Any]:
    """Strategy specs: one name or table, or a list of them."""
    if isinstance(value, (str, Mapping)):
        return [value]
    if not isinstance(value, list):
        raise ConfigError(f"`{where}` must be a strategy name, a table or a list, got {value!r}")
    return value


def _no_rest(rest: Mapping[str, Any], where: str) -> None:
    if rest:
        raise ConfigError(f"unknown key(s) in `[{where}]`: {', '.join(sorted(rest))}")
