"""Keep the head and tail of oversized text, eliding the middle."""

from __future__ import annotations

from kompakt._deprecation import renamed_options
from kompakt.errors import ConfigError
from kompakt.messages import Message, Part
from kompakt.strategies._common import Stop, Walk, check_count, optional_trigger
from kompakt.strategies.base import DEFAULT_MIN_PRESERVED, BaseStrategy, CompactionContext
from kompakt.tokens import Tokenizer
from kompakt.triggers import TriggerLike
from kompakt.view import View

__all__ = ["ClampOversized", "clamp_text"]


class ClampOversized(BaseStrategy):
    """Cut every text part over `max_message_tokens` to its head and tail, with a marker
    ``[… N tokens elided …]`` between.

    Use it against the single huge message: a 40k-token test log, a whole file
    dumped by `cat`, a pasted document. The start and the end (where errors and
    summaries usually are) survive; the message keeps its role, tool-call id and
    calls, so the tool-call group stays valid. The clamped copy covers the original.
    In a parallel batch still waiting for a result, the results that arrived may be
    clamped; the call stays as it is and a later result still joins it.

    Args:
        max_message_tokens: a text part over this is clamped (and ends up within it).
        head: tokens kept from the start (default 60% of `max_message_tokens`).
        tail: tokens kept from the end (default 25% of `max_message_tokens`).
        min_preserved: newest groups left alone.
        trigger: run only when this fires; stop once it no longer does.

    >>> from kompakt import MessageIndex, Message, ToolCall, View
    >>> from kompakt.strategies import CompactionContext
    >>> log = "\\n".join(f"line {i}" for i in range(2000))
    >>> idx = MessageIndex([Message.user("run tests"), Message.assistant(log),
    ...                     Message.user("and now?")])
    >>> view = View(idx)
    >>> ClampOversized(max_message_tokens=100, min_preserved=1).apply(view, CompactionContext(view))
    True
    >>> text = view.render()[1].text
    >>> text.startswith("line 0"), "tokens elided" in text, text.endswith("line 1999")
    (True, True, True)
    """

    @renamed_options(max_tokens="max_message_tokens")
    def __init__(
        self,
        *,
        max_message_tokens: int = 2_000,
        head: int | None = None,
        tail: int | None = None,
        min_preserved: int = DEFAULT_MIN_PRESERVED,
        trigger: TriggerLike | None = None,
    ) -> None:
        check_count("max_message_tokens", max_message_tokens, minimum=16)
        check_count("head", head)
        check_count("tail", tail)
        check_count("min_preserved", min_preserved)
        self.max_message_tokens = max_message_tokens
        self.head = head if head is not None else max_message_tokens * 6 // 10
        self.tail = tail if tail is not None else max_message_tokens // 4
        if self.head + self.tail >= max_message_tokens:
            raise ConfigError(
                f"`head` + `tail` must be below `max_message_tokens` ({max_message_tokens}), "
                f"got {self.head} + {self.tail}"
            )
        self.min_preserved = min_preserved
        self.trigger = optional_trigger(trigger)

    def apply(self, view: View, context: CompactionContext) -> bool:
        tokens = view.index.message_tokens
        count = view.index.tokenizer.count_message
        stop = Stop(self, view, context)
        # groups before the cursor fit, or were clamped, at an earlier compaction
        key = ("ClampOversized", self.max_message_tokens, self.head, self.tail)
        walk = Walk(view, key)
        if view.messages_within(self.max_message_tokens):
            return self._nothing_over(view, walk, context)
        replaced = 0
        cap = view.index.last_user_group
        groups = view.candidates(
            self.preserved(context),
            originals_only=False,
            start=walk.start,
            revisit=walk.revisit,
            pending=True,
        )
        tok = view.index.tokenizer
        index_groups = view.index.groups
        for g in groups:
            if stop.estimate <= stop.quiet_above and stop():  # no call while far
                walk.stopped(g)
                break
            if g >= walk.position:  # walk.done(g), inlined: this loop sees every group
                walk.position = g + 1
            group = index_groups[g]
            if group.kind == "summary":  # a note is cut by its own strategy, never clamped
                continue
            if group.open_calls:  # more results may come: look again next time
                cap = g if cap is None else min(cap, g)
            if view.is_original(g):
                if group.tokens <= self.max_message_tokens or all(
                    tokens[p] <= self.max_message_tokens for p in range(group.start, group.end)
                ):
                    continue
            elif view.group_tokens(g) <= self.max_message_tokens:
                continue  # no message of what it sends can be over (a superseded read, a note)
            current = tuple(view.rendered(g))
            # in a batch still waiting for results, only the results that arrived
            new = tuple(
                m if group.open_calls and m.role != "tool" else self._clamp(m, tok) for m in current
            )
            if any(a is not b for a, b in zip(new, current, strict=True)):
                stop.removed(sum(map(count, current)) - sum(map(count, new)))
                view.replace(g, new)
                replaced += 1
        # the last user message (and a pending batch) is protected now, not for good
        walk.settle(cap=cap)
        if replaced:
            context.note(groups_replaced=replaced)
        return replaced > 0

    def _nothing_over(self, view: View, walk: Walk, context: CompactionContext) -> bool:
        """No message is over the limit: the walk is settled as far as it would have got,
        without looking at each group (but for the newest ones, the last user message and
        a batch waiting for results: protected now, not for good)."""
        index = view.index
        walk.position = max(walk.start, index.group_count - self.preserved(context))
        waiting = [g for g in index.pending_groups if g >= walk.start]
        last_user = index.last_user_group
        cap = min([*waiting, *([] if last_user is None else [last_user])], default=None)
        walk.settle(cap=cap)
        return False

    def clamp_message(self, m: Message, tokenizer: Tokenizer) -> Message:
        """`m` with each text part over `max_message_tokens` cut to head and tail (a clamped copy
        covering `m`), or `m` itself when nothing is over (or it is synthetic)."""
        return self._clamp(m, tokenizer)

    def _clamp(self, m: Message, tok: Tokenizer) -> Message:
        if m.synthetic is not None or tok.count_message(m) <= self.max_message_tokens:
            return m
        parts: list[Part] = []
        touched = False
        for p in m.content:
            cut = clamp_text(
                p.text,
                tokenizer=tok,
                max_tokens=self.max_message_tokens,
                head=self.head,
                tail=self.tail,
            )
            if p.kind == "text" and cut is not None:
                parts.append(Part(text=cut))
                touched = True
            else:
                parts.append(p)
        if not touched:
            return m
        # a failed tool call stays failed: the model must not read the error as output
        extra = {k: m.extra[k] for k in _KEPT_FIELDS if k in m.extra}
        return m.evolve(content=tuple(parts), synthetic="clamped", covers=(m.id,), extra=extra)

    def __repr__(self) -> str:
        return f"ClampOversized(max_message_tokens={self.max_message_tokens})"


