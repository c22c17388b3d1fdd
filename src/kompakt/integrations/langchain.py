"""LangChain and LangGraph: message conversion, an agent middleware, a LangGraph hook.

Install with ``pip install "kompakt[langchain]"``.

* `from_langchain` / `to_langchain` convert `BaseMessage` lists both ways; content,
  tool calls, ids and every other field survive the round trip.
* `KompaktMiddleware` is a LangChain v1 `AgentMiddleware` for `create_agent`:
  ``mode="view"`` compacts only what the model is sent (`wrap_model_call`; the state
  keeps every message), ``mode="permanent"`` rewrites the state (`before_model`).
* `pre_model_hook` is a LangGraph node for ``create_react_agent(pre_model_hook=...)``
  returning ``llm_input_messages`` (view) or ``messages`` (permanent).
* `repair_messages` fixes what providers reject in a message list (a `ToolMessage`
  whose call is gone, an `AIMessage` tool call with no result, a reused call id) and
  says what it changed; ``repair=True`` on the middleware or the hook does it before
  every model call.

Unlike `trim_messages`, what comes out never holds a `ToolMessage` without the
`AIMessage` that called it: a call and all of its results are kept or removed together.

```python
from langchain.agents import create_agent
from kompakt import Budgeted, Compactor, TokensExceed
from kompakt.integrations.langchain import KompaktMiddleware

compactor = Compactor(trigger=TokensExceed(8_000), strategy=Budgeted(6_000))
agent = create_agent(model, tools, middleware=[KompaktMiddleware(compactor)])
```
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Annotated, Any, NotRequired

from kompakt.integrations._bridge import (
    Conversations,
    Mirror,
    Mode,
    Overhead,
    Oversize,
    as_compactor,
    count_text,
    dumps,
    fit_overhead,
    loads_or_text,
    mode_option,
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
from kompakt.recovery import send_recovering, send_recovering_sync
from kompakt.repair import Repair
from kompakt.view import View

__all__ = [
    "STATE_KEY",
    "KompaktAgentState",
    "KompaktGraphState",
    "KompaktMiddleware",
    "LangChainModel",
    "from_langchain",
    "merge_views",
    "pre_model_hook",
    "repair_messages",
    "to_langchain",
]

if TYPE_CHECKING:  # classes built on first use (see `__getattr__`)
    KompaktMiddleware: Any
    KompaktAgentState: Any
    KompaktGraphState: Any

log = logging.getLogger("kompakt.integrations")
_KEY = "langchain"
_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}
_CHUNKS = {
    "AIMessageChunk": "ai",
    "HumanMessageChunk": "human",
    "SystemMessageChunk": "system",
    "ToolMessageChunk": "tool",
    "ChatMessageChunk": "chat",
}
_LC_FIELDS = ("additional_kwargs", "response_metadata", "name")


def _core() -> Any:
    return require("langchain_core.messages", "kompakt.integrations.langchain", "langchain")


# -- LangChain -> kompakt -------------------------------------------------------------


def from_langchain(messages: Sequence[Any]) -> list[Message]:
    """Convert LangChain messages to kompakt messages.

    >>> from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    >>> call = {"name": "ls", "args": {}, "id": "c1", "type": "tool_call"}
    >>> msgs = from_langchain([HumanMessage("list files"), AIMessage("", tool_calls=[call]),
    ...                        ToolMessage("a.py", tool_call_id="c1")])
    >>> [(m.role, m.text) for m in msgs]
    [('user', 'list files'), ('assistant', ''), ('tool', 'a.py')]
    """
    return [message_from_langchain(m) for m in messages]


def message_from_langchain(lc: Any, position: int = 0) -> Message:
    """Convert one LangChain message (`position` is unused; it fits `Mirror`)."""
    data = lc.model_dump()
    kind = data.pop("type")
    role = _ROLES.get(_CHUNKS.get(kind, kind))
    if role is None and kind == "chat" and data.get("role") in ("user", "assistant", "system"):
        role = data["role"]
    if role is None:
        role = "user"
    content = data.pop("content")
    parts, content_form = _parts_from(content)
    lc_id = data.pop("id", None)
    kompakt_meta = dict((data.get("response_metadata") or {}).get("kompakt") or {})
    if kompakt_meta:
        data["response_metadata"] = {
            k: v for k, v in data["response_metadata"].items() if k != "kompakt"
        }
    calls: list[ToolCall] = []
    for tc in data.pop("tool_calls", None) or []:
        extra = {k: v for k, v in tc.items() if k not in ("name", "args", "id")}
        if tc.get("id") is None:
            extra["id_none"] = True
        calls.append(
            ToolCall(
                id=tc.get("id") or "", name=tc["name"], arguments=dumps(tc["args"]), extra=extra
            )
        )
    tool_call_id = data.pop("tool_call_id", None)
    extra = {"type": kind, "content": content_form, "id": lc_id, "fields": data}
    return Message(
        role=role,  # type: ignore[arg-type]
        content=parts,
        tool_calls=tuple(calls),
        tool_call_id=tool_call_id if role == "tool" else None,
        name=data.get("name"),
        id=lc_id or kompakt_meta.get("id", ""),
        synthetic=kompakt_meta.get("synthetic"),
        covers=tuple(kompakt_meta.get("covers", ())),
        pinned=bool(kompakt_meta.get("pinned", False)),
        memory=bool(kompakt_meta.get("memory", False)),
        extra={_KEY: extra},
    )


def _parts_from(content: Any) -> tuple[tuple[Part, ...], str]:
    if isinstance(content, str):
        return ((Part(text=content),) if content else ()), "str"
    parts: list[Part] = []
    for block in content:
        if isinstance(block, str):
            parts.append(Part(text=block, data={"str": True}))
        elif isinstance(block, dict) and block.get("type") == "text" and "text" in block:
            rest = {k: v for k, v in block.items() if k != "text"}
            parts.append(Part(text=block["text"], data=rest))
        else:
            parts.append(Part(kind=_part_kind(block), data=dict(block)))
    return tuple(parts), "list"


def _part_kind(block: Any) -> PartKind:
    kind = str(block.get("type", "")) if isinstance(block, dict) else ""
    for name in ("image", "audio", "file"):
        if name in kind:
            return name
    return "other"


# -- kompakt -> LangChain -------------------------------------------------------------


def to_langchain(messages: Sequence[Message]) -> list[Any]:
    """Convert kompakt messages to LangChain messages (the inverse of `from_langchain`).

    Synthetic messages (summaries, collapsed notes) carry their provenance in
    ``response_metadata["kompakt"]``, which providers are never sent.

    >>> [type(m).__name__ for m in to_langchain([Message.user("hi"), Message.assistant("yo")])]
    ['HumanMessage', 'AIMessage']
    """
    return [message_to_langchain(m) for m in messages]


def message_to_langchain(m: Message) -> Any:
    """Convert one kompakt message to a LangChain message."""
    core = _core()
    src: dict[str, Any] = dict(m.extra.get(_KEY) or {})
    fields: dict[str, Any] = dict(src.get("fields") or {})
    kind = src.get("type") or _kind_for(m.role)
    if kind == "chat" and "role" not in fields:
        fields["role"] = m.role
    content = _content_to(m, src.get("content"))
    kwargs: dict[str, Any] = {**fields, "content": content}
    kwargs["id"] = src.get("id") if src else m.id
    meta = _kompakt_meta(m)
    if meta:
        kwargs["response_metadata"] = {**(kwargs.get("response_metadata") or {}), "kompakt": meta}
    if m.name is not None:
        kwargs["name"] = m.name
    base = _CHUNKS.get(kind, kind)
    if base == "ai":
        kwargs["tool_calls"] = [_call_to(c) for c in m.tool_calls]
    if base == "tool":
        kwargs["tool_call_id"] = m.tool_call_id or ""
    cls = getattr(core, kind, None) if kind in _CHUNKS else None
    if cls is None:
        classes = {
            "human": core.HumanMessage,
            "ai": core.AIMessage,
            "system": core.SystemMessage,
            "tool": core.ToolMessage,
            "chat": core.ChatMessage,
        }
        cls = classes.get(kind, core.HumanMessage)
    return cls(**kwargs)


def repair_messages(messages: Sequence[Any]) -> tuple[list[Any], list[Repair]]:
    """`kompakt.repair` for LangChain messages: the list with every tool-call break a
    provider rejects fixed, and the repairs made (indexes into `messages`). Messages it
    leaves alone come back as the same objects; a valid list comes back unchanged.

    >>> from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    >>> call = {"id": "c1", "name": "ls", "args": {}}
    >>> msgs = [HumanMessage("list"), ToolMessage("stale", tool_call_id="c0"),
    ...         AIMessage("", tool_calls=[call]), HumanMessage("and?")]
    >>> fixed, repairs = repair_messages(msgs)
    >>> [type(m).__name__ for m in fixed]
    ['HumanMessage', 'AIMessage', 'ToolMessage', 'HumanMessage']
    >>> [r.kind for r in repairs]
    ['dropped_orphan_result', 'added_missing_result']
    """
    from kompakt.repair import repair

    converted = [message_from_langchain(lc, i) for i, lc in enumerate(messages)]
    fixed, repairs = repair(converted)
    if not repairs:
        return list(messages), []
    original = {id(m): lc for m, lc in zip(converted, messages, strict=True)}
    return [original.get(id(m)) or message_to_langchain(m) for m in fixed], repairs


def _kind_for(role: str) -> str:
    return {"user": "human", "assistant": "ai", "system": "system", "developer": "system"}.get(
        role, "tool"
    )


def _content_to(m: Message, form: Any) -> Any:
    if form != "list" and all(p.kind == "text" and not p.data for p in m.content):
        return m.text if m.content else ""
    blocks: list[Any] = []
    for p in m.content:
        if p.kind == "text" and p.data.get("str"):
            blocks.append(p.text)
        elif p.kind == "text":
            blocks.append({"type": "text", **p.data, "text": p.text})
        else:
            blocks.append(dict(p.data))
    return blocks


def _call_to(c: ToolCall) -> dict[str, Any]:
    extra = dict(c.extra)
    none_id = extra.pop("id_none", False)
    args = loads_or_text(c.arguments)
    if not isinstance(args, dict):
        args = {"input": args}
    return {**extra, "name": c.name, "args": args, "id": None if none_id else c.id}


def _kompakt_meta(m: Message) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    if m.synthetic is not None:
        meta.update(synthetic=m.synthetic, covers=list(m.covers), id=m.id)
    if m.pinned:
        meta["pinned"] = True
    if m.memory:
        meta["memory"] = True
    return meta


# -- one view per conversation, kept in the agent state ---------------------------------

STATE_KEY = "kompakt"
"""The state key where kompakt keeps each middleware's (or hook's) view, by its name:
checkpointed with the messages, so a restart or a second run on the same thread sends
what the previous run would have sent next."""


def merge_views(left: dict[str, Any] | None, right: dict[str, Any] | None) -> dict[str, Any]:
    """The reducer of `STATE_KEY`: the latest view of each name wins.

    >>> merge_views({"a": 1, "b": 2}, {"b": 3})
    {'a': 1, 'b': 3}
    """
    return {**(left or {}), **(right or {})}


def _thread_id() -> str:
    try:
        from langgraph.config import get_config

        return str(get_config().get("configurable", {}).get("thread_id") or "")
    except (ImportError, RuntimeError):
        return ""


def _conversation(messages: Sequence[Any]) -> str:
    """The LangGraph thread, or (without a checkpointer) the first message's id, which
    LangGraph gives every message: concurrent runs never share a view."""
    thread = _thread_id()
    if thread:
        return "thread:" + thread
    first = next((m.id for m in messages if getattr(m, "id", None)), None)
    return f"first:{first}" if first else ""


def _stored(state: Any, name: str) -> dict[str, Any] | None:
    views = state.get(STATE_KEY) if isinstance(state, dict) else getattr(state, STATE_KEY, None)
    record = (views or {}).get(name)
    return record if isinstance(record, dict) else None


def _remove_all() -> Any:
    core = _core()
    graph = require("langgraph.graph.message", "kompakt.integrations.langchain", "langchain")
    return core.RemoveMessage(id=graph.REMOVE_ALL_MESSAGES)


def _tool_schemas(tools: Sequence[Any]) -> str:
    convert = require(
        "langchain_core.utils.function_calling", "kompakt.integrations.langchain", "langchain"
    ).convert_to_openai_tool
    return dumps([t if isinstance(t, dict) else convert(t) for t in tools])


class _Core:
    """What the middleware and the hook share: one `Mirror` per conversation, its view
    stored in (and restored from) the agent state, the system prompt and tool schemas
    counted."""

    def __init__(
        self,
        compactor: Any,
        mode: Mode,
        name: str,
        oversize: Oversize,
        recover: bool = True,
        repair: bool = False,
    ) -> None:
        mode = mode_option(mode)
        self.recover = recover
        self.compactor = as_compactor(compactor)
        oversize = oversize_option(oversize)
        self.mode, self.name, self.oversize = mode, name, oversize
        self.repair = repair
        self.repairs: list[Repair] = []
        self.conversations = Conversations(self._make)
        self._tools: dict[tuple[int, ...], Overhead] = {}
        self._fitted: dict[str, str] = {}

    def _make(self, events: list[Any]) -> Mirror:
        convert = lambda obj, pos: [message_from_langchain(obj)]  # noqa: E731
        # in view mode the state keeps the originals the view's notes refer to; in
        # permanent mode the state is the view, and an edited state starts afresh
        return Mirror(
            self.compactor, convert, to_langchain, same=_same, events=events,
            carry=self.mode == "view", lenient=self.oversize == "clamp",
        )  # fmt: skip

    # -- what is sent -----------------------------------------------------------------

    def source(
        self, messages: Sequence[Any], system: Any, tools: Sequence[Any]
    ) -> tuple[list[Any], Any]:
        """[tool schemas, system prompt, *messages] and the system prompt as sent (clamped
        when it alone would not leave room in the budget)."""
        overhead = self._overhead(tools)
        reserved = count_text(self.compactor, overhead.text) if overhead else 0
        if system is not None and isinstance(system.content, str):
            fitted = self._fit(system.content, reserved)
            if fitted != system.content:
                system = system.model_copy(update={"content": fitted})
        elif reserved:
            self._fit("", reserved)
        head = [overhead] if overhead is not None else []
        return [*head, *([system] if system is not None else []), *messages], system

    def _overhead(self, tools: Sequence[Any]) -> Overhead | None:
        if not tools:
            return None
        key = tuple(id(t) for t in tools)
        overhead = self._tools.get(key)
        if overhead is None:
            if len(self._tools) > 64:
                self._tools.clear()
            overhead = self._tools[key] = Overhead(_tool_schemas(tools))
        return overhead

    def _fit(self, text: str, reserved: int) -> str:
        key = f"{reserved}:{text}"
        if key not in self._fitted:
            self._fitted[key] = fit_overhead(
                text, self.compactor, oversize=self.oversize, what="system prompt",
                reserved=reserved,
            )  # fmt: skip
        return self._fitted[key]

    # -- one conversation ----------------------------------------------------------------

    def mirror(self, state: Any, messages: Sequence[Any], source: Sequence[Any]) -> Mirror:
        """The conversation's mirror, rebuilt from the state when the state's view is not
        the one this mirror made (a restart, another process, a rewound thread)."""
        key = _conversation(messages)
        mirror = self.conversations.get(key)
        if self.mode != "view":
            return mirror
        record = _stored(state, self.name)
        # no view in the state: none was made yet, or the graph's state has no channel
        # for it (then the view lives only in this process, as the mirror has it)
        if record is not None and mirror.rev != record.get("rev"):
            self.conversations.drop(key)
            mirror = self.conversations.get(key)
            mirror.sync(source)
            mirror.restore(record)
        return mirror

    def changed(self, mirror: Mirror, rev: str | None) -> dict[str, Any] | None:
        """The state update that stores the mirror's view, when it changed since `rev`."""
        if self.mode != "view" or mirror.rev == rev:
            return None
        return {STATE_KEY: {self.name: mirror.record()}}

    def repaired(self, messages: list[Any]) -> list[Any]:
        """`messages` repaired when the option is on (the repairs kept in `repairs`)."""
        if not self.repair:
            return messages
        fixed, self.repairs = repair_messages(messages)
        for r in self.repairs:
            log.warning("%s: repaired the messages sent to the model: %s", self.name, r)
        return fixed

    def run(
        self, state: Any, messages: Sequence[Any], system: Any = None, tools: Sequence[Any] = ()
    ) -> tuple[list[Any], Any, dict[str, Any] | None]:
        """The messages to send, the system prompt to send, the state update (or None)."""
        source, system = self.source(self.repaired(list(messages)), system, tools)
        mirror = self.mirror(state, messages, source)
        rev = mirror.rev
        out = strip_overhead(mirror.process(source))
        return _without(out, system), system, self.changed(mirror, rev)

    async def arun(
        self, state: Any, messages: Sequence[Any], system: Any = None, tools: Sequence[Any] = ()
    ) -> tuple[list[Any], Any, dict[str, Any] | None]:
        """`run` for strategies that await a model."""
        source, system = self.source(self.repaired(list(messages)), system, tools)
        mirror = self.mirror(state, messages, source)
        rev = mirror.rev
        out = strip_overhead(await mirror.aprocess(source))
        return _without(out, system), system, self.changed(mirror, rev)

    def call(self, request: Any, handler: Callable[[Any], Any]) -> _Call:
        """The model call of `request` with the compacted messages; on a context overflow,
        compacted tighter and sent once more (`send_recovering`)."""
        messages = list(request.messages)
        fixed = self.repaired(messages)
        source, system = self.source(fixed, request.system_message, request.tools)
        mirror = self.mirror(request.state, messages, source)
        done = _Call(messages, system, mirror.rev)
        done.out = _without(strip_overhead(mirror.process(source)), system)

        def tighten(overflow: Overflow) -> View:
            with mirror.lock:
                view = mirror.tighten(overflow)
                done.out = _without(strip_overhead(mirror.render()), system)
            return view

        send = lambda: handler(_override(request, done.out, system))  # noqa: E731
        done.response = send_recovering_sync(send, tighten, enabled=self.recover)
        done.stored = self.changed(mirror, done.rev)
        return done

    async def acall(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> _Call:
        """`call` for strategies that await a model."""
        messages = list(request.messages)
        fixed = self.repaired(messages)
        source, system = self.source(fixed, request.system_message, request.tools)
        mirror = self.mirror(request.state, messages, source)
        done = _Call(messages, system, mirror.rev)
        done.out = _without(strip_overhead(await mirror.aprocess(source)), system)

        async def tighten(overflow: Overflow) -> View:
            async with mirror.alock:
                view = await mirror.atighten(overflow)
                done.out = _without(strip_overhead(mirror.render()), system)
            return view

        send = lambda: handler(_override(request, done.out, system))  # noqa: E731
        done.response = await send_recovering(send, tighten, enabled=self.recover)
        done.stored = self.changed(mirror, done.rev)
        return done

    def rewrite(
        self, messages: Sequence[Any], out: list[Any], system: Any, tools: Sequence[Any]
    ) -> list[Any] | None:
        """Permanent mode: the state's new messages (None when nothing changed), indexed
        once as the conversation's history from now on."""
        if len(out) == len(messages) and all(a is b for a, b in zip(out, messages, strict=True)):
            return None
        key = _conversation(out)
        self.conversations.move(_conversation(messages), key)
        self.conversations.get(key).sync(self.source(out, system, tools)[0])
        return out


class _Call:
    """One model call through the middleware: what was sent, what came back."""

    def __init__(self, messages: list[Any], system: Any, rev: str | None) -> None:
        self.messages, self.system, self.rev = messages, system, rev
        self.out: list[Any] = []
        self.response: Any = None
        self.stored: dict[str, Any] | None = None


def _without(out: list[Any], system: Any) -> list[Any]:
    return out[1:] if system is not None and out and out[0] is system else out


# -- LangGraph ------------------------------------------------------------------------


class _Hook:
    """A LangGraph node: state in, a state update out."""

    def __init__(
        self,
        compactor: Any,
        mode: Mode,
        *,
        name: str = "kompakt",
        tools: Sequence[Any] = (),
        prompt: str | None = None,
        oversize: Oversize = "clamp",
        repair: bool = False,
    ) -> None:
        self.core = _Core(compactor, mode, name, oversize, repair=repair)
        self.tools = list(tools)
        self.prompt = prompt

    @property
    def events(self) -> list[Any]:
        """Every compaction event so far (all threads)."""
        return self.core.conversations.events

    def _system(self) -> Any:
        return None if self.prompt is None else _core().SystemMessage(self.prompt, id="kompakt-p")

    def _update(
        self, messages: list[Any], out: list[Any], system: Any, stored: dict[str, Any] | None
    ) -> dict[str, Any]:
        if self.core.mode == "view":
            return {"llm_input_messages": out, **(stored or {})}
        new = self.core.rewrite(messages, out, system, self.tools)
        return {} if new is None else {"messages": [_remove_all(), *new]}

    def __call__(self, state: Any) -> dict[str, Any]:
        messages = _state_messages(state)
        out, system, stored = self.core.run(state, messages, self._system(), self.tools)
        return self._update(messages, out, system, stored)

    async def acall(self, state: Any) -> dict[str, Any]:
        messages = _state_messages(state)
        out, system, stored = await self.core.arun(state, messages, self._system(), self.tools)
        return self._update(messages, out, system, stored)


def _state_messages(state: Any) -> list[Any]:
    messages = state["messages"] if isinstance(state, dict) else state.messages
    return list(messages)


def pre_model_hook(
    compactor: Any,
    *,
    mode: Mode = "view",
    is_async: bool = False,
    name: str = "kompakt",
    tools: Sequence[Any] = (),
    prompt: str | None = None,
    oversize: Oversize = "clamp",
    repair: bool = False,
) -> Any:
    """A LangGraph ``pre_model_hook`` (or plain graph node) driven by a kompakt `Compactor`.

    ``mode="view"`` returns ``{"llm_input_messages": compacted}`` (the graph state keeps
    every message) and, when the view changed, ``{"kompakt": {name: view}}``: give the
    graph's state a `STATE_KEY` channel (`KompaktGraphState` has one) and the view is
    checkpointed with the thread. ``mode="permanent"`` returns ``{"messages":
    [RemoveMessage(all), *compacted]}`` so the state itself shrinks. ``is_async=True``
    gives a coroutine node (for summarizing strategies that await a model). `tools` and
    `prompt`, when the graph sends them, are counted toward the budget. ``repair=True``
    repairs the messages first (see `repair_messages`; the node's ``kompakt.core.repairs``
    lists the latest repairs, each also logged as a warning).

    ```python
    graph.add_node("compact", pre_model_hook(compactor, tools=tools, prompt="You debug."))
    ```
    """
    hook = _Hook(
        compactor, mode, name=name, tools=tools, prompt=prompt, oversize=oversize, repair=repair
    )
    runnables = require("langchain_core.runnables", "pre_model_hook", "langchain")
    if is_async:
        node = runnables.RunnableLambda(hook.__call__, afunc=hook.acall, name=name)
    else:
        node = runnables.RunnableLambda(hook.__call__, name=name)
    node.kompakt = hook
    return node


# -- LangChain v1 agents ------------------------------------------------------------------


_CLASSES: dict[str, Any] = {}


def __getattr__(name: str) -> Any:
    """`KompaktMiddleware` and the state schemas are classes built on first use, so that
    importing this module imports no framework."""
    if name in ("KompaktMiddleware", "KompaktAgentState", "KompaktGraphState"):
        if not _CLASSES:
            _build_classes()
        return _CLASSES[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _build_classes() -> None:
    mw = require("langchain.agents.middleware", "KompaktMiddleware", "langchain")
    types = require("langgraph.types", "KompaktMiddleware", "langchain")
    graph = require("langgraph.graph", "KompaktMiddleware", "langchain")

    class KompaktAgentState(mw.AgentState):  # type: ignore[misc, name-defined]
        """`AgentState` with the views of kompakt middlewares (checkpointed with it)."""

        kompakt: NotRequired[Annotated[dict[str, Any], merge_views]]  # type: ignore[valid-type]

    class KompaktGraphState(graph.MessagesState):  # type: ignore[misc, name-defined]
        """`MessagesState` with the views of kompakt hooks, for graphs of your own."""

        kompakt: NotRequired[Annotated[dict[str, Any], merge_views]]  # type: ignore[valid-type]

    class KompaktMiddleware(mw.AgentMiddleware):  # type: ignore[misc, name-defined]
        """A LangChain v1 agent middleware driven by a kompakt `Compactor`.

        Args:
            compactor: a `Compactor`, or a bare strategy (``Budgeted(60_000)``).
            mode: ``"view"`` (default) compacts what the model is sent and keeps every
                message in the state; ``"permanent"`` also replaces the state's messages
                with the compacted ones.
            name: the middleware's name (give several different names to coexist).
            recover_from_overflow: when the model call fails with the provider's
                context-overflow error (`kompakt.parse_overflow`), compact tighter and call
                once more, the recovery in `events` with its ``overflow``; a second overflow
                raises `BudgetImpossible`. ``False`` raises the provider's error as it is.
            oversize: when the system prompt and tool schemas alone take more than half
                the budget, ``"clamp"`` (default) sends the system prompt clamped and
                warns, ``"raise"`` raises `BudgetImpossible` before the model is called.
            repair: fix what the provider would reject before each model call (a
                `ToolMessage` whose call is gone, a tool call with no result, a reused
                call id; see `repair_messages`): the model is sent the repaired messages,
                ``"permanent"`` mode stores them, `repairs` lists the latest call's
                repairs and each is logged as a warning.

        The system prompt, the tool schemas and the pending messages all count toward the
        budget. Each conversation (LangGraph thread) has its own view, stored in the
        state under ``"kompakt"`` so a checkpointer keeps it: a restart, a second run or
        a new middleware on the same thread sends what the previous run would have sent.

        ```python
        agent = create_agent(model, tools, middleware=[KompaktMiddleware(compactor)])
        ```
        """

        state_schema = KompaktAgentState

        def __init__(
            self,
            compactor: Any,
            *,
            mode: Mode = "view",
            name: str = "KompaktMiddleware",
            oversize: Oversize = "clamp",
            recover_from_overflow: bool = True,
            repair: bool = False,
        ) -> None:
            super().__init__()
            self.core = _Core(
                compactor, mode, name, oversize, recover=recover_from_overflow, repair=repair
            )

        @property
        def name(self) -> str:
            return self.core.name

        @property
        def mode(self) -> Mode:
            return self.core.mode

        @property
        def repairs(self) -> list[Repair]:
            """What ``repair=True`` fixed in the messages of the latest model call."""
            return self.core.repairs

        @property
        def events(self) -> list[Any]:
            """Every compaction event so far, oldest first (all threads)."""
            return self.core.conversations.events

        @property
        def conversations(self) -> Conversations:
            """The views kept in memory, one per thread (rebuilt from the state on need)."""
            return self.core.conversations

        def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
            return _respond(self.core, self.core.call(request, handler), request.tools)

        async def awrap_model_call(
            self, request: Any, handler: Callable[[Any], Awaitable[Any]]
        ) -> Any:
            return _respond(self.core, await self.core.acall(request, handler), request.tools)

        def __repr__(self) -> str:
            return f"KompaktMiddleware({self.core.compactor!r}, mode={self.mode!r})"

    def _respond(core: _Core, done: _Call, tools: Sequence[Any]) -> Any:
        messages, out, system, response = done.messages, done.out, done.system, done.response
        update = dict(done.stored or {})
        if core.mode == "permanent":
            new = core.rewrite(messages, out, system, tools)
            if new is not None:
                result = _result_of(response)
                for m in result:  # one id in both updates: added once whatever the order
                    if m.id is None:
                        m.id = f"kompakt-{uuid.uuid4().hex}"
                update["messages"] = [_remove_all(), *new, *result]
        if not update:
            return response
        if isinstance(response, mw.ExtendedModelResponse):
            command = response.command
            if command is not None and isinstance(command.update, dict):
                update = {**command.update, **update}
            response = response.model_response
        if not isinstance(response, mw.ModelResponse):
            response = mw.ModelResponse(result=[response])
        return mw.ExtendedModelResponse(
            model_response=response, command=types.Command(update=update)
        )

    def _result_of(response: Any) -> list[Any]:
        if isinstance(response, mw.ExtendedModelResponse):
            response = response.model_response
        return list(response.result) if isinstance(response, mw.ModelResponse) else [response]

    for cls in (KompaktAgentState, KompaktGraphState, KompaktMiddleware):
        cls.__module__ = __name__
    _CLASSES.update(
        KompaktMiddleware=KompaktMiddleware,
        KompaktAgentState=KompaktAgentState,
        KompaktGraphState=KompaktGraphState,
    )


def _override(request: Any, out: list[Any], system: Any) -> Any:
    if system is request.system_message:
        return request.override(messages=out)
    return request.override(messages=out, system_message=system)


def _same(a: Any, b: Any) -> bool:
    """The same message rebuilt (a system prompt made per call): same id, or equal."""
    if type(a) is not type(b):
        return False
    return bool(a.id == b.id) if a.id is not None else bool(a == b)


# -- the agent's own model as kompakt's summarizer -----------------------------------------


class LangChainModel(BaseChatModel):
    """A LangChain chat model as a kompakt `ChatModel`, so summaries use the agent's own
    model: ``Compactor(strategy=Summarize(), summarizer=LangChainModel(chat_model))``.

    >>> from langchain_core.language_models.fake_chat_models import FakeListChatModel
    >>> LangChainModel(FakeListChatModel(responses=["a summary"])).chat_sync(
    ...     [Message.user("summarize")]).text
    'a summary'
    """

    def __init__(self, model: Any, **options: Any) -> None:
        super().__init__(name=options.pop("name", type(model).__name__), **options)
        self.model = model

    async def _request(self, request: ChatRequest) -> ChatResponse:
        answer = await self.model.ainvoke(to_langchain(request.messages))
        text = answer.content if isinstance(answer.content, str) else getattr(answer, "text", "")
        usage = getattr(answer, "usage_metadata", None) or {}
        if usage:
            spent = Usage(usage.get("input_tokens", 0), usage.get("output_tokens", 0))
        else:
            spent = estimate_usage(request.messages, str(text))
        return assistant_response(str(text), spent)
