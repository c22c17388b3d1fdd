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
from typing import Any

from kompakt.integrations._bridge import (
    Conversations,
    Mirror,
    Mode,
    Overhead,
    Oversize,
    as_compactor,
    as_text,
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
from kompakt.overflow import parse_overflow
from kompakt.recovery import retry_impossible

__all__ = [
    "NOTE_KEY",
    "VIEW_KEY",
    "KompaktCapability",
    "PydanticAIModel",
    "from_pydantic_ai",
    "history_processor",
    "stored_view",
    "to_pydantic_ai",
    "transcript",
]


_KEY = "pydantic_ai"
NOTE_KEY = "kompakt"
"""In a message's ``metadata``: the message is a kompakt note (what it covers)."""
VIEW_KEY = "kompakt_view"
"""In a request's ``metadata``: the view kompakt sent (its notes and what they stand
in for), on the latest request that changed it; serialised with the history."""
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
    note = _note_of(d)
    if d.get("kind") == "response":
        out = [_response(d, parts, pos)]
    else:
        out = [_request_part(p, d, pos, k, len(parts)) for k, p in enumerate(parts)]
        out = out or [Message(role="user", extra={_KEY: {"message": d, "src": pos, "part": 0}})]
    if note:  # a note kompakt wrote into a permanent history: it stays one
        covers = tuple(note.get("covers", ()))
        out = [m.evolve(synthetic=note["synthetic"], covers=covers, id=note["id"]) for m in out]
    return out


def _note_of(d: dict[str, Any]) -> dict[str, Any] | None:
    """The provenance of a kompakt note (taken out of the message's metadata)."""
    meta = d.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get(NOTE_KEY), dict):
        return None
    rest = {k: v for k, v in meta.items() if k != NOTE_KEY}
    d["metadata"] = rest or None
    return dict(meta[NOTE_KEY])


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
            dicts.append({**env, **_note_meta(m), "kind": "request", "parts": [part]})
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
    return {**env, **_note_meta(m), "kind": "response", "parts": parts}


def _note_meta(m: Message) -> dict[str, Any]:
    """A kompakt note says so in its metadata (which no model is sent)."""
    if m.synthetic is None:
        return {}
    return {
        "metadata": {NOTE_KEY: {"synthetic": m.synthetic, "covers": list(m.covers), "id": m.id}}
    }


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


# -- one view per conversation, kept in the message history ------------------------------


def stored_view(messages: Sequence[Any]) -> dict[str, Any] | None:
    """The latest view kompakt stored in `messages` (a request's ``metadata``), or None."""
    for m in reversed(messages):
        meta = getattr(m, "metadata", None)
        if isinstance(meta, dict) and isinstance(meta.get(VIEW_KEY), dict):
            return dict(meta[VIEW_KEY])
    return None


def _store_view(messages: Sequence[Any], record: dict[str, Any]) -> None:
    """Keep `record` on the newest request of `messages`, and only there."""
    holder = next((m for m in reversed(messages) if getattr(m, "kind", "") == "request"), None)
    if holder is None:
        return
    for m in messages:
        meta = getattr(m, "metadata", None)
        if m is not holder and isinstance(meta, dict) and VIEW_KEY in meta:
            m.metadata = {k: v for k, v in meta.items() if k != VIEW_KEY} or None
    holder.metadata = {**(holder.metadata or {}), VIEW_KEY: record}


def transcript(messages: Sequence[Any]) -> list[Any]:
    """`messages` without kompakt's notes: what a user should be shown of a history that
    ``mode="permanent"`` compacted (the notes say what they cover in ``metadata``).

    >>> from pydantic_ai.messages import ModelResponse, TextPart
    >>> note = to_pydantic_ai([Message.assistant("[Tool results: ...]", synthetic="collapsed")])
    >>> transcript([*note, ModelResponse(parts=[TextPart("done")])])[0].parts[0].content
    'done'
    """
    out = []
    for m in messages:
        meta = getattr(m, "metadata", None)
        if not (isinstance(meta, dict) and NOTE_KEY in meta):
            out.append(m)
    return out


def _instructions(request_context: Any) -> str:
    params = request_context.model_request_parameters
    parts = getattr(params, "instruction_parts", None)
    if parts:
        return "\n\n".join(p.content for p in parts)
    last = request_context.messages[-1] if request_context.messages else None
    return str(getattr(last, "instructions", None) or "")


def _tool_schemas(request_context: Any) -> str:
    params = request_context.model_request_parameters
    tools = [*params.function_tools, *params.output_tools]
    if not tools:
        return ""
    return dumps(
        [
            {"name": t.name, "description": t.description, "parameters": t.parameters_json_schema}
            for t in tools
        ]
    )


def _clamp_instructions(request_context: Any, text: str) -> Any:
    """`request_context` sending `text` as its only instruction part."""
    import dataclasses

    messages = _messages_module()
    params = request_context.model_request_parameters
    first = params.instruction_parts[0] if params.instruction_parts else None
    part = dataclasses.replace(first, content=text) if first else messages.InstructionPart(text)
    request_context.model_request_parameters = dataclasses.replace(params, instruction_parts=[part])
    return request_context


