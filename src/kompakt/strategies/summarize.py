"""Summarizing strategies: `Summarize` (rolling), and Koog's `WholeHistory`,
`FromLastN` and `Chunked`.

Every one works with any `ChatModel` (``summarizer=``), falls back to the context's
summarizer, and without any model uses the extractive digest, so it works offline at
zero cost. A failed, slow, empty or over-long answer never becomes the summary: the
strategy falls back (digest, then truncation) and records why on its `Step`.

Summaries are rolling: the model sees the previous summary plus only the span being
evicted now, never the whole history again, and the span it is sent is bounded.

>>> from kompakt.index import MessageIndex
>>> from kompakt.messages import Message
>>> from kompakt.models.scripted import ScriptedModel
>>> from kompakt.strategies.base import CompactionContext
>>> from kompakt.view import View
>>> msgs = [Message.system("be brief")]
>>> for i in range(6):
...     msgs += [Message.user(f"question {i} " * 20), Message.assistant(f"answer {i} " * 20)]
>>> view = View(MessageIndex(msgs))
>>> model = ScriptedModel("## Goal\\n- answer six questions")
>>> Summarize(keep_last_groups=2, summarizer=model).apply(view, CompactionContext(view))
True
>>> [m.synthetic or m.role for m in view.render()]
['system', 'summary', 'user', 'assistant']
>>> "previous_summary" in model.requests[0][1].text  # first summary: nothing to roll
False
"""

from __future__ import annotations

import asyncio
from typing import Literal, TypedDict, Unpack

from kompakt._deprecation import renamed_options
from kompakt.errors import ConfigError
from kompakt.models.base import ChatModel, positive_int
from kompakt.notes import Note, rolled_note
from kompakt.strategies._summarizer import SummarizingStrategy
from kompakt.strategies.base import DEFAULT_MIN_PRESERVED, CompactionContext
from kompakt.strategies.fit import ceiling, newest_within
from kompakt.strategies.span import Span, later_than, originals, previous_of, span_of
from kompakt.summarizers.base import Summarizer
from kompakt.summarizers.prompt import DEFAULT_TEMPLATE
from kompakt.triggers import TriggerLike
from kompakt.view import View

__all__ = ["DEFAULT_TEMPLATE", "Chunked", "FromLastN", "Summarize", "SummaryLimits", "WholeHistory"]


class SummaryLimits(TypedDict, total=False):
    """The keyword options every summarizing strategy of this module shares (see
    `Summarize` for what each means)."""

    max_note_tokens: int
    max_input_tokens: int
    timeout: float | None
    recall_tool: str | None
    trigger: TriggerLike | None


class _ModelStrategy(SummarizingStrategy):
    """Shared by the strategies of this module."""

    def previous_text(self, span: Span) -> str:
        return previous_of(span)

    async def summarize_span(
        self, view: View, context: CompactionContext, span: Span, *, merge: bool = True
    ) -> bool:
        fit = self.note_limit(view, context, span)
        if self.rolling:
            previous, inputs = self.previous_text(span), span.messages
        else:  # Koog's behaviour: re-read every original the summary stands for
            previous, inputs = "", originals(view, span)
        if fit is None or self.uses_digest(context):  # dropped, or the digest's own size
            return self.finish(view, context, span, None, source=None if self.rolling else inputs)
        tok = view.index.tokenizer
        if previous and tok.count_text(previous) > fit.limit // 2:
            merge = True  # an accumulated summary that grew too big is folded once
        text = await self.produce(context, inputs, previous, fit.limit, merge=merge)
        return self.finish(view, context, span, text, source=None if self.rolling else inputs)


