"""LangChain and LangGraph: message conversion, an agent middleware, a LangGraph hook.

Install with ``pip install "kompakt[langchain]"``.

* `from_langchain` / `to_langchain` convert `BaseMessage` lists both ways; content,
  tool calls, ids and every other field survive the round trip.
* `KompaktMiddleware` is a LangChain v1 `AgentMiddleware` for `create_agent`:
  ``mode="view"`` compacts only what the model is sent (`wrap_model_call`; the state
  keeps every message), ``mode="permanent"`` rewrites the state (`before_model`).
* `pre_model_hook` is a LangGraph node for ``create_react_agent(pre_model_hook=...)``
  returning ``llm_input_messages`` (view) or ``messages`` (permanent).

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

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

from kompakt.integrations._bridge import Mirror, dumps, loads_or_text, require
from kompakt.messages import Message, Part, PartKind, ToolCall

__all__ = [
    "KompaktMiddleware",
    "from_langchain",
    "pre_model_hook",
    "to_langchain",
]

Mode = Literal["view", "permanent"]

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


# -- wiring ---------------------------------------------------------------------------


def _mirror(compactor: Any, events: list[Any]) -> Mirror:
    convert = lambda obj, pos: [message_from_langchain(obj)]  # noqa: E731
    return Mirror(compactor, convert, to_langchain, same=_same, events=events)


_MAX_THREADS = 128
"""Conversations (LangGraph thread ids) a hook keeps an index for; the oldest is dropped."""


def _thread_id() -> str:
    try:
        from langgraph.config import get_config

        return str(get_config().get("configurable", {}).get("thread_id", ""))
    except (ImportError, RuntimeError):
        return ""


def _remove_all() -> list[Any]:
    core = _core()
    graph = require("langgraph.graph.message", "kompakt.integrations.langchain", "langchain")
    return [core.RemoveMessage(id=graph.REMOVE_ALL_MESSAGES)]


class _Hook:
    """A LangGraph node: state in, a state update out."""

    def __init__(self, compactor: Any, mode: Mode) -> None:
        if mode not in ("view", "permanent"):
            raise ValueError(f"mode must be 'view' or 'permanent', got {mode!r}")
        self.mode = mode
        self.compactor = compactor
        self.events: list[Any] = []
        self._mirrors: dict[str, Mirror] = {}

    @property
    def mirror(self) -> Mirror:
        """The index of the conversation (LangGraph thread) running now."""
        key = _thread_id()
        mirror = self._mirrors.pop(key, None)
        if mirror is None:
            mirror = _mirror(self.compactor, self.events)
            if len(self._mirrors) >= _MAX_THREADS:
                self._mirrors.pop(next(iter(self._mirrors)))
        self._mirrors[key] = mirror  # most recently used last
        return mirror

    def _update(self, mirror: Mirror, before: Sequence[Any], after: list[Any]) -> dict[str, Any]:
        if self.mode == "view":
            return {"llm_input_messages": after}
        if len(after) == len(before) and all(a is b for a, b in zip(after, before, strict=True)):
            return {}
        mirror.sync(after)  # the state becomes `after`: index it once, not on every call
        return {"messages": [*_remove_all(), *after]}

    def __call__(self, state: Any) -> dict[str, Any]:
        messages = _state_messages(state)
        mirror = self.mirror
        return self._update(mirror, messages, mirror.process(messages))

    async def acall(self, state: Any) -> dict[str, Any]:
        messages = _state_messages(state)
        mirror = self.mirror
        return self._update(mirror, messages, await mirror.aprocess(messages))


def _state_messages(state: Any) -> list[Any]:
    messages = state["messages"] if isinstance(state, dict) else state.messages
    return list(messages)


def pre_model_hook(compactor: Any, *, mode: Mode = "view", is_async: bool = False) -> Any:
    """A LangGraph ``pre_model_hook`` driven by a kompakt `Compactor`.

    ``mode="view"`` returns ``{"llm_input_messages": compacted}`` (the graph state keeps
    every message); ``mode="permanent"`` returns ``{"messages": [RemoveMessage(all),
    *compacted]}`` so the state itself shrinks. ``is_async=True`` gives a coroutine node
    (for summarizing strategies that await a model).

    ```python
    from langgraph.prebuilt import create_react_agent
    agent = create_react_agent(model, tools, pre_model_hook=pre_model_hook(compactor))
    ```
    """
    hook = _Hook(compactor, mode)
    runnables = require("langchain_core.runnables", "pre_model_hook", "langchain")
    if is_async:
        return runnables.RunnableLambda(hook.__call__, afunc=hook.acall, name="kompakt")
    return runnables.RunnableLambda(hook.__call__, name="kompakt")


def _middleware_base() -> Any:
    mod = require("langchain.agents.middleware", "KompaktMiddleware", "langchain")
    return mod.AgentMiddleware


def KompaktMiddleware(compactor: Any, *, mode: Mode = "view") -> Any:
    """A LangChain v1 agent middleware driven by a kompakt `Compactor`.

    ``mode="view"``: `wrap_model_call` sends the model a compacted copy and the agent
    state keeps every message. ``mode="permanent"``: `before_model` replaces the state's
    messages with the compacted ones. The system prompt counts toward the budget and is
    never removed. Sync and async agents are both served.

    ```python
    agent = create_agent(model, tools, middleware=[KompaktMiddleware(compactor)])
    ```
    """
    cls = _middleware_class()
    return cls(compactor, mode=mode)


_CLASS: list[Any] = []


def _middleware_class() -> Any:
    if _CLASS:
        return _CLASS[0]
    base = _middleware_base()

    class _KompaktMiddleware(base):  # type: ignore[misc, valid-type]
        """Compacts the agent's messages with a kompakt `Compactor`."""

        def __init__(self, compactor: Any, *, mode: Mode = "view") -> None:
            super().__init__()
            self.hook = _Hook(compactor, mode)

        @property
        def name(self) -> str:
            return "KompaktMiddleware"

        @property
        def mirror(self) -> Mirror:
            return self.hook.mirror

        @property
        def events(self) -> list[Any]:
            """Every compaction event so far (all threads)."""
            return self.hook.events

        def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
            if self.hook.mode != "permanent":
                return None
            return self.hook(state) or None

        async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
            if self.hook.mode != "permanent":
                return None
            return await self.hook.acall(state) or None

        def wrap_model_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
            if self.hook.mode != "view":
                return handler(request)
            out = self.hook.mirror.process(_request_messages(request))
            return handler(_override(request, out))

        async def awrap_model_call(
            self, request: Any, handler: Callable[[Any], Awaitable[Any]]
        ) -> Any:
            if self.hook.mode != "view":
                return await handler(request)
            out = await self.hook.mirror.aprocess(_request_messages(request))
            return await handler(_override(request, out))

    _CLASS.append(_KompaktMiddleware)
    return _KompaktMiddleware


def _request_messages(request: Any) -> list[Any]:
    """The system prompt (it counts toward the budget) and the messages of a request."""
    system = request.system_message
    return [system, *request.messages] if system is not None else list(request.messages)


def _override(request: Any, out: list[Any]) -> Any:
    system = request.system_message
    if system is not None and out and out[0] is system:
        out = out[1:]
    return request.override(messages=out)


def _same(a: Any, b: Any) -> bool:
    """The same message rebuilt (a system prompt made per call): same id, or equal."""
    if type(a) is not type(b):
        return False
    return bool(a.id == b.id) if a.id is not None else bool(a == b)