_KEPT_FIELDS = ("is_error",)
"""Source fields a clamped message keeps (the others describe the original's layout)."""


@renamed_options(positional=("tok", "max_tokens", "head", "tail"), tok="tokenizer")
def clamp_text(
    text: str, *, tokenizer: Tokenizer, max_tokens: int, head: int, tail: int
) -> str | None:
    """`text` cut to its `head` and `tail` within `max_tokens`, or None when it already fits.

    >>> from kompakt import CharEstimator
    >>> out = clamp_text("a" * 400 + "b" * 400, tokenizer=CharEstimator(), max_tokens=60,
    ...                  head=30, tail=15)
    >>> out[:3], out[-3:], CharEstimator().count_text(out) <= 60
    ('aaa', 'bbb', True)
    """
    if not text:
        return None
    tok = tokenizer
    n = tok.count_text(text)
    if n <= max_tokens:
        return None
    chars_per_token = len(text) / n
    h, t = float(head), float(tail)
    for _ in range(8):
        start = _cut_head(text, int(h * chars_per_token))
        end = _cut_tail(text, int(t * chars_per_token))
        elided = max(1, n - tok.count_text(start) - tok.count_text(end))
        marker = f"[… {elided} tokens elided …]"
        out = f"{start}\n{marker}\n{end}" if end else f"{start}\n{marker}"
        if tok.count_text(out) <= max_tokens:
            return out
        h, t = h * 0.75, t * 0.75
    return f"[… {n} tokens elided …]"


def _cut_head(text: str, chars: int) -> str:
    head = text[:chars]
    nl = head.rfind("\n")
    return head[:nl] if nl > chars * 0.8 else head


def _cut_tail(text: str, chars: int) -> str:
    if chars <= 0:
        return ""
    tail = text[-chars:]
    nl = tail.find("\n")
    return tail[nl + 1 :] if 0 <= nl < chars * 0.2 else tail
