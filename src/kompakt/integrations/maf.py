"""Microsoft Agent Framework: message conversion and kompakt as a MAF compaction strategy.

Install with ``pip install "kompakt[maf]"``.

* `from_maf` / `to_maf` convert MAF `Message` lists both ways. A ``tool`` message that
  carries several `function_result` contents becomes one kompakt message per result
  and is put back together on the way out; every field survives the round trip.
* `KompaktStrategy` is a MAF `CompactionStrategy` (``async (messages) -> bool``): pass
  it wherever MAF takes one, ``Agent(compaction_strategy=...)``, a chat client's
  ``compaction_strategy=``, or ``CompactionProvider(before_strategy=..., after_strategy=...)``.
  It marks removed originals excluded (MAF keeps them, as kompakt does) and inserts
  kompakt's synthetic messages (collapsed notes, summaries) in their place. Given the
  agent's instructions and tools, it counts them in every budget.
* `KompaktStrategy.middleware()` is a chat middleware that, when a model call fails with
  the provider's context-overflow error, compacts that conversation tighter and calls once
  more (a second overflow raises `BudgetImpossible`).
* `KompaktStrategy.provider()` binds it to each run's `AgentSession`: one index per
  session, the view kept in ``session.state``, so a second run or a restored session
  resumes what the last call would have sent next.
* `MAFChatModel` makes any MAF chat client kompakt's summarizer.

Unlike MAF's own strategies, it does not re-group and re-count the whole list on each
call: only messages it has not seen are indexed.

```python
from agent_framework import Agent, InMemoryHistoryProvider
from kompakt import Budgeted, Compactor, TokensExceed
from kompakt.integrations.maf import KompaktStrategy

compactor = Compactor(trigger=TokensExceed(8_000), strategy=Budgeted(6_000))
strategy = KompaktStrategy(compactor, instructions="You debug.", tools=[read_file])
agent = Agent(client=client, instructions="You debug.", tools=[read_file],
              compaction_strategy=strategy,
              context_providers=[InMemoryHistoryProvider(), strategy.provider()])
```
"""

from __future__ import annotations

import json
import uuid
import weakref
from collections.abc import Sequence
from contextvars import ContextVar
from typing import Any

from kompakt.integrations._bridge import (
    Conversations,
    Mirror,
    Overhead,
    Oversize,
    as_compactor,
    as_text,
    dumps,
    loads_or_text,
    overhead_of,
    oversize_option,
    require,
    strip_overhead,
)
from kompakt.messages import Message, Part, PartKind, ToolCall
from kompakt.models.base import (
    BaseChatModel,
    ChatRequest,
    ChatResponse,
    Usage,
    assistant_response,
    estimate_usage,
)
from kompakt.overflow import Overflow
from kompakt.recovery import send_recovering
from kompakt.view import View

__all__ = ["KompaktStrategy", "MAFChatModel", "from_maf", "to_maf", "tool_schemas"]

_KEY = "maf"
_WHAT = "kompakt.integrations.maf"
_SYNTHETIC = "_kompakt_synthetic"
"""`additional_properties` key marking a message kompakt inserted."""
_EXCLUDED = "_excluded"
_REASON = "_exclude_reason"
_REASON_VALUE = "kompakt"
_DERIVED = "<derived from result>"


def _af() -> Any:
    return require("agent_framework", _WHAT, "maf")


# -- MAF -> kompakt -------------------------------------------------------------------


def from_maf(messages: Sequence[Any]) -> list[Message]:
    """Convert MAF messages to kompakt messages.

    >>> from agent_framework import Message as M
    >>> [(m.role, m.text) for m in from_maf([M("user", ["hi"]), M("assistant", ["yo"])])]
    [('user', 'hi'), ('assistant', 'yo')]
    """
    out: list[Message] = []
    for pos, m in enumerate(messages):
        out.extend(message_from_maf(m, pos))
    return out


