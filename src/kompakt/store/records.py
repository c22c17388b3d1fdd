"""What a store records: sessions, and which view of a session is current.

A `CompactionRecord` names the synthetic messages that stand in for originals and the
originals sent as nothing; `apply_record` puts those edits back on a view over the
session's originals.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kompakt.index import MessageIndex
from kompakt.messages import Message
from kompakt.store import _codec
from kompakt.view import View

__all__ = ["CompactionRecord", "SessionInfo", "apply_record", "event_summary"]


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One session: its id, when it was created, its metadata and how many originals it holds."""

    id: str
    created_at: float
    metadata: Mapping[str, Any] = field(default_factory=dict)
    message_count: int = 0


@dataclass(frozen=True, slots=True)
class CompactionRecord:
    """Which view of a session is current, as the store keeps it.

    `synthetic` are the messages that stand in for originals (each names the ids it
    `covers`); `dropped` are ids sent as nothing and covered by no synthetic message;
    `upto` is how many originals existed when the view was made; `event` is a JSON
    summary of the compaction (tokens before/after, strategies, model calls).

    >>> from kompakt.index import MessageIndex
    >>> idx = MessageIndex([Message.user("a"), Message.assistant("b"), Message.user("c")])
    >>> view = View(idx)
    >>> view.drop(1)
    >>> rec = CompactionRecord.from_view(view)
    >>> rec.dropped == (idx.messages[1].id,), rec.upto
    (True, 3)
    """

    synthetic: tuple[Message, ...] = ()
    dropped: tuple[str, ...] = ()
    upto: int = 0
    event: Mapping[str, Any] = field(default_factory=dict)
    created_at: float = 0.0
    id: int | None = None
    """Set by the store when recorded (increasing per store)."""

    @classmethod
    def from_view(cls, view: View, event: Any = None) -> CompactionRecord:
        """The record of `view`; `event` may be a `CompactionEvent` or a dict."""
        synthetic: list[Message] = []
        for g in view.index.groups:
            r = view.replacement(g.index)
            if r:
                synthetic.extend(r)
        return cls(
            synthetic=tuple(synthetic),
            dropped=tuple(sorted(view.dropped_ids())),
            upto=view.index.message_count,
            event=event_summary(event),
            created_at=time.time(),
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (messages in the store's native form)."""
        return {
            "synthetic": [json.loads(_codec.encode(m)) for m in self.synthetic],
            "dropped": list(self.dropped),
            "upto": self.upto,
            "event": dict(self.event),
            "created_at": self.created_at,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, id: int | None = None) -> CompactionRecord:
        """The record `to_dict` wrote."""
        return cls(
            synthetic=tuple(_codec.decode(json.dumps(m)) for m in d.get("synthetic", ())),
            dropped=tuple(d.get("dropped", ())),
            upto=int(d.get("upto", 0)),
            event=dict(d.get("event", {})),
            created_at=float(d.get("created_at", 0.0)),
            id=id,
        )


def event_summary(event: Any) -> dict[str, Any]:
    """A JSON-ready summary of a compaction event (any object with the usual fields)."""
    if event is None:
        return {}
    if isinstance(event, Mapping):
        return {str(k): _plain(v) for k, v in event.items()}
    out: dict[str, Any] = {}
    for key in (
        "tokens_before",
        "tokens_after",
        "messages_before",
        "messages_after",
        "seconds",
        "reason",
        "trigger",
        "model_calls",
        "fallbacks",
    ):
        if hasattr(event, key):
            out[key] = _plain(getattr(event, key))
    steps = getattr(event, "steps", None)
    if steps:
        out["strategies"] = [getattr(s, "strategy", str(s)) for s in steps]
    overflow = getattr(event, "overflow", None)
    if overflow is not None:  # an overflow recovery: what the provider said
        keys = ("provider", "limit", "requested", "tokens_over", "output_tokens", "message")
        out["overflow"] = {k: _plain(getattr(overflow, k, None)) for k in keys}
    return out


def _plain(v: Any) -> Any:
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, Mapping):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return str(v)


def apply_record(view: View, record: CompactionRecord) -> View:
    """Put `record`'s edits on `view` (whose index holds the session's originals).

    Each synthetic message goes to the first group its covers touch; the other groups
    it covers and the groups of `dropped` ids send nothing. Ids the index does not
    hold are ignored (a record never invents originals).
    """
    index = view.index
    placed: dict[int, list[Message]] = {}
    covered: set[int] = set()
    last = -1
    for m in record.synthetic:
        # an original kept inside a partly replaced group (a call whose result was clamped
        # or superseded) goes back to its own group, before the synthetic messages after it
        ids = m.covers if m.synthetic is not None else (m.id,)
        groups = sorted({index.group_of(p).index for p in _positions(index, ids)})
        if not groups and m.synthetic is not None and not m.covers and last in placed:
            placed[last].append(m)  # a copy covering nothing (rehydrated) stays where it was
            continue
        if not groups:
            continue
        last = groups[0]
        placed.setdefault(groups[0], []).append(m)
        covered.update(groups)
    for g in sorted(covered):
        if g in placed:
            view.replace(g, placed[g])
        else:
            view.drop(g)
    for p in _positions(index, record.dropped):
        g = index.group_of(p).index
        if g not in covered:
            view.drop(g)
    return view


def _positions(index: MessageIndex, ids: Iterable[str]) -> list[int]:
    return [p for p in (index.position(i) for i in ids) if p is not None]
