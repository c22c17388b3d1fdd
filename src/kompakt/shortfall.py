"""Why a compaction did not reach its target, in one line naming what to change.

Every run of `kompakt.Compactor` (and so the Agent, a background preparation, the
adapters) records this on its event's `shortfall`: when what the strategy must keep
(`keep_last_groups`, `min_preserved`) does not fit the target, the line names the option
to lower. A rehydration that found no room under the target is said there too, so it
never does nothing silently.

>>> from kompakt.index import MessageIndex
>>> from kompakt.messages import Message
>>> from kompakt.triggers import TokensBelow
>>> from kompakt.view import View
>>> view = View(MessageIndex([Message.user(f"step {i}: wrote src/m{i}.py " + "ok " * 200)
...                           for i in range(2)]))
>>> print(explain_shortfall(view, keep=2, option="keep_last_groups", target=TokensBelow(200)))
target TokensBelow(limit=200) not reached (244 tokens after compaction): keep_last_groups=2 keeps \
the newest 2 groups verbatim (244 tokens); lower keep_last_groups
>>> explain_shortfall(view, keep=2, option="keep_last_groups", target=TokensBelow(300)) is None
True
"""

from __future__ import annotations

from kompakt.strategies._common import _token_limit
from kompakt.strategies.base import NO_OVERRIDES, Overrides
from kompakt.triggers import Trigger
from kompakt.view import View

__all__ = ["explain_shortfall", "kept_by"]

REHYDRATED = "rehydrated"
"""The `synthetic` kind of the message `Rehydrate` places."""


def explain_shortfall(
    view: View,
    *,
    keep: int,
    option: str,
    target: Trigger,
    offset: int = 0,
    rehydrate: bool = False,
) -> str | None:
    """Why `target` does not hold after a compaction, in one line naming what to
    change; None when it holds (or it is not a token target: a `TokensBelow`, or the
    default one, "the `TokensExceed` trigger no longer fires").

    The target holds at exactly its limit, as the compaction itself decides
    (`TokensBelow` holds at ``tokens <= limit``): one test for both.

    Args:
        keep: how many of the newest groups the strategy keeps verbatim.
        option: the name of the option that says so.
        offset: added to the view's tokens (the calibration of what the provider counts).
        rehydrate: a rehydration ran after the strategy: when the view holds none, the
            line says it found no room (the view was over the target).
    """
    limit = _token_limit(target)
    if limit is None:
        return None
    tokens = view.total_tokens + offset
    if tokens <= limit:
        return None
    kept = _tail_tokens(view, keep)
    line = f"target {target!r} not reached ({tokens:,} tokens after compaction)"
    if keep and kept > 0 and tokens - kept <= limit:
        line += (
            f": {option}={keep} keeps the newest {keep} groups verbatim "
            f"({kept:,} tokens); lower {option}"
        )
    else:
        line += (
            f": the protected messages (system, pinned, the last user message), the "
            f"notes and the newest groups ({option}={keep}) take that much; lower {option} "
            "or raise the target"
        )
    if rehydrate and not _holds_rehydrated(view):
        line += "; nothing was rehydrated: no room was left under the target"
    return line


def kept_by(strategy: object, overrides: Overrides = NO_OVERRIDES) -> tuple[int, str]:
    """How many of the newest groups `strategy` keeps verbatim (under a run's
    `overrides`: a compactor's `min_preserved`), and the option that says so
    (``keep_last_groups`` or ``min_preserved``); the most of any strategy inside it.

    >>> from kompakt.strategies import Budgeted, Summarize, Truncation
    >>> kept_by(Summarize(keep_last_groups=18)), kept_by(Truncation())
    ((18, 'keep_last_groups'), (2, 'min_preserved'))
    >>> kept_by(Truncation(), Overrides(min_preserved=5))
    (5, 'min_preserved')
    """
    best = (0, "min_preserved")
    for option, kept in (
        ("keep_last_groups", overrides.kept),
        ("min_preserved", overrides.preserved),
    ):
        value = getattr(strategy, option, None)
        if isinstance(value, int) and not isinstance(value, bool) and kept(value) > best[0]:
            best = (kept(value), option)
    for inner in getattr(strategy, "strategies", None) or ():
        found = kept_by(inner, overrides)
        if found[0] > best[0]:
            best = found
    return best


def _tail_tokens(view: View, keep: int) -> int:
    """Tokens the newest `keep` groups cost in the view."""
    total = 0
    tok = view.index.tokenizer
    n = view.index.group_count
    for g in range(max(0, n - keep), n):
        total += sum(tok.count_message(m) for m in view.rendered(g))
    return total


def _holds_rehydrated(view: View) -> bool:
    return any(m.synthetic == REHYDRATED for m in view.render())
