"""Replace old tool-call groups with one short note each."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from kompakt.messages import Message, ToolCall
from kompakt.strategies._common import (
    _NON_BLANK,
    Stop,
    Walk,
    abbreviate,
    check_count,
    first_line,
    optional_trigger,
    rendered_tokens,
    short_args,
    tool_name_set,
)
from kompakt.strategies.base import DEFAULT_MIN_PRESERVED, BaseStrategy, CompactionContext
from kompakt.strategies.remove_tools import old_tool_groups
from kompakt.tokens import note_tokens
from kompakt.triggers import TriggerLike
from kompakt.view import View

__all__ = ["CollapseToolResults", "collapse_note"]


class CollapseToolResults(BaseStrategy):
    """Replace each old tool-call group with ONE short assistant note; keep the newest `keep_last`.

    The gentlest way to win back space from verbose tool output, and usually the
    first strategy of a chain: the model keeps a readable trace of what it ran and
    what came back, ``[Tool results: read_file(path=a.py) → import os …]``, without
    the payload. A note is capped at `max_note_chars` (Microsoft Agent Framework's
    collapse re-inserted whole results and saved little) and is only used when it
    is cheaper than the group. `exclude_tools` names tools whose results always stay.

    Args:
        keep_last: newest tool-call groups kept verbatim.
        exclude_tools: tool names never collapsed.
        max_note_chars: hard cap on one note's length.
        min_preserved: newest groups left alone.
        trigger: run only when this fires; stop once it no longer does.

    >>> from kompakt import MessageIndex, Message, ToolCall, View
    >>> from kompakt.strategies import CompactionContext
    >>> read = Message.assistant(tool_calls=[ToolCall(id="c1", name="read_file",
    ...                                               arguments='{"path": "a.py"}')])
    >>> idx = MessageIndex([Message.user("go"), read,
    ...                     Message.tool("import os\\n" + "x = 1\\n" * 200, tool_call_id="c1"),
    ...                     Message.assistant("done"), Message.user("next")])
    >>> view = View(idx)
    >>> CollapseToolResults(keep_last=0).apply(view, CompactionContext(view))
    True
    >>> view.render()[1].text
    '[Tool results: read_file(path=a.py) → import os …]'
    """

    def __init__(
        self,
        *,
        keep_last: int = 2,
        exclude_tools: Iterable[str] | str = (),
        max_note_chars: int = 300,
        min_preserved: int = DEFAULT_MIN_PRESERVED,
        trigger: TriggerLike | None = None,
    ) -> None:
        check_count("keep_last", keep_last)
        check_count("max_note_chars", max_note_chars, minimum=20)
        check_count("min_preserved", min_preserved)
        self.keep_last = keep_last
        self.exclude_tools = tool_name_set(exclude_tools)
        self.max_note_chars = max_note_chars
        self.min_preserved = min_preserved
        self.trigger = optional_trigger(trigger)

    def apply(self, view: View, context: CompactionContext) -> bool:
        tokenizer = view.index.tokenizer
        count = tokenizer.count_message
        max_chars = self.max_note_chars
        stop = Stop(self, view, context)
        # groups before the cursor were collapsed, or need no note, at an earlier compaction
        key = ("CollapseToolResults", self.exclude_tools, self.max_note_chars)
        walk = Walk(view, key)
        replaced = 0
        groups = old_tool_groups(
            view,
            self.keep_last,
            self.min_preserved,
            self.exclude_tools,
            start=walk.start,
            revisit=walk.revisit,
        )
        for g in groups:
            if stop():
                walk.stopped(g)
                break
            walk.done(g)
            originals = view.index.group_messages(g)
            now = rendered_tokens(view, g)
            text = collapse_note(originals, max_chars)
            cost = note_tokens(tokenizer, text)  # priced before it is built
            if cost is not None and cost >= now:
                continue  # a note would cost as much as what it replaces
            note = Message.note(
                text, synthetic="collapsed", covers=tuple([m.id for m in originals])
            )
            if cost is None:
                cost = count(note)
                if cost >= now:
                    continue
            view.replace(g, (note,), tokens=cost)
            stop.removed(now - cost)
            replaced += 1
        walk.settle()
        if replaced:
            context.note(groups_replaced=replaced)
        return replaced > 0

    def __repr__(self) -> str:
        return f"CollapseToolResults(keep_last={self.keep_last})"


def collapse_note(messages: Sequence[Message], max_chars: int = 300) -> str:
    """The one-line note standing in for a tool-call group.

    >>> from kompakt import Message, ToolCall
    >>> call = Message.assistant("Let me look.", tool_calls=[
    ...     ToolCall(id="c1", name="grep", arguments='{"pattern": "TODO"}')])
    >>> collapse_note([call, Message.tool("\\n\\nsrc/a.py:3: TODO\\nsrc/b.py", tool_call_id="c1")])
    'Let me look. [Tool results: grep(pattern=TODO) → src/a.py:3: TODO …]'
    """
    results: dict[str | None, Message] = {}
    said_lines: list[str] = []
    calls: list[ToolCall] = []
    for m in messages:  # one pass: results by call, what the assistant said, the calls
        if m.role == "tool":
            results[m.tool_call_id] = m
            continue
        if m.role == "assistant" and m.content:
            text = m.text
            if text:
                said_lines.append(first_line(text))
        if m.tool_calls:
            calls.extend(m.tool_calls)
    said = " ".join(said_lines)
    items = [
        f"{call.name}({short_args(call.arguments)}) → {_gist(results.get(call.id))}"
        for call in calls
    ]
    if len(results) > len(calls) or not results.keys() <= {c.id for c in calls}:
        answered = {c.id for c in calls}
        for tid, res in results.items():  # results whose call is not in the group (orphans)
            if tid not in answered:
                items.append(f"{res.name or 'tool'} → {_gist(res)}")
    body = "[Tool results: " + "; ".join(items) + "]"
    if said:
        body = abbreviate(said, max(20, max_chars // 3)) + " " + body
    if len(body) > max_chars:
        body = body[: max_chars - 2] + "…]"
    return body


_PAIR = re.compile(r"<([\w-]{1,30})>([^<\n]{0,30})</\1>")
_TAG = re.compile(r"</?[\w-]{1,30}/?>")


def _gist(result: Message | None) -> str:
    """The first non-empty line of a result; wrapper tags dropped, a leading
    ``<returncode>0</returncode>`` kept as ``returncode=0``."""
    if result is None:
        return "(no result)"
    text = result.text
    pieces: list[str] = []
    start, n = 0, len(text)
    while start < n:
        end = text.find("\n", start)
        end = n if end < 0 else end
        raw = text[start:end].strip()
        start = end + 1
        if "<" in raw:
            line = " ".join(_TAG.sub(" ", _PAIR.sub(r"\1=\2", raw)).split())
        else:
            line = " ".join(raw.split())
        if not line:
            continue
        pieces.append(line)
        if "<" not in raw or not _PAIR.fullmatch(raw) or len(pieces) == 3:
            break
    if not pieces:
        return "(empty)"
    more = _NON_BLANK.search(text, start) is not None
    return abbreviate(" | ".join(pieces), 80) + (" …" if more else "")
