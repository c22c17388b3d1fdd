"""The summarizing strategy every note-writing strategy builds on (not public API).

It chooses the span and places the note; the parts it uses live beside it:

* `span`: which groups form the span to evict (and which earlier summary it absorbs);
* `fit`: how big the note may be under the budget or target;
* `kompakt.summarizers`: what writes the note (`ModelSummarizer` over a chat model, the
  digest, or the user's own), falling back to the digest when it fails;
* here: which summarizer a run uses, recording what the note cost and any fallback, and
  placing the note in the view so it covers every original it stands for.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar

from kompakt.messages import Message
from kompakt.models.base import (
    ChatModel,
    ChatResponse,
    ask,
    positive_int,
    positive_timeout,
    run_sync,
)
from kompakt.models.extractive import ExtractiveModel
from kompakt.models.registry import as_model, default_summarizer
from kompakt.notes import Note, rolled_note
from kompakt.strategies.base import DEFAULT_MIN_PRESERVED, BaseStrategy, CompactionContext
from kompakt.strategies.fit import (
    MIN_NOTE_TOKENS,
    Fit,
    ceiling,
    note_fit,
    room_for,
    size_limit,
    trim_lines,
)
from kompakt.strategies.span import (
    Span,
    later_than,
    previous_of,
    rendered_tokens,
    select_span,
)
from kompakt.summarizers.base import Summarizer, write_note
from kompakt.summarizers.digest import DigestSummarizer
from kompakt.summarizers.model import ModelSummarizer
from kompakt.summarizers.prompt import (
    DEFAULT_TEMPLATE,
    SYSTEM_PROMPT,
    Rejected,
    clamp_message,
    fence,
    render_transcript,
    strip_header,
)
from kompakt.tokens import Tokenizer
from kompakt.triggers import Trigger, TriggerLike, as_trigger
from kompakt.view import View

T = TypeVar("T")


class SummarizingStrategy(BaseStrategy):
    """Base of the strategies that stand a summary in for a span of groups."""

    instruction = "Summarize the transcript."
    note_share: float | None = None
    """With a budget (or target), the share of it the note may grow to past
    `max_note_tokens` (None: the note's size is `max_note_tokens` alone)."""
    chat_note_share: float | None = None
    """The same in a conversation without tool calls (None: `note_share`; with
    `note_share` None, there is no share either way)."""
    inline_without_model = True
    """Without a model `apply_async` never awaits, so `apply` may run it inline."""

    def __init__(
        self,
        *,
        keep_last_groups: int = 4,
        summarizer: ChatModel | Summarizer | str | None = None,
        prompt: str | None = None,
        template: str | None = DEFAULT_TEMPLATE,
        max_note_tokens: int = 800,
        max_input_tokens: int = 8_000,
        timeout: float | None = 120.0,
        recall_tool: str | None = None,
        rolling: bool = True,
        trigger: TriggerLike | None = None,
    ) -> None:
        positive_int("keep_last_groups", keep_last_groups, low=0)
        positive_int("max_note_tokens", max_note_tokens, low=16)
        positive_int("max_input_tokens", max_input_tokens, low=256)
        positive_timeout(timeout)
        self.keep_last_groups = keep_last_groups
        self.min_preserved = max(keep_last_groups, 0)
        self.summarizer = as_summarizer(summarizer)
        # read once, here: a strategy does not change summarizer between compactions
        self.env_summarizer = default_summarizer() if summarizer is None else None
        self.prompt = prompt
        self.template = template
        self.max_note_tokens = max_note_tokens
        self.max_input_tokens = max_input_tokens
        self.timeout = timeout
        self.recall_tool = recall_tool
        self.rolling = rolling
        self.trigger: Trigger | None = None if trigger is None else as_trigger(trigger)

    def apply(self, view: View, context: CompactionContext) -> bool:
        """Runs `apply_async` (in a worker thread inside a running loop); with no model
        at all it runs inline, since the digest never awaits."""
        if self.inline_without_model and self.uses_digest(context):
            return run_now(self.apply_async(view, context))
        return run_sync(self.apply_async(view, context))

    def __repr__(self) -> str:
        model = getattr(self.summarizer, "name", None)
        return f"{self.name}(keep_last_groups={self.keep_last_groups}, summarizer={model!r})"

    # -- the span ----------------------------------------------------------------------

    def kept(self, context: CompactionContext) -> int:
        """`keep_last_groups` for the run `context` belongs to."""
        return context.overrides.kept(self.keep_last_groups)

    def select_span(
        self, view: View, context: CompactionContext, *, keep_last_groups: int | None = None
    ) -> Span:
        """Every group that may be summarized, oldest first (earlier summaries included)."""
        keep = self.kept(context) if keep_last_groups is None else keep_last_groups
        return select_span(view, keep)

    # -- producing the text ------------------------------------------------------------

    def summarizer_for(self, context: CompactionContext) -> ChatModel | Summarizer | None:
        """The strategy's summarizer, else the compaction's, else ``KOMPAKT_SUMMARIZER``'s
        (read when the strategy was made); None means the extractive digest."""
        if self.summarizer is not None:
            return self.summarizer
        if context.summarizer is not None:
            return as_summarizer(context.summarizer)
        return self.env_summarizer

    def uses_digest(self, context: CompactionContext) -> bool:
        """Whether the note is the extractive digest (no model, no summarizer to await)."""
        chosen = self.summarizer_for(context)
        return chosen is None or isinstance(chosen, DigestSummarizer)

    def model_for(self, context: CompactionContext) -> ChatModel | None:
        """The chat model to ask, or None when the summary is written without one (the
        digest, or a `Summarizer` that is not a chat model)."""
        chosen = self.summarizer_for(context)
        return chosen if isinstance(chosen, ChatModel) else None

    def room(self, view: View, context: CompactionContext, span_tokens: int) -> int:
        """Tokens the summary may take: its limit, half the span, what the budget (or the
        target) leaves once the span is gone (an estimate of the note's header aside)."""
        cap = ceiling(context)
        return room_for(view, span_tokens, cap, self.size_limit(span_tokens, cap, view))

    def size_limit(self, span_tokens: int, cap: int | None = None, view: View | None = None) -> int:
        """The note's own limit (see `fit.size_limit`), in `view` when it is known."""
        share = self.share(view) if view is not None else self.note_share
        return size_limit(span_tokens, cap, max_tokens=self.max_note_tokens, share=share)

    def share(self, view: View) -> float | None:
        """The note's share of a budget in `view`: `chat_note_share` in a conversation
        without tool calls (what a chat is asked later lives in the note), else
        `note_share` (an agent's work goes on from its newest steps, which the tail
        keeps)."""
        if self.note_share is None or self.chat_note_share is None:
            return self.note_share  # no share at all stays no share, in a chat too
        return self.note_share if view.index.has_tool_calls else self.chat_note_share

    def note_limit(self, view: View, context: CompactionContext, span: Span) -> Fit | None:
        """How big the note of `span` may be so that it fits under the budget (or target)
        (see `fit.note_fit`)."""
        cap = ceiling(context)
        limit = self.size_limit(span.tokens, cap, view)
        if cap is None:
            return Fit(limit, cap)
        return note_fit(view, span, cap, limit, self.header_tokens(view, context, span))

    def header_tokens(self, view: View, context: CompactionContext, span: Span) -> int:
        """What the note costs besides its text (its header line, the message overhead)."""
        covered = sum(view.index.groups[g].size for g in span.all_groups)
        empty = self.summary_message("", covered, model=self.model_name(context), kind=self.name)
        return view.index.tokenizer.count_message(empty) + 2  # the newline after the header

    def model_name(self, context: CompactionContext) -> str:
        chosen = self.summarizer_for(context)
        return chosen.name if chosen is not None else "digest"

    def writer_for(self, context: CompactionContext) -> Summarizer | None:
        """What writes this run's notes: a chat model wrapped in a `ModelSummarizer` with
        this strategy's instruction, template, timeout and input bound; None for the digest."""
        chosen = self.summarizer_for(context)
        if chosen is None or isinstance(chosen, DigestSummarizer):
            return None
        if not isinstance(chosen, ChatModel):
            return chosen
        return ModelSummarizer(
            chosen,
            instruction=self.prompt or self.instruction,
            template=None if self.prompt else self.template,
            timeout=self.timeout,
            max_input_tokens=self.max_input_tokens,
        )

    async def produce(
        self,
        context: CompactionContext,
        messages: Sequence[Message],
        previous: str,
        limit: int,
        *,
        merge: bool = True,
    ) -> str:
        """The summary text of `messages` (given `previous`), falling back on failure;
        what it cost and why it fell back are recorded on the running step."""
        tok = context.view.index.tokenizer
        writer = self.writer_for(context)
        if writer is None:
            return _digest_of(messages, previous, limit, tok, context=context)
        written = await write_note(
            writer,
            messages,
            previous=previous,
            limit=limit,
            tokenizer=tok,
            timeout=self.timeout,
            merge=merge,
        )
        context.note(
            model_calls=written.model_calls,
            model_input_tokens=written.model_input_tokens,
            model_output_tokens=written.model_output_tokens,
        )
        if written.fallback:
            note_fallback(context, written.fallback)
        if written.instructions_dropped:
            _note_dropped_count(context, written.instructions_dropped)
        return written.text

    async def call(
        self,
        model: ChatModel,
        context: CompactionContext,
        request: Sequence[Message],
        *,
        count: bool = True,
        **options: Any,
    ) -> ChatResponse:
        """One model call within `timeout`, counted on the running step (unless the
        model-free stand-in answers: `count` False)."""
        if count:
            context.note(model_calls=1)
        async with asyncio.timeout(self.timeout):
            response = await ask(model, request, **options)
        if count:
            context.note(
                model_input_tokens=response.usage.input_tokens,
                model_output_tokens=response.usage.output_tokens,
            )
        return response

    # -- placing -----------------------------------------------------------------------

    def header(self, what: str, covered: int) -> str:
        """The first line of a note: what it is, what it replaces, how to recall originals."""
        where = (
            f"; call the `{self.recall_tool}` tool with a message id to read an original"
            if self.recall_tool
            else " and can be recalled"
        )
        return (
            f"[{what} {covered} earlier messages, replaced to fit the context window. "
            f"The originals are kept{where}.]"
        )

    def summary_message(self, text: str, covered: int, *, model: str, kind: str) -> Message:
        """The user-role note that stands in for the span."""
        header = self.header("Summary of", covered)
        return Message.user(
            f"{header}\n{text}" if text else header,
            synthetic="summary",
            metadata={"strategy": self.name, "summarizer": model, "kind": kind},
        )

    def place(
        self, view: View, context: CompactionContext, groups: Sequence[int], text: str
    ) -> Message | None:
        """Stand the summary in for `groups`; None (and no change) when it would not
        be smaller than what it replaces."""
        covered = sum(view.index.groups[g].size for g in groups)
        msg = self.summary_message(text, covered, model=self.model_name(context), kind=self.name)
        now = sum(rendered_tokens(view, g) for g in groups)
        if view.index.tokenizer.count_message(msg) >= now:
            context.note(detail=f"{self.name}: the summary would not be smaller than its span")
            return None
        placed = view.summarize(list(groups), msg)
        context.note(groups_replaced=len(groups))
        return placed

    def apply_extractive(self, view: View, context: CompactionContext) -> bool:
        """Summarize the span with the digest (no model): the sync path."""
        span = self.select_span(view, context)
        if not span.messages:
            return False
        return self.finish(view, context, span, None)

    def finish(
        self,
        view: View,
        context: CompactionContext,
        span: Span,
        text: str | None,
        *,
        source: Sequence[Message] | None = None,
        written: tuple[int, Note] | None = None,
    ) -> bool:
        """Place a note for the span that fits under the budget (or target).

        `text` is a model's summary (trimmed at a line boundary when too long); None
        means the extractive digest of `source` (default: the span and its earlier
        summaries), re-run at a smaller limit when the room shrinks. `written` is that
        digest already written at a limit, ``(limit, note)``: not written again. When
        not even a minimal note fits, the span is dropped and an earlier summary kept.
        """
        fit = self.note_limit(view, context, span)
        if fit is None:
            return self.drop_span(view, context, span)
        messages, previous = (  # the originals of a non-rolling summary hold its past already
            (list(span.read), previous_of(span)) if source is None else (list(source), "")
        )
        digest_input = (messages, previous, later_than(view, span))
        if fit.crowding:  # the budget's last resort makes the room: normal, not a fallback
            context.note(
                detail=f"room for a {fit.limit}-token summary only once {fit.crowding} newest "
                "original group(s) give way to it"
            )
        limit, placed = fit.limit, False
        for _ in range(3):  # the room is exact but for the tokenizer's joins: re-check
            if written is not None and written[0] == limit and text is None:
                fitted = written[1].text
                _note_dropped(context, written[1])
            else:
                fitted = self.fit_text(context, text, digest_input, limit)
            if self.place(view, context, span.all_groups, fitted) is None:
                break  # not smaller than the span, or than the note placed before
            placed = True
            excess = 0 if fit.cap is None or fit.crowding else view.total_tokens - fit.cap
            if excess <= 0 or limit <= 16:
                break
            limit = max(16, limit - excess)
        if placed and limit < self.size_limit(span.tokens, fit.cap, view):
            context.note(detail=f"{self.name}: note shrunk to {limit} tokens to fit")
        return placed

    def fit_text(
        self,
        context: CompactionContext,
        text: str | None,
        digest_input: tuple[list[Message], str, list[Message]],
        limit: int,
    ) -> str:
        """`text` within `limit` tokens: cut at a line boundary, else the digest."""
        tok = context.view.index.tokenizer
        if text and tok.count_text(text) <= limit:
            return text
        if text:
            trimmed = trim_lines(text, limit, tok)
            if trimmed:
                return trimmed
            note_fallback(context, "the summary did not fit the room; used the extractive digest")
        messages, previous, later = digest_input
        return _digest_of(messages, previous, limit, tok, later=later, context=context)

    def drop_span(self, view: View, context: CompactionContext, span: Span) -> bool:
        """Drop the span but for an earlier summary in it: `Budgeted`'s last resort drops
        originals before summaries, so the run keeps a trace of its past."""
        kept = [g for g in span.groups if any(m.synthetic == "summary" for m in view.rendered(g))]
        dropped = [g for g in span.groups if g not in kept]
        for g in dropped:
            view.drop(g)
        reason = "no room for even a minimal summary within the budget; span dropped"
        note_fallback(context, reason + (", the earlier summary kept" if kept else ""))
        context.note(groups_dropped=len(dropped))
        return bool(dropped)


# -- helpers ---------------------------------------------------------------------------


def note_fallback(context: CompactionContext, reason: str) -> None:
    """Record a fallback on the running step, after any recorded before (chunks and
    concepts fail independently)."""
    step = context.current
    earlier = step.fallback if step is not None else None
    context.note(fallback=f"{earlier}; {reason}" if earlier else reason)


def run_now(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that never suspends, without an event loop."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coro.close()
    raise RuntimeError("a model-free summary tried to await")  # pragma: no cover


def as_summarizer(summarizer: ChatModel | Summarizer | str | None) -> ChatModel | Summarizer | None:
    """A summarizer object from a model, a `Summarizer` or a spec string; the model-free
    `ExtractiveModel` is the digest itself (no request is built for it)."""
    if not isinstance(summarizer, (str, ChatModel)) and isinstance(summarizer, Summarizer):
        return summarizer
    model = as_model(summarizer)  # raises a ConfigError for anything else
    return DigestSummarizer() if isinstance(model, ExtractiveModel) else model


def _digest_of(
    messages: Sequence[Message],
    previous: str,
    limit: int,
    tok: Tokenizer,
    *,
    later: Sequence[Message] = (),
    context: CompactionContext | None = None,
) -> str:
    """The digest note; what the ledger could not keep is said on the running step."""
    note = rolled_note(messages, previous, limit, tokenizer=tok, later=later)
    if context is not None:
        _note_dropped(context, note)
    return note.text


def _note_dropped(context: CompactionContext, note: Note) -> None:
    _note_dropped_count(context, note.instructions_dropped)


def _note_dropped_count(context: CompactionContext, dropped: int) -> None:
    if dropped:
        context.note(
            detail=f"{dropped} oldest standing instruction(s) left out: "
            "the ledger passed its share of the note"
        )


__all__ = [
    "DEFAULT_MIN_PRESERVED",
    "DEFAULT_TEMPLATE",
    "MIN_NOTE_TOKENS",
    "SYSTEM_PROMPT",
    "Fit",
    "Rejected",
    "Span",
    "SummarizingStrategy",
    "clamp_message",
    "fence",
    "note_fallback",
    "positive_int",
    "previous_of",
    "render_transcript",
    "rendered_tokens",
    "strip_header",
    "trim_lines",
]