class Summarize(_ModelStrategy):
    """Keep the newest `keep_last_groups` groups, stand one summary in for the older span.

    Args:
        keep_last_groups: newest groups left verbatim (system, pinned, memory, the last user
            message and a pending tool call always stay too).
        summarizer: what writes summaries: a chat model (a cheap one is fine), a model
            spec, or any `kompakt.Summarizer`; default the compaction's summarizer, else
            the extractive digest. The user's standing instructions are kept word for
            word before the model's text, never rewritten by it.
        prompt: your own instruction, replacing the default one and the template.
        template: the sections the summary should have (`DEFAULT_TEMPLATE`: goal,
            preferences, current facts with updates applied, decisions, artifacts, state,
            open tasks and next steps, open questions); None for prose.
        mode: ``"accumulate"`` keeps the previous summary as it is and appends what
            the new span adds (the model sees the previous one as context);
            ``"replace"`` asks for one merged summary. Either way the model never sees
            the whole history again.
        max_note_tokens: the summary's size limit; a longer answer is rejected.
        max_input_tokens: the most one request may carry; longer spans are clamped and
            summarized in chunks.
        timeout: seconds one summarizer call may take.
        recall_tool: name of a tool that fetches originals, mentioned in the summary.
        rolling: False re-reads every original each time (Koog's cost; for comparison).
        note_share: under a budget (inside `Budgeted`, or with a `TokensBelow` target),
            the share of it the note may grow to past `max_note_tokens`; the recent tail
            keeps as many of the newest groups as fit in the rest (at least
            `keep_last_groups`). With the digest, what the note leaves of its share goes
            to the tail too. None (the default): the note is at most `max_note_tokens`
            and the tail is `keep_last_groups` groups.
        chat_note_share: the same in a conversation without tool calls (None:
            `note_share`): what a chat is asked later lives in the note, while an
            agent goes on from its newest steps, which the tail keeps.
        trigger: the strategy's own trigger (default: whenever it is run).

    >>> s = Summarize(keep_last_groups=6, mode="replace", recall_tool="recall")
    >>> s.keep_last_groups, s.mode, s.rolling, s.note_share
    (6, 'replace', True, None)
    """

    @renamed_options(
        positional=("keep_last", "summarizer", "prompt", "template", "mode"),
        keep_last="keep_last_groups",
        max_summary_tokens="max_note_tokens",
    )
    def __init__(
        self,
        *,
        keep_last_groups: int = 4,
        summarizer: ChatModel | Summarizer | str | None = None,
        prompt: str | None = None,
        template: str | None = DEFAULT_TEMPLATE,
        mode: Literal["accumulate", "replace"] = "accumulate",
        rolling: bool = True,
        note_share: float | None = None,
        chat_note_share: float | None = None,
        **limits: Unpack[SummaryLimits],
    ) -> None:
        if mode not in ("accumulate", "replace"):
            raise ConfigError(f"`mode` must be 'accumulate' or 'replace', got {mode!r}")
        for name, share in (("note_share", note_share), ("chat_note_share", chat_note_share)):
            if share is not None and not 0 < share < 1:
                raise ConfigError(f"`{name}` must be between 0 and 1, got {share!r}")
        super().__init__(
            keep_last_groups=keep_last_groups,
            summarizer=summarizer,
            prompt=prompt,
            template=template,
            rolling=rolling,
            **limits,
        )
        self.mode = mode
        self.note_share = note_share
        self.chat_note_share = chat_note_share

    async def apply_async(self, view: View, context: CompactionContext) -> bool:
        tail = self.tail_groups(view, context)
        span = self.select_span(view, context, keep_last_groups=tail)
        if not span.messages:
            return False
        if self.rolling and self.uses_digest(context):
            return self.digest_span(view, context, span, tail)
        return await self.summarize_span(view, context, span, merge=self.mode == "replace")

    def digest_span(self, view: View, context: CompactionContext, span: Span, tail: int) -> bool:
        """Stand the digest in for `span`. Under a shared budget the note is written
        first (it costs nothing): what it leaves of its share goes to the tail, which
        keeps more of the newest groups verbatim (a second, shorter digest)."""
        written = self.first_note(view, context, span)
        if written is not None:
            limit, note = written
            unused = limit - view.index.tokenizer.count_text(note.text)
            cap = ceiling(context) or 0
            # under a tenth of the budget the extra tail is not worth a second digest
            wider = self.tail_groups(view, context, extra=unused) if unused > cap // 10 else tail
            if wider > tail:
                narrower = self.select_span(view, context, keep_last_groups=wider)
                if not narrower.messages:
                    return False
                # only when the shorter span's note still has the room the first one
                # took: a wider tail is not worth a fact of the note
                fit = self.note_limit(view, context, narrower)
                if fit is None or fit.limit >= limit - unused:
                    span, written = narrower, None
        return self.finish(view, context, span, None, written=written)

    def first_note(
        self, view: View, context: CompactionContext, span: Span
    ) -> tuple[int, Note] | None:
        """Under a budget shared with the tail, the span's digest at the limit `finish`
        starts from, ``(limit, note)``: what it leaves unused goes to the tail (None
        without a budget or a `note_share`)."""
        if ceiling(context) is None or self.share(view) is None:
            return None
        fit = self.note_limit(view, context, span)
        if fit is None:
            return None
        note = rolled_note(
            span.read,
            previous_of(span),
            fit.limit,
            tokenizer=view.index.tokenizer,
            later=later_than(view, span),
        )
        return fit.limit, note

    def tail_groups(self, view: View, context: CompactionContext, *, extra: int = 0) -> int:
        """How many of the newest groups stay as they are: `keep_last_groups` without a
        budget or a `note_share`; with both, as many as fit in the share the note leaves
        (at least that), and `extra` tokens more."""
        cap = ceiling(context)
        share = self.share(view)
        if cap is None or share is None:
            return self.kept(context)
        room = cap * (1 - share) + extra
        return max(self.kept(context), newest_within(view, room))


