"""The compacted projection of a history.

A `View` sits over a `MessageIndex` and says, group by group, what the model is sent:
the original messages (the default), nothing (*dropped*), or synthetic messages that
stand in for it (a collapsed note, a clamped copy, a summary spanning several groups).
Strategies edit a View; the originals in the index are never touched, and every
synthetic message names the originals it covers.

The view is live: groups appended to the index after it was made are included. Its
totals are kept as deltas against the index's, so reading them is O(1).

>>> from kompakt.index import MessageIndex
>>> from kompakt.messages import Message
>>> idx = MessageIndex([Message.user("a"), Message.assistant("b"), Message.user("c")])
>>> view = View(idx)
>>> view.drop(1)
>>> [m.text for m in view.render()]
['a', 'c']
>>> view.dropped_ids() == {idx.messages[1].id}
True
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from operator import attrgetter

from kompakt.index import Group, GroupKind, MessageIndex
from kompakt.messages import Message

__all__ = ["OMITTED_NOTE", "View"]

OMITTED_NOTE = "[Earlier conversation omitted to fit the context window.]"
"""Put first when removal would leave the conversation opening with a non-user message
(Anthropic requires a user message first)."""

_EMPTY: tuple[Message, ...] = ()
_PINNED, _MEMORY = attrgetter("pinned"), attrgetter("memory")
_CHARS = attrgetter("char_count")


class View:
    """Which groups of an index are sent as they are, dropped, or stood in for."""

    def __init__(self, index: MessageIndex) -> None:
        self.index = index
        # the index's own (growing) list of groups, read without a call per question
        self._groups: Sequence[Group] = index.groups
        self._replaced: dict[int, tuple[Message, ...]] = {}
        # tokens and characters of each (non-empty) replacement, as accounted when it was
        # put in: taking it out again, or pricing the group, counts nothing twice
        self._sizes: dict[int, tuple[int, int, tuple[Message, ...]]] = {}
        # a pending group replaced (its arrived results clamped) may still grow: the size
        # it had then, so the results that arrive later are sent after its replacement
        self._partial: dict[int, tuple[int, int, int]] = {}
        self._removed_tokens = 0
        self._added_tokens = 0
        # tokens of the costliest replacement ever put in (a bound: it stays when that one
        # goes), so `messages_within` answers without a walk
        self._most_replaced = 0
        self._removed_msgs = 0
        self._added_msgs = 0
        self._removed_chars = 0
        self._added_chars = 0
        self._dropped_groups = 0
        self._removed_user_groups = 0
        self._removed_tool_groups = 0
        self._scan_from = 0
        self._dropped_before_scan = 0
        # candidates() starts at these: every group before them is settled (system,
        # pinned, or dropped / replaced), so a walk costs what it touches, not the history
        self._live_from = 0
        self._original_from = 0
        # a strategy's own settled prefix (see `resume`), and the groups in it edited since
        self._cursors: dict[object, int] = {}
        self._revisit: dict[object, set[int]] = {}
        # what a strategy remembers of this view's history (see `memo`)
        self._memos: dict[object, object] = {}
        self._marker = Message.user(OMITTED_NOTE, synthetic="omitted")
        self._marker_tokens = index.tokenizer.count_message(self._marker)
        # (group, what it was) per edit while journaling (see `journal`)
        self._journal: list[tuple[int, tuple[Message, ...] | None]] | None = None
        # groups before this one were dropped because a provider compaction follows them
        self._superseded_to = 0
        self._supersede()

    def _supersede(self) -> None:
        """Drop what came before the newest provider compaction, as the provider does
        (its originals stay in the index). O(1) when no new compaction arrived."""
        boundary = self.index.compaction_group
        if boundary is None or boundary <= self._superseded_to:
            return
        groups = self._groups
        for g in range(self._superseded_to, boundary):
            if groups[g].kind != "system" and not self.is_dropped(g):
                self._set(g, _EMPTY)
        self._superseded_to = boundary

    # -- state of one group ---------------------------------------------------------

    def is_original(self, group: int) -> bool:
        """The group is sent as it was recorded."""
        return group not in self._replaced

    def is_dropped(self, group: int) -> bool:
        """The group is sent as nothing."""
        return self._replaced.get(group) == _EMPTY

    def replacement(self, group: int) -> tuple[Message, ...] | None:
        """What stands in for the group (empty when dropped), or None for the original.

        For a pending batch replaced (its results clamped), the results that arrived
        since follow, as they are.
        """
        r = self._replaced.get(group)
        return r + self._arrived(group) if r and self._partial else r

    def rendered(self, group: int) -> Sequence[Message]:
        """The messages this group contributes to `render()`."""
        r = self._replaced.get(group)
        if r is None:
            return self.index.group_messages(group)
        return r + self._arrived(group) if self._partial else r

    def group_tokens(self, group: int) -> int:
        """Tokens the group contributes to `render()` (what `rendered(group)` costs).

        >>> from kompakt.index import MessageIndex
        >>> view = View(MessageIndex([Message.user("a" * 40), Message.assistant("b")]))
        >>> view.group_tokens(0)
        12
        >>> view.replace(0, [Message.user("a")])
        >>> view.group_tokens(0)
        5
        """
        r = self._replaced.get(group)
        if r is None:
            return self._groups[group].tokens
        known = self._sizes.get(group) if r else None
        count = self.index.tokenizer.count_message
        tokens = known[0] if known is not None and known[2] is r else sum(map(count, r))
        if self._partial:
            tokens += sum(map(count, self._arrived(group)))
        return tokens

    def _arrived(self, group: int) -> tuple[Message, ...]:
        """Results that joined a pending group after it was replaced."""
        snap = self._partial.get(group)
        if snap is None:
            return _EMPTY
        end = self._groups[group].end
        return tuple(self.index.messages[snap[0] : end]) if end > snap[0] else _EMPTY

    # -- edits ----------------------------------------------------------------------

    def _count_removed(self, g: Group) -> None:
        """The accounting of an original group no longer sent as it was."""
        self._removed_tokens += g.tokens
        self._removed_chars += g.chars
        self._removed_msgs += g.end - g.start
        if g.kind == "user":
            self._removed_user_groups += 1
        elif g.kind == "tool_call":
            self._removed_tool_groups += 1

    def drop(self, group: int) -> None:
        """Send nothing for `group` (its originals stay in the index)."""
        g = self._groups[group]
        if group in self._replaced or g.open_calls or self._journal is not None:
            self._set(group, _EMPTY)
            return
        # `_set` for the common case, an original group dropped (truncation drops
        # thousands in a row): the same accounting, without the general bookkeeping
        self._replaced[group] = _EMPTY
        self._count_removed(g)
        self._dropped_groups += 1
        if group < self._scan_from:
            self._scan_from = 0
            self._dropped_before_scan = 0

    def drop_all(self, groups: Iterable[int]) -> None:
        """`drop` each of `groups`, in one pass (truncation drops thousands at a time).

        >>> from kompakt.index import MessageIndex
        >>> view = View(MessageIndex([Message.user(t) for t in "abc"]))
        >>> view.drop_all([0, 1])
        >>> [m.text for m in view.render()]
        ['c']
        """
        index_groups, replaced = self._groups, self._replaced
        tokens = chars = msgs = users = tools = dropped = 0
        lowest = self._scan_from
        rest: list[int] = []
        journaling = self._journal is not None
        for i in groups:
            g = index_groups[i]
            if journaling or i in replaced or g.open_calls:
                rest.append(i)
                continue
            replaced[i] = _EMPTY
            tokens += g.tokens
            chars += g.chars
            msgs += g.end - g.start
            if g.kind == "user":
                users += 1
            elif g.kind == "tool_call":
                tools += 1
            dropped += 1
            if i < lowest:
                lowest = i
        self._removed_tokens += tokens
        self._removed_chars += chars
        self._removed_msgs += msgs
        self._removed_user_groups += users
        self._removed_tool_groups += tools
        self._dropped_groups += dropped
        if lowest < self._scan_from:
            self._scan_from = 0
            self._dropped_before_scan = 0
        for i in rest:
            self._set(i, _EMPTY)

    def replace(
        self, group: int, messages: Iterable[Message], *, tokens: int | None = None
    ) -> None:
        """Send `messages` instead of `group`; each should name what it `covers`.

        `tokens`, when the caller counted them already, is what `messages` cost by the
        index's tokenizer (it is not counted again).
        """
        new = tuple(messages)
        g = self._groups[group]
        if not new or group in self._replaced or g.open_calls or self._journal is not None:
            self._set(group, new, tokens)
            return
        # `_set` for the common case, an original group replaced (a strategy writes a note
        # for each of thousands): the same accounting, without the general bookkeeping
        self._replaced[group] = new
        self._count_removed(g)
        if len(new) == 1:
            chars = new[0].char_count
            if tokens is None:
                tokens = self.index.tokenizer.count_message(new[0])
        else:
            chars = sum(map(_CHARS, new))
            if tokens is None:
                tokens = sum(map(self.index.tokenizer.count_message, new))
        self._sizes[group] = (tokens, chars, new)
        self._added_tokens += tokens
        self._added_chars += chars
        self._added_msgs += len(new)
        if tokens > self._most_replaced:
            self._most_replaced = tokens
        if group < self._scan_from:
            self._scan_from = 0
            self._dropped_before_scan = 0
        if self._cursors:
            for key, at in self._cursors.items():
                if group < at:
                    self._revisit.setdefault(key, set()).add(group)
        if group < self._live_from:
            self._live_from = group

    def summarize(self, groups: Sequence[int], summary: Message) -> Message:
        """Stand `summary` in for all of `groups`, at the place of the first.

        The summary's `covers` is set to every original id of those groups, so the
        provenance is right whatever the groups showed before. Returns the summary
        as placed.
        """
        if not groups:
            raise ValueError("`groups` must name at least one group")
        ordered = sorted(set(groups))
        covers: list[str] = []
        for g in ordered:
            covers.extend(m.id for m in self.index.group_messages(g))
        placed = summary.evolve(covers=tuple(covers))
        for g in ordered[1:]:
            self._set(g, _EMPTY)
        self._set(ordered[0], (placed,))
        return placed

    def restore(self, group: int) -> None:
        """Send the original of `group` again."""
        self._set(group, None)

    def _set(self, g: int, new: tuple[Message, ...] | None, tokens: int | None = None) -> None:
        group = self._groups[g]
        old = self._replaced.get(g)
        if self._journal is not None:
            self._journal.append((g, old))
        partial = self._partial
        if partial and g in partial:
            # the results that arrived since were sent as they are: `new` must say
            # what becomes of them, so only the replaced part comes off
            snap = partial.pop(g)
            self._account(group, old, -1, snap)
        elif old is not None:
            self._account(group, old, -1)
        if new is None:
            self._replaced.pop(g, None)
        else:
            self._replaced[g] = new
            if group.open_calls:  # may grow: later results are sent after `new`
                partial[g] = (group.end, group.tokens, group.chars)
        self._account(group, new, +1, partial.get(g) if partial else None, tokens)
        if g < self._scan_from:  # a group the omission scan already passed changed
            self._scan_from = 0
            self._dropped_before_scan = 0
        if self._cursors and new != _EMPTY:  # a dropped group needs nothing from any walk
            for key, at in self._cursors.items():
                if g < at:
                    self._revisit.setdefault(key, set()).add(g)
        if new is None or new:
            self._live_from = min(self._live_from, g)
        if new is None:
            self._original_from = min(self._original_from, g)

    def _account(
        self,
        group: Group,
        r: tuple[Message, ...] | None,
        sign: int,
        snap: tuple[int, int, int] | None = None,
        tokens: int | None = None,
    ) -> None:
        if r is None:
            return
        if snap is None:
            self._removed_tokens += sign * group.tokens
            self._removed_chars += sign * group.chars
            self._removed_msgs += sign * (group.end - group.start)
        else:  # a pending group as it was when replaced
            self._removed_tokens += sign * snap[1]
            self._removed_chars += sign * snap[2]
            self._removed_msgs += sign * (snap[0] - group.start)
        if group.kind == "user":
            self._removed_user_groups += sign
        elif group.kind == "tool_call":
            self._removed_tool_groups += sign
        if not r:
            self._dropped_groups += sign
            return
        g = group.index
        known = self._sizes.pop(g, None) if sign < 0 else None
        if known is not None and known[2] is r:
            tokens, chars = known[0], known[1]
        else:
            count = self.index.tokenizer.count_message
            if len(r) == 1:
                tokens = count(r[0]) if tokens is None else tokens
                chars = r[0].char_count
            else:
                tokens = sum(map(count, r)) if tokens is None else tokens
                chars = sum(map(_CHARS, r))
        if sign > 0:
            self._sizes[g] = (tokens, chars, r)
            self._most_replaced = max(self._most_replaced, tokens)
        self._added_tokens += sign * tokens
        self._added_chars += sign * chars
        self._added_msgs += sign * len(r)

    # -- totals (the same names as MessageIndex, so triggers read either) -----------

    @property
    def total_tokens(self) -> int:
        """Tokens `render()` costs, overheads and the omission note included."""
        self._supersede()
        base = self.index.total_tokens - self._removed_tokens + self._added_tokens
        return base + (self._marker_tokens if self._needs_marker() else 0)

    @property
    def total_chars(self) -> int:
        self._supersede()
        return self.index.total_chars - self._removed_chars + self._added_chars

    @property
    def message_count(self) -> int:
        self._supersede()
        marker = 1 if self._needs_marker() else 0
        return self.index.message_count - self._removed_msgs + self._added_msgs + marker

    @property
    def group_count(self) -> int:
        """Groups that still send something."""
        self._supersede()
        return self.index.group_count - self._dropped_groups

    @property
    def turn_count(self) -> int:
        """User turns still sent verbatim."""
        self._supersede()
        return self.index.turn_count - self._removed_user_groups

    @property
    def tool_call_group_count(self) -> int:
        """Tool-call groups still sent as calls and results."""
        self._supersede()
        return self.index.tool_call_group_count - self._removed_tool_groups

    @property
    def groups(self) -> Sequence[Group]:
        return self._groups

    @property
    def changed(self) -> bool:
        """Anything differs from the originals."""
        return bool(self._replaced)

    def messages_within(self, limit: int) -> bool:
        """True when no message the view sends can cost more than `limit` tokens (a
        conservative O(1) check, by each message's tokens as its group was accounted:
        False means "maybe").

        >>> from kompakt.index import MessageIndex
        >>> view = View(MessageIndex([Message.user("a" * 400), Message.user("b")]))
        >>> view.messages_within(200), view.messages_within(50)
        (True, False)
        """
        if self._partial:  # results that joined a replaced batch are counted apart
            return False
        return max(self.index.max_message_tokens, self._most_replaced) <= limit

    # -- what may be touched --------------------------------------------------------

    def protected(self, group: int, min_preserved: int = 0) -> bool:
        """No strategy may change this group.

        System groups, groups with a pinned or memory message (a memory note standing
        in for the group included), the newest user
        message, a pending tool call, and the newest `min_preserved` groups.
        """
        g = self._groups[group]
        if (
            g.kind == "system"
            or g.pinned
            or g.open_calls  # pending
            or group == self.index.last_user_group
            or group >= len(self._groups) - min_preserved
        ):
            return True
        r = self._replaced.get(group)
        return r is not None and any(m.is_protected for m in r)  # a facts memory

    def candidates(
        self,
        min_preserved: int = 0,
        kinds: Iterable[GroupKind] | None = None,
        *,
        originals_only: bool = True,
        start: int = 0,
        revisit: Iterable[int] = (),
        pending: bool = False,
    ) -> Iterator[int]:
        """Groups a strategy may change, oldest first: those of `revisit` (older than
        `start`), then every group from `start` on.

        By default only groups still sent as recorded; `kinds` narrows the kinds.
        With `pending`, a tool-call group still waiting for a result is offered too,
        for edits that keep every message of it (clamping the results that arrived);
        results that arrive later are sent after its replacement.
        """
        self._supersede()
        wanted = frozenset(kinds) if kinds is not None else None
        groups = self._groups
        start = max(start, self._settle(originals_only))
        firsts = sorted(i for i in revisit if i < start)
        replaced = self._replaced
        last_user = self.index.last_user_group
        for i in (*firsts, *range(start, len(groups))) if firsts else range(start, len(groups)):
            g = groups[i]
            if wanted is not None and g.kind not in wanted:
                continue
            r = replaced.get(i)
            if r is not None and (originals_only or not r):  # replaced, or dropped
                continue
            # protected(), inlined: this is the loop every strategy walks
            if g.kind == "system" or g.pinned or i == last_user:
                continue
            if g.open_calls and not pending:
                continue
            if i >= len(groups) - min_preserved or (
                r is not None and (any(map(_PINNED, r)) or any(map(_MEMORY, r)))
            ):  # the last: m.is_protected, asked in C
                continue
            yield i

    def _settle(self, originals_only: bool) -> int:
        """Advance the settled prefix for this kind of walk; return where to start."""
        groups = self._groups
        i = self._original_from if originals_only else self._live_from
        last = len(groups) - 1
        while i < last:
            g = groups[i]
            settled = g.kind == "system" or g.pinned or self.is_dropped(i)
            if not settled and not (originals_only and i in self._replaced):
                break
            i += 1
        if originals_only:
            self._original_from = i
        else:
            self._live_from = i
        return i

    def resume(self, key: object) -> tuple[list[int], int]:
        """Where a strategy's walk named `key` may start again: the groups edited
        before its settled point since, and that point (nothing, 0 the first time).

        A strategy that records with `settle` how far every group needs nothing more
        from it pays, on the next compaction of a growing history, only for what is
        new or changed: pass both to `candidates(revisit=..., start=...)`.
        """
        return sorted(self._revisit.get(key, ())), self._cursors.get(key, 0)

    def settle(self, key: object, position: int, revisit: Iterable[int] = ()) -> None:
        """Record that groups before `position`, except `revisit`, need nothing more
        from walk `key`."""
        self._cursors[key] = position
        pending = {g for g in revisit if g < position}
        if pending:
            self._revisit[key] = pending
        else:
            self._revisit.pop(key, None)

    def memo(self, key: object) -> object | None:
        """What the strategy walk `key` kept with `keep`, or None.

        Copies of the view start with the same objects: a strategy keeping a mutable
        one should note the view it belongs to and copy it before changing it for
        another view.
        """
        return self._memos.get(key)

    def keep(self, key: object, value: object) -> None:
        """Keep `value` for the strategy walk `key` (see `memo`)."""
        self._memos[key] = value

    # -- output ---------------------------------------------------------------------

    def render(self) -> list[Message]:
        """The messages to send, in order."""
        self._supersede()
        out: list[Message] = []
        messages, replaced = self.index.messages, self._replaced
        marker_at = self._front() if self._needs_marker() else -1
        run = -1  # where the run of original groups not yet copied starts (-1: none)
        for g in self._groups:
            i = g.index
            r = replaced.get(i)
            if r is None and i != marker_at:
                if run < 0:
                    run = g.start
                continue
            if run >= 0:  # the originals before this group, in one slice
                out.extend(messages[run : g.start])
                run = -1
            if i == marker_at:
                out.append(self._marker)
            if r is None:
                run = g.start
            else:
                out.extend(r)
                if self._partial:
                    out.extend(self._arrived(i))
        if run >= 0:
            out.extend(messages[run:])
        return out

    def synthetic(self) -> list[Message]:
        """Every synthetic message the view sends (summaries, notes, clamped copies)."""
        return [m for r in self._replaced.values() for m in r]

    def dropped_ids(self) -> set[str]:
        """Ids of originals sent as nothing and covered by no synthetic message."""
        self._supersede()
        covered = {i for m in self.synthetic() for i in m.covers}
        out: set[str] = set()
        for g, r in self._replaced.items():
            if not r:
                out.update(m.id for m in self.index.group_messages(g) if m.id not in covered)
        return out

    def copy(self) -> View:
        """An independent view with the same edits."""
        other = View.__new__(View)
        other.__dict__.update(self.__dict__)
        other._replaced = dict(self._replaced)
        other._sizes = dict(self._sizes)
        other._partial = dict(self._partial)
        other._memos = dict(self._memos)
        other._cursors = dict(self._cursors)
        other._revisit = {k: set(v) for k, v in self._revisit.items()}
        if self._journal is not None:
            other._journal = []  # a copy journals its own edits, from its start
        return other

    # -- what changed -----------------------------------------------------------------

    @property
    def journaling(self) -> bool:
        """Whether edits are being recorded (see `journal`)."""
        return self._journal is not None

    def journal(self) -> list[tuple[int, tuple[Message, ...] | None]]:
        """Start (or go on) recording every edit: ``(group, what it sent before)``, in order.

        The list returned grows as the view is edited; a `copy` journals its own edits
        in a list of its own, from empty. What changed between two moments is then
        proportional to the edits, not to the history (``kompakt replay`` uses it).

        >>> from kompakt.index import MessageIndex
        >>> from kompakt.messages import Message
        >>> view = View(MessageIndex([Message.user("a"), Message.assistant("b")]))
        >>> log = view.journal()
        >>> view.drop(1)
        >>> log
        [(1, None)]
        """
        if self._journal is None:
            self._journal = []
        return self._journal

    # -- the omission note ------------------------------------------------------------

    def _front(self) -> int:
        """First group (not system, not dropped) sent; advances a cached scan point."""
        groups, replaced = self._groups, self._replaced
        i, n = self._scan_from, len(groups)
        dropped = 0
        while i < n:
            if groups[i].kind != "system":
                if replaced.get(i) != _EMPTY:  # is_dropped, inlined: a long dropped run
                    break
                dropped += 1
            i += 1
        self._dropped_before_scan += dropped
        self._scan_from = i
        return i

    def _needs_marker(self) -> bool:
        front = self._front()
        if front >= self.index.group_count or self._dropped_before_scan == 0:
            return False
        first = self.rendered(front)
        return bool(first) and first[0].role != "user"

    def __repr__(self) -> str:
        return (
            f"View(groups={self.group_count}/{self.index.group_count}, "
            f"tokens={self.total_tokens}/{self.index.total_tokens})"
        )
