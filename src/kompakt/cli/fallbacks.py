"""Fallbacks taken during a compaction, as one warning line each for the command line.

A fallback is recorded on a strategy's step as ``"Strategy: why"``. A summarizer that
failed reads ``"<model>: <reason>; used the extractive digest"``; several failures in
one step are joined with ``"; "``. Each distinct fallback becomes one line:

>>> fallback_warnings(["Summarize: m: m: timed out; used the extractive digest"] * 2, ["m"])
['warning: summarizer m failed (timed out); used the extractive digest']

The stages `Budgeted` falls back to by design (truncation when the chain stops short
of the budget) are how it holds the budget, not failures, and are left out:

>>> fallback_warnings(["Truncation: chain did not reach the budget"])
[]
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["ROUTINE", "fallback_warnings", "model_failure_warning"]

ROUTINE = frozenset(
    {
        "chain did not reach the budget",
        "clamping the newest groups",
        "dropping down to the protected core",
    }
)
"""`Budgeted`'s own fallback stages (see ``strategies/budgeted.py``)."""

_DIGEST = "; used the extractive digest"


def fallback_warnings(fallbacks: Iterable[str], models: Iterable[str] = ()) -> list[str]:
    """One ``warning: ...`` line per distinct fallback, in first-seen order.

    `models` are the names of the summarizer models in use (``openai:gpt-4o``): a
    fallback that starts with one is reported as that summarizer's failure.
    """
    names = sorted({n for n in models if n}, key=len, reverse=True)
    seen: dict[str, None] = {}
    for entry in fallbacks:
        strategy, sep, text = entry.partition(": ")
        if not sep:
            strategy, text = "", entry
        for part in _split(text, names):
            line = _describe(strategy, part.strip(), names)
            if line:
                seen.setdefault(" ".join(line.split()))
    return list(seen)


def model_failure_warning(model: str, error: str, what: str) -> str:
    """The line for a model that failed outside a compaction (e.g. answering probes).

    >>> model_failure_warning("m", "m: m: timed out", "counted as not answered")
    'warning: model m failed (timed out); counted as not answered'
    """
    return f"warning: model {model} failed ({_strip(error, model)}); {what}"


def _split(text: str, names: list[str]) -> list[str]:
    """The fallbacks joined with "; " in one step, one each: a summarizer failure runs
    from its model's name to "; used the extractive digest" (its reason may hold "; "),
    anything else up to the next failure."""
    if not names:
        return [text]
    starts = "|".join(re.escape(n) for n in names)
    boundary = re.compile(f"; (?=(?:{starts}): )")
    pieces: list[str] = []
    while text:
        cut: int | None = None
        if any(text.startswith(f"{n}: ") for n in names) and _DIGEST in text:
            cut = text.index(_DIGEST) + len(_DIGEST)
        else:
            found = boundary.search(text)
            cut = found.start() if found else None
        if cut is None:
            pieces.append(text)
            break
        pieces.append(text[:cut])
        text = text[cut:].removeprefix("; ")
    return pieces


def _strip(text: str, name: str) -> str:
    """`text` without its leading ``name: `` prefixes (the model and the strategy both
    name the model)."""
    prefix = f"{name}: "
    while text.startswith(prefix):
        text = text[len(prefix) :]
    return text


def _describe(strategy: str, text: str, names: list[str]) -> str | None:
    if not text or text in ROUTINE:
        return None
    for name in names:
        if text.startswith(f"{name}: "):
            reason = _strip(text, name)
            tail = ""
            if reason.endswith(_DIGEST):
                reason, tail = reason[: -len(_DIGEST)], _DIGEST
            return f"warning: summarizer {name} failed ({reason}){tail}"
    for name in names:  # e.g. FactsStrategy: "keyword: <model>: <model>: error"
        text = text.replace(f"{name}: {name}: ", f"{name}: ")
    return f"warning: {strategy}: {text}" if strategy else f"warning: {text}"
