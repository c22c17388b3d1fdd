"""Round-trip hints: how a source document spelled what the message model normalises.

A loader records a hint only where the source differs from what a renderer would
write by default (``content: null`` on a user message, a legacy ``function_call``,
a tool result split out of an Anthropic user message, ...). Hints live under one
private key of `Message.extra` / `ToolCall.extra`, grouped by format, and are never
written to any output.

>>> extra = with_hints({"name_hint": 1}, "openai", content="null")
>>> hints(extra, "openai")
{'content': 'null'}
>>> public(extra)
{'name_hint': 1}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["HINTS", "hints", "public", "with_hints"]

HINTS = "_kompakt"
"""The key of `extra` that holds round-trip hints (never rendered)."""

_NONE: Mapping[str, Any] = {}


def hints(extra: Mapping[str, Any], fmt: str) -> Mapping[str, Any]:
    """The hints a loader of `fmt` left in `extra` (empty when none)."""
    box = extra.get(HINTS)
    if not isinstance(box, Mapping):
        return _NONE
    found = box.get(fmt)
    return found if isinstance(found, Mapping) else _NONE


def with_hints(extra: dict[str, Any], fmt: str, **values: Any) -> dict[str, Any]:
    """`extra` with the non-None `values` added as hints of `fmt` (in place, returned)."""
    kept = {k: v for k, v in values.items() if v is not None}
    if kept:
        box = dict(extra.get(HINTS) or {})
        box[fmt] = {**box.get(fmt, {}), **kept}
        extra[HINTS] = box
    return extra


def public(extra: Mapping[str, Any]) -> dict[str, Any]:
    """`extra` without the hints: the source's own fields, to write back verbatim."""
    return {k: v for k, v in extra.items() if k != HINTS}
