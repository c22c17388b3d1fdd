"""What `kompakt serve` keeps in memory: at most `max_conversations`, the least recently
used let go and rebuilt from the store when continued (same id, same view sent, no
original written twice), named conversations across a restart, and a request that adds a
malformed message refused without harming its conversation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from kompakt.serve import ServeConfig, create_app
from kompakt.store import SQLiteStore
from serve_helpers import FakeUpstream, serving, tool_turns


def _post(url: str, messages: list[Any], **headers: str) -> httpx.Response:
    return httpx.post(
        f"{url}/v1/chat/completions",
        json={"model": "fake", "messages": messages, "temperature": 0},
        headers=headers,
        timeout=60,
    )


def _run(url: str, seed: str, turns: int, history: list[Any] | None = None) -> list[Any]:
    history = history if history is not None else [{"role": "system", "content": seed}]
    for step in tool_turns(turns, seed=seed):
        history += step
        if history[-1]["role"] != "assistant":
            assert _post(url, history).status_code == 200
    return history


def test_conversations_over_the_limit_are_let_go_and_rebuilt_from_the_store(
    tmp_path: Path,
) -> None:
    upstream = FakeUpstream()
    db = tmp_path / "serve.db"
    with serving(upstream.app()) as fake_url:
        config = ServeConfig(
            openai_upstream=f"{fake_url}/v1", budget=2_000, store=str(db), env={},
            max_conversations=2,
        )  # fmt: skip
        app = create_app(config)
        sessions = app.state.proxy.sessions
        with serving(app) as url:
            a = _run(url, "alpha ", 12)
            conv = next(iter(sessions.conversations.values()))
            assert conv.stats.compactions >= 1
            sent_before = upstream.seen[-1].body["messages"]
            _run(url, "beta ", 1)
            _run(url, "gamma ", 1)
            assert conv.id not in sessions.conversations and sessions.released == 1
            a += [{"role": "user", "content": "alpha goes on"}]
            assert _post(url, a).status_code == 200
    assert sessions.rebuilt == 1
    back = sessions.conversations[conv.id]  # the same conversation, not a new one
    assert back is not conv and back.items == a
    sent_after = upstream.seen[-1].body["messages"]
    assert sent_after[: len(sent_before)] == sent_before  # the view it sent, put back
    assert not upstream.seen[-1].problems and upstream.seen[-1].tokens <= 2_000
    store = SQLiteStore(db)
    assert len(store.list_sessions()) == 3
    assert [m.text for m in store.messages(conv.id)] == [m.get("content") or "" for m in a]
    store.close()


def test_a_named_conversation_goes_on_after_a_restart(tmp_path: Path) -> None:
    upstream = FakeUpstream()
    db = tmp_path / "serve.db"
    history = [{"role": "user", "content": "first question"}]
    with serving(upstream.app()) as fake_url:
        config = ServeConfig(openai_upstream=f"{fake_url}/v1", budget=4_000, store=str(db), env={})
        with serving(create_app(config)) as url:
            assert _post(url, history, **{"X-Kompakt-Session": "job-7"}).status_code == 200
        history += [
            {"role": "assistant", "content": "first answer"},
            {"role": "user", "content": "second question"},
        ]
        app = create_app(config)  # a new process, the same store
        with serving(app) as url:
            assert _post(url, history, **{"X-Kompakt-Session": "job-7"}).status_code == 200
            other = [{"role": "user", "content": "another task"}]
            assert _post(url, other, **{"X-Kompakt-Session": "job-7"}).status_code == 200
    assert sorted(app.state.proxy.sessions.conversations) == ["job-7", "job-7~b2"]
    store = SQLiteStore(db)
    assert [m.text for m in store.messages("job-7")] == [m["content"] for m in history]
    assert [m.text for m in store.messages("job-7~b2")] == ["another task"]
    store.close()


def test_a_malformed_new_message_is_refused_and_its_conversation_goes_on(
    tmp_path: Path,
) -> None:
    upstream = FakeUpstream()
    with serving(upstream.app()) as fake_url:
        config = ServeConfig(
            openai_upstream=f"{fake_url}/v1", budget=4_000, store=":memory:", env={}
        )
        app = create_app(config)
        with serving(app) as url:
            history = _run(url, "delta ", 3)
            bad = [*history, {"role": "tool", "content": "a result of no call"}]
            refused = _post(url, bad)
            history += [{"role": "user", "content": "and now?"}]
            ok = _post(url, history)
    assert refused.status_code == 400
    assert "tool_call_id" in refused.json()["error"]["message"]
    assert ok.status_code == 200
    assert app.state.proxy.sessions.followed >= 3  # the fast path refused it, not only the full one
    conv = next(iter(app.state.proxy.sessions.conversations.values()))
    assert len(app.state.proxy.sessions.conversations) == 1 and conv.items == history
    assert upstream.seen[-1].body["messages"][-1] == {"role": "user", "content": "and now?"}
