"""`repair`: make a conversation a provider accepts, and say every change made.

Recorded and framework-built histories break the tool-call rules more often than one
would think (a trimmed window that starts with a result, a call id reused by a retry,
a result logged twice or out of place, a crash between a call and its result).
`repair` fixes each such break and lists what it did, so nothing is lost silently:

* ``renamed_call_id``: a call id used twice gets a fresh one (``c1~2``), and the
  results right after that call follow it;
* ``moved_result``: a result that is not directly after its call is moved there;
* ``reattached_result``: a result naming no known call, right after a message with
  exactly one unanswered call, answers that call;
* ``dropped_orphan_result``: a result whose call is nowhere is dropped;
* ``dropped_duplicate_result``: a second result for one call is dropped;
* ``added_missing_result``: a call without a result gets ``[no result recorded]``
  (a trailing call still waiting for its result is left pending);
* ``dropped_empty_assistant``: an assistant message with no content and no calls.

Afterwards `find_problems` reports no tool-call problem (nor ``empty_assistant``), for
OpenAI and Anthropic alike; a valid conversation comes back unchanged, with no repairs.
Messages keep their order, ids and content; one pass, O(n).

>>> from kompakt.messages import Message, ToolCall
>>> call = ToolCall(id="c1", name="ls")
>>> msgs = [Message.user("list"), Message.tool("stale", tool_call_id="c0"),
...         Message.assistant(tool_calls=[call]), Message.user("and?")]
>>> fixed, repairs = repair(msgs)
>>> [m.role for m in fixed]
['user', 'assistant', 'tool', 'user']
>>> fixed[2].text
'[no result recorded]'
>>> for r in repairs:
...     print(r)
message 1: dropped_orphan_result: result for call 'c0', which is not in the conversation: 'stale'
message 2: added_missing_result: call 'c1' (ls) had no result: answered '[no result recorded]'
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, TypeAlias

from kompakt.messages import Message, ToolCall

__all__ = ["MISSING_RESULT", "Repair", "RepairKind", "repair"]

MISSING_RESULT = "[no result recorded]"
"""The text of the tool result `repair` adds for a call that never got one."""

RepairKind: TypeAlias = Literal[
    "renamed_call_id",
    "moved_result",
    "reattached_result",
    "dropped_orphan_result",
    "dropped_duplicate_result",
    "added_missing_result",
    "dropped_empty_assistant",
]


@dataclass(frozen=True, slots=True)
class Repair:
    """One change `repair` made.

    >>> str(Repair(3, "moved_result", "result for call 'c1' moved next to its call"))
    "message 3: moved_result: result for call 'c1' moved next to its call"
    """

    index: int
    """The position in the input of the message changed, dropped or answered."""
    kind: RepairKind
    """What was done (see the module docs)."""
    detail: str
    """One line saying what and why, naming the call id."""

    def __str__(self) -> str:
        return f"message {self.index}: {self.kind}: {self.detail}"


def repair(messages: Iterable[Message] | Any) -> tuple[list[Message], list[Repair]]:
    """The conversation with every tool-call break fixed, and the list of repairs made
    (in input order). `messages` is a message list or anything `kompakt.loads` parses;
    the input is never mutated.
    """
    from kompakt.validation import _messages  # the same input rules as find_problems

    msgs = list(_messages(messages))
    repairs: list[Repair] = []
    msgs = _unique_call_ids(msgs, repairs)
    chosen, dropped = _place_results(msgs, repairs)
    out = _rebuild(msgs, chosen, dropped, repairs)
    repairs.sort(key=lambda r: r.index)  # stable: each message's repairs in the order made
    return out, repairs


# -- 1. one id per call ---------------------------------------------------------------


def _unique_call_ids(msgs: list[Message], repairs: list[Repair]) -> list[Message]:
    """Rename every call id already used by an earlier call, and re-point the results
    directly after the renamed call."""
    taken = {c.id for m in msgs for c in m.tool_calls}
    taken.update(m.tool_call_id for m in msgs if m.tool_call_id is not None)
    seen: set[str] = set()
    for i, m in enumerate(msgs):
        if not m.tool_calls or m.role == "tool":
            continue
        calls: list[ToolCall] = []
        ids_for: dict[str, list[str]] = {}  # original id -> this message's ids for it, in order
        for c in m.tool_calls:
            new_id = c.id
            if c.id in seen:
                new_id = _fresh(c.id, taken)
                repairs.append(
                    Repair(
                        i, "renamed_call_id", f"call id {c.id!r} was used before: now {new_id!r}"
                    )
                )
            seen.add(new_id)
            ids_for.setdefault(c.id, []).append(new_id)
            calls.append(c if new_id == c.id else replace(c, id=new_id))
        if any(ids != [old] for old, ids in ids_for.items()):
            msgs[i] = m.evolve(tool_calls=tuple(calls), id=m.id)
            _repoint_results(msgs, i, ids_for, repairs)
    return msgs


def _fresh(old: str, taken: set[str]) -> str:
    n = 2
    while f"{old}~{n}" in taken:
        n += 1
    new = f"{old}~{n}"
    taken.add(new)
    return new


def _repoint_results(
    msgs: list[Message], i: int, ids_for: dict[str, list[str]], repairs: list[Repair]
) -> None:
    """The results right after call message `i` answer its calls in order: the k-th
    result naming an id answers the k-th call that had that id."""
    used: dict[str, int] = {}
    j = i + 1
    while j < len(msgs) and msgs[j].role == "tool":
        r = msgs[j]
        old = r.tool_call_id
        ids = ids_for.get(old) if old is not None else None
        if old is not None and ids is not None:
            k = used.get(old, 0)
            used[old] = k + 1
            if k < len(ids) and ids[k] != old:
                repairs.append(
                    Repair(
                        j,
                        "renamed_call_id",
                        f"result now answers {ids[k]!r}, the call right before it "
                        f"(renamed from {old!r})",
                    )
                )
                msgs[j] = r.evolve(tool_call_id=ids[k], id=r.id)
        j += 1


# -- 2. every result with its call ----------------------------------------------------


def _place_results(
    msgs: Sequence[Message], repairs: list[Repair]
) -> tuple[dict[str, int], set[int]]:
    """Which result answers each call ({call id: result position}), and the positions
    dropped."""
    call_at = {c.id: i for i, m in enumerate(msgs) if m.role != "tool" for c in m.tool_calls}
    owner_of = _owners(msgs)
    chosen: dict[str, int] = {}
    orphans: list[int] = []
    for j, m in enumerate(msgs):
        cid = m.tool_call_id
        if m.role != "tool":
            continue
        if cid is None or cid not in call_at:
            orphans.append(j)
            continue
        first = chosen.get(cid)
        if first is None or (owner_of[j] == call_at[cid] != owner_of[first]):
            chosen[cid] = j  # the first result, or else the first one right after its call
    dropped: set[int] = set()
    for j, m in enumerate(msgs):
        cid = m.tool_call_id
        if m.role == "tool" and cid is not None and cid in call_at and chosen[cid] != j:
            dropped.add(j)
            repairs.append(
                Repair(
                    j,
                    "dropped_duplicate_result",
                    f"call {cid!r} already has a result (message {chosen[cid]}): {_preview(m)}",
                )
            )
    for cid, j in chosen.items():
        if owner_of[j] != call_at[cid]:
            repairs.append(
                Repair(
                    j,
                    "moved_result",
                    f"result for call {cid!r} moved next to its call (message {call_at[cid]})",
                )
            )
    _reattach(msgs, orphans, owner_of, chosen, dropped, repairs)
    return chosen, dropped


def _owners(msgs: Sequence[Message]) -> list[int]:
    """For each position, the call message whose run of results it is in (-1: none)."""
    owners: list[int] = []
    owner = -1
    for i, m in enumerate(msgs):
        if m.role != "tool":
            owner = i if m.tool_calls else -1
        owners.append(owner)
    return owners


def _reattach(
    msgs: Sequence[Message],
    orphans: list[int],
    owner_of: list[int],
    chosen: dict[str, int],
    dropped: set[int],
    repairs: list[Repair],
) -> None:
    """An orphan right after a call message with exactly one unanswered call answers
    it; any other orphan is dropped."""
    for j in orphans:
        m, owner = msgs[j], owner_of[j]
        unanswered = (
            [c.id for c in msgs[owner].tool_calls if c.id not in chosen] if owner >= 0 else []
        )
        said = "no call id" if m.tool_call_id is None else f"call {m.tool_call_id!r}"
        if len(unanswered) == 1:
            chosen[unanswered[0]] = j
            repairs.append(
                Repair(
                    j,
                    "reattached_result",
                    f"result for {said}, which is not in the conversation, now answers "
                    f"{unanswered[0]!r}, the one unanswered call right before it",
                )
            )
            continue
        dropped.add(j)
        repairs.append(
            Repair(
                j,
                "dropped_orphan_result",
                f"result for {said}, which is not in the conversation: {_preview(m)}",
            )
        )


# -- 3. the fixed list ----------------------------------------------------------------


def _rebuild(
    msgs: Sequence[Message], chosen: dict[str, int], dropped: set[int], repairs: list[Repair]
) -> list[Message]:
    for i, m in enumerate(msgs):
        if m.role == "assistant" and not m.tool_calls and _empty(m):
            dropped.add(i)
            repairs.append(Repair(i, "dropped_empty_assistant", "no text, no parts, no calls"))
    kept = [i for i, m in enumerate(msgs) if m.role != "tool" and i not in dropped]
    pending = kept[-1] if kept and msgs[kept[-1]].tool_calls else -1
    out: list[Message] = []
    for i in kept:
        m = msgs[i]
        out.append(m)
        if not m.tool_calls:
            continue
        answers = sorted((chosen[c.id], c.id) for c in m.tool_calls if c.id in chosen)
        for j, cid in answers:  # in the order they came: a valid run stays as it was
            r = msgs[j]
            out.append(r if r.tool_call_id == cid else r.evolve(tool_call_id=cid, id=r.id))
        if i == pending:
            continue  # a trailing call may still be waiting for its result
        for c in m.tool_calls:
            if c.id not in chosen:
                out.append(Message.tool(MISSING_RESULT, tool_call_id=c.id))
                repairs.append(
                    Repair(
                        i,
                        "added_missing_result",
                        f"call {c.id!r} ({c.name}) had no result: answered {MISSING_RESULT!r}",
                    )
                )
    return out


def _empty(m: Message) -> bool:
    return all(p.kind == "text" and not p.text for p in m.content)


def _preview(m: Message, limit: int = 60) -> str:
    text = " ".join(m.text.split())
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")