def message_from_maf(message: Any, position: int = 0) -> list[Message]:
    """Convert one MAF message (a tool message with several results gives several)."""
    d = message.to_dict()
    contents: list[dict[str, Any]] = d.pop("contents", [])
    role = str(d.get("role", "user"))
    results = [c for c in contents if c.get("type") == "function_result"]
    if role == "tool" and results:
        return _tool_messages(d, contents, position)
    parts: list[Part] = []
    calls: list[ToolCall] = []
    layout: list[str] = []
    for c in contents:
        if c.get("type") == "text":
            parts.append(Part(text=c.get("text") or "", data=_without(c, "text")))
            layout.append("p")
        elif c.get("type") == "function_call" and role == "assistant":
            calls.append(_call_from(c))
            layout.append("c")
        else:
            parts.append(Part(kind=_part_kind(c), data=c))
            layout.append("p")
    src = {"message": d, "src": position, "part": 0, "of": 1, "layout": "".join(layout)}
    return [
        Message(
            role=role if role in ("system", "user", "assistant") else "user",  # type: ignore[arg-type]
            content=tuple(parts),
            tool_calls=tuple(calls),
            name=d.get("author_name"),
            id=d.get("message_id") or "",
            extra={_KEY: src},
        )
    ]


def _tool_messages(d: dict[str, Any], contents: list[dict[str, Any]], pos: int) -> list[Message]:
    out: list[Message] = []
    results = [c for c in contents if c.get("type") == "function_result"]
    others = [c for c in contents if c.get("type") != "function_result"]
    for k, c in enumerate(results):
        result = c.get("result")
        text, is_text = as_text(result)
        rest = _without(c, "result", "call_id")
        if rest.get("items") == [{"type": "text", "text": result, "additional_properties": {}}]:
            # derived from the result: rebuilt from the (possibly clamped) text, never resent
            rest["items"] = _DERIVED
        src = {"message": d, "src": pos, "part": k, "of": len(results), "fields": rest}
        if k == 0 and others:
            src["others"] = others
        mid = d.get("message_id")
        out.append(
            Message.tool(
                text,
                tool_call_id=c.get("call_id") or "",
                id=f"{mid}#{k}" if mid and len(results) > 1 else (mid or ""),
                extra={_KEY: {**src, "json": not is_text}},
            )
        )
    return out


def _call_from(c: dict[str, Any]) -> ToolCall:
    args = c.get("arguments")
    extra = _without(c, "call_id", "name", "arguments")
    extra["args_form"] = "str" if isinstance(args, str) else ("none" if args is None else "dict")
    text = args if isinstance(args, str) else dumps(args if args is not None else {})
    return ToolCall(
        id=c.get("call_id") or "", name=c.get("name") or "", arguments=text, extra=extra
    )


def _without(d: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k not in keys}


def _part_kind(c: dict[str, Any]) -> PartKind:
    media = str(c.get("media_type") or "")
    for name in ("image", "audio"):
        if media.startswith(name):
            return name
    return "file" if c.get("type") in ("data", "uri", "hosted_file") else "other"


# -- kompakt -> MAF -------------------------------------------------------------------


def to_maf(messages: Sequence[Message]) -> list[Any]:
    """Convert kompakt messages to MAF messages (the inverse of `from_maf`).

    Messages kompakt made are marked with ``additional_properties["_kompakt_synthetic"]``.

    >>> [m.role for m in to_maf([Message.user("hi"), Message.assistant("yo")])]
    ['user', 'assistant']
    """
    af = _af()
    dicts: list[dict[str, Any]] = []
    last: tuple[int, int] | None = None
    for m in messages:
        src = m.extra.get(_KEY) or {}
        if m.role == "tool":
            key = (src["src"], src["part"]) if "src" in src and m.synthetic is None else None
            content = _result_dict(m, src)
            if key is not None and last is not None and key == (last[0], last[1] + 1):
                dicts[-1]["contents"].append(content)
            else:
                env = _envelope(m, src)
                dicts.append({**env, "role": "tool", "contents": [content, *src.get("others", [])]})
            last = key
            continue
        last = None
        dicts.append({**_envelope(m, src), "role": m.role, "contents": _contents(m, src)})
    return [af.Message.from_dict(d) for d in dicts]


