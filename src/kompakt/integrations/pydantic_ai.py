"""Pydantic AI: message conversion, a history processor and a capability.

Install with ``pip install "kompakt[pydantic-ai]"``.

* `from_pydantic_ai` / `to_pydantic_ai` convert `ModelMessage` lists both ways. A
  `ModelRequest` holding several parts (a system prompt and a user prompt, or the
  results of parallel tool calls) becomes one kompakt message per part and is put back
  together on the way out; every field survives the round trip.
* `KompaktCapability` plugs into ``Agent(capabilities=[...])`` (Pydantic AI 2.x):
  ``mode="view"`` compacts what one request sends, ``mode="permanent"`` also rewrites
  the run's message history.
* `history_processor` is the same as a plain async function, for
  ``capabilities=[ProcessHistory(history_processor(compactor))]``.

```python
from pydantic_ai import Agent
from kompakt import Budgeted, Compactor, TokensExceed
from kompakt.integrations.pydantic_ai import KompaktCapability

compactor = Compactor(trigger=TokensExceed(8_000), strategy=Budgeted(6_000))
agent = Agent("openai:gpt-4.1-mini", capabilities=[KompaktCapability(compactor)])
```
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from kompakt.integrations._bridge import Mirror, as_text, dumps, loads_or_text, require
from kompakt.messages import Message, Part, PartKind, ToolCall

__all__ = [
    "KompaktCapability",
    "from_pydantic_ai",
    "history_processor",
    "to_pydantic_ai",
]

Mode = Literal["view", "permanent"]

_KEY = "pydantic_ai"
_WHAT = "kompakt.integrations.pydantic_ai"


def _messages_module() -> Any:
    return require("pydantic_ai.messages", _WHAT, "pydantic-ai")


def _dump(messages: Sequence[Any]) -> list[dict[str, Any]]:
    adapter = _messages_module().ModelMessagesTypeAdapter
    return list(adapter.dump_python(list(messages), mode="json"))


# -- Pydantic AI -> kompakt -----------------------------------------------------------


def from_pydantic_ai(messages: Sequence[Any]) -> list[Message]:
    """Convert Pydantic AI messages to kompakt messages.

    >>> from pydantic_ai.messages import ModelRequest, UserPromptPart
    >>> [m.text for m in from_pydantic_ai([ModelRequest(parts=[UserPromptPart("hi")])])]
    ['hi']
    """
    out: list[Message] = []
    for pos, d in enumerate(_dump(messages)):
        out.extend(_from_dict(d, pos))
    return out


def message_from_pydantic_ai(message: Any, position: int = 0) -> list[Message]:
    """Convert one `ModelRequest` or `ModelResponse` (one kompakt message per request part)."""
    return _from_dict(_dump([message])[0], position)


def _from_dict(d: dict[str, Any], pos: int) -> list[Message]:
    parts = d.pop("parts")
    if d.get("kind") == "response":
        return [_response(d, parts, pos)]
    out = [_request_part(p, d, pos, k, len(parts)) for k, p in enumerate(parts)]
    return out or [Message(role="user", extra={_KEY: {"message": d, "src": pos, "part": 0}})]


def _request_part(p: dict[str, Any], env: dict[str, Any], pos: int, k: int, n: int) -> Message:
    kind = p["part_kind"]
    src = {"message": env, "src": pos, "part": k, "of": n}
    if kind == "system-prompt":
        rest = {key: v for key, v in p.items() if key != "content"}
        return Message.system(p["content"], extra={_KEY: {**src, "fields": rest}})
    if kind == "user-prompt":
        rest = {key: v for key, v in p.items() if key != "content"}
        parts, form = _user_parts(p["content"])
        return Message(
            role="user", content=parts, extra={_KEY: {**src, "fields": rest, "form": form}}
        )
    if kind in ("tool-return", "retry-prompt") and p.get("tool_call_id") and p.get("tool_name"):
        rest = {key: v for key, v in p.items() if key not in ("content", "tool_call_id")}
        text, is_text = as_text(p.get("content"))
        return Message.tool(
            text,
            tool_call_id=p["tool_call_id"],
            name=p.get("tool_name"),
            extra={_KEY: {**src, "fields": rest, "json": not is_text}},
        )
    if kind == "retry-prompt":
        rest = {key: v for key, v in p.items() if key != "content"}
        text, is_text = as_text(p.get("content"))
        return Message.user(text, extra={_KEY: {**src, "fields": rest, "json": not is_text}})
    # parts kompakt does not model (instructions and the like) are kept whole, never removed
    return Message(
        role="system", content=(Part(kind="other", data=p),), extra={_KEY: {**src, "raw": True}}
    )


def _user_parts(content: Any) -> tuple[tuple[Part, ...], str]:
    if isinstance(content, str):
        return ((Part(text=content),) if content else ()), "str"
    parts: list[Part] = []
    for item in content:
        if isinstance(item, str):
            parts.append(Part(text=item))
        else:
            parts.append(Part(kind=_part_kind(item), data=item))
    return tuple(parts), "list"


def _part_kind(item: Any) -> PartKind:
    kind = str(item.get("kind", "")) if isinstance(item, dict) else ""
    media = str(item.get("media_type", "")) if isinstance(item, dict) else ""
    for name in ("image", "audio"):
        if name in kind or media.startswith(name):
            return name
    return "file" if kind else "other"


def _response(env: dict[str, Any], parts: list[dict[str, Any]], pos: int) -> Message:
    content: list[Part] = []
    calls: list[ToolCall] = []
    layout: list[str] = []
    for p in parts:
        kind = p["part_kind"]
        if kind == "text":
            content.append(
                Part(text=p["content"], data={k: v for k, v in p.items() if k != "content"})
            )
            layout.append("p")
        elif kind == "tool-call":
            args = p.get("args")
            extra = {k: v for k, v in p.items() if k not in ("tool_name", "args", "tool_call_id")}
            extra["args_form"] = (
                "str" if isinstance(args, str) else ("none" if args is None else "dict")
            )
            text = args if isinstance(args, str) else dumps(args if args is not None else {})
            calls.append(
                ToolCall(id=p["tool_call_id"], name=p["tool_name"], arguments=text, extra=extra)
            )
            layout.append("c")
        else:
            content.append(Part(kind="other", data=p))
            layout.append("p")
    return Message(
        role="assistant",
        content=tuple(content),
        tool_calls=tuple(calls),
        extra={_KEY: {"message": env, "src": pos, "part": 0, "of": 1, "layout": "".join(layout)}},
    )


# -- kompakt -> Pydantic AI -----------------------------------------------------------


def to_pydantic_ai(messages: Sequence[Message]) -> list[Any]:
    """Convert kompakt messages to Pydantic AI messages (the inverse of `from_pydantic_ai`).

    Consecutive parts of one original request go back into one `ModelRequest`;
    messages kompakt made become a `ModelRequest` (user, system, tool) or a
    `ModelResponse` (assistant) of their own.

    >>> [type(m).__name__ for m in to_pydantic_ai([Message.user("hi"), Message.assistant("yo")])]
    ['ModelRequest', 'ModelResponse']
    """
    names: dict[str, str] = {}
    dicts: list[dict[str, Any]] = []
    last: tuple[int, int] | None = None
    for m in messages:
        for c in m.tool_calls:
            names[c.id] = c.name
        src = m.extra.get(_KEY) or {}
        if m.role == "assistant":
            dicts.append(_response_dict(m, src))
            last = None
            continue
        part = _request_part_dict(m, src, names)
        key = (src["src"], src["part"]) if "src" in src and m.synthetic is None else None
        if key is not None and last is not None and key == (last[0], last[1] + 1):
            dicts[-1]["parts"].append(part)
        else:
            env = dict(src.get("message") or {"kind": "request"}) if m.synthetic is None else {}
            dicts.append({**env, "kind": "request", "parts": [part]})
        last = key
    adapter = _messages_module().ModelMessagesTypeAdapter
    return list(adapter.validate_python(dicts))


def _request_part_dict(m: Message, src: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    fields = dict(src.get("fields") or {})
    if src.get("raw") and m.content:
        return dict(m.content[0].data)
    if m.role == "tool":
        content: Any = loads_or_text(m.text) if src.get("json") else m.text
        name = fields.pop("tool_name", None) or m.name or names.get(m.tool_call_id or "", "tool")
        fields.setdefault("part_kind", "tool-return")
        return {**fields, "tool_name": name, "tool_call_id": m.tool_call_id, "content": content}
    if m.role in ("system", "developer"):
        fields.setdefault("part_kind", "system-prompt")
        return {**fields, "content": m.text}
    fields.setdefault("part_kind", "user-prompt")
    if fields["part_kind"] == "retry-prompt":
        return {**fields, "content": loads_or_text(m.text) if src.get("json") else m.text}
    if src.get("form") == "list" or any(p.kind != "text" for p in m.content):
        items: list[Any] = [p.text if p.kind == "text" else dict(p.data) for p in m.content]
        return {**fields, "content": items}
    return {**fields, "content": m.text}


def _response_dict(m: Message, src: dict[str, Any]) -> dict[str, Any]:
    env = dict(src.get("message") or {}) if m.synthetic is None else {}
    layout = src.get("layout") or "p" * len(m.content) + "c" * len(m.tool_calls)
    if layout.count("p") != len(m.content) or layout.count("c") != len(m.tool_calls):
        layout = "p" * len(m.content) + "c" * len(m.tool_calls)
    content, calls = iter(m.content), iter(m.tool_calls)
    parts: list[dict[str, Any]] = []
    for slot in layout:
        if slot == "p":
            p = next(content)
            if p.kind == "text":
                parts.append({**dict(p.data), "part_kind": "text", "content": p.text})
            else:
                parts.append(dict(p.data))
        else:
            parts.append(_call_dict(next(calls)))
    return {**env, "kind": "response", "parts": parts}


def _call_dict(c: ToolCall) -> dict[str, Any]:
    extra = dict(c.extra)
    form = extra.pop("args_form", "str")
    args: Any = c.arguments
    if form == "dict":
        args = loads_or_text(c.arguments)
    elif form == "none":
        args = None
    return {
        **extra,
        "part_kind": "tool-call",
        "tool_name": c.name,
        "args": args,
        "tool_call_id": c.id,
    }


# -- wiring ---------------------------------------------------------------------------


def _mirror(compactor: Any, events: list[Any] | None = None) -> Mirror:
    return Mirror(compactor, message_from_pydantic_ai, to_pydantic_ai, events=events)


def history_processor(compactor: Any) -> Callable[[list[Any]], Any]:
    """An async history processor ``(messages) -> messages`` driven by a `Compactor`.

    ```python
    from pydantic_ai.capabilities import ProcessHistory
    agent = Agent(model, capabilities=[ProcessHistory(history_processor(compactor))])
    ```
    """
    mirror = _mirror(compactor)

    async def kompakt_history(messages: list[Any]) -> list[Any]:
        return await mirror.aprocess(messages)

    kompakt_history.mirror = mirror  # type: ignore[attr-defined]
    return kompakt_history


_CLASS: list[Any] = []


def KompaktCapability(compactor: Any, *, mode: Mode = "view") -> Any:
    """A Pydantic AI capability that compacts before every model request.

    ``mode="view"`` changes only what the request sends (the run's history keeps every
    message); ``mode="permanent"`` also replaces the run's history with the compacted one.
    The capability's `events` lists every compaction.

    ```python
    agent = Agent(model, capabilities=[KompaktCapability(compactor)])
    ```
    """
    if mode not in ("view", "permanent"):
        raise ValueError(f"mode must be 'view' or 'permanent', got {mode!r}")
    return _capability_class()(compactor, mode)


def _capability_class() -> Any:
    if _CLASS:
        return _CLASS[0]
    caps = require("pydantic_ai.capabilities", "KompaktCapability", "pydantic-ai")

    class _KompaktCapability(caps.AbstractCapability):  # type: ignore[misc, name-defined]
        """Compacts the messages of every model request with a kompakt `Compactor`."""

        def __init__(self, compactor: Any, mode: Mode, events: list[Any] | None = None) -> None:
            self.compactor = compactor
            self.mode = mode
            self.mirror = _mirror(compactor, events)

        @property
        def events(self) -> list[Any]:
            """Every compaction of every run, oldest first."""
            return self.mirror.events

        @classmethod
        def get_serialization_name(cls) -> str | None:
            return None

        async def for_run(self, ctx: Any) -> Any:
            # concurrent runs of one agent each get their own index
            return type(self)(self.compactor, self.mode, self.mirror.events)

        async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
            out = await self.mirror.aprocess(list(request_context.messages))
            request_context.messages = list(out)
            if self.mode == "permanent":
                ctx.messages[:] = out
                self.mirror.sync(out)  # the history becomes `out`: index it once
            return request_context

    _CLASS.append(_KompaktCapability)
    return _KompaktCapability
