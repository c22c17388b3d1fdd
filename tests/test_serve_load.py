"""A bounded load test on loopback: 50 conversations at once, 40 requests each, through a
real uvicorn proxy in front of the fake upstream: no errors, no original lost."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from kompakt.serve import ServeConfig, create_app
from kompakt.store import SQLiteStore
from serve_helpers import FakeUpstream, serving

CONVERSATIONS = 50
REQUESTS = 40


async def _conversation(client: httpx.AsyncClient, n: int) -> tuple[list[str], list[Any]]:
    history: list[dict[str, Any]] = [{"role": "system", "content": f"agent {n}"}]
    errors: list[str] = []
    for t in range(REQUESTS):
        history.append({"role": "user", "content": f"agent {n} asks {t}: " + "z" * 300})
        r = await client.post(
            "/v1/chat/completions", json={"model": "fake", "messages": history}, timeout=120
        )
        if r.status_code != 200:
            errors.append(f"{r.status_code} {r.text[:300]}")
        history.append({"role": "assistant", "content": f"answer {t} for {n}"})
    return errors, history[:-1]


@pytest.mark.slow
def test_fifty_concurrent_conversations_lose_nothing(tmp_path: Path) -> None:
    upstream = FakeUpstream()
    db = tmp_path / "load.db"
    with serving(upstream.app()) as fake_url:
        app = create_app(
            ServeConfig(openai_upstream=f"{fake_url}/v1", budget=3_000, store=str(db), env={})
        )
        proxy = app.state.proxy

        async def run(url: str) -> list[tuple[list[str], list[Any]]]:
            # connections idle past 2 s are dropped before uvicorn's 5 s keep-alive closes
            # them under a request (a slow machine otherwise races it)
            limits = httpx.Limits(max_connections=CONVERSATIONS, keepalive_expiry=2.0)
            async with httpx.AsyncClient(base_url=url, limits=limits) as client:
                return await asyncio.gather(
                    *(_conversation(client, n) for n in range(CONVERSATIONS))
                )

        with serving(app) as url:
            started = time.perf_counter()
            results = asyncio.run(run(url))
            seconds = time.perf_counter() - started
    assert [e for errors, _ in results for e in errors] == []
    assert len(upstream.seen) == CONVERSATIONS * REQUESTS
    assert all(not s.problems and s.tokens <= 3_000 for s in upstream.seen)
    convs = proxy.sessions.conversations
    assert len(convs) == CONVERSATIONS  # each recognised by its chain, none mixed
    store = SQLiteStore(db)
    for conv in convs.values():
        n = int(conv.items[0]["content"].split()[1])
        history = results[n][1]
        assert conv.items == history
        assert [m.text for m in store.messages(conv.id)] == [m["content"] for m in history]
    store.close()
    print(f"{CONVERSATIONS * REQUESTS} requests in {seconds:.1f} s")
