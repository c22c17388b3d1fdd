"""One conversation the proxy serves: its index, sticky compacted view, store session, record.

A `Conversation` mirrors the provider messages its requests carried (each message
converted once, when it first arrives), compacts with its own `Compactor` when the
trigger fires, and renders what goes upstream: every original as the very dict the
client sent, every synthetic message rendered once. Between compactions a request
costs what is new, and the compacted prefix is the same objects, so the bytes sent
upstream repeat exactly and provider prompt caches keep hitting.

Anthropic's top-level ``system`` is kept as the conversation's first item (a
``{"__kompakt_system__": ...}`` wrapper), so it is indexed and counted like any message
and never compacted away.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
import uuid
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kompakt.agent.calibration import Shifted
from kompakt.compactor import CompactionEvent, Compactor
from kompakt.errors import FormatError, MessageError
from kompakt.formats.anthropic import from_anthropic, to_anthropic_messages
from kompakt.formats.openai import from_openai, to_openai
from kompakt.formats.responses import COMPACTION, from_responses, to_responses
from kompakt.formats.usage import with_tokens
from kompakt.integrations._bridge import Mirror
from kompakt.messages import Message
from kompakt.overflow import Overflow
from kompakt.serve.body import Body
from kompakt.serve.chain import Chain
from kompakt.serve.config import Api
from kompakt.store import CompactionRecord

__all__ = ["SYSTEM_KEY", "Conversation", "Rendered", "Turn", "source_of", "split_source"]

SYSTEM_KEY = "__kompakt_system__"


def source_of(api: Api, body: dict[str, Any]) -> list[Any]:
    """The items a request's conversation is made of: Anthropic's system or the
    Responses ``instructions`` first; for Responses, a run of model output items (a
    reasoning item with the call it leads to) is one item, a list, kept or replaced whole."""
    if api == "responses":
        items = body["input"]
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
        return [{SYSTEM_KEY: body.get("instructions")}, *_runs(items)]
    messages = body["messages"]
    if api == "anthropic":
        return [{SYSTEM_KEY: body.get("system")}, *messages]
    return list(messages)


def _holds_compaction(m: Message) -> bool:
    return m.role == "assistant" and any(
        p.kind == "other" and p.data.get("type") == COMPACTION for p in m.content
    )


def _runs(items: Sequence[Any]) -> list[list[Any]]:
    out: list[list[Any]] = []
    model_side = False
    for item in items:
        side = _model_output(item)
        if side and model_side:
            out[-1].append(item)
        else:
            out.append([item])
        model_side = side
    return out


def _model_output(item: Any) -> bool:
    if not isinstance(item, dict):
        return False
    kind = item.get("type", "message")
    if kind == "message":
        return bool(item.get("role") == "assistant")
    return isinstance(kind, str) and not (
        kind.endswith("_call_output") or kind in ("mcp_approval_response", "compaction")
    )


def split_source(api: Api, items: Sequence[Any]) -> tuple[Any, list[Any]]:
    """(Anthropic system / Responses instructions or None, the messages or input items)
    from rendered items."""
    first: Any = None
    if api != "openai" and items and isinstance(items[0], dict) and SYSTEM_KEY in items[0]:
        first, items = items[0][SYSTEM_KEY], items[1:]
    if api == "responses":
        return first, [i for unit in items for i in unit]
    return first, list(items)


def _convert_openai(obj: Any, pos: int) -> list[Message]:
    return from_openai([obj], start=pos)


def _render_openai(messages: Sequence[Message]) -> list[Any]:
    return to_openai(messages, provider=True)


def _convert_anthropic(obj: Any, pos: int) -> list[Message]:
    if pos == 0 and isinstance(obj, dict) and SYSTEM_KEY in obj:
        return from_anthropic({"system": obj[SYSTEM_KEY], "messages": []})
    try:
        return from_anthropic([obj])
    except MessageError as e:  # name the message by its place in the request's `messages`
        raise FormatError(str(e).replace("message 0:", f"message {pos - 1}:", 1)) from None


def _render_anthropic(messages: Sequence[Message]) -> list[Any]:
    return to_anthropic_messages(messages, provider=True)


def _convert_responses(obj: Any, pos: int) -> list[Message]:
    if pos == 0 and isinstance(obj, dict) and SYSTEM_KEY in obj:
        text = obj[SYSTEM_KEY]
        return from_responses([], instructions=text) if isinstance(text, str) else []
    try:
        return from_responses(obj)
    except MessageError as e:
        raise FormatError(f"input item near {pos - 1}: {e}") from None


def _render_responses(messages: Sequence[Message]) -> list[Any]:
    return [to_responses(messages, provider=True)]  # one run of items


@dataclass
class Turn:
    """One request of a conversation, as the page shows it."""

    at: float
    messages: int
    """Messages in the request."""
    new: int
    """Of those, how many the conversation had not seen."""
    tokens_full: int
    """Estimated tokens of the whole history (what would be sent without compaction)."""
    tokens_sent: int
    """Estimated tokens sent upstream."""
    prefix_stable: bool
    """What was sent last time is an exact prefix of what is sent now."""
    added_ms: float
    """Time the proxy spent before forwarding."""
    read_ms: float = 0.0
    """Of `added_ms`, the time the request's body took to arrive."""
    compaction: str = ""
    """The compaction event's summary line, when one ran."""
    status: int | None = None
    """The upstream's status code."""
    usage: int | None = None
    """Input tokens the upstream reported."""
    note: str = ""
    """Anything unusual: a fallback, an overflow retry."""


