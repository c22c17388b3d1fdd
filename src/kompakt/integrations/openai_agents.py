"""OpenAI Agents SDK: item conversion and a `Session` backed by a kompakt store.

Install with ``pip install "kompakt[openai-agents]"``.

* `from_openai_agents` / `to_openai_agents` convert Responses-API input items (what a
  `Session` holds) both ways. Consecutive ``function_call`` items (parallel calls), with
  the ``reasoning`` items and the assistant message that led to them, become one kompakt
  assistant message, so a call and its outputs are always kept or removed together.
* `KompaktSession` implements the SDK's `Session` protocol on a kompakt `HistoryStore`
  (`MemoryStore` by default, `SQLiteStore` to persist): `add_items` appends originals,
  `get_items` returns the compacted history, and every original stays in the store
  (searchable, recallable). Compactions are recorded in the store.
* `KompaktSession.run_config()` is a ``RunConfig`` that also compacts before every model
  call of a run (instructions and tool schemas counted), keeping the view in the store:
  the next run, or a new process, sends what the last call would have sent next.
* `model_input_filter` is that filter for any session (or none): pass it as
  ``RunConfig(call_model_input_filter=...)``; one filter serves many conversations.
* `AgentsChatModel` makes an SDK `Model` kompakt's summarizer.

```python
from agents import Agent, Runner
from kompakt import Budgeted, Compactor, SQLiteStore, TokensExceed
from kompakt.integrations.openai_agents import KompaktSession

compactor = Compactor(trigger=TokensExceed(8_000), strategy=Budgeted(6_000))
session = KompaktSession("user-42", store=SQLiteStore("agent.db"), compactor=compactor)
result = await Runner.run(agent, "fix the failing test", session=session,
                          run_config=session.run_config())
```
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, replace
from typing import Any

from kompakt.integrations._bridge import (
    Conversations,
    Mirror,
    Oversize,
    as_compactor,
    overhead_of,
    oversize_option,
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

__all__ = [
    "AgentsChatModel",
    "KompaktSession",
    "RecoveringModel",
    "from_openai_agents",
    "model_input_filter",
    "recovering_provider",
    "to_openai_agents",
]

_KEY = "openai_agents"
_TEXT_BLOCKS = ("input_text", "output_text")
_STAGE = {"reasoning": 0, "message": 1, "function_call": 2}


# -- items -> kompakt -----------------------------------------------------------------


def from_openai_agents(items: Sequence[Mapping[str, Any]]) -> list[Message]:
    """Convert Responses-API input items to kompakt messages.

    >>> items = [{"role": "user", "content": "list files"},
    ...          {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
    ...          {"type": "function_call_output", "call_id": "c1", "output": "a.py"}]
    >>> [(m.role, m.text, len(m.tool_calls)) for m in from_openai_agents(items)]
    [('user', 'list files', 0), ('assistant', '', 1), ('tool', 'a.py', 0)]
    """
    out: list[Message] = []
    turn: list[dict[str, Any]] = []
    for raw in items:
        item = dict(raw)
        stage = _assistant_stage(item)
        if stage is None:
            _flush(turn, out)
            out.append(_single(item))
            continue
        if turn and (stage < _stage_of(turn[-1]) or (stage == 1 and any(map(_is_msg, turn)))):
            _flush(turn, out)
        turn.append(item)
    _flush(turn, out)
    return out


def _stage_of(item: dict[str, Any]) -> int:
    stage = _assistant_stage(item)
    return 0 if stage is None else stage


def _is_msg(item: dict[str, Any]) -> bool:
    return _assistant_stage(item) == 1


def _assistant_stage(item: dict[str, Any]) -> int | None:
    kind = item.get("type")
    if kind in ("reasoning", "function_call"):
        return _STAGE[str(kind)]
    if item.get("role") == "assistant" and kind in (None, "message"):
        return 1
    return None


def _flush(turn: list[dict[str, Any]], out: list[Message]) -> None:
    if not turn:
        return
    parts: list[Part] = []
    calls: list[ToolCall] = []
    envelope: dict[str, Any] | None = None
    form = "list"
    for item in turn:
        kind = item.get("type")
        if kind == "function_call":
            extra = {k: v for k, v in item.items() if k not in ("call_id", "name", "arguments")}
            calls.append(
                ToolCall(
                    id=item["call_id"],
                    name=item["name"],
                    arguments=item.get("arguments") or "",
                    extra=extra,
                )
            )
        elif kind == "reasoning":
            parts.append(Part(kind="other", data={"item": item}))
        else:
            envelope = {k: v for k, v in item.items() if k != "content"}
            content, form = _content_parts(item.get("content"))
            parts.extend(content)
    source: dict[str, Any] = {"message": envelope, "form": form}
    out.append(
        Message(
            role="assistant",
            content=tuple(parts),
            tool_calls=tuple(calls),
            id=(envelope or {}).get("id") or "",
            extra={_KEY: source},
        )
    )
    turn.clear()


def _single(item: dict[str, Any]) -> Message:
    kind = item.get("type")
    if kind == "function_call_output":
        output = item.get("output")
        env = {k: v for k, v in item.items() if k not in ("output", "call_id")}
        if isinstance(output, str):
            return Message.tool(
                output, tool_call_id=item["call_id"], extra={_KEY: {"message": env}}
            )
        parts, _ = _content_parts(output)
        return Message(
            role="tool",
            content=parts,
            tool_call_id=item["call_id"],
            extra={_KEY: {"message": env, "form": "list"}},
        )
    role = item.get("role")
    if role in ("user", "system", "developer") and kind in (None, "message"):
        env = {k: v for k, v in item.items() if k != "content"}
        parts, form = _content_parts(item.get("content"))
        return Message(
            role=role,
            content=parts,
            id=item.get("id") or "",
            extra={_KEY: {"message": env, "form": form}},
        )
    # items kompakt does not model (tool searches, references ...) are kept whole
    return Message(
        role="assistant",
        content=(Part(kind="other", data={"item": item}),),
        extra={_KEY: {"raw": True}},
    )


def _content_parts(content: Any) -> tuple[tuple[Part, ...], str]:
    if content is None:
        return (), "none"
    if isinstance(content, str):
        return ((Part(text=content),) if content else ()), "str"
    parts: list[Part] = []
    for block in content:
        if block.get("type") in _TEXT_BLOCKS:
            rest = {k: v for k, v in block.items() if k != "text"}
            parts.append(Part(text=block.get("text", ""), data=rest))
        else:
            parts.append(Part(kind=_part_kind(block), data=dict(block)))
    return tuple(parts), "list"


def _part_kind(block: Mapping[str, Any]) -> PartKind:
    kind = str(block.get("type", ""))
    for name in ("image", "audio", "file"):
        if name in kind:
            return name
    return "other"


# -- kompakt -> items -----------------------------------------------------------------


def to_openai_agents(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Convert kompakt messages to Responses-API input items (the inverse of
    `from_openai_agents`).

    >>> to_openai_agents([Message.user("hi")])
    [{'role': 'user', 'content': 'hi'}]
    """
    out: list[dict[str, Any]] = []
    for m in messages:
        src = dict(m.extra.get(_KEY) or {})
        if src.get("raw") and m.content:
            out.append(dict(m.content[0].data["item"]))
        elif m.role == "tool":
            out.append(_output_item(m, src))
        elif m.role == "assistant":
            out.extend(_assistant_items(m, src))
        else:
            env = dict(src.get("message") or {"role": m.role})
            out.append({**env, "content": _content(m, src.get("form", "str"), "input_text")})
    return out


def _output_item(m: Message, src: dict[str, Any]) -> dict[str, Any]:
    env = dict(src.get("message") or {"type": "function_call_output"})
    output: Any = m.text if src.get("form") != "list" else _blocks(m, "input_text")
    return {**env, "call_id": m.tool_call_id, "output": output}


def _assistant_items(m: Message, src: dict[str, Any]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    text_parts = [p for p in m.content if not (p.kind == "other" and "item" in p.data)]
    for p in m.content:
        if p.kind == "other" and "item" in p.data:
            items.append(dict(p.data["item"]))
    env = src.get("message")
    shown = m.evolve(content=tuple(text_parts), id=m.id)
    if env is not None:
        items.append({**env, "content": _content(shown, src.get("form", "list"), "output_text")})
    elif text_parts:  # made by kompakt (a note, a summary): the easy form needs no item id
        items.append({"role": "assistant", "content": _content(shown, "str", "output_text")})
    for c in m.tool_calls:
        item = {"type": "function_call", **dict(c.extra)}
        item.update(call_id=c.id, name=c.name, arguments=c.arguments)
        items.append(item)
    return items


def _content(m: Message, form: str, text_type: str) -> Any:
    if form == "none" and not m.content:
        return None
    if form == "str" and all(p.kind == "text" and not p.data for p in m.content):
        return m.text if m.content else ""
    return _blocks(m, text_type)


def _blocks(m: Message, text_type: str) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for p in m.content:
        if p.kind == "text":
            block = {"type": text_type, **dict(p.data), "text": p.text}
            if block["type"] == "output_text":
                block.setdefault("annotations", [])
            blocks.append(block)
        else:
            blocks.append(dict(p.data))
    return blocks


# -- the session ----------------------------------------------------------------------


def _default_store() -> Any:
    from kompakt.store import MemoryStore

    return MemoryStore()


class KompaktSession:
    """An Agents SDK `Session` on a kompakt store: originals kept, compacted items returned.

    `get_items` renders the current compacted view (compacting first when the
    compactor's trigger fires); `add_items` appends originals; `pop_item` and
    `clear_session` hide originals from the session without deleting them (the store
    is append-only, so they stay searchable). Without a compactor nothing is compacted.

    ```python
    session = KompaktSession("s1", store=SQLiteStore("agent.db"), compactor=compactor)
    await Runner.run(agent, "hello", session=session)
    ```
    """

    session_settings: Any = None

    def __init__(
        self,
        session_id: str,
        *,
        store: Any = None,
        compactor: Any = None,
        session_settings: Any = None,
    ) -> None:
        self.session_id = session_id
        self.store = store if store is not None else _default_store()
        self.compactor = compactor
        self.session_settings = session_settings
        self.store.create_session(session_id)
        self._lock = asyncio.Lock()
        self._loaded: list[Message] = []
        self._mirror = self._new_mirror()
        self._filter: Any = None

    def _new_mirror(self) -> Mirror | None:
        if self.compactor is None:
            return None
        return Mirror(self.compactor, lambda m, pos: [m], lambda ms: list(ms))

    @property
    def events(self) -> list[Any]:
        """Every compaction this session object ran (its run filter's included)."""
        if self._filter is not None:
            events: list[Any] = self._filter.events
            return events
        return self._mirror.events if self._mirror is not None else []

    def run_config(
        self, *, oversize: Oversize = "clamp", recover_from_overflow: bool = True, **options: Any
    ) -> Any:
        """A ``RunConfig`` whose model input filter compacts during a run too.

        From then on the session hands the runner its originals and the filter compacts
        before every model call (instructions and tool schemas counted), so one long
        tool run stays in budget, and the view lives in the session's store: the next run,
        or a new process on the same store, sends what the last call would have sent
        next. `options` go to ``RunConfig`` as they are; see `model_input_filter` for
        `oversize`. With `recover_from_overflow`, the models the run's provider makes
        (agents whose ``model`` is a name, or none) are `RecoveringModel`s: a request the
        provider refuses as too long is compacted tighter and sent once more; wrap a model
        object given to an agent in `RecoveringModel` yourself.

        ```python
        await Runner.run(agent, "fix it", session=session, run_config=session.run_config())
        ```
        """
        from agents import RunConfig

        if self.compactor is None:
            return RunConfig(**options)
        if self._filter is None:
            self._filter = _filter(self.compactor, oversize, self, recover_from_overflow)
        if recover_from_overflow:
            options["model_provider"] = recovering_provider(options.get("model_provider"))
        return RunConfig(call_model_input_filter=self._filter, **options)

    # -- hidden originals (pop_item, clear_session) ---------------------------------

    def _state(self) -> dict[str, Any]:
        meta = self.store.metadata(self.session_id).get(_KEY) or {}
        return {"start": int(meta.get("start", 0)), "hidden": list(meta.get("hidden", []))}

    def _save_state(self, state: dict[str, Any]) -> None:
        self.store.set_metadata(self.session_id, {_KEY: state})

    def _visible(self) -> list[Message]:
        count = self.store.count(self.session_id)
        if count < len(self._loaded):
            self._loaded = []
        if count > len(self._loaded):
            self._loaded.extend(self.store.messages(self.session_id, len(self._loaded)))
        state = self._state()
        hidden = set(state["hidden"])
        return [m for m in self._loaded[state["start"] :] if m.id not in hidden]

    # -- the Session protocol -------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The compacted history as input items (the newest `limit`, never an orphan output)."""
        async with self._lock:
            visible = self._visible()
            if self._mirror is None or self._filter is not None:
                messages = visible  # the run's filter compacts (see `run_config`)
            else:
                before = len(self._mirror.events)
                new = self._mirror.sync(visible)
                if new and new == len(visible):  # indexed from scratch: resume the stored view
                    self._restore(self._mirror)
                await self._mirror.acompact()
                if len(self._mirror.events) > before:
                    self._record(self._mirror)
                messages = self._mirror.render()
            items = to_openai_agents(messages)
        return _tail(items, limit)

    def _restore(self, mirror: Mirror) -> None:
        """Put the store's last recorded view on `mirror`'s fresh index."""
        from kompakt.store.base import apply_record

        records = self.store.compactions(self.session_id)
        if records:
            apply_record(mirror.view, records[-1])

    def _record(self, mirror: Mirror) -> None:
        from kompakt.store.base import CompactionRecord

        record = CompactionRecord.from_view(mirror.view, mirror.events[-1])
        self.store.record_compaction(self.session_id, record)

    async def add_items(self, items: list[Any]) -> None:
        """Append `items` to the session as originals."""
        if not items:
            return
        async with self._lock:
            self.store.append(self.session_id, from_openai_agents([_plain(i) for i in items]))

    async def pop_item(self) -> Any | None:
        """Remove the newest item from the session (its original stays in the store)."""
        async with self._lock:
            visible = self._visible()
            if not visible:
                return None
            last = visible[-1]
            items = to_openai_agents([last])
            state = self._state()
            state["hidden"].append(last.id)
            self._save_state(state)
            if len(items) > 1:
                self.store.append(self.session_id, from_openai_agents(items[:-1]))
            return items[-1]

    async def clear_session(self) -> None:
        """Start the session afresh (its originals stay in the store)."""
        async with self._lock:
            self._save_state({"start": self.store.count(self.session_id), "hidden": []})


def model_input_filter(
    compactor: Any, *, oversize: Oversize = "clamp", recover_from_overflow: bool = True
) -> Callable[[Any], Awaitable[Any]]:
    """A ``RunConfig(call_model_input_filter=...)`` that compacts every model call's input.

    The agent's instructions and tool schemas are counted in the budget (the SDK sends
    them beside the input); when they take more than half the budget the instructions
    are cut to fit with a warning (``oversize="clamp"``), or `BudgetImpossible` is raised
    before the first model call (``"raise"``). One filter serves any number of conversations at
    once: each, recognised by the items it starts with, has its own index. A conversation
    met for the first time (a restart on the SDK's `SQLiteSession`, another process) is
    indexed the way its model calls saw it, so its next call continues the last one.

    With `recover_from_overflow`, a model wrapped in `RecoveringModel` that fails with the
    provider's context-overflow error is sent the same conversation compacted tighter,
    once (see `RecoveringModel`).

    ```python
    config = RunConfig(call_model_input_filter=model_input_filter(compactor))
    await Runner.run(agent, "fix the failing test", run_config=config)
    ```
    """
    return _filter(compactor, oversize, None, recover_from_overflow)


def _filter(
    compactor: Any, oversize: Oversize, session: Any, recover: bool = True
) -> Callable[[Any], Awaitable[Any]]:
    """`model_input_filter`; bound to a `KompaktSession`, a conversation starts from the
    view the session's store recorded last and records every compaction there."""
    template = as_compactor(compactor)
    oversize = oversize_option(oversize)
    conversations = Conversations(
        lambda events: Mirror(
            template, lambda m, pos: [m], list, same=_same, events=events,
            lenient=oversize == "clamp",
        ),
        limit=256,
    )  # fmt: skip

    async def kompakt_input(data: Any) -> Any:
        model_data = data.model_data
        instructions, overhead = overhead_of(
            template, model_data.instructions, _tool_schemas(data.agent), oversize=oversize
        )
        extra = [overhead] if overhead is not None else []
        msgs = [*extra, *from_openai_agents([_plain(i) for i in model_data.input])]
        while True:
            mirror, new = conversations.find(msgs)
            async with mirror.alock:
                if not new and mirror.prefix_of(msgs) < 0:
                    continue
                if new and session is None:
                    await _replay(mirror, msgs, len(extra))
                mirror.sync(msgs)
                if new and session is not None:
                    session._restore(mirror)
                before = len(mirror.events)
                await mirror.acompact()
                if session is not None and len(mirror.events) > before:
                    session._record(mirror)
                out = strip_overhead(mirror.render())
                break
        items = to_openai_agents(out)
        _SENT.set(_Sent(mirror, items, session) if recover else None)
        return replace(
            model_data,
            input=items,
            instructions=instructions if instructions is not None else model_data.instructions,
        )

    kompakt_input.conversations = conversations  # type: ignore[attr-defined]
    kompakt_input.events = conversations.events  # type: ignore[attr-defined]
    return kompakt_input


# -- recovering from a context overflow ----------------------------------------------------


@dataclass
class _Sent:
    """What a kompakt filter gave the model call that follows it (in the same task)."""

    mirror: Mirror
    items: list[dict[str, Any]]
    session: Any


_SENT: ContextVar[_Sent | None] = ContextVar("kompakt_agents_sent", default=None)


def _sent_for(given: Any) -> _Sent | None:
    """The filter's record for the input a model was `given` (None for input no kompakt
    filter made: that is sent as it is, and its overflow raised as it is)."""
    sent = _SENT.get()
    if sent is None or not isinstance(given, list) or not given or not sent.items:
        return None
    return sent if given[-1] is sent.items[-1] or given == sent.items else None


def _recovering(sent: _Sent) -> tuple[list[list[dict[str, Any]]], Callable[[Any], Any]]:
    """The input to send (a one-item box, replaced on recovery) and the `tighten` for
    `send_recovering`: the conversation compacted to fit, recorded in the session."""
    box = [sent.items]

    async def tighten(overflow: Overflow) -> View:
        mirror = sent.mirror
        async with mirror.alock:
            view = await mirror.atighten(overflow)
            box[0] = sent.items = to_openai_agents(strip_overhead(mirror.render()))
            if sent.session is not None:
                sent.session._record(mirror)
        return view

    return box, tighten


_MODEL_CLASS: list[Any] = []


def RecoveringModel(model: Any) -> Any:
    """An Agents SDK `Model` that answers a context overflow by compacting tighter.

    When a request whose input a kompakt filter made (`model_input_filter`,
    `KompaktSession.run_config`) fails with the provider's context-overflow error
    (`kompakt.parse_overflow`), that conversation is compacted to fit what the error says
    (`compact_for_retry`, recorded in the filter's `events` with its ``overflow``) and the
    request is sent once more; a second overflow raises `BudgetImpossible`. A stream is
    retried only when it failed before its first event. Any other input and any other error
    pass through as they are.

    ```python
    agent = Agent(name="coder", model=RecoveringModel(OpenAIResponsesModel("gpt-4.1", client)))
    ```
    """
    return _model_class()(model)


def _model_class() -> Any:
    if _MODEL_CLASS:
        return _MODEL_CLASS[0]
    from agents.models.interface import Model

    class _RecoveringModel(Model):
        """`model`, its overflows answered by compacting tighter (see `RecoveringModel`)."""

        def __init__(self, model: Any) -> None:
            self.model = model

        async def get_response(self, *args: Any, **kwargs: Any) -> Any:
            given, call = _input_of(args, kwargs)
            sent = _sent_for(given)
            if sent is None:
                return await self.model.get_response(*args, **kwargs)
            box, tighten = _recovering(sent)

            def send() -> Awaitable[Any]:
                a, k = call(box[0])
                return self.model.get_response(*a, **k)  # type: ignore[no-any-return]

            return await send_recovering(send, tighten)

        async def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            given, call = _input_of(args, kwargs)
            sent = _sent_for(given)
            if sent is None:
                async for event in self.model.stream_response(*args, **kwargs):
                    yield event
                return
            box, tighten = _recovering(sent)

            async def first() -> tuple[Any, Any]:
                a, k = call(box[0])
                stream = self.model.stream_response(*a, **k).__aiter__()
                try:
                    return await stream.__anext__(), stream
                except StopAsyncIteration:
                    return _END, stream

            event, stream = await send_recovering(first, tighten)
            if event is _END:
                return
            yield event
            async for event in stream:
                yield event

        def get_retry_advice(self, request: Any) -> Any:
            return self.model.get_retry_advice(request)

        async def close(self) -> None:
            await self.model.close()

        def __getattr__(self, name: str) -> Any:
            return getattr(self.model, name)

    _MODEL_CLASS.append(_RecoveringModel)
    return _RecoveringModel


_END = object()


_Args = tuple[tuple[Any, ...], dict[str, Any]]


def _input_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, Callable[[Any], _Args]]:
    """The `input` of a `Model` call, and ``call(items) -> (args, kwargs)``: the same
    call's arguments with `items` as its input."""
    if "input" in kwargs:
        return kwargs["input"], lambda items: (args, {**kwargs, "input": items})
    given = args[1] if len(args) > 1 else None
    return given, lambda items: ((*args[:1], items, *args[2:]), kwargs)


def recovering_provider(provider: Any = None) -> Any:
    """A `ModelProvider` whose models are `RecoveringModel`s (`provider`'s, by default the
    SDK's own ``MultiProvider``)."""
    from agents.models.interface import ModelProvider

    if provider is None:
        from agents.models.multi_provider import MultiProvider

        provider = MultiProvider()

    class _RecoveringProvider(ModelProvider):
        def get_model(self, model_name: str | None) -> Any:
            return RecoveringModel(provider.get_model(model_name))

        async def aclose(self) -> None:
            await provider.aclose()

    return _RecoveringProvider()


async def _replay(mirror: Mirror, msgs: list[Any], start: int) -> None:
    """Index a conversation seen for the first time (a restart, another process) the way
    its model calls saw it: each call's input ended where the model's answer begins, so
    compacting at each of those points rebuilds the view the last call sent (free for
    model-free strategies; a summarizing one is asked again: `KompaktSession` keeps
    its summaries instead)."""
    for end in range(start + 1, len(msgs)):
        if msgs[end].role == "assistant" and msgs[end - 1].role != "assistant":
            mirror.sync(msgs[:end])
            await mirror.acompact()


def _tool_schemas(agent: Any) -> list[dict[str, Any]]:
    """What the SDK sends for the agent's function tools: name, description, JSON schema."""
    out: list[dict[str, Any]] = []
    for t in getattr(agent, "tools", None) or ():
        schema = getattr(t, "params_json_schema", None)
        entry = {"name": getattr(t, "name", type(t).__name__)}
        if schema is not None:
            entry.update(description=getattr(t, "description", ""), parameters=schema)
        out.append(entry)
    return out


def _same(a: Message, b: Message) -> bool:
    return a.id == b.id and a.digest == b.digest


def _plain(item: Any) -> dict[str, Any]:
    if isinstance(item, Mapping):
        return dict(item)
    dump = getattr(item, "model_dump", None)
    if dump is not None:
        return dict(dump(exclude_unset=True))
    raise TypeError(f"a session item must be a dict or a pydantic model, got {item!r}")


def _tail(items: list[dict[str, Any]], limit: int | None) -> list[dict[str, Any]]:
    """The newest `limit` items, less any output whose call was cut off."""
    if limit is None or limit >= len(items):
        return items
    if limit <= 0:
        return []
    out = items[-limit:]
    called = {i.get("call_id") for i in out if i.get("type") == "function_call"}
    return [i for i in out if i.get("type") != "function_call_output" or i.get("call_id") in called]


# -- the agent's own model as kompakt's summarizer ------------------------------------------


class AgentsChatModel(BaseChatModel):
    """An Agents SDK `Model` as a kompakt `ChatModel`, so summaries use the agent's model.

    `model` is a `Model` object (``OpenAIResponsesModel``, ``agents.testing.ScriptedModel``
    ...) or a model name the SDK's default provider resolves. System messages go as the
    system instructions; the answer is the text of the model's output messages.

    ```python
    summarizer = AgentsChatModel(agent.model)
    compactor = Compactor(strategy=Budgeted(60_000), summarizer=summarizer)
    ```
    """

    def __init__(self, model: Any, *, name: str | None = None, **options: Any) -> None:
        label = model if isinstance(model, str) else type(model).__name__
        super().__init__(name=name or f"agents:{label}", **options)
        self.model = model

    def _resolve(self) -> Any:
        if isinstance(self.model, str):
            from agents.models.multi_provider import MultiProvider

            self.model = MultiProvider().get_model(self.model)
        return self.model

    async def _request(self, request: ChatRequest) -> ChatResponse:
        from agents import ModelSettings
        from agents.models.interface import ModelTracing

        system = "\n\n".join(m.text for m in request.messages if m.role == "system")
        rest = [m for m in request.messages if m.role != "system"]
        settings = ModelSettings(max_tokens=request.max_output_tokens)
        response = await self._resolve().get_response(
            system or None,
            to_openai_agents(rest),
            settings,
            [],
            None,
            [],
            ModelTracing.DISABLED,
            previous_response_id=None,
            conversation_id=None,
            prompt=None,
        )
        text = "".join(
            getattr(block, "text", "")
            for item in response.output
            if getattr(item, "type", None) == "message"
            for block in getattr(item, "content", ())
        )
        usage = response.usage
        if getattr(usage, "input_tokens", 0):
            return assistant_response(text, Usage(usage.input_tokens, usage.output_tokens))
        return assistant_response(text, estimate_usage(request.messages, text))
