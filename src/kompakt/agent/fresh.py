"""The fresh tool results after a compaction: they always reach the next request.

A strategy may have edited the newest tool-call group. A clamped copy (head and tail
kept, the middle elided, every call and result still paired) *is* the fresh result,
shortened, so it stays: restoring the original would undo the clamp and could overflow
the context. Anything else (dropped, collapsed to a note, summarized) is restored, and
if the original then does not fit the budget its oversized text is clamped until it does.

>>> from kompakt.index import MessageIndex
>>> from kompakt.messages import Message, ToolCall
>>> from kompakt.view import View
>>> call = Message.assistant(tool_calls=[ToolCall(id="c1", name="cat", arguments="{}")])
>>> idx = MessageIndex([Message.user("show it"), call,
...                     Message.tool("x" * 40_000, tool_call_id="c1")])
>>> view = View(idx)
>>> view.drop(1)
>>> keep_fresh_results(view, budget=1_000)
'a strategy removed the newest tool results; they were restored, clamped to fit 1,000 tokens'
>>> sent = view.render()[-1]
>>> sent.tool_call_id, sent.synthetic, "tokens elided" in sent.text, view.total_tokens <= 1_000
('c1', 'clamped', True, True)
"""

from __future__ import annotations

from collections.abc import Sequence

from kompakt.messages import Message, Part
from kompakt.strategies.clamp import clamp_text
from kompakt.view import View

__all__ = ["keep_fresh_results", "sends_every_result"]

_MIN_CAP = 16  # what `ClampOversized` accepts: room for the elision marker


def keep_fresh_results(view: View, budget: int | None) -> str | None:
    """Make the newest tool-call group of `view` send its calls and results; return a
    warning when they had to be restored (None when they were sent already).

    `budget` (tokens `view` must fit in, or None) bounds a restored original: its
    text is clamped, head and tail kept, until the view fits.
    """
    groups = view.index.groups
    last = groups[-1] if groups else None
    if last is None or last.kind != "tool_call" or sends_every_result(view, last.index):
        return None
    view.restore(last.index)
    text = "a strategy removed the newest tool results; they were restored"
    if budget is None or view.total_tokens <= budget:
        return text
    if _clamp_to_fit(view, last.index, budget):
        return f"{text}, clamped to fit {budget:,} tokens"
    return (
        f"{text}, clamped as far as they go: {view.total_tokens:,} tokens is still over "
        f"the budget of {budget:,}"
    )


def sends_every_result(view: View, group: int) -> bool:
    """`group` is sent as recorded, or as clamped copies of each of its messages (same
    roles, calls and tool-call ids, in the same order)."""
    r = view.replacement(group)
    if r is None:
        return True
    originals = view.index.group_messages(group)
    return len(r) == len(originals) and all(
        m is o or _clamped_copy(m, o) for m, o in zip(r, originals, strict=True)
    )


def _clamped_copy(m: Message, o: Message) -> bool:
    return (
        m.synthetic == "clamped"
        and m.covers == (o.id,)
        and m.role == o.role
        and m.tool_call_id == o.tool_call_id
        and m.tool_calls == o.tool_calls
    )


def _clamp_to_fit(view: View, group: int, budget: int) -> bool:
    """Clamp the text of `group`'s messages (largest first, to a common cap) until the
    view fits `budget`; whether it does."""
    originals = view.index.group_messages(group)
    count = view.index.tokenizer.count_message
    sizes = [count(m) for m in originals]
    others = view.total_tokens - sum(sizes)
    cap = _water_level(sizes, budget - others)
    for _ in range(8):  # clamp_text and per-message overheads are estimates: tighten
        view.replace(group, [_clamp(m, cap, view) for m in originals])
        if view.total_tokens <= budget or cap <= _MIN_CAP:
            break
        cap = max(_MIN_CAP, min(cap * 3 // 4, cap - (view.total_tokens - budget)))
    return view.total_tokens <= budget


def _water_level(sizes: Sequence[int], room: int) -> int:
    """The largest cap with sum(min(size, cap)) <= room (at least `_MIN_CAP`)."""
    ordered = sorted(sizes)
    below = 0
    for i, s in enumerate(ordered):
        rest = len(ordered) - i
        if below + s * rest > room:
            return max(_MIN_CAP, (room - below) // rest)
        below += s
    return max(_MIN_CAP, ordered[-1] if ordered else _MIN_CAP)


def _clamp(m: Message, cap: int, view: View) -> Message:
    """`m` with each text part over `cap` tokens cut to head and tail (as
    `ClampOversized` does), or `m` itself when it fits."""
    tok = view.index.tokenizer
    if tok.count_message(m) <= cap:
        return m
    texts = sum(1 for p in m.content if p.kind == "text" and p.text) or 1
    per_part = max(_MIN_CAP, cap // texts)
    head, tail = per_part * 6 // 10, per_part // 4
    parts: list[Part] = []
    touched = False
    for p in m.content:
        cut = (
            clamp_text(p.text, tokenizer=tok, max_tokens=per_part, head=head, tail=tail)
            if p.kind == "text"
            else None
        )
        parts.append(Part(text=cut) if cut is not None else p)
        touched |= cut is not None
    if not touched:
        return m
    return m.evolve(content=tuple(parts), synthetic="clamped", covers=(m.id,), extra={})
