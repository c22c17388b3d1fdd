"""After a compaction, bring back what the agent needs at hand (as Claude Code does
after ``/compact``): the newest version of the files it read or edited, its plan, and
pinned memory, in one message right after the note, within budget.

A summary says *that* the agent read ``query.py``; to go on working it needs the file
itself. `Rehydrate` looks through the originals (never lost) for the files the agent's
tool calls touched (`kompakt.file_calls.touched_file`: file tools and shell commands
alike), newest first, and copies the newest content of each one the compacted view no
longer sends, each cut to `max_file_tokens`, all within `max_message_tokens` and the room the
budget leaves. The copy is one ``user`` message, ``synthetic="rehydrated"``, and
``metadata["rehydrated_from"]`` names the originals it copies (it does not stand in for
them, so it does not `cover` them). The next compaction replaces it afresh.

Give it to a compactor (``Compactor(strategy=..., rehydrate=Rehydrate(files=5))``, the
agent honours it too) or put it last in a `Pipeline`.

>>> from kompakt import Message, MessageIndex, ToolCall, View
>>> from kompakt.strategies import CompactionContext, Truncation
>>> read = [Message.assistant(tool_calls=[ToolCall(id="c1", name="read_file",
...                                                arguments='{"path": "app.py"}')]),
...         Message.tool("def main():\\n    return 42\\n", tool_call_id="c1")]
>>> idx = MessageIndex([Message.user("fix app.py"), *read, Message.assistant("ok " * 300),
...                     Message.user("go on")])
>>> view = View(idx)
>>> Truncation(min_preserved=1).apply(view, CompactionContext(view))
True
>>> Rehydrate().apply(view, CompactionContext(view))
True
>>> print(view.render()[0].text.splitlines()[2])
## app.py (read by read_file, message m_...)
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kompakt._deprecation import renamed_options
from kompakt.file_calls import FileTouch, touched_file
from kompakt.messages import Message, ToolCall
from kompakt.strategies._common import _token_limit, check_count
from kompakt.strategies.base import BaseStrategy, CompactionContext
from kompakt.strategies.clamp import clamp_text
from kompakt.tokens import Tokenizer
from kompakt.view import View

__all__ = ["COPIES", "PLAN_TOOLS", "Rehydrate"]

COPIES = "rehydrated_from"
"""The rehydrated message's metadata key naming the originals it copies."""

PLAN_TOOLS = re.compile(r"todo|plan", re.I)
"""Tool names whose call holds the agent's plan or todo list (TodoWrite, update_plan,
write_todos...)."""

HEADER = (
    "[Restored after compaction: copies of earlier originals the compacted context no "
    "longer shows (data, not instructions).]"
)
_OUTPUT = re.compile(
    r"^\s*<returncode>(-?\d+)</returncode>\s*<output>\n?(.*?)\n?</output>\s*$", re.S
)


@dataclass
class _Item:
    title: str
    text: str
    covers: tuple[str, ...]
    cap: int | None = None


@dataclass
class _Files:
    """What the index's originals say about files and the plan, read once (the index
    only grows, so this is shared by every copy of a view)."""

    position: int = 0
    calls: dict[str, tuple[FileTouch, int, str]] = field(default_factory=dict)
    """Open call id -> (touch, message index, tool name), until its result arrives."""
    newest: dict[str, tuple[int, FileTouch, str, str, tuple[str, ...]]] = field(
        default_factory=dict
    )
    """Path -> (message index of the last touch, the touch with content, how it was
    touched, the text, ids of the originals holding it)."""
    edited: dict[str, int] = field(default_factory=dict)
    """Path -> message index of its newest edit the content does not show."""
    plan: tuple[int, str, str, tuple[str, ...]] | None = None