def _envelope(m: Message, src: dict[str, Any]) -> dict[str, Any]:
    if m.synthetic is None and src.get("message"):
        return dict(src["message"])
    props: dict[str, Any] = {}
    if m.synthetic is not None:
        props[_SYNTHETIC] = {"kind": m.synthetic, "covers": list(m.covers), "id": m.id}
    env: dict[str, Any] = {"type": "message", "message_id": m.id, "additional_properties": props}
    if m.name:
        env["author_name"] = m.name
    return env


def _result_dict(m: Message, src: dict[str, Any]) -> dict[str, Any]:
    fields = dict(src.get("fields") or {"type": "function_result"})
    result: Any = loads_or_text(m.text) if src.get("json") else m.text
    if fields.get("items") == _DERIVED:
        fields["items"] = [{"type": "text", "text": m.text, "additional_properties": {}}]
    return {**fields, "call_id": m.tool_call_id, "result": result}


def _contents(m: Message, src: dict[str, Any]) -> list[dict[str, Any]]:
    layout = src.get("layout") or ""
    if layout.count("p") != len(m.content) or layout.count("c") != len(m.tool_calls):
        layout = "p" * len(m.content) + "c" * len(m.tool_calls)
    parts, calls = iter(m.content), iter(m.tool_calls)
    out: list[dict[str, Any]] = []
    for slot in layout:
        if slot == "p":
            p = next(parts)
            text = {"type": "text", "additional_properties": {}, **dict(p.data), "text": p.text}
            out.append(text if p.kind == "text" else dict(p.data))
        else:
            c = next(calls)
            extra = dict(c.extra)
            form = extra.pop("args_form", "str")
            args: Any = c.arguments
            if form == "dict":
                args = loads_or_text(c.arguments)
            elif form == "none":
                args = None
            out.append(
                {
                    "type": "function_call",
                    **extra,
                    "call_id": c.id,
                    "name": c.name,
                    "arguments": args,
                }
            )
    return out


# -- wiring ---------------------------------------------------------------------------

_GROUP = "_group"
_SUMMARY_OF = "_summary_of_message_ids"
_SUMMARY_GROUPS = "_summary_of_group_ids"
_SUMMARIZED_BY = "_summarized_by_summary_id"
"""MAF's own summary links (agent_framework's SUMMARY_OF_MESSAGE_IDS_KEY ...): a note carrying
them is one of MAF's summary messages, which MAF persists with the messages it stands for."""


def _props(message: Any) -> dict[str, Any]:
    props: dict[str, Any] = message.additional_properties
    return props


def _is_note(message: Any) -> bool:
    return _SYNTHETIC in _props(message)


def _excluded(message: Any) -> bool:
    return bool(_props(message).get(_EXCLUDED))


def _mine(message: Any) -> bool:
    """Excluded by kompakt (not by another strategy)."""
    return _props(message).get(_REASON) == _REASON_VALUE


def _summarized_by(message: Any) -> str | None:
    group = _props(message).get(_GROUP)
    value = group.get(_SUMMARIZED_BY) if isinstance(group, dict) else None
    return value if isinstance(value, str) else None


def _set_summarized_by(message: Any, note_id: str | None) -> None:
    group = _props(message).get(_GROUP)
    if note_id is None:
        if isinstance(group, dict):
            group.pop(_SUMMARIZED_BY, None)
        return
    if not isinstance(group, dict):
        group = {}
        _props(message)[_GROUP] = group
    group[_SUMMARIZED_BY] = note_id


def _set_excluded(message: Any, excluded: bool) -> bool:
    props = _props(message)
    if excluded == _excluded(message) and (not excluded or _mine(message)):
        return False
    if excluded:
        props[_EXCLUDED] = True
        props[_REASON] = _REASON_VALUE
    else:
        props.pop(_EXCLUDED, None)
        props.pop(_REASON, None)
    return True


def _same(a: Any, b: Any) -> bool:
    """The same MAF message seen again: a copy made for one run, or one restored from a dict.

    Ids MAF made up (``msg_<position>``) differ between a run's copy and the stored message,
    so only ids a provider gave are compared.
    """
    if a.role != b.role or a.text != b.text:
        return False
    ids = (a.message_id or "", b.message_id or "")
    if ids[0] != ids[1] and not any(i == "" or i.startswith("msg_") for i in ids):
        return False
    return [getattr(c, "call_id", None) for c in a.contents] == [
        getattr(c, "call_id", None) for c in b.contents
    ]


