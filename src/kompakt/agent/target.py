"""Reaching a compaction's target: close a small gap without a model, or say why not.

A summary prepared in the background covers the span it was asked for; the groups
that arrived while it was computed stay as they are, as many as the strategy keeps.
Older ones than that (a preparation that had to start more steps ahead than the
strategy keeps groups) would leave the view above where a compaction at the trigger
leaves it, so the trigger would fire again sooner and pay for another summary:
`close_gap` stands one extractive digest (no model, no cost) in for them. The next
rolling summary folds that note in.

When what a strategy must keep (`keep_last_groups`, `min_preserved`) does not fit the target
at all, `explain_shortfall` says so in one line naming the option.

>>> from kompakt.index import MessageIndex
>>> from kompakt.messages import Message
>>> from kompakt.triggers import TokensBelow
>>> from kompakt.view import View
>>> view = View(MessageIndex([Message.user(f"step {i}: wrote src/m{i}.py " + "ok " * 200)
...                           for i in range(6)]))
>>> step = close_gap(view, keep=2)
>>> [m.synthetic for m in view.render()], view.total_tokens <= 600, step.groups_replaced
(['summary', None, None], True, 4)
>>> print(explain_shortfall(view, keep=2, option="keep_last_groups", target=TokensBelow(300)))
target TokensBelow(limit=300) not reached (333 tokens after compaction): keep_last_groups=2 keeps \
the newest 2 groups verbatim (244 tokens); lower keep_last_groups
"""

from __future__ import annotations

import time

from kompakt.messages import Message
from kompakt.strategies.base import NO_OVERRIDES, Overrides, Step
from kompakt.strategies.digest import digest
from kompakt.triggers import Not, TokensBelow, TokensExceed, Trigger
from kompakt.view import View

__all__ = ["close_gap", "explain_shortfall", "kept_by"]

_NOTE_TOKENS = 400
"""The most a gap-closing digest note takes (an eighth of what it stands in for at most:
the next rolling summary folds it in, and a bigger note would bring the trigger sooner)."""


def close_gap(view: View, *, keep: int) -> Step | None:
    """Stand one extractive digest in for the original groups older than the newest
    `keep`; the `Step` it took (None: nothing to do).

    Earlier summaries and notes stay as they are (a model's summary is never folded
    into a digest); protected groups are never touched.
    """
    groups = list(view.candidates(keep))
    if not groups:
        return None
    tok = view.index.tokenizer
    step = Step("ExtractiveDigest", tokens_before=view.total_tokens)
    step.messages_before = view.message_count
    t0 = time.perf_counter()
    messages = [m for g in groups for m in view.index.group_messages(g)]
    tokens = sum(view.index.groups[g].tokens for g in groups)
    text = digest(messages, max_tokens=max(16, min(_NOTE_TOKENS, tokens // 8)), tokenizer=tok)
    header = (
        f"[Summary of {len(messages)} earlier messages, replaced to fit the context window. "
        "The originals are kept and can be recalled.]"
    )
    note = Message.user(
        f"{header}\n{text}" if text else header,
        synthetic="summary",
        metadata={"strategy": "ExtractiveDigest", "summarizer": "digest", "kind": "remainder"},
    )
    if tok.count_message(note) >= tokens:
        return None
    view.summarize(groups, note)
    step.changed = True
    step.groups_replaced = len(groups)
    step.detail = "digest of the groups that arrived while the summary was prepared"
    step.seconds = time.perf_counter() - t0
    step.tokens_after, step.messages_after = view.total_tokens, view.message_count
    return step


def explain_shortfall(
    view: View, *, keep: int, option: str, target: Trigger, offset: int = 0
) -> str | None:
    """Why `target` does not hold after a compaction, in one line naming what to
    change; None when it holds (or it is not a token target: a `TokensBelow`, or the
    default one, "the `TokensExceed` trigger no longer fires").

    `keep` is how many of the newest groups the strategy keeps verbatim, `option` the
    name of the option that says so; `offset` is added to the view's tokens (the
    calibration of what the provider counts).
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
        return (
            f"{line}: {option}={keep} keeps the newest {keep} groups verbatim "
            f"({kept:,} tokens); lower {option}"
        )
    return (
        f"{line}: the protected messages (system, pinned, the last user message), the "
        f"notes and the newest groups ({option}={keep}) take that much; lower {option} or "
        "raise the target"
    )


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


def _token_limit(target: Trigger) -> int | None:
    """The most tokens `target` allows: a `TokensBelow`, or the default target (the
    trigger `TokensExceed` no longer fires); None for any other."""
    if isinstance(target, TokensBelow):
        return target.limit
    if isinstance(target, Not) and isinstance(target.trigger, TokensExceed):
        return target.trigger.limit
    return None


def _tail_tokens(view: View, keep: int) -> int:
    """Tokens the newest `keep` groups cost in the view."""
    total = 0
    tok = view.index.tokenizer
    n = view.index.group_count
    for g in range(max(0, n - keep), n):
        total += sum(tok.count_message(m) for m in view.rendered(g))
    return total