class WholeHistory(_ModelStrategy):
    """Koog's default: system + first user message + one TL;DR (+ a pending tool call).

    Everything else but the newest `keep_last_groups` groups becomes one TL;DR. Unlike Koog,
    the TL;DR rolls: the next compaction sends the previous TL;DR plus only what is
    new (``rolling=False`` restores Koog's re-reading of the whole history).

    >>> WholeHistory(keep_last_groups=0).keep_first_user
    True
    """

    instruction = (
        "Write a TL;DR of the conversation so far: the goal, what has been achieved, the "
        "current state and what remains to be done."
    )

    @renamed_options(keep_last="keep_last_groups", max_summary_tokens="max_note_tokens")
    def __init__(
        self,
        summarizer: ChatModel | Summarizer | str | None = None,
        *,
        keep_last_groups: int = DEFAULT_MIN_PRESERVED,
        keep_first_user: bool = True,
        prompt: str | None = None,
        template: str | None = None,
        rolling: bool = True,
        **limits: Unpack[SummaryLimits],
    ) -> None:
        super().__init__(
            keep_last_groups=keep_last_groups,
            summarizer=summarizer,
            prompt=prompt,
            template=template,
            rolling=rolling,
            **limits,
        )
        self.keep_first_user = keep_first_user

    async def apply_async(self, view: View, context: CompactionContext) -> bool:
        first = view.index.first_user_group if self.keep_first_user else None
        candidates = view.candidates(self.kept(context), originals_only=False)
        groups = [g for g in candidates if g != first]
        span = span_of(view, groups)
        if not span.messages:
            return False
        return await self.summarize_span(view, context, span, merge=True)