def _render(messages: Sequence[Message]) -> list[Any]:
    """`to_maf`, with an original part sent apart from its message (one result of several,
    beside a clamped sibling) made a note of its own: a MAF message never appears twice."""
    return to_maf(
        [
            m
            if m.synthetic is not None
            else m.evolve(synthetic="kept", covers=(m.id,), id=f"{m.id}~kept")
            for m in messages
        ]
    )


def _maf_id(kompakt_id: str) -> str:
    """The MAF message id behind a kompakt id (one of several results is ``id#k``)."""
    return kompakt_id.split("#", 1)[0]


def tool_schemas(tools: Sequence[Any]) -> list[dict[str, Any]]:
    """The JSON schemas MAF sends for `tools` (functions, `FunctionTool`s, dicts)."""
    if not tools:
        return []
    af = _af()
    out: list[dict[str, Any]] = []
    for t in tools:
        if isinstance(t, dict):
            out.append(t)
            continue
        if not isinstance(t, af.FunctionTool) and callable(t):
            t = af.tool(t)
        spec = getattr(t, "to_json_schema_spec", None)
        out.append(spec() if callable(spec) else {"name": str(getattr(t, "name", t))})
    return out


class _Notes:
    """One conversation's notes as MAF messages, one object per note for its whole life
    (MAF persists the object it was handed; a note is never handed over twice)."""

    def __init__(self) -> None:
        self.by_id: dict[str, Any] = {}