class _Conversation:
    """One run's (or one history's) view: the mirror, the instructions and tool schemas
    counted in front of it, the view read from and written to the history."""

    def __init__(
        self,
        compactor: Any,
        mode: Mode,
        oversize: Oversize,
        events: list[Any],
        recover_from_overflow: bool = True,
    ) -> None:
        mode = mode_option(mode)
        self.recover_enabled = recover_from_overflow
        self.retried = False
        """This request step's overflow was answered (a second one is not)."""
        self.rev: str | None = None
        self.overhead: Overhead | None = None
        self.compactor = as_compactor(compactor)
        oversize = oversize_option(oversize)
        self.mode, self.oversize = mode, oversize
        self.events = events
        self.mirror = self._new()
        self._fitted: dict[str, str] = {}

    def _new(self) -> Mirror:
        return Mirror(
            self.compactor, message_from_pydantic_ai, to_pydantic_ai, events=self.events,
            carry=self.mode == "view", lenient=self.oversize == "clamp",
        )  # fmt: skip

    def _overhead(self, request_context: Any) -> Overhead | None:
        instructions, tools = _instructions(request_context), _tool_schemas(request_context)
        reserved = count_text(self.compactor, tools)
        key = f"{reserved}:{instructions}"
        if key not in self._fitted:
            self._fitted[key] = fit_overhead(
                instructions, self.compactor, oversize=self.oversize, what="instructions",
                reserved=reserved,
            )  # fmt: skip
        fitted = self._fitted[key]
        if fitted != instructions:
            _clamp_instructions(request_context, fitted)
        text = "\n\n".join(t for t in (fitted, tools) if t)
        return Overhead(text) if text else None

    async def process(self, ctx: Any, request_context: Any) -> Any:
        messages = list(request_context.messages)
        overhead = self._overhead(request_context)
        source = [overhead, *messages] if overhead is not None else messages
        record = stored_view(messages) if self.mode == "view" else None
        mirror = self.mirror
        if record is not None and mirror.rev != record.get("rev"):
            mirror = self.mirror = self._new()  # a history from an earlier run (or process)
            mirror.sync(source)
            mirror.restore(record)
        self.retried, self.overhead = False, overhead
        rev = mirror.rev
        out = strip_overhead(await mirror.aprocess(source))
        return self._send(ctx, request_context, out, rev)

    def _send(self, ctx: Any, request_context: Any, out: list[Any], rev: str | None) -> Any:
        """`request_context` sending `out`; the run's history rewritten (permanent) or the
        view stored in it when it changed (view)."""
        mirror, overhead = self.mirror, self.overhead
        request_context.messages = out
        if self.mode == "permanent":
            ctx.messages[:] = out
            mirror.sync([overhead, *out] if overhead is not None else out)
        elif mirror.rev != rev and mirror.rev is not None:
            record = mirror.record()
            if record is not None:
                _store_view(ctx.messages, record)
        return request_context

    async def recover(self, ctx: Any, request_context: Any, error: Exception) -> Any:
        """A failed model call: on the provider's first context overflow, compact tighter
        and ask for another attempt (`prepare` sends the tighter view); a second overflow
        raises `BudgetImpossible`; any other error is raised as it is."""
        overflow = parse_overflow(error) if self.recover_enabled else None
        if overflow is None:
            raise error
        if self.retried:
            raise retry_impossible(self.mirror.view, overflow=overflow) from error
        async with self.mirror.alock:
            self.rev = self.mirror.rev
            await self.mirror.atighten(overflow)
        self.retried = True
        raise require("pydantic_ai.exceptions", _WHAT, "pydantic-ai").RetryModelRequest()

    def prepare(self, ctx: Any, request_context: Any) -> Any:
        """An attempt after `recover`: it sends the tighter view."""
        if not self.retried:
            return request_context
        return self._send(ctx, request_context, strip_overhead(self.mirror.render()), self.rev)


def history_processor(
    compactor: Any, *, oversize: Oversize = "clamp"
) -> Callable[[list[Any]], Any]:
    """An async history processor ``(messages) -> messages`` driven by a `Compactor`,
    for Pydantic AI's ``ProcessHistory`` (which writes what it returns back into the
    run, as ``mode="permanent"`` does). One view per conversation (its
    ``conversation_id``); instructions are not counted (use `KompaktCapability`).

    ```python
    from pydantic_ai.capabilities import ProcessHistory
    agent = Agent(model, capabilities=[ProcessHistory(history_processor(compactor))])
    ```
    """
    make = lambda events: Mirror(  # noqa: E731
        compactor, message_from_pydantic_ai, to_pydantic_ai, events=events,
        lenient=oversize == "clamp",
    )  # fmt: skip
    conversations = Conversations(make)

    async def kompakt_history(messages: list[Any]) -> list[Any]:
        key = next((m.conversation_id for m in messages if m.conversation_id), "")
        return await conversations.get(key).aprocess(messages)

    kompakt_history.conversations = conversations  # type: ignore[attr-defined]
    kompakt_history.events = conversations.events  # type: ignore[attr-defined]
    return kompakt_history


