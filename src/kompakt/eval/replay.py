"""Replay a recorded run through a compactor, as the agent would have experienced it.

The recorded messages are appended one at a time. Each time the agent would have
called its model (before every recorded assistant message, and once at the end) the
compactor is asked whether to compact; the context sent with and without compaction
is recorded for that step, and every compaction is recorded as a `ReplayEvent`: what
it dropped, collapsed or summarized, the tokens before and after, model calls, time.
At the end the run's artifacts (paths, commands, errors, identifiers) are checked:
which are still visible, and which only recall over the originals would bring back.

>>> from kompakt.messages import Message
>>> from kompakt.triggers import TokensExceed
>>> class DropOldest:  # the smallest thing with check() and compact()
...     def __init__(self): self.view = None
...     def check(self, m): return m.total_tokens > 40
...     def compact(self, index):
...         from kompakt.view import View
...         self.view = self.view or View(index)
...         for g in list(self.view.candidates(min_preserved=2)):
...             if self.view.total_tokens <= 30: break
...             self.view.drop(g)
...         return self.view, None
>>> run = [Message.user("task")] + [Message.assistant("x" * 40) for _ in range(6)]
>>> result = replay(run, DropOldest())
>>> result.peak_tokens_full > 40 >= result.steps[-1].tokens_sent
True
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Protocol

from kompakt.errors import BudgetImpossible
from kompakt.eval.probes import (
    ARTIFACT_KINDS,
    Artifact,
    Needle,
    extract_artifacts,
    normalize,
    visible_text,
)
from kompakt.index import MessageIndex
from kompakt.messages import Message
from kompakt.tokens import Tokenizer
from kompakt.view import View

__all__ = [
    "ArtifactTally",
    "CompactorLike",
    "NeedleResult",
    "ReplayEvent",
    "ReplayResult",
    "ReplayStep",
    "replay",
    "store_recall",
    "tally_artifacts",
]


class CompactorLike(Protocol):
    """What replay needs of a compactor (`kompakt.Compactor` is one)."""

    def check(self, source: MessageIndex | View) -> bool:
        """Whether to compact what would be sent now."""
        ...

    def compact(self, index: MessageIndex) -> tuple[View, Any]:
        """Compact; the view to send and a record of what happened."""
        ...


@dataclass
class ReplayStep:
    """The context at one model call of the recorded run."""

    step: int
    position: int
    """How many recorded messages had arrived."""
    turn: int
    tokens_full: int
    """What the uncompacted history costs."""
    tokens_sent: int
    """What the compacted context costs."""
    messages_full: int
    messages_sent: int
    compacted: bool = False
    """A compaction ran before this call."""


@dataclass
class ReplayEvent:
    """One compaction during the replay."""

    step: int
    position: int
    tokens_before: int
    tokens_after: int
    messages_before: int
    messages_after: int
    seconds: float
    groups_dropped: int = 0
    """Groups newly sent as nothing."""
    groups_collapsed: int = 0
    """Groups newly stood in for by a short note (collapsed, clamped, superseded)."""
    groups_summarized: int = 0
    """Groups newly covered by a summary or facts message."""
    model_calls: int = 0
    model_input_tokens: int = 0
    model_output_tokens: int = 0
    strategies: list[str] = field(default_factory=list)
    """Strategies that changed something, in order."""
    fallbacks: list[str] = field(default_factory=list)
    reason: str = ""
    changes: list[str] = field(default_factory=list)
    """What changed, as message ranges of the run: ``"dropped messages 4-11"``."""

    COLUMNS: ClassVar[tuple[str, ...]] = (
        "message",
        "tokens before",
        "after",
        "dropped",
        "collapsed",
        "summarized",
        "model calls",
        "ms",
        "what",
    )
    """Headers of `cells`, for the tables of the terminal and of the report."""

    def cells(self) -> list[str]:
        """The event as one table row (see `COLUMNS`)."""
        counts = (self.groups_dropped, self.groups_collapsed, self.groups_summarized)
        return [
            str(self.position),
            f"{self.tokens_before:,}",
            f"{self.tokens_after:,}",
            *(str(n) for n in counts),
            str(self.model_calls),
            f"{self.seconds * 1000:.1f}",
            self.what(),
        ]

    def what(self, most: int = 3) -> str:
        """The first `most` changed ranges, and how many more."""
        more = len(self.changes) - most
        return "; ".join(self.changes[:most]) + (f" (+{more} more)" if more > 0 else "")


@dataclass
class ArtifactTally:
    """Artifacts of one kind: how many exist, are visible, are recoverable by recall."""

    kind: str
    total: int
    visible: int
    recoverable: int
    """Not visible, but present in the originals (the store keeps them; recall finds them)."""
    lost: list[str] = field(default_factory=list)
    """A few of the artifacts no longer visible."""

    @property
    def rate(self) -> float:
        """Share still visible (1.0 when there are none)."""
        return self.visible / self.total if self.total else 1.0


@dataclass
class NeedleResult:
    """A planted fact and whether it is still visible (and answered, with a model)."""

    kind: str
    value: str
    position: int
    visible: bool
    answered: bool | None = None
    stale_shown: bool = False
    """For an update: the value it replaced is shown as current (no newer mention of
    the value that replaced it follows)."""


def _shown_as_current(old: str, new: str, shown: str) -> bool:
    last_old = shown.rfind(normalize(old))
    return last_old >= 0 and shown.rfind(normalize(new)) < last_old


@dataclass
class ReplayResult:
    """Everything a replay measured; `to_dict()` is what `--json` prints."""

    source: str
    strategy: str
    budget: int | None
    tokenizer: str
    messages: int
    steps: list[ReplayStep]
    events: list[ReplayEvent]
    artifacts: list[ArtifactTally]
    needles: list[NeedleResult] = field(default_factory=list)
    ineffective: int = 0
    """Compactions that ran (the trigger fired) but changed nothing."""
    seconds: float = 0.0
    final_messages: list[Message] = field(default_factory=list, repr=False)

    @property
    def peak_tokens_full(self) -> int:
        """The largest context without compaction."""
        return max((s.tokens_full for s in self.steps), default=0)

    @property
    def peak_tokens_sent(self) -> int:
        """The largest context actually sent."""
        return max((s.tokens_sent for s in self.steps), default=0)

    @property
    def final_tokens(self) -> int:
        """The context sent at the end of the run."""
        return self.steps[-1].tokens_sent if self.steps else 0

    @property
    def model_calls(self) -> int:
        """Summarizer model calls over the whole replay."""
        return sum(e.model_calls for e in self.events)

    @property
    def summarizer_tokens(self) -> int:
        """Summarizer input plus output tokens over the whole replay."""
        return sum(e.model_input_tokens + e.model_output_tokens for e in self.events)

    @property
    def tokens_saved(self) -> int:
        """Tokens not sent, summed over every model call of the run."""
        return sum(s.tokens_full - s.tokens_sent for s in self.steps)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        out = {k: v for k, v in asdict(self).items() if k not in ("final_messages", "artifacts")}
        out["artifacts"] = [{**asdict(a), "rate": round(a.rate, 4)} for a in self.artifacts]
        out["summary"] = {
            "peak_tokens_full": self.peak_tokens_full,
            "peak_tokens_sent": self.peak_tokens_sent,
            "final_tokens": self.final_tokens,
            "compactions": len(self.events),
            "ineffective_compactions": self.ineffective,
            "model_calls": self.model_calls,
            "summarizer_tokens": self.summarizer_tokens,
            "tokens_saved": self.tokens_saved,
        }
        return out


def _state(r: tuple[Message, ...] | None) -> str:
    """'original', 'dropped', 'note' (collapsed, clamped...) or 'summary'."""
    if r is None:
        return "original"
    if not r:
        return "dropped"
    return "summary" if any(m.synthetic in ("summary", "facts") for m in r) else "note"


Changes = dict[int, "tuple[Message, ...] | None"]
"""Group -> what it sent before the compaction (None: its originals)."""


def _event(
    step: int,
    index: MessageIndex,
    before: tuple[int, int],
    after: View,
    changed: Changes,
    raw: Any,
    seconds: float,
) -> ReplayEvent:
    """The event of one compaction; `changed` holds the groups it edited (and only
    those are looked at: the work is proportional to what changed)."""
    summarized = {
        i
        for g in changed
        for m in after.replacement(g) or ()
        if m.synthetic in ("summary", "facts")
        for i in m.covers
    }
    dropped = collapsed = summ = 0
    spans: list[tuple[str, int, int]] = []  # (what, first, last) message positions
    for g in sorted(changed):
        new = after.replacement(g)
        old = changed[g]
        if new is old:  # edited and put back as it was
            continue
        a, b = _state(old), _state(new)
        if a == b:  # still what it was (a rolled summary in place of the old one, say)
            continue
        if b == "dropped":
            if any(m.id in summarized for m in index.group_messages(g)):
                summ += 1
                b = "summary"
            else:
                dropped += 1
        elif b == "summary":
            summ += 1
        elif b == "note":
            collapsed += 1
        _extend(spans, _VERB.get(b, "restored"), index.groups[g].start, index.groups[g].end - 1)
    ev = ReplayEvent(
        step=step,
        position=index.message_count,
        tokens_before=before[0],
        tokens_after=after.total_tokens,
        messages_before=before[1],
        messages_after=after.message_count,
        seconds=seconds,
        groups_dropped=dropped,
        groups_collapsed=collapsed,
        groups_summarized=summ,
        changes=[
            f"{what} message{'s' if a != z else ''} {a}{'' if a == z else f'-{z}'}"
            for what, a, z in spans
        ],
    )
    _copy_event_counts(ev, raw)
    return ev


def _changes(before: View | None, mark: int, after: View) -> Changes:
    """The groups a compaction edited, with what each sent before.

    From the journal when there is one (the view edited in place, or a copy of it made
    for the compaction); else every group is compared with `before` (the first
    compaction, or a compactor that returns views of its own making).
    """
    journal: list[tuple[int, tuple[Message, ...] | None]] | None = None
    if before is not None and after is before:
        journal = after.journal()[mark:]
    elif before is not None and after.journaling:
        journal = after.journal()
    if journal is not None:
        changed: Changes = {}
        for g, old in journal:
            changed.setdefault(g, old)  # the first entry: what it was before this compaction
        after.journal().clear()  # read: the next compaction starts afresh
        return changed
    out: Changes = {}
    for g in range(after.index.group_count):
        old = before.replacement(g) if before is not None else None
        if after.replacement(g) is not old:
            out[g] = old
    return out


_VERB = {"dropped": "dropped", "note": "collapsed", "summary": "summarized"}


def _extend(spans: list[tuple[str, int, int]], what: str, first: int, last: int) -> None:
    """Add a changed range, merged with the previous one when adjacent and alike."""
    if spans and spans[-1][0] == what and spans[-1][2] + 1 >= first:
        spans[-1] = (what, spans[-1][1], last)
    else:
        spans.append((what, first, last))


def _copy_event_counts(ev: ReplayEvent, raw: Any) -> None:
    """Read model calls, strategies and fallbacks off a `CompactionEvent` if given."""
    if raw is None:
        return
    steps = list(getattr(raw, "steps", []) or [])
    ev.strategies = [s.strategy for s in steps if getattr(s, "changed", False)]
    ev.fallbacks = [f"{s.strategy}: {s.fallback}" for s in steps if getattr(s, "fallback", None)]
    ev.model_calls = sum(int(getattr(s, "model_calls", 0)) for s in steps)
    ev.model_input_tokens = sum(int(getattr(s, "model_input_tokens", 0)) for s in steps)
    ev.model_output_tokens = sum(int(getattr(s, "model_output_tokens", 0)) for s in steps)
    if not steps:
        ev.model_calls = int(getattr(raw, "model_calls", 0) or 0)
    ev.reason = str(getattr(raw, "trigger_reason", "") or getattr(raw, "reason", "") or "")


def _changed(ev: ReplayEvent) -> bool:
    moved = ev.groups_dropped + ev.groups_collapsed + ev.groups_summarized
    return bool(moved) or ev.tokens_after != ev.tokens_before


def tally_artifacts(
    artifacts: Sequence[Artifact],
    visible: str,
    recover: Callable[[Artifact], bool],
    *,
    examples: int = 5,
) -> list[ArtifactTally]:
    """Count, per kind, which artifacts appear in `visible`, and which `recover` gets back.

    One pass over the artifacts; `recover` is asked about the lost ones only.
    """
    tallies = {kind: ArtifactTally(kind, 0, 0, 0) for kind in ARTIFACT_KINDS}
    for a in artifacts:
        t = tallies[a.kind]
        t.total += 1
        if a.key in visible:
            t.visible += 1
            continue
        if recover(a):
            t.recoverable += 1
        if len(t.lost) < examples:
            t.lost.append(a.text)
    return list(tallies.values())


def store_recall(messages: Sequence[Message]) -> Callable[[Artifact], bool]:
    """Recall as an agent would: full-text search over the originals in a SQLite store.

    An artifact counts as recoverable when one of the five best matches shows it.
    """
    from kompakt.store import SQLiteStore

    store = SQLiteStore(":memory:")
    store.append("replay", messages)

    def recover(a: Artifact) -> bool:
        found = store.search("replay", a.text, limit=5)
        return any(a.key in visible_text([m]) for m in found)

    return recover


def _in_originals(messages: Sequence[Message]) -> Callable[[Artifact], bool]:
    """Whether an artifact is in the originals: looked up in the message it was first
    seen in (the whole run is joined and searched only for one that is not there)."""
    joined: list[str] = []

    def recover(a: Artifact) -> bool:
        if 0 <= a.position < len(messages) and a.key in visible_text([messages[a.position]]):
            return True
        if not joined:
            joined.append(visible_text(messages))
        return a.key in joined[0]

    return recover


def replay(
    messages: Sequence[Message],
    compactor: CompactorLike,
    *,
    tokenizer: Tokenizer | None = None,
    source: str = "<messages>",
    strategy: str = "",
    budget: int | None = None,
    needles: Sequence[Needle] = (),
    on_message: Callable[[int, int], None] | None = None,
    on_event: Callable[[ReplayEvent], None] | None = None,
    recall: bool = False,
) -> ReplayResult:
    """Replay `messages` through `compactor`, one recorded model call at a time.

    `on_message(done, total)` is called after each message (for a progress bar),
    `on_event(event)` after each compaction. Needles planted in `messages` (see
    `plant_needles`) are checked against the final context. An artifact no longer
    visible is *recoverable* when it is in the originals; with ``recall=True`` only
    when a full-text search of a SQLite store holding the originals (what the agent's
    recall tool runs) finds it.
    """
    t0 = time.perf_counter()
    index = MessageIndex(tokenizer=tokenizer)
    view: View | None = None
    steps: list[ReplayStep] = []
    events: list[ReplayEvent] = []
    ineffective = 0
    total = len(messages)

    def model_call() -> None:
        nonlocal view, ineffective
        compacted = False
        if index.message_count and compactor.check(view if view is not None else index):
            before = view
            sent = view if view is not None else index
            totals = (sent.total_tokens, sent.message_count)
            # edits are journaled, so the event costs what changed, not the history
            mark = len(before.journal()) if before is not None else 0
            tc = time.perf_counter()
            try:
                view, raw = compactor.compact(index)
            except BudgetImpossible as exc:
                exc.position = index.message_count  # type: ignore[attr-defined]
                raise
            seconds = time.perf_counter() - tc
            changed = _changes(before, mark, view)
            if before is None:
                view.journal()
            if getattr(raw, "changed", True) is False:  # nothing to describe
                ineffective += 1
            elif _changed(ev := _event(len(steps), index, totals, view, changed, raw, seconds)):
                events.append(ev)
                compacted = True
                if on_event is not None:
                    on_event(ev)
            else:
                ineffective += 1
        sent = view if view is not None else index
        steps.append(
            ReplayStep(
                step=len(steps),
                position=index.message_count,
                turn=index.turn_count,
                tokens_full=index.total_tokens,
                tokens_sent=sent.total_tokens,
                messages_full=index.message_count,
                messages_sent=sent.message_count,
                compacted=compacted,
            )
        )

    for i, m in enumerate(messages):
        if m.role == "assistant" and index.message_count:
            model_call()
        index.append(m)
        if on_message is not None:
            on_message(i + 1, total)
    model_call()
    final = view.render() if view is not None else list(index.messages)
    shown = visible_text(final)
    artifacts = extract_artifacts(index.messages)
    recover = store_recall(index.messages) if recall else _in_originals(index.messages)
    return ReplayResult(
        source=source,
        strategy=strategy,
        budget=budget,
        tokenizer=repr(index.tokenizer),
        messages=total,
        steps=steps,
        events=events,
        artifacts=tally_artifacts(artifacts, shown, recover),
        needles=[
            NeedleResult(
                n.kind,
                n.value,
                n.position,
                normalize(n.value) in shown,
                stale_shown=n.stale is not None and _shown_as_current(n.stale, n.value, shown),
            )
            for n in needles
        ],
        ineffective=ineffective,
        seconds=time.perf_counter() - t0,
        final_messages=final,
    )