class KompaktStrategy:
    """kompakt as a MAF `CompactionStrategy`: ``await strategy(messages) -> changed``.

    The list is edited in place as MAF expects: originals kompakt removes are marked
    excluded (``_excluded``, reason ``"kompakt"``), and its notes (collapsed results,
    summaries) are inserted where the groups they stand for were, as MAF summary messages
    (``_summary_of_message_ids``, with ``_summarized_by_summary_id`` on what they cover).
    MAF therefore stores them with the run's messages, and the next run, or a session
    restored with ``AgentSession.from_dict``, resumes the same view: the list is the state.
    Messages another strategy excluded are left alone; MAF's own summaries are kept as
    ordinary messages.

    One instance serves any number of sessions at once: each conversation, recognised by
    the messages it starts with, has its own index.

    Args:
        compactor: a `Compactor`, or a bare strategy such as ``Budgeted(6_000)``.
        instructions: the agent's instructions; with `tools`, counted in every budget
            (MAF sends them outside the message list). With `provider()` they are read
            from the agent before each run; give them here for a strategy without it.
        tools: the agent's tools (functions or MAF tools), whose schemas are counted.
        oversize: instructions and schemas taking more than half the budget raise
            `BudgetImpossible` here, before any model call (``"raise"``), or are counted
            cut to fit (``"clamp"``, with a warning; MAF still sends them whole).

    ```python
    strategy = KompaktStrategy(compactor, instructions="You debug.", tools=[read_file])
    agent = Agent(client=client, instructions="You debug.", tools=[read_file],
                  compaction_strategy=strategy)
    ```
    """

    def __init__(
        self,
        compactor: Any,
        *,
        instructions: str | None = None,
        tools: Sequence[Any] = (),
        oversize: Oversize = "raise",
    ) -> None:
        self.compactor = as_compactor(compactor)
        self.oversize: Oversize = oversize_option(oversize)
        _, self.overhead = overhead_of(
            self.compactor, instructions, tool_schemas(tools), oversize=oversize
        )
        self._given = self.overhead is not None
        self.conversations = Conversations(self._mirror, limit=_KEPT)
        self._notes: weakref.WeakKeyDictionary[Mirror, _Notes] = weakref.WeakKeyDictionary()

    def _mirror(self, events: list[Any]) -> Mirror:
        return Mirror(
            self.compactor, message_from_maf, _render, same=_same, events=events,
            lenient=self.oversize == "clamp",
        )  # fmt: skip

    @property
    def events(self) -> list[Any]:
        """Every compaction event so far, of every conversation."""
        return self.conversations.events

    def provider(self, source_id: str = "kompakt") -> Any:
        """A MAF context provider that ties this strategy to each run's `AgentSession`.

        With it, each session has its own index, and the view (notes included) is kept in
        ``session.state[source_id]``, so ``AgentSession.to_dict()`` / ``from_dict()`` and
        a new process resume exactly what the last run would have sent next.
        """
        return _provider_class()(self, source_id)

    def middleware(self, *, recover_from_overflow: bool = True) -> Any:
        """A MAF chat middleware that answers a context overflow: when the model call this
        strategy compacted for fails with the provider's context-overflow error
        (`kompakt.parse_overflow`), the conversation is compacted to fit what the error
        says (the event in `events`, its ``overflow`` set; the session's view saved) and the
        call is made once more; a second overflow raises `BudgetImpossible`. Other errors,
        and calls this strategy did not compact, pass through as they are.

        ```python
        agent = Agent(client=client, compaction_strategy=strategy,
                      middleware=[strategy.middleware()])
        ```
        """
        return _middleware_class()(self, recover_from_overflow)

    def _bound(self) -> tuple[Any, str, Overhead | None] | None:
        """(session, state key, overhead) when the provider bound this run to a session."""
        bound = _SESSION.get()
        if bound is None or bound[0] is not self:
            return None
        return bound[1], bound[2], (self.overhead if self._given else bound[3])

    def _find(self, full: list[Any], bound: Any) -> tuple[Mirror, bool, Any]:
        if bound is None:
            mirror, new = self.conversations.find(full)
            return mirror, new, None
        session, key, _ = bound
        name = ("session", session.session_id)
        if name in self.conversations and self.conversations[name].prefix_of(full) >= 0:
            return self.conversations.get(name), False, (session, key)
        self.conversations.drop(name)  # a session seen again resumes from its state
        return self.conversations.get(name), True, (session, key)

    async def __call__(self, messages: list[Any]) -> bool:
        source = [m for m in messages if not _is_note(m) and (not _excluded(m) or _mine(m))]
        binding = self._bound()
        overhead = binding[2] if binding else self.overhead
        full = [*([overhead] if overhead is not None else []), *source]
        while True:
            mirror, new, bound = self._find(full, binding)
            async with mirror.alock:
                if not new and mirror.prefix_of(full) < 0:
                    continue  # another conversation took it over meanwhile: look again
                mirror.sync(full)
                if new:
                    _resume(mirror, messages, bound)
                before = len(mirror.events)
                await mirror.acompact()
                if bound is not None and (new or len(mirror.events) > before):
                    _save(mirror, *bound)
                rendered = strip_overhead(mirror.render())
                _SENT.set((self, mirror, bound))
                if mirror.last_render_reused and not new:
                    return False  # only new originals, sent as they are: nothing to mark
                notes = self._notes.setdefault(mirror, _Notes())
                return _write_back(messages, source, rendered, notes, link=bound is None)


_SENT: ContextVar[tuple[KompaktStrategy, Mirror, tuple[Any, str] | None] | None] = ContextVar(
    "kompakt_maf_sent", default=None
)
"""(strategy, mirror, session binding) of the model call a strategy compacted last in this task."""


_MIDDLEWARE: list[Any] = []


def _middleware_class() -> Any:
    if _MIDDLEWARE:
        return _MIDDLEWARE[0]
    af = _af()

    class KompaktOverflowMiddleware(af.ChatMiddleware):  # type: ignore[misc, name-defined]
        """Retries a model call once, compacted tighter, after a context overflow (see
        `KompaktStrategy.middleware`)."""

        def __init__(self, strategy: KompaktStrategy, recover: bool) -> None:
            self.strategy = strategy
            self.recover = recover

        async def process(self, context: Any, call_next: Any) -> None:
            _SENT.set(None)

            async def tighten(overflow: Overflow) -> View | None:
                sent = _SENT.get()
                if sent is None or sent[0] is not self.strategy:
                    return None  # a call this strategy did not compact
                _, mirror, bound = sent
                async with mirror.alock:
                    view = await mirror.atighten(overflow)
                    if bound is not None:
                        _save(mirror, *bound)
                return view

            await send_recovering(call_next, tighten, enabled=self.recover)

    KompaktOverflowMiddleware.__module__ = __name__
    _MIDDLEWARE.append(KompaktOverflowMiddleware)
    return KompaktOverflowMiddleware


