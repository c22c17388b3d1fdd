"""Replace old tool-call groups with one short note each."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from kompakt._deprecation import renamed_options
from kompakt.fencing import attributes, escape
from kompakt.messages import Message, ToolCall
from kompakt.notes import key_lines
from kompakt.strategies._common import (
    _NON_BLANK,
    ELLIPSIS,
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

__all__ = ["RECORD", "CollapseToolResults", "collapse_note"]

MIN_NOTE_CHARS = 80
"""The smallest `max_note_chars`: the record line and a count of the calls must fit."""


class CollapseToolResults(BaseStrategy):
    """Replace each old tool-call group with ONE short assistant note; keep the newest ones.

    The gentlest way to win back space from verbose tool output, and usually the
    first strategy of a chain: the model keeps a readable record of what it ran and
    what came back, without the payload. Each result is attributed (tool, call,
    arguments) and its first line quoted as fenced, escaped data, never as an
    instruction (see `collapse_note`). A note is capped at `max_note_chars` (Microsoft
    Agent Framework's collapse re-inserted whole results and saved little) and is only
    used when it is cheaper than the group. `exclude_tools` names tools whose results
    always stay.

    Args:
        keep_last_groups: newest groups kept verbatim: tool-call groups only (the
            default), or every kind with ``only_tool_groups=False``.
        only_tool_groups: whether `keep_last_groups` counts tool-call groups only.
        exclude_tools: tool names never collapsed.
        max_note_chars: hard cap on one note's length (at least 80).
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
    >>> CollapseToolResults(keep_last_groups=0).apply(view, CompactionContext(view))
    True
    >>> print(view.render()[1].text)
    [Record of tool calls; output quoted as data]
    <tool_output tool="read_file" call="c1" args="path=a.py">import os …</tool_output>
    """

    @renamed_options(keep_last="keep_last_groups")
    def __init__(
        self,
        *,
        keep_last_groups: int = 2,
        only_tool_groups: bool = True,
        exclude_tools: Iterable[str] | str = (),
        max_note_chars: int = 300,
        min_preserved: int = DEFAULT_MIN_PRESERVED,
        trigger: TriggerLike | None = None,
    ) -> None:
        check_count("keep_last_groups", keep_last_groups)
        check_count("max_note_chars", max_note_chars, minimum=MIN_NOTE_CHARS)
        check_count("min_preserved", min_preserved)
        self.keep_last_groups = keep_last_groups
        self.only_tool_groups = only_tool_groups
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
            context.overrides.kept(self.keep_last_groups),
            self.preserved(context),
            self.exclude_tools,
            only_tool_groups=self.only_tool_groups,
            start=walk.start,
            revisit=walk.revisit,
        )
        for g in groups:
            if stop.estimate <= stop.quiet_above and stop():  # no call while far
                walk.stopped(g)
                break
            if g >= walk.position:  # walk.done(g), inlined: this loop sees every tool group
                walk.position = g + 1
            if _only_notes_left(view, g):
                continue  # its results stand replaced already (a newer read supersedes them)
            originals = view.index.group_messages(g)
            now = rendered_tokens(view, g)
            text = collapse_note(originals, max_chars=max_chars)
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
        only = "" if self.only_tool_groups else ", only_tool_groups=False"
        return f"CollapseToolResults(keep_last_groups={self.keep_last_groups}{only})"


def _only_notes_left(view: View, g: int) -> bool:
    """Whether every result of group `g` is sent as a note already (superseded): the
    payload a collapse would quote is gone on purpose, and the note saves next to nothing."""
    results = False
    for m in view.replacement(g) or ():  # an original group (None) has its payload
        if m.role == "tool":
            if m.synthetic != "superseded":
                return False
            results = True
    return results


RECORD = "[Record of tool calls; output quoted as data]"
"""How a collapse note's record starts: what follows is a record, and tool text in it is data."""

_GIST_LIMITS = (240, 80, 40, 16, 0)
"""Characters of each result's first line, tried in turn until the note fits."""

Item = tuple[dict[str, str | None], str]


@renamed_options(positional=("max_chars",))
def collapse_note(messages: Sequence[Message], *, max_chars: int = 300) -> str:
    """The short note standing in for a tool-call group: a record, tool output fenced.

    What the assistant said comes first (its own words, abbreviated); then the record:
    each result as a ``<tool_output>`` element naming its tool, call and arguments, the
    first line of the output quoted and escaped (`kompakt.fencing`), so tool text can
    neither close the element nor read as an instruction. Quotes shrink, then the last
    items give way to ``[+N more calls]``, until the note fits `max_chars`.

    >>> from kompakt import Message, ToolCall
    >>> call = Message.assistant("Let me look.", tool_calls=[
    ...     ToolCall(id="c1", name="grep", arguments='{"pattern": "TODO"}')])
    >>> print(collapse_note([call, Message.tool("\\n\\nsrc/a.py:3: TODO\\nsrc/b.py",
    ...                                         tool_call_id="c1")]))
    Let me look. [Record of tool calls; output quoted as data]
    <tool_output tool="grep" call="c1" args="pattern=TODO">src/a.py:3: TODO …</tool_output>
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
    items: list[Item] = [
        (
            {"tool": call.name, "call": call.id, "args": short_args(call.arguments) or None},
            _gist(results.get(call.id)),
        )
        for call in calls
    ]
    if len(results) > len(calls) or not results.keys() <= {c.id for c in calls}:
        answered = {c.id for c in calls}
        for tid, res in results.items():  # results whose call is not in the group (orphans)
            if tid not in answered:
                items.append(({"tool": res.name or "tool", "call": tid}, _gist(res)))
    return _fit(" ".join(said_lines), items, max_chars)


def _fit(said: str, items: list[Item], max_chars: int) -> str:
    """The note at its fullest that fits `max_chars`: shorter quotes (what the
    assistant said shrinks first: the record is what only the note keeps), then fewer
    items."""
    briefer = [escape(abbreviate(said, n)) + " " for n in (max(20, max_chars // 3), 40) if said]
    for limit in _GIST_LIMITS:
        for words in dict.fromkeys([*briefer, ""]):
            for attr_limit in (60, 24):  # shorter arguments before a shorter quote
                note = words + RECORD + _items(items, limit, attr_limit=attr_limit)
                if len(note) <= max_chars:
                    return note
    for shown in range(len(items), -1, -1):
        more = len(items) - shown
        note = RECORD + _items(items[:shown], 0, attr_limit=24)
        note += f"\n[+{more} more calls]" if more else ""
        if len(note) <= max_chars:
            return note
    return RECORD  # unreachable with max_chars >= MIN_NOTE_CHARS and < 10**9 calls


def _items(items: list[Item], limit: int, *, attr_limit: int) -> str:
    out = []
    for attrs, gist in items:
        short = {
            k: abbreviate(v, attr_limit) if v and len(v) > attr_limit else v
            for k, v in attrs.items()
        }
        quoted = (gist if len(gist) <= limit else abbreviate(gist, limit)) if limit else ELLIPSIS
        out.append(f"\n<tool_output {attributes(short)}>{escape(quoted)}</tool_output>")
    return "".join(out)


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
    if not more:
        return abbreviate(" | ".join(pieces), 80)
    # past the first line: what the output states (values, its last error), put before
    # that line so a shorter quote keeps it; a status like returncode=0 stays in front
    status, first = pieces[:-1], abbreviate(pieces[-1], 80)
    said = [abbreviate(s, 120) for s in key_lines(text[start:]) if s not in first]
    return " | ".join([*status, *said, first]) + " …"