@dataclass
class Rendered:
    """What a request sends upstream."""

    items: list[Any]
    unchanged: bool
    """The items are the request's own (nothing compacted away)."""
    tokens_sent: int
    tokens_full: int
    event: CompactionEvent | None = None


@dataclass
class Stats:
    """A conversation's totals."""

    requests: int = 0
    tokens_sent: int = 0
    tokens_full: int = 0
    compactions: int = 0
    stable: int = 0
    """Requests (after the first) whose prefix was unchanged."""
    added_ms: list[float] = field(default_factory=list)

    @property
    def stable_share(self) -> float:
        return self.stable / (self.requests - 1) if self.requests > 1 else 1.0


class Conversation:
    """A conversation's mirror, store session, lock, chain and record."""

    def __init__(
        self,
        api: Api,
        compactor: Compactor,
        *,
        id: str | None = None,
        parent: str | None = None,
        fork_at: int = 0,
        max_timeline: int = 500,
    ) -> None:
        self.id = id or uuid.uuid4().hex
        self.api: Api = api
        self.parent = parent
        self.fork_at = fork_at
        convert, render = {
            "openai": (_convert_openai, _render_openai),
            "anthropic": (_convert_anthropic, _render_anthropic),
            "responses": (_convert_responses, _render_responses),
        }[api]
        self._convert = convert
        self.compacted_reply: int | None = None
        """Tokens the upstream reported for a reply in which it compacted the conversation
        (its own summary, which kompakt cannot count well): the next new message holding
        a compaction block is counted at that."""
        self.mirror = Mirror(compactor, self._converted, render)
        self.template = self.mirror.template
        self.chain = Chain()
        self.lock = asyncio.Lock()
        self.offset = 0
        """Provider-reported input tokens minus the estimate of what was sent (calibration)."""
        self.stored = 0
        """Originals already written to the store."""
        self.model = ""
        self.created = time.time()
        self.stats = Stats()
        self.timeline: deque[Turn] = deque(maxlen=max_timeline)
        self.events: list[CompactionEvent] = self.mirror.events
        self.writing: asyncio.Future[None] | None = None
        """The last write of its originals and records to the store (they run in order)."""
        self.body: Body | None = None
        """The last request's body, located (the next one is parsed from where it ends)."""
        self._sent: list[Any] | None = None
        self._wire: tuple[list[Any], bytes] | None = None

    def _converted(self, obj: Any, pos: int) -> list[Message]:
        messages = self._convert(obj, pos)
        reply = self.compacted_reply
        if reply is not None and any(_holds_compaction(m) for m in messages):
            messages = [with_tokens(m, reply) if _holds_compaction(m) else m for m in messages]
            self.compacted_reply = None
        return messages

    @property
    def idle(self) -> bool:
        """No request holds it and nothing is waiting to be written: it can be let go."""
        return not self.lock.locked() and (self.writing is None or self.writing.done())

    @property
    def items(self) -> list[Any]:
        """Every provider item received so far, in order (the mirror's source)."""
        return self.mirror.source

    def continued(self, elements: Sequence[Any]) -> list[Any] | None:
        """The items that a request's conversation array `elements`, new after the last
        request's, add to `items`: the elements themselves, or for Responses their runs;
        None when the first one continues the last run (a run is one item: read the
        request whole)."""
        if self.api != "responses":
            return list(elements)
        last = self.items[-1] if len(self.items) > 1 else None
        goes_on = bool(
            isinstance(last, list)
            and last
            and _model_output(last[-1])
            and elements
            and _model_output(elements[0])
        )
        return None if goes_on else list(_runs(elements))

    def take(self, new: Sequence[Any]) -> list[Message]:
        """Take in the items a request adds to `items`; returns the new originals (none
        is taken when one does not convert: a `FormatError` naming it)."""
        n = len(self.items)
        taken = self.mirror.extend(new)
        self.chain.extend(self.items[n:])
        return taken

    def rebuild(self, source: Sequence[Any], stored: Sequence[Message]) -> int | None:
        """Take in the leading items of `source` that make the `stored` originals (this
        conversation's, read back from the store); how many, or None when they differ."""
        want = [m.id for m in stored]
        index = self.mirror.index
        k = 0
        while index.message_count < len(want) and k < len(source):
            self.take(source[k : k + 1])
            k += 1
        if [m.id for m in index.messages] != want:
            return None
        self.stored = len(want)
        return k

    def restore(self, record: CompactionRecord) -> None:
        """Send what the view recorded in `record` sent (the conversation rebuilt)."""
        self.mirror.restore({"rev": str(record.id or ""), **record.to_dict()})

    def unstored(self) -> list[Message]:
        """Originals not yet written to the store."""
        return list(self.mirror.index.messages[self.stored :])

    def calibrate(self, reported: int, estimate: int) -> None:
        """Move the trigger, target and budget by what the provider counted.

        A report under half the estimate is not taken: no tokenizer is that far off, so
        it is a server that does not count (some local ones report 0 or 1).
        """
        if reported * 2 < estimate:
            return
        self.offset = reported - estimate
        c, t = self.mirror.compactor, self.template
        c.trigger = Shifted(t.trigger, self.offset)
        c.target = Shifted(t.target, self.offset)
        # the budget moves by the offset too; what else the run overrides stays (leniency)
        c.overrides = dataclasses.replace(
            c.overrides, budget_offset=t.overrides.budget_offset + self.offset
        )

    async def render(self, request_items: Sequence[Any]) -> Rendered:
        """Compact when due, and the items to send."""
        event = None
        if await self.mirror.acompact():
            event = self.events[-1]
            self.stats.compactions += 1
        return self._rendered(request_items, event)

    async def compact_harder(self, request_items: Sequence[Any], overflow: Overflow) -> Rendered:
        """Compact what was sent to fit what the upstream said fits (it refused the
        request as too long); the new view sticks: later compactions build on it."""
        await self.mirror.atighten(overflow)
        self.stats.compactions += 1
        return self._rendered(request_items, self.events[-1])

    def _rendered(self, request_items: Sequence[Any], event: CompactionEvent | None) -> Rendered:
        items = self.mirror.render()
        view = self.mirror.view
        return Rendered(
            items,
            unchanged=items == request_items,
            tokens_sent=view.total_tokens,
            tokens_full=self.mirror.index.total_tokens,
            event=event,
        )

    def messages_json(self, messages: list[Any]) -> bytes:
        """The JSON array of `messages`, as ``json.dumps`` writes it; the bytes made last
        time are reused for the prefix they cover (between compactions, all but the new)."""
        done = b""
        start = 0
        if self._wire is not None:
            prev, prev_bytes = self._wire
            if len(prev) <= len(messages) and messages[: len(prev)] == prev:  # identity first
                done, start = prev_bytes, len(prev)
        new = ", ".join(json.dumps(m, ensure_ascii=False) for m in messages[start:])
        more = new.encode("utf-8", "surrogatepass")
        done = b", ".join((done, more)) if done and more else done or more
        self._wire = (messages, done)
        return b"".join((b"[", done, b"]"))

    def record(self, turn: Turn, sent: list[Any]) -> None:
        """Count a request (its `sent` items decide whether the prefix was stable)."""
        prev = self._sent
        turn.prefix_stable = prev is not None and sent[: len(prev)] == prev
        if prev is not None and turn.prefix_stable:
            self.stats.stable += 1
        self._sent = sent
        s = self.stats
        s.requests += 1
        s.tokens_sent += turn.tokens_sent
        s.tokens_full += turn.tokens_full
        s.added_ms.append(turn.added_ms)
        if len(s.added_ms) > 1000:
            del s.added_ms[:500]
        self.timeline.append(turn)