_SESSION: ContextVar[tuple[Any, Any, str, Overhead | None] | None] = ContextVar(
    "kompakt_maf_session", default=None
)
"""(strategy, session, state key, overhead) of the run in progress, set by its provider."""


def _agent_overhead(strategy: KompaktStrategy, agent: Any, context: Any) -> Overhead | None:
    """The instructions and tool schemas this run sends (the agent's and its providers'),
    checked against the budget before the first model call."""
    if strategy._given:
        return strategy.overhead
    options = getattr(agent, "default_options", None) or {}
    parts = [options.get("instructions"), *getattr(context, "instructions", ())]
    instructions = "\n".join(p for p in parts if isinstance(p, str) and p)
    tools = [*(options.get("tools") or ()), *getattr(context, "tools", ())]
    _, overhead = overhead_of(
        strategy.compactor, instructions or None, tool_schemas(tools), oversize=strategy.oversize
    )
    return overhead


_PROVIDER: list[Any] = []
_KEPT = 256
"""Conversations whose index a strategy keeps in memory (an older session resumes from its
state, an older list from its marks)."""


def _provider_class() -> Any:
    if _PROVIDER:
        return _PROVIDER[0]
    af = _af()

    class KompaktProvider(af.ContextProvider):  # type: ignore[misc, name-defined]
        """Binds a `KompaktStrategy` to the run's session (see `KompaktStrategy.provider`)."""

        def __init__(self, strategy: KompaktStrategy, source_id: str) -> None:
            super().__init__(source_id)
            self.strategy = strategy

        async def before_run(self, *, agent: Any, session: Any, context: Any, state: Any) -> None:
            if session is not None:
                extra = _agent_overhead(self.strategy, agent, context)
                _SESSION.set((self.strategy, session, self.source_id, extra))
            _name(context.input_messages)
            for loaded in context.context_messages.values():
                _name(loaded)

        async def after_run(self, *, agent: Any, session: Any, context: Any, state: Any) -> None:
            response = getattr(context, "response", None)
            if response is not None:
                _name(response.messages)
            _SESSION.set(None)

    _PROVIDER.append(KompaktProvider)
    return KompaktProvider


def _name(messages: Sequence[Any]) -> None:
    """Give messages without an id a lasting one before MAF stores them (the ids MAF makes
    up in a run are positions in that run's list, and a view names messages by id)."""
    for m in messages:
        if not m.message_id:
            m.message_id = "kompakt_" + uuid.uuid4().hex[:16]


def _save(mirror: Mirror, session: Any, key: str) -> None:
    from kompakt.store.base import CompactionRecord

    record = CompactionRecord.from_view(mirror.view)
    # a JSON string: MAF turns dicts with a "type" key back into its own objects on load
    session.state[key] = {"view": dumps(record.to_dict())}


def _resume(mirror: Mirror, messages: Sequence[Any], bound: tuple[Any, str] | None) -> None:
    """Put the last view back on a fresh index: the session's record, else the list's marks."""
    saved = bound[0].state.get(bound[1]) if bound is not None else None
    if isinstance(saved, dict) and isinstance(saved.get("view"), str):
        from kompakt.store.base import CompactionRecord, apply_record

        apply_record(mirror.view, CompactionRecord.from_dict(json.loads(saved["view"])))
        return
    _restore(mirror, messages)


