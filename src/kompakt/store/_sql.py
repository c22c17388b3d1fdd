"""What the SQL stores (SQLite, PostgreSQL) share: schema checks, id collisions, search rows."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from kompakt.errors import StoreError
from kompakt.messages import Message
from kompakt.store import _codec

__all__ = ["check_schema", "first_rows", "taken_ids"]


def check_schema(version: int, latest: int, where: str) -> None:
    """Refuse storage written by a newer kompakt (its schema is unknown here)."""
    if version > latest:
        raise StoreError(
            f"{where} has schema version {version}, newer than this kompakt ({latest}): "
            "upgrade kompakt"
        )


def taken_ids(
    ids: Iterable[str],
    existing: Callable[[list[str]], Iterable[str]],
    suffixed: Callable[[str], Iterable[str]],
) -> set[str]:
    """Ids of a session that collide with `ids`: those stored (`existing(ids)`) and their
    ``~n`` forms (`suffixed(id)`), so `unique_ids` picks a free one."""
    taken = set(existing(sorted(set(ids))))
    for mid in list(taken):
        taken.update(suffixed(mid))
    return taken


def first_rows(tiers: Iterable[Iterable[Sequence[Any]]], limit: int) -> list[tuple[int, Message]]:
    """Up to `limit` ``(seq, message)`` from ``(seq, body)`` rows, tier by tier (best tier
    first, each tier evaluated only while more rows are needed), without repeats."""
    found: dict[int, str] = {}
    for rows in tiers:
        if len(found) >= limit:
            break
        for seq, body in rows:
            if int(seq) not in found and len(found) < limit:
                found[int(seq)] = body
    return [(seq, _codec.decode(body)) for seq, body in found.items()]
