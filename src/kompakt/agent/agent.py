"""The agent loop: model → tool calls → tools → compaction checkpoint → model again.

Every original message goes to the history store as it happens (nothing is ever lost);
what the model is sent is a `View` of that history, compacted at *checkpoints*. A
checkpoint runs before each model call, which is after the tools of the previous
step ran, and the fresh tool results are always in the next request (Koog's
single-run strategy loses them).

Two hooks decide what compaction touches (Microsoft Agent Framework's before/after
strategies), side by side:

* ``hook="before_model"`` compacts only what is *sent*: the store keeps the whole
  history and no compaction is recorded; another agent on the same session starts
  from every original again.
* ``hook="after_run"`` compacts what is *stored*: at the end of a run the view is
  compacted and recorded in the store, so the next run (in this process or another)
  starts from the compacted view. The originals stay in the store, searchable.
* ``hook="both"`` does both.

>>> from kompakt.models import ScriptedModel
>>> from kompakt.messages import ToolCall
>>> def add(a: int, b: int) -> int:
...     "Add two integers."
...     return a + b
>>> model = ScriptedModel([
...     Message.assistant(tool_calls=[ToolCall(id="c1", name="add", arguments='{"a": 2, "b": 3}')]),
...     "2 + 3 = 5",
... ])
>>> result = Agent(model, tools=[add]).run_sync("what is 2 + 3?")
>>> result.output, result.steps, [m.role for m in result.messages]
('2 + 3 = 5', 2, ['user', 'assistant', 'tool', 'assistant'])
>>> model.requests[1][-1].text   # the tool result reached the model
'5'
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from kompakt._deprecation import renamed_options
from kompakt.agent.background import BackgroundCompaction
from kompakt.agent.checkpoint import Checkpoints, Hook
from kompakt.agent.overflow_retry import call_recovering
from kompakt.agent.recall import compact_context_tool, recall_tool
from kompakt.agent.result import RunResult
from kompakt.agent.tools import Tool, ToolLike, as_tool, execute_calls
from kompakt.compactor import CompactionEvent, Compactor
from kompakt.errors import ConfigError, InputError, SessionConflict
from kompakt.index import MessageIndex
from kompakt.messages import Message, ToolCall
from kompakt.models.base import ChatModel, ChatResponse, ask, run_sync
from kompakt.models.registry import as_model, model_from_env
from kompakt.shortfall import kept_by
from kompakt.store.base import HistoryStore
from kompakt.store.memory import MemoryStore
from kompakt.strategies.base import (
    NO_OVERRIDES,
    StrategyLike,
)
from kompakt.tokens import CharEstimator, Tokenizer
from kompakt.triggers import (
    ContextFraction,
    Never,
    TokensBelow,
    TriggerLike,
    as_trigger,
    context_window,
)
from kompakt.view import View

__all__ = ["Agent", "Hook"]

log = logging.getLogger("kompakt.agent")


class Agent(Checkpoints):
    """A tool-calling agent whose context is compacted at checkpoints and whose history
    is kept whole in a store.

    Args:
        model: the `ChatModel` the agent asks, or a spec string (`"openai:gpt-4.1-mini"`);
            None reads `KOMPAKT_MODEL` (default `extractive`).
        tools: functions (sync or async) or `Tool` objects the model may call.
        compactor: when and how to compact (`Compactor`); None = never compact. The
            agent keeps its own view; the compactor gives trigger, strategy, target
            and summarizer.
        store: where the originals and compaction records live (default: a new
            `MemoryStore`; use `SQLiteStore("agent.db")` to keep them).
        session: the session id in the store (default: a new one).
        system: a system prompt, stored as the first message of a new session.
        max_steps: model calls per run; the run then stops cleanly (``max_steps``).
        hook: ``before_model``, ``after_run`` or ``both`` (see the module docs).
        background: prepare each compaction in the background while the agent waits
            on its model, timed from the measured pace of the run so the summary is
            ready when the trigger fires, and swap it in then (see
            `BackgroundCompaction`).
        prepare_at: start preparing when this fires instead (an int is a token
            count); implies ``background=True``.
        warn_fraction: warn when a request passes this fraction of the context window.
        recall: give the model the ``recall`` tool (and summaries a note about it).
        context_window: tokens of the model's window (default: from a `ContextFraction`
            trigger or the model's name when known).
        recall_tokens: most tokens one recall returns.
        max_output_tokens: the answer limit of each model call.
        tokenizer: counts tokens (default: the compactor's, else `CharEstimator`).
        recover_from_overflow: when the provider refuses a request as over its context
            window, compact tighter and retry the call once (see docs/agent.md).
    """

    @renamed_options(positional=("tools",), max_tokens="max_output_tokens")
    def __init__(
        self,
        model: ChatModel | str | None = None,
        *,
        tools: Iterable[ToolLike] = (),
        compactor: Compactor | None = None,
        store: HistoryStore | None = None,
        session: str | None = None,
        system: str | None = None,
        max_steps: int = 20,
        hook: Hook = "before_model",
        background: bool = False,
        prepare_at: TriggerLike | int | None = None,
        warn_fraction: float = 0.9,
        recall: bool = True,
        context_window: int | None = None,
        recall_tokens: int = 4000,
        max_output_tokens: int | None = None,
        tokenizer: Tokenizer | None = None,
        recover_from_overflow: bool = True,
    ) -> None:
        if hook not in ("before_model", "after_run", "both"):
            raise ConfigError(f"`hook` must be before_model, after_run or both, got {hook!r}")
        if not isinstance(max_steps, int) or max_steps < 1:
            raise ConfigError(f"`max_steps` must be an int >= 1, got {max_steps!r}")
        if not 0 < warn_fraction <= 1:
            raise ConfigError(f"`warn_fraction` must be in (0, 1], got {warn_fraction!r}")
        # a spec string, or KOMPAKT_MODEL when None (see docs/models.md)
        self.model: ChatModel = as_model(model, "model") or model_from_env()
        self.compactor = compactor
        self.store: HistoryStore = store if store is not None else MemoryStore()
        self.session = session or uuid.uuid4().hex
        self.system = system
        self.max_steps = max_steps
        self.hook: Hook = hook
        self.warn_fraction = warn_fraction
        self.recall_tokens = recall_tokens
        self.max_output_tokens = max_output_tokens
        self.recover_from_overflow = recover_from_overflow
        self.tokenizer: Tokenizer = (
            tokenizer or (compactor.tokenizer if compactor else None) or CharEstimator()
        )
        self.context_window = context_window or _window(compactor, model)
        self.tools: dict[str, Tool] = {}
        for t in tools:
            self._add_tool(as_tool(t))
        if recall:
            tok = self.tokenizer
            self._add_tool(
                recall_tool(self.store, self.session, max_tokens=recall_tokens, tokenizer=tok)
            )
        if compactor is not None:
            self._add_tool(compact_context_tool(self._request_compaction))
        self.background: BackgroundCompaction | None = None
        if compactor is not None and (background or prepare_at is not None):
            self.background = BackgroundCompaction(compactor, prepare_at=prepare_at)
        self._keep = kept_by(compactor.strategy, compactor.overrides) if compactor else (0, "")
        self._explained = False
        self._settling = False
        self._recall = recall
        self._view: View | None = None
        self._offset = 0
        self._compact_requested = False
        self._dirty = False
        self._running = False
        self._result: RunResult | None = None
        self._call_ids: set[str] = set()
        self._last_request = 0

    # -- public ---------------------------------------------------------------------

    @property
    def view(self) -> View:
        """What the model is sent (loaded from the store on first use)."""
        return self._load()

    def history(self) -> list[Message]:
        """Every original of the session, from the store."""
        return self.store.messages(self.session)

    async def run(self, task: str | Message) -> RunResult:
        """Work on `task` until the model answers without tool calls or `max_steps`."""
        if self._running:
            raise InputError("this agent is already running; await the current run first")
        self._running = True
        result = RunResult(session=self.session)
        self._result = result
        try:
            self._refresh()
            self._append([task if isinstance(task, Message) else Message.user(task)])
            await self._loop(result)
            if self.hook in ("after_run", "both"):
                await self._after_run(result)
            elif self.background is not None and not self._settling:
                # prepare while the caller thinks (not when the event loop ends with the run)
                self.background.prepare(self._load(), offset=self._offset)
        finally:
            if self.background is not None:
                self.background.pause()
            self._running = False
            self._result = None
        return result

    def run_sync(self, task: str | Message) -> RunResult:
        """`run` for code without an event loop."""
        return run_sync(self._run_settled(task))

    async def compact_now(
        self,
        strategy: StrategyLike | None = None,
        *,
        target: TriggerLike | None = None,
        record: bool = True,
    ) -> CompactionEvent:
        """Compact the view now, e.g. between the phases of a multi-step flow.

        `strategy` defaults to the compactor's; `target` to running the strategy fully
        (an explicit strategy) or to half the current tokens (the compactor's). With
        `record` the result is stored, so the next run starts from it.
        """
        view = self._load()
        if strategy is None:
            if self.compactor is None:
                raise ConfigError("compact_now() needs `strategy=` or an agent with a compactor")
            driver = self.compactor
            overrides = self.compactor.overrides
            stop = as_trigger(target) if target is not None else TokensBelow(view.total_tokens // 2)
        else:
            driver = self._driver(strategy)
            overrides = NO_OVERRIDES
            stop = as_trigger(target) if target is not None else Never()
        event = await self._compact(
            driver, stop, reason="compact_now", check_trigger=False, overrides=overrides
        )
        if record:
            self._record(event)
        return event

    def compact_now_sync(
        self,
        strategy: StrategyLike | None = None,
        *,
        target: TriggerLike | None = None,
        record: bool = True,
    ) -> CompactionEvent:
        """`compact_now` for code without an event loop (the same arguments)."""
        return run_sync(self.compact_now(strategy, target=target, record=record))

    # -- the loop -------------------------------------------------------------------

    async def _loop(self, result: RunResult) -> None:
        answered = False
        while result.steps < self.max_steps:
            await self._checkpoint(result)
            response = await self._call_model(result)
            message = _normalize(response.message, self._call_ids)
            self._append([message])
            if not message.tool_calls:
                result.output = message.text
                answered = True
                break
            await self._execute(message)
        if not answered:
            result.stopped_reason = "max_steps"
            last = [m for m in result.messages if m.role == "assistant" and m.text]
            result.output = last[-1].text if last else ""
            note = f"stopped after max_steps={self.max_steps} model calls without a final answer"
            result.warnings.append(note)
            log.info("session %s: %s", self.session, note)

    async def _call_model(self, result: RunResult) -> ChatResponse:
        return await call_recovering(self, result, lambda: self._send(result))

    async def _send(self, result: RunResult) -> ChatResponse:
        view = self._load()
        request = view.render()
        estimate = view.total_tokens
        self._warn_if_near_limit(result, estimate + self._offset)
        self._last_request = estimate + self._offset
        result.request_tokens.append(self._last_request)
        specs = [t.spec for t in self.tools.values()] or None
        response = await ask(
            self.model, request, tools=specs, max_output_tokens=self.max_output_tokens
        )
        result.usage.append(response.usage)
        result.steps += 1
        if response.usage.input_tokens > 0:  # calibrate: the provider's count wins
            self._offset = response.usage.input_tokens - estimate
        return response

    async def _execute(self, message: Message) -> None:
        results: list[Message] = []
        try:
            results = await execute_calls(message.tool_calls, self.tools)
        finally:  # never leave a call without its result, even when cancelled
            if len(results) != len(message.tool_calls):
                results = [_interrupted(c) for c in message.tool_calls]
            self._append(results)

    # -- state ----------------------------------------------------------------------

    def _load(self) -> View:
        if self._view is not None:
            return self._view
        self._view = self.store.current_view(self.session, tokenizer=self.tokenizer)
        self._call_ids = {c.id for m in self._view.index.messages for c in m.tool_calls}
        if self._view.index.message_count == 0 and self.system:
            self._append([Message.system(self.system)])
        self._close_open_calls()
        return self._view

    def _refresh(self) -> None:
        """Load again if another agent or process appended to the session since."""
        if self._view is not None and self.store.count(self.session) != len(self._view.index):
            log.info("session %s changed in the store; loading it again", self.session)
            if self.background is not None:
                self.background.discard()
            self._view = None
        self._load()

    def _close_open_calls(self) -> None:
        """A stored call left without its result (a crash mid-tool) gets an error result."""
        index = self._load().index
        if index.groups and index.groups[-1].pending:
            g = index.groups[-1]
            calls = index.messages[g.start].tool_calls
            self._append([_interrupted(c) for c in calls if c.id in g.open_calls])

    def _append(self, messages: Sequence[Message]) -> None:
        index: MessageIndex = self._load().index
        expected = index.message_count
        stored = index.extend(messages)
        try:  # optimistic: another writer on the session since we read it is a conflict
            self.store.append(self.session, stored, expected_count=expected)
        except SessionConflict:
            self._view = None  # it holds what the store refused: the next run loads afresh
            if self.background is not None:
                self.background.discard()
            raise
        self._call_ids.update(c.id for m in stored for c in m.tool_calls)
        if self._result is not None:
            self._result.messages.extend(stored)

    def _warn(self, text: str) -> None:
        log.warning("session %s: %s", self.session, text)
        if self._result is not None:
            self._result.warnings.append(text)

    def _warn_if_near_limit(self, result: RunResult, tokens: int) -> None:
        window = self.context_window
        if not window or tokens <= self.warn_fraction * window:
            return
        text = (
            f"context near its limit: {tokens:,} tokens is {tokens / window:.0%} of the "
            f"{window:,}-token window (warn_fraction={self.warn_fraction})"
        )
        if text not in result.warnings:
            self._warn(text)

    def _add_tool(self, t: Tool) -> None:
        if t.name in self.tools:
            raise ConfigError(f"two tools are named {t.name!r}: rename one (tool(name=...))")
        self.tools[t.name] = t

    async def _run_settled(self, task: str | Message) -> RunResult:
        self._settling = True
        try:
            return await self.run(task)
        finally:  # the event loop ends with run_sync: cancel unfinished background work
            self._settling = False
            if self.background is not None:
                self.background.cancel()

    def __repr__(self) -> str:
        return (
            f"Agent(model={getattr(self.model, 'name', self.model)!r}, tools={list(self.tools)}, "
            f"session={self.session!r}, hook={self.hook!r})"
        )


def _normalize(message: Message, used: set[str]) -> Message:
    """An assistant message whose calls have ids unused so far (tiny models skip or reuse them)."""
    changes: dict[str, Any] = {}
    if message.role != "assistant":
        changes["role"] = "assistant"
    seen: set[str] = set(used)
    calls: list[ToolCall] = []
    for c in message.tool_calls:
        if not c.id or c.id in seen:
            c = ToolCall(
                id=f"call_{uuid.uuid4().hex[:12]}",
                name=c.name,
                arguments=c.arguments,
                extra=c.extra,
            )
        seen.add(c.id)
        calls.append(c)
    if tuple(calls) != message.tool_calls or any(
        a.id != b.id for a, b in zip(calls, message.tool_calls, strict=True)
    ):
        changes["tool_calls"] = tuple(calls)
    return message.evolve(**changes) if changes else message


def _interrupted(call: ToolCall) -> Message:
    return Message.tool(
        "Error: the tool call was interrupted before it returned a result.",
        tool_call_id=call.id,
        name=call.name,
        metadata={"error": True},
    )


def _window(compactor: Compactor | None, model: Any) -> int | None:
    trigger = compactor.trigger if compactor else None
    if isinstance(trigger, ContextFraction):
        return trigger.context_window
    try:
        return context_window(str(getattr(model, "name", "")))
    except ConfigError:
        return None