_CLASS: list[Any] = []


def KompaktCapability(
    compactor: Any,
    *,
    mode: Mode = "view",
    oversize: Oversize = "clamp",
    recover_from_overflow: bool = True,
) -> Any:
    """A Pydantic AI capability that compacts before every model request.

    Args:
        compactor: a `Compactor`, or a bare strategy (``Budgeted(60_000)``).
        mode: ``"view"`` (default) changes only what each request sends; the run's
            history keeps every message, and the view (its notes) is stored in the
            ``metadata`` of the newest request, so a later run given that history
            (``message_history=``, JSON round trips included) goes on from it.
            ``"permanent"`` replaces the run's history with the compacted one; kompakt's
            notes are marked in their ``metadata`` (`transcript` leaves them out).
        oversize: when the instructions and tool schemas take more than half the budget,
            ``"clamp"`` (default) sends the instructions clamped and warns, ``"raise"``
            raises `BudgetImpossible` before the model is called.
        recover_from_overflow: when a model request fails with the provider's
            context-overflow error (`kompakt.parse_overflow`), compact tighter and make one
            more attempt (Pydantic AI's `RetryModelRequest`), the recovery in `events` with
            its ``overflow``; a second overflow raises `BudgetImpossible`. ``False`` leaves
            the provider's error as it is.

    Instructions, system prompts, tool schemas and the new user prompt all count toward
    the budget. Each run has its own view (concurrent runs never interfere); the
    capability's `events` lists every compaction of every run.

    ```python
    agent = Agent(model, capabilities=[KompaktCapability(compactor)])
    ```
    """
    return _capability_class()(
        compactor, mode_option(mode), oversize, recover=recover_from_overflow
    )


def _capability_class() -> Any:
    if _CLASS:
        return _CLASS[0]
    caps = require("pydantic_ai.capabilities", "KompaktCapability", "pydantic-ai")

    class _KompaktCapability(caps.AbstractCapability):  # type: ignore[misc, name-defined]
        """Compacts the messages of every model request with a kompakt `Compactor`."""

        def __init__(
            self,
            compactor: Any,
            mode: Mode,
            oversize: Oversize = "clamp",
            events: list[Any] | None = None,
            *,
            recover: bool = True,
        ) -> None:
            self.compactor = compactor
            self.mode = mode
            self.oversize = oversize
            self.recover = recover
            self.events: list[Any] = events if events is not None else []
            """Every compaction of every run, oldest first."""
            self.conversation = _Conversation(compactor, mode, oversize, self.events, recover)

        @property
        def mirror(self) -> Mirror:
            """The index and view of this run."""
            return self.conversation.mirror

        @classmethod
        def get_serialization_name(cls) -> str | None:
            return None

        async def for_run(self, ctx: Any) -> Any:
            # each run its own view, read back from the history it was given
            return type(self)(
                self.compactor, self.mode, self.oversize, self.events, recover=self.recover
            )

        async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
            return await self.conversation.process(ctx, request_context)

        async def prepare_model_request(self, ctx: Any, request_context: Any) -> Any:
            return self.conversation.prepare(ctx, request_context)

        async def on_model_request_error(
            self, ctx: Any, *, request_context: Any, error: Exception
        ) -> Any:
            return await self.conversation.recover(ctx, request_context, error)

    _CLASS.append(_KompaktCapability)
    return _KompaktCapability


# -- the agent's own model as kompakt's summarizer -----------------------------------------


class PydanticAIModel(BaseChatModel):
    """A Pydantic AI model (an instance or a name such as ``"openai:gpt-4.1-mini"``) as a
    kompakt `ChatModel`, so summaries use the agent's own model:
    ``Compactor(strategy=Summarize(), summarizer=PydanticAIModel(agent.model))``.

    >>> from pydantic_ai.models.test import TestModel
    >>> PydanticAIModel(TestModel(custom_output_text="a summary")).chat_sync(
    ...     [Message.user("summarize")]).text
    'a summary'
    """

    def __init__(self, model: Any, **options: Any) -> None:
        label = model if isinstance(model, str) else getattr(model, "model_name", "pydantic-ai")
        super().__init__(name=options.pop("name", str(label)), **options)
        self.model = model

    async def _request(self, request: ChatRequest) -> ChatResponse:
        direct = require("pydantic_ai.direct", "PydanticAIModel", "pydantic-ai")
        response = await direct.model_request(self.model, to_pydantic_ai(request.messages))
        text = "".join(p.content for p in response.parts if getattr(p, "part_kind", "") == "text")
        usage = response.usage
        spent = Usage(usage.input_tokens, usage.output_tokens)
        if not usage.input_tokens:
            spent = estimate_usage(request.messages, text)
        return assistant_response(text, spent)