class FromLastN(_ModelStrategy):
    """Koog's FromLastNMessages: a TL;DR of the last `last_messages` messages of the
    span; the older part is dropped (its originals stay in the history).

    Whole groups only: a tool call is never separated from its results, so the
    summarized tail may hold a few more than `last_messages` messages.

    >>> FromLastN(5).last_messages
    5
    """

    instruction = (
        "Write a TL;DR of these latest messages: what was found and achieved, the current "
        "state and what remains to be done."
    )

    @renamed_options(
        positional=("summarizer",),
        n="last_messages",
        keep_last="keep_last_groups",
        max_summary_tokens="max_note_tokens",
    )
    def __init__(
        self,
        last_messages: int = 10,
        *,
        summarizer: ChatModel | Summarizer | str | None = None,
        keep_last_groups: int = DEFAULT_MIN_PRESERVED,
        prompt: str | None = None,
        template: str | None = None,
        **limits: Unpack[SummaryLimits],
    ) -> None:
        positive_int("last_messages", last_messages)
        super().__init__(
            keep_last_groups=keep_last_groups,
            summarizer=summarizer,
            prompt=prompt,
            template=template,
            **limits,
        )
        self.last_messages = last_messages

    async def apply_async(self, view: View, context: CompactionContext) -> bool:
        groups = list(view.candidates(self.kept(context), originals_only=False))
        whole = span_of(view, groups)
        if not whole.groups:
            return False
        tail: list[int] = []
        count = 0
        for g in reversed(whole.groups):
            size = len(view.rendered(g))
            if tail and count + size > self.last_messages:
                break
            tail.insert(0, g)
            count += size
        older = [g for g in whole.all_groups if g < tail[0]]
        tail_span = span_of(view, tail)
        for g in older:
            view.drop(g)
        context.note(groups_dropped=len([g for g in whole.groups if g < tail[0]]))
        if not tail_span.messages:
            return bool(older)
        tail_span.previous = []  # what came before is dropped, not carried
        return await self.summarize_span(view, context, tail_span) or bool(older)


class Chunked(_ModelStrategy):
    """Koog's Chunked: one summary per chunk of `chunk_size` groups, all chunks
    summarized concurrently. Chunks are whole groups, so a cut never separates a tool
    call from its results; earlier chunk summaries stay as they are.

    >>> Chunked(10).chunk_size
    10
    """

    instruction = "Summarize this part of the conversation."
    inline_without_model = False

    @renamed_options(
        positional=("summarizer",),
        keep_last="keep_last_groups",
        max_summary_tokens="max_note_tokens",
    )
    def __init__(
        self,
        chunk_size: int = 10,
        *,
        summarizer: ChatModel | Summarizer | str | None = None,
        keep_last_groups: int = 4,
        max_concurrency: int = 8,
        prompt: str | None = None,
        template: str | None = None,
        **limits: Unpack[SummaryLimits],
    ) -> None:
        positive_int("chunk_size", chunk_size)
        positive_int("max_concurrency", max_concurrency)
        limits.setdefault("max_note_tokens", 400)  # one of several summaries: smaller
        super().__init__(
            keep_last_groups=keep_last_groups,
            summarizer=summarizer,
            prompt=prompt,
            template=template,
            **limits,
        )
        self.chunk_size = chunk_size
        self.max_concurrency = max_concurrency

    def chunks(self, view: View, keep: int) -> list[list[int]]:
        """Runs of adjacent original groups, cut every `chunk_size` groups."""
        out: list[list[int]] = []
        last = -2
        for g in span_of(view, list(view.candidates(keep))).groups:
            between = range(last + 1, g)
            adjacent = last >= 0 and all(view.is_dropped(i) for i in between)
            if out and adjacent and len(out[-1]) < self.chunk_size:
                out[-1].append(g)
            else:
                out.append([g])
            last = g
        return out

    async def apply_async(self, view: View, context: CompactionContext) -> bool:
        chunks = self.chunks(view, self.kept(context))
        if not chunks:
            return False
        spans = [span_of(view, c) for c in chunks]
        total = sum(s.tokens for s in spans)
        room = self.room(view, context, total)
        limit = min(self.max_note_tokens, room // len(spans)) if room > 0 else 0
        gate = asyncio.Semaphore(self.max_concurrency)

        async def one(span: Span) -> str:
            async with gate:
                return await self.produce(context, span.messages, "", limit)

        texts = await asyncio.gather(*(one(s) for s in spans))
        changed = False
        for span, text in zip(spans, texts, strict=True):
            if limit <= 16:  # no room shared out: each chunk fits what is left, or goes
                changed |= self.finish(view, context, span, None)
            else:
                changed |= self.place(view, context, span.all_groups, text) is not None
        return changed
