"""Reaching a compaction's target: close a small gap without a model.

A summary prepared in the background covers the span it was asked for; the groups
that arrived while it was computed stay as they are, as many as the strategy keeps.
Older ones than that (a preparation that had to start more steps ahead than the
strategy keeps groups) would leave the view above where a compaction at the trigger
leaves it, so the trigger would fire again sooner and pay for another summary:
`close_gap` stands one extractive digest (no model, no cost) in for them. The next
rolling summary folds that note in.

When what a strategy must keep (`keep_last_groups`, `min_preserved`) does not fit the target
at all, `kompakt.shortfall.explain_shortfall` says so in one line naming the option (it
is re-exported here for code that imported it from this module).

>>> from kompakt.index import MessageIndex
>>> from kompakt.messages import Message
>>> from kompakt.view import View
>>> view = View(MessageIndex([Message.user(f"step {i}: wrote src/m{i}.py " + "ok " * 200)
...                           for i in range(6)]))
>>> step = close_gap(view, keep=2)
>>> [m.synthetic for m in view.render()], view.total_tokens <= 600, step.groups_replaced
(['summary', None, None], True, 4)
"""

from __future__ import annotations

import time

from kompakt.messages import Message
from kompakt.shortfall import explain_shortfall, kept_by
from kompakt.strategies.base import Step
from kompakt.strategies.digest import digest
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