def _restore(mirror: Mirror, messages: Sequence[Any]) -> None:
    """Put the view the list records (kompakt's notes and exclusions) on a fresh index."""
    from kompakt.store.base import CompactionRecord, apply_record

    if not any(_is_note(m) or (_excluded(m) and _mine(m)) for m in messages):
        return  # nothing kompakt did yet
    index = mirror.index
    notes: dict[str, Message] = {}
    for m in messages:
        mark = _props(m).get(_SYNTHETIC)
        if mark and not _excluded(m) and mark.get("kind") != "omitted":
            (msg,) = message_from_maf(m)[:1]
            notes[str(mark["id"])] = msg.evolve(
                synthetic=mark["kind"], covers=tuple(mark.get("covers", ())), id=str(mark["id"])
            )
    touched: set[int] = set()
    for note in notes.values():
        for i in note.covers:
            pos = index.position(i)
            if pos is not None:
                touched.add(index.group_of(pos).index)
    placed: list[Message] = []
    dropped: list[str] = []
    for m in messages:
        mark = _props(m).get(_SYNTHETIC)
        if mark:
            if str(mark.get("id")) in notes:
                placed.append(notes[str(mark["id"])])
            continue
        for km in message_from_maf(m):
            pos = index.position(km.id)
            if pos is None:
                continue
            if _excluded(m) and _mine(m):
                if _summarized_by(m) is None:
                    dropped.append(km.id)
            elif index.group_of(pos).index in touched:
                placed.append(index.messages[pos])  # kept inside a partly replaced group
    if placed or dropped:
        apply_record(mirror.view, CompactionRecord(synthetic=tuple(placed), dropped=tuple(dropped)))


def _write_back(
    messages: list[Any], source: list[Any], rendered: list[Any], notes: _Notes, *, link: bool
) -> bool:
    """Mark, insert and reorder in place. With `link`, notes are MAF summary messages (MAF
    stores them with the run's messages); without, the session's record keeps them."""
    originals = {id(m) for m in source}
    out_rendered: list[Any] = []
    covers: dict[str, str] = {}
    for r in rendered:
        if id(r) in originals:
            out_rendered.append(r)
            continue
        mark = _props(r).get(_SYNTHETIC) or {}
        key = str(mark.get("id") or r.message_id)
        kept = notes.by_id.get(key)
        if kept is None or kept.text != r.text:
            kept = r
            if link:
                ids = [_maf_id(i) for i in mark.get("covers", ())]
                group = {_SUMMARY_OF: list(dict.fromkeys(ids)), _SUMMARY_GROUPS: []}
                _props(r)[_GROUP] = group
            notes.by_id[key] = r
        if link:
            for i in mark.get("covers", ()):
                covers[_maf_id(i)] = kept.message_id
        _set_excluded(kept, False)
        out_rendered.append(kept)
    sent = {id(r) for r in out_rendered}
    changed = False
    for m in source:
        excluded = id(m) not in sent
        changed = _set_excluded(m, excluded) or changed
        _set_summarized_by(m, covers.get(m.message_id) if excluded else None)
    # each original in place; kompakt's notes sent before the next original sent;
    # notes no longer sent stay where they were, excluded (MAF may have stored them)
    out: list[Any] = []
    queue = iter(out_rendered)
    for m in messages:
        if id(m) in sent and id(m) not in originals:
            continue  # a note still sent: placed from the queue
        if id(m) in sent:
            for r in queue:
                out.append(r)
                if r is m:
                    break
            continue
        if _is_note(m):
            changed = _set_excluded(m, True) or changed
        out.append(m)
    out.extend(queue)
    if [id(m) for m in out] != [id(m) for m in messages]:
        changed = True
    messages[:] = out
    return changed


# -- the agent's own client as kompakt's summarizer -----------------------------------------


class MAFChatModel(BaseChatModel):
    """A MAF chat client as a kompakt `ChatModel`, so summaries use the agent's own client.

    ```python
    compactor = Compactor(strategy=Budgeted(60_000), summarizer=MAFChatModel(client))
    ```
    """

    def __init__(self, client: Any, *, name: str | None = None, **options: Any) -> None:
        super().__init__(name=name or f"maf:{type(client).__name__}", **options)
        self.client = client

    async def _request(self, request: ChatRequest) -> ChatResponse:
        options: dict[str, Any] = {}
        if request.max_output_tokens is not None:
            options["max_tokens"] = request.max_output_tokens
        response = await self.client.get_response(to_maf(request.messages), options=options)
        text = str(response.text or "")
        usage = response.usage_details or {}
        given = usage.get("input_token_count") if isinstance(usage, dict) else None
        if isinstance(given, int) and given:
            return assistant_response(text, Usage(given, int(usage.get("output_token_count") or 0)))
        return assistant_response(text, estimate_usage(request.messages, text))