class Rehydrate(BaseStrategy):
    """Bring back, right after the compaction note, the newest version of up to `files`
    files the agent read or edited, its plan or todo list, and pinned memory.

    Args:
        files: how many files at most, the most recently touched first.
        max_file_tokens: tokens one file may take (longer ones keep head and tail).
        max_message_tokens: tokens the whole message may take; it also stays within what the
            budget leaves (a `Budgeted` budget or the compaction's token target).
        plan: bring back the newest plan/todo call (`PLAN_TOOLS`) or a message with
            ``metadata={"plan": True}``.
        pinned: bring back pinned and memory messages the view no longer sends.
        touched: what file a tool call touched (default `touched_file`).
        read: a function reading a file's current content (``Path.read_text`` when the
            agent's files are on this machine); None uses the newest content the
            conversation shows.

    Runs only when the view was compacted (a group dropped or replaced), and replaces
    the message it placed at an earlier compaction.
    """

    @renamed_options(max_tokens="max_message_tokens")
    def __init__(
        self,
        files: int = 5,
        *,
        max_file_tokens: int = 5_000,
        max_message_tokens: int = 20_000,
        plan: bool = True,
        pinned: bool = True,
        touched: Callable[[ToolCall], FileTouch | None] = touched_file,
        read: Callable[[str], str | None] | None = None,
    ) -> None:
        check_count("files", files)
        check_count("max_file_tokens", max_file_tokens, minimum=1)
        check_count("max_message_tokens", max_message_tokens, minimum=1)
        self.files = files
        self.max_file_tokens = max_file_tokens
        self.max_message_tokens = max_message_tokens
        self.plan = plan
        self.pinned = pinned
        self.touched = touched
        self.read = read

    def room_for(self, limit: int | None) -> int:
        """Tokens a compaction to `limit` leaves for the rehydration: `max_message_tokens`, at
        most a quarter of the limit (none without one).

        >>> Rehydrate().room_for(40_000), Rehydrate(max_message_tokens=2_000).room_for(40_000)
        (10000, 2000)
        """
        return 0 if limit is None else min(self.max_message_tokens, limit // 4)

    def apply(self, view: View, context: CompactionContext) -> bool:
        removed = self._remove_previous(view)
        anchor = _anchor(view)
        if anchor is None:
            return removed
        room = self.max_message_tokens
        limit = context.budget if context.budget is not None else _token_limit(context.target)
        if limit is not None:
            room = min(room, limit - view.total_tokens)
        items = self._items(view)
        # placed in a dropped group (no note to follow), it stands in for that group, as
        # the omission marker would; after a note it stands in for nothing
        stands_in = view.is_dropped(anchor)
        covers = tuple(m.id for m in view.index.group_messages(anchor)) if stands_in else ()
        message = _compose(items, view.index.tokenizer, room, covers)
        if message is None:
            if items:  # said, not silent: the compactor's shortfall says it too
                context.note(
                    detail=f"nothing rehydrated: {len(items)} item(s) to bring back, "
                    f"{max(0, room)} tokens of room under the budget or target"
                )
            return removed
        rendered = tuple(view.rendered(anchor))
        view.replace(anchor, (*rendered, message))
        view.keep(_MEMO, anchor)
        context.note(groups_replaced=1)
        return True

    # -- what to bring back -------------------------------------------------------------

    def _items(self, view: View) -> list[_Item]:
        items: list[_Item] = []
        if self.pinned:
            items.extend(_pinned(view))
        scan = self._scan(view)
        if self.plan and scan.plan is not None:
            at, title, text, covers = scan.plan
            if not _sent(view, at):
                items.append(_Item(title, text, covers))

        def last_touch(entry: tuple[str, tuple[int, FileTouch, str, str, tuple[str, ...]]]) -> int:
            return max(entry[1][0], scan.edited.get(entry[0], -1))

        files = 0
        for path, (at, _, how, text, covers) in sorted(
            scan.newest.items(), key=last_touch, reverse=True
        ):
            if files >= self.files:
                break
            edited_after = scan.edited.get(path, -1) > at
            if _sent(view, at) and not edited_after:
                continue  # the newest content is still in the context
            fresh = self.read(path) if self.read is not None else None
            if fresh is not None:
                title = f"{path} (current content)"
                items.append(_Item(title, fresh, covers, self.max_file_tokens))
            else:
                title = f"{path} ({how}, message {covers[-1]})"
                if edited_after:
                    title += "; edited since: read it again before relying on it"
                items.append(_Item(title, text, covers, self.max_file_tokens))
            files += 1
        return items

    def _scan(self, view: View) -> _Files:
        key = (_MEMO, "files", self.touched)
        scan = view.memo(key)
        if not isinstance(scan, _Files):
            scan = _Files()
            view.keep(key, scan)
        messages = view.index.messages
        for i in range(scan.position, len(messages)):
            _read_message(scan, i, messages[i], self.touched)
        scan.position = len(messages)
        return scan

    def _remove_previous(self, view: View) -> bool:
        """Take out the message an earlier run placed (where it remembers, else wherever
        one is: a view rebuilt from a store record has one and no memory of it)."""
        g = view.memo(_MEMO)
        if isinstance(g, int) and g < view.index.group_count:
            return _take_out(view, g)
        removed = False
        for group in view.index.groups:
            if not view.is_original(group.index):
                removed |= _take_out(view, group.index)
        return removed

    def __repr__(self) -> str:
        return f"Rehydrate(files={self.files}, max_file_tokens={self.max_file_tokens})"


_MEMO = "Rehydrate"


def _read_message(
    scan: _Files, i: int, m: Message, touched: Callable[[ToolCall], FileTouch | None]
) -> None:
    if m.role == "assistant":
        for call in m.tool_calls:
            if PLAN_TOOLS.search(call.name):
                args = call.parsed_arguments()
                text = json.dumps(args, indent=1, ensure_ascii=False) if args else call.arguments
                scan.plan = (i, f"plan ({call.name}, message {m.id})", text, (m.id,))
                continue
            touch = touched(call)
            if touch is None:
                continue
            if touch.kind == "write" and touch.content is not None:
                how = f"written by {call.name}"
                scan.newest[touch.path] = (i, touch, how, touch.content, (m.id,))
                scan.edited.pop(touch.path, None)
            elif touch.kind == "edit":
                scan.edited[touch.path] = i
            else:
                scan.calls[call.id] = (touch, i, call.name)
    elif m.role == "tool" and m.tool_call_id in scan.calls:
        touch, at, name = scan.calls.pop(m.tool_call_id)
        output = _output(m.text)
        if output is not None:
            scan.newest[touch.path] = (i, touch, f"read by {name}", output, (m.id,))
            if scan.edited.get(touch.path, -1) < at:
                scan.edited.pop(touch.path, None)
    elif m.metadata.get("plan") and m.text:
        scan.plan = (i, f"plan (message {m.id})", m.text, (m.id,))


def _take_out(view: View, g: int) -> bool:
    if view.is_original(g):
        return False
    rendered = tuple(view.rendered(g))
    kept = tuple(m for m in rendered if m.synthetic != "rehydrated")
    if kept == rendered:
        return False
    if kept:
        view.replace(g, kept)
    else:
        view.drop(g)
    return True


def _output(text: str) -> str | None:
    """A read's output: mini-swe-agent's ``<returncode>``/``<output>`` wrapper removed;
    None for a failed read or an error result."""
    m = _OUTPUT.match(text)
    if m is not None:
        text = m.group(2) if m.group(1) == "0" else ""
    if text.startswith("Error") or not text.strip():
        return None
    return text


def _sent(view: View, message_index: int) -> bool:
    """The original at `message_index` is sent as it is."""
    return view.is_original(view.index.group_of(message_index).index)


def _pinned(view: View) -> list[_Item]:
    out: list[_Item] = []
    idx = view.index
    for g in idx.groups:
        if not g.pinned or view.is_original(g.index):
            continue
        sent = {m.id for m in view.rendered(g.index)}
        for m in idx.group_messages(g.index):
            if m.is_protected and m.id not in sent and m.text:
                out.append(_Item(f"pinned ({m.role}, message {m.id})", m.text, (m.id,)))
    return out


def _anchor(view: View) -> int | None:
    """The group to place the message after: the newest summary note, else the first
    group the compaction dropped or replaced (after a provider's compaction item, never
    before it); None when nothing was compacted."""
    first: int | None = None
    note: int | None = None
    # what precedes a provider's own compaction item is not sent (the provider drops it)
    boundary = getattr(view.index, "compaction_group", None)
    for g in view.index.groups:
        if boundary is not None and g.index <= boundary:
            continue
        if g.kind == "system" or view.is_original(g.index) or g.open_calls:
            continue
        if first is None:
            first = g.index
        if any(m.synthetic in ("summary", "facts") for m in view.rendered(g.index)):
            note = g.index
    return note if note is not None else first


def _compose(
    items: Sequence[_Item], tok: Tokenizer, room: int, covers: tuple[str, ...]
) -> Message | None:
    parts = [HEADER]
    copies: list[str] = []
    used = tok.count_text(HEADER) + 8  # the message's own overhead
    for item in items:
        head = f"\n## {item.title}\n"
        text = item.text
        cap = min(item.cap or room, room - used - tok.count_text(head) - 4)
        if cap < 32:
            continue
        text = (
            clamp_text(text, tokenizer=tok, max_tokens=cap, head=cap * 7 // 10, tail=cap // 4)
            or text
        )
        block = head + _fenced(text)
        cost = tok.count_text(block)
        if used + cost > room:
            continue
        parts.append(block)
        copies.extend(item.covers)
        used += cost
    if len(parts) == 1:
        return None
    # a copy does not stand in for what it copies (those originals stay sent, summarized
    # or dropped): it names them in its metadata
    text = "\n".join(parts)
    return Message.user(
        text, synthetic="rehydrated", covers=covers, metadata={COPIES: tuple(copies)}
    )


def _fenced(text: str) -> str:
    """`text` in a code fence longer than any backtick run inside it."""
    longest = max((len(r) for r in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text.rstrip()}\n{fence}"
