"""What every adapter's overflow test shares: a long tool-using history, and the check
that a refused first request was compacted tighter, retried once and recorded."""

from __future__ import annotations

import json
from typing import Any

from fake_provider import FakeProvider

__all__ = ["FILE", "GROUPS", "assert_recovered_once", "request_size"]

GROUPS = 12
"""Tool calls in the history each test starts from."""
FILE = "def f(): pass\n" * 90
"""A large tool result (about 300 estimated tokens)."""


def request_size(body: dict[str, Any]) -> int:
    """Characters of what a request sent as its conversation."""
    return len(json.dumps(body.get("messages", body.get("input", ""))))


def assert_recovered_once(server: FakeProvider, events: list[Any], provider: str) -> Any:
    """Two requests, the second smaller; one compaction answering the overflow, within
    its retry budget. Returns that event."""
    assert len(server.requests) == 2
    first, second = (request_size(r) for r in server.requests)
    assert second < first
    recoveries = [e for e in events if e.overflow is not None]
    assert len(recoveries) == 1
    event = recoveries[0]
    assert event.overflow.provider == provider
    assert event.changed and event.tokens_after <= event.overflow.retry_budget(event.tokens_before)
    assert "context overflow" in event.reason
    return event
