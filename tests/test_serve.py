"""`kompakt serve` with the real `openai` and `anthropic` clients, through real uvicorn
servers on loopback, in front of a fake upstream that validates every request."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest
from openai.types.chat import ChatCompletion

from kompakt.compactor import Compactor
from kompakt.formats.anthropic import from_anthropic
from kompakt.serve import ServeConfig, create_app
from kompakt.serve.conversation import source_of
from kompakt.store import SQLiteStore
from serve_helpers import TOOLS, FakeUpstream, serving, tool_turns

KEY = "sk-test-SECRET-4f9c1d"


@pytest.fixture
def fake() -> Iterator[tuple[FakeUpstream, str]]:
    upstream = FakeUpstream()
    with serving(upstream.app()) as url:
        yield upstream, url


def _proxy(fake_url: str, tmp_path: Path, **options: Any) -> tuple[Any, Any]:
    options.setdefault("budget", 4_000)
    options.setdefault("store", str(tmp_path / "serve.db"))
    config = ServeConfig(
        openai_upstream=f"{fake_url}/v1", anthropic_upstream=fake_url, env={}, **options
    )
    app = create_app(config)
    return app, app.state.proxy


def _openai(url: str, **kw: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key=KEY, max_retries=0, **kw)


def test_a_300_turn_tool_run_reaches_the_upstream_valid_and_under_budget(
    fake: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    upstream, fake_url = fake
    app, proxy = _proxy(fake_url, tmp_path, budget=6_000)
    history: list[dict[str, Any]] = [{"role": "system", "content": "You run commands."}]
    requests = 0
    with serving(app) as url:
        client = _openai(url)
        for step in tool_turns(300):
            history += step
            if history[-1]["role"] == "assistant":
                continue
            # the client's own `post`: its typed `create` spends ~0.7 s per request
            # transforming a 1,200-message list, which would be all this test measures
            reply = client.post(
                "/chat/completions",
                body={"model": "fake", "messages": history, "tools": TOOLS},
                cast_to=ChatCompletion,
            )
            assert reply.choices[0].message.content == "ok"
            requests += 1
    assert len(upstream.seen) == requests == 600
    assert all(not s.problems for s in upstream.seen), upstream.seen[-1].problems
    assert max(s.tokens for s in upstream.seen) <= 6_000
    assert all(s.body["tools"] == TOOLS for s in upstream.seen)  # only messages change
    conv = next(iter(proxy.sessions.conversations.values()))
    assert len(proxy.sessions.conversations) == 1  # recognised without a header
    assert proxy.sessions.followed >= requests - 2  # each read only where it was new
    assert conv.stats.compactions >= 5
    # between compactions the prefix sent upstream is the same bytes
    assert conv.stats.stable >= 0.9 * (requests - 1 - conv.stats.compactions)
    for before, after in zip(upstream.seen, upstream.seen[1:], strict=False):
        a, b = before.body["messages"], after.body["messages"]
        if b[: len(a)] != a:
            continue
        assert json.dumps(b[: len(a)]) == json.dumps(a)
    store = SQLiteStore(tmp_path / "serve.db")
    assert store.count(conv.id) == len(history) - 1  # every original but the last answer
    assert len(store.compactions(conv.id)) == conv.stats.compactions
    store.close()


def test_openai_streaming_passes_through_and_its_usage_calibrates(
    fake: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    upstream, fake_url = fake
    upstream.usage_extra = 500
    app, proxy = _proxy(fake_url, tmp_path, budget=3_000)
    history: list[dict[str, Any]] = []
    with serving(app) as url:
        client = _openai(url)
        for step in tool_turns(40):
            history += step
            if history[-1]["role"] == "assistant":
                continue
            stream = client.chat.completions.create(  # type: ignore[call-overload]
                model="fake",
                messages=history,
                stream=True,
                stream_options={"include_usage": True},
            )
            chunks = list(stream)
            text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
            assert text == "ok"
            assert chunks[-1].usage is not None
    conv = next(iter(proxy.sessions.conversations.values()))
    assert conv.offset == 500
    assert all(not s.problems for s in upstream.seen)
    # calibrated: after the first reply, what the upstream counts stays under the budget
    assert max(s.tokens + 500 for s in upstream.seen[1:]) <= 3_000


def test_anthropic_client_streaming_and_not_with_parallel_tool_calls(
    fake: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    upstream, fake_url = fake
    app, proxy = _proxy(fake_url, tmp_path, budget=3_000)
    history: list[dict[str, Any]] = []
    with serving(app) as url:
        client = anthropic.Anthropic(base_url=url, api_key=KEY, max_retries=0)
        for t in range(40):
            history.append({"role": "user", "content": f"turn {t}: look at both files"})
            calls = [
                {
                    "type": "tool_use",
                    "id": f"t{t}_{k}",
                    "name": "run",
                    "input": {"cmd": f"cat f{t}_{k}"},
                }
                for k in range(2)
            ]
            results = [
                {"type": "tool_result", "tool_use_id": c["id"], "content": "y" * 500} for c in calls
            ]
            if t % 2:
                with client.messages.stream(
                    model="fake",
                    max_tokens=50,
                    system="be brief",
                    messages=history,  # type: ignore[arg-type]
                ) as stream:
                    assert stream.get_final_text() == "ok"
            else:
                reply = client.messages.create(
                    model="fake",
                    max_tokens=50,
                    system="be brief",
                    messages=history,  # type: ignore[arg-type]
                )
                assert reply.content[0].text == "ok"  # type: ignore[union-attr]
            history.append({"role": "assistant", "content": calls})
            history.append({"role": "user", "content": results})
            client.messages.create(model="fake", max_tokens=50, system="be brief", messages=history)  # type: ignore[arg-type]
            history.append({"role": "assistant", "content": [{"type": "text", "text": "done"}]})
    assert len(upstream.seen) == 80
    assert all(not s.problems for s in upstream.seen)
    assert all(s.body["system"] == "be brief" for s in upstream.seen)
    assert max(s.tokens for s in upstream.seen) <= 3_000
    for s in upstream.seen:  # parallel calls stay together, each with its result
        for i, m in enumerate(s.body["messages"]):
            uses = (
                [
                    b["id"]
                    for b in m["content"]
                    if isinstance(m["content"], list) and b.get("type") == "tool_use"
                ]
                if m["role"] == "assistant"
                else []
            )
            if uses:
                nxt = s.body["messages"][i + 1]["content"]
                assert [b["tool_use_id"] for b in nxt if b.get("type") == "tool_result"] == uses
    conv = next(iter(proxy.sessions.conversations.values()))
    assert conv.api == "anthropic" and conv.stats.compactions >= 1
    assert len(from_anthropic(upstream.seen[-1].body)) < len(
        from_anthropic({"system": "be brief", "messages": history[:-1]})
    )


def test_an_upstream_overflow_is_compacted_harder_and_retried_once(
    fake: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    upstream, fake_url = fake
    upstream.overflow_at = 2_500  # the upstream's window is smaller than the budget
    app, proxy = _proxy(fake_url, tmp_path, budget=20_000)
    history: list[dict[str, Any]] = []
    with serving(app) as url:
        client = _openai(url)
        for step in tool_turns(12):
            history += step
            if history[-1]["role"] != "assistant":
                client.chat.completions.create(model="fake", messages=history)  # type: ignore[arg-type]
    over = [i for i, s in enumerate(upstream.seen) if s.tokens > 2_500]
    assert over, "the run never overflowed the upstream"
    first = over[0]
    assert upstream.seen[first + 1].tokens <= 2_500  # the retry fitted
    assert upstream.seen[first + 1].body["messages"][-1] == history_at(upstream, first)
    conv = next(iter(proxy.sessions.conversations.values()))
    assert any("overflow" in t.note for t in conv.timeline)
    assert all(not s.problems for s in upstream.seen)


def history_at(upstream: FakeUpstream, i: int) -> Any:
    return upstream.seen[i].body["messages"][-1]


def test_a_forked_history_starts_a_branch_and_never_mixes(
    fake: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    upstream, fake_url = fake
    app, proxy = _proxy(fake_url, tmp_path, budget=100_000)
    main: list[dict[str, Any]] = []
    with serving(app) as url:
        client = _openai(url)
        for t in range(4):
            main += [{"role": "user", "content": f"question {t}"}]
            client.chat.completions.create(model="fake", messages=main)  # type: ignore[arg-type]
            main += [{"role": "assistant", "content": f"answer {t}"}]
        fork = [
            *main[:3],
            {"role": "assistant", "content": "a different answer"},
            {"role": "user", "content": "go on from here"},
        ]
        client.chat.completions.create(model="fake", messages=fork)  # type: ignore[arg-type]
        main += [{"role": "user", "content": "question 4"}]
        client.chat.completions.create(model="fake", messages=main)  # type: ignore[arg-type]
    assert upstream.seen[-2].body["messages"] == fork
    assert upstream.seen[-1].body["messages"] == main
    convs = list(proxy.sessions.conversations.values())
    assert len(convs) == 2
    branch = next(c for c in convs if c.parent is not None)
    trunk = next(c for c in convs if c.parent is None)
    assert branch.parent == trunk.id and branch.fork_at == 3
    assert len(trunk.items) == len(main) and len(branch.items) == len(fork)


def test_the_session_header_names_the_conversation(
    fake: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    _, fake_url = fake
    app, proxy = _proxy(fake_url, tmp_path)
    with serving(app) as url:
        client = _openai(url, default_headers={"X-Kompakt-Session": "build-42"})
        msgs = [{"role": "user", "content": "hi"}]
        client.chat.completions.create(model="fake", messages=msgs)  # type: ignore[arg-type]
        msgs += [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "more"}]
        client.chat.completions.create(model="fake", messages=msgs)  # type: ignore[arg-type]
    assert list(proxy.sessions.conversations) == ["build-42"]
    assert proxy.sessions.conversations["build-42"].stats.requests == 2


def test_errors_pass_through_and_bad_requests_get_the_provider_shape(
    fake: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    upstream, fake_url = fake
    app, _ = _proxy(fake_url, tmp_path)
    with serving(app) as url:
        client = _openai(url)
        with pytest.raises(openai.RateLimitError) as limited:
            client.chat.completions.create(
                model="fail", messages=[{"role": "user", "content": "x"}]
            )
        assert limited.value.body == {"message": "slow down", "type": "rate_limit"}
        with pytest.raises(openai.BadRequestError, match="tool_call_id"):
            client.chat.completions.create(
                model="fake",
                messages=[{"role": "tool", "content": "x"}],  # type: ignore[list-item, misc]
            )
        r = httpx.post(
            f"{url}/v1/messages", content=b"{not json", headers={"anthropic-version": "2023-06-01"}
        )
        assert r.status_code == 400
        assert r.json()["type"] == "error" and "not valid JSON" in r.json()["error"]["message"]
        r = httpx.post(f"{url}/v1/chat/completions", json={"model": "fake"})
        assert r.status_code == 400 and "messages" in r.json()["error"]["message"]
        assert [m.id for m in client.models.list()] == ["fake"]  # passed through
    assert [s.path for s in upstream.seen] == ["/v1/chat/completions"]


def test_a_request_over_the_size_limit_is_refused_clearly(
    fake: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    _, fake_url = fake
    app, _ = _proxy(fake_url, tmp_path, max_body_bytes=1_000)
    with serving(app) as url:
        r = httpx.post(
            f"{url}/v1/chat/completions",
            json={"model": "f", "messages": [{"role": "user", "content": "x" * 2000}]},
        )
    assert r.status_code == 413 and "--max-body-bytes" in r.json()["error"]["message"]


def test_a_crash_in_compaction_forwards_the_request_as_is(
    fake: tuple[FakeUpstream, str], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    upstream, fake_url = fake

    def broken(view: Any, ctx: Any) -> bool:
        raise RuntimeError("strategy bug")

    app, _ = _proxy(
        fake_url,
        tmp_path,
        budget=None,
        compactor=lambda: Compactor(trigger=lambda m: True, strategy=broken),
    )
    msgs = [{"role": "user", "content": "hello"}]
    with caplog.at_level(logging.WARNING, logger="kompakt.serve"), serving(app) as url:
        reply = _openai(url).chat.completions.create(model="fake", messages=msgs)  # type: ignore[arg-type]
    assert reply.choices[0].message.content == "ok"
    assert upstream.seen[-1].body["messages"] == msgs
    assert "strategy bug" in caplog.text


def test_the_api_key_is_forwarded_but_never_stored_or_logged(
    fake: tuple[FakeUpstream, str], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    upstream, fake_url = fake
    app, _ = _proxy(fake_url, tmp_path, budget=1_500)
    with caplog.at_level(logging.DEBUG), serving(app) as url:
        client = _openai(url)
        aclient = anthropic.Anthropic(base_url=url, api_key=KEY, max_retries=0)
        history: list[dict[str, Any]] = []
        for step in tool_turns(10):
            history += step
            if history[-1]["role"] != "assistant":
                client.chat.completions.create(model="fake", messages=history)  # type: ignore[arg-type]
        aclient.messages.create(
            model="fake", max_tokens=5, messages=[{"role": "user", "content": "hi"}]
        )
        page = httpx.get(f"{url}/kompakt/").text
    assert upstream.seen[0].headers["authorization"] == f"Bearer {KEY}"
    last = upstream.seen[-1].headers  # the anthropic client's credential, in its header
    assert KEY in (last.get("x-api-key"), last.get("authorization", "").removeprefix("Bearer "))
    stored = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("serve.db"))
    assert len(stored) > 10_000 and KEY.encode() not in stored
    proxy_logs = "\n".join(
        r.getMessage() for r in caplog.records if r.name.startswith(("kompakt", "uvicorn"))
    )
    assert "conversation" in proxy_logs  # the proxy did log its requests
    assert "SECRET" not in proxy_logs and KEY not in page


def test_a_proxy_key_is_required_when_set_and_not_forwarded(
    fake: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    upstream, fake_url = fake
    app, _ = _proxy(fake_url, tmp_path, api_key="proxy-key")
    msgs = [{"role": "user", "content": "hi"}]
    with serving(app) as url:
        with pytest.raises(openai.AuthenticationError):
            _openai(url).chat.completions.create(model="fake", messages=msgs)  # type: ignore[arg-type]
        ok = openai.OpenAI(base_url=f"{url}/v1", api_key="proxy-key", max_retries=0)
        ok.chat.completions.create(model="fake", messages=msgs)  # type: ignore[arg-type]
        both = _openai(url, default_headers={"X-Kompakt-Key": "proxy-key"})
        both.chat.completions.create(model="fake", messages=msgs)  # type: ignore[arg-type]
    assert "authorization" not in upstream.seen[0].headers
    assert upstream.seen[1].headers["authorization"] == f"Bearer {KEY}"
    assert all("x-kompakt-key" not in s.headers for s in upstream.seen)


def test_responses_items_are_compacted_with_reasoning_kept_with_its_call(
    fake: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    upstream, fake_url = fake
    app, proxy = _proxy(fake_url, tmp_path, budget=2_000)
    items: list[dict[str, Any]] = []
    with serving(app) as url:
        client = _openai(url)
        for t in range(30):
            items.append({"role": "user", "content": f"turn {t}: read the log"})
            reply = client.responses.create(
                model="fake",
                instructions="be brief",
                input=items,  # type: ignore[arg-type]
            )
            assert reply.output_text == "ok"
            items += [
                {"type": "reasoning", "id": f"rs_{t}", "summary": [], "encrypted_content": "e"},
                {"type": "function_call", "id": f"fc_{t}", "call_id": f"call_{t}",
                 "name": "read", "arguments": "{}"},
                {"type": "function_call_output", "call_id": f"call_{t}", "output": "z" * 600},
            ]  # fmt: skip
    assert len(upstream.seen) == 30 and all(not s.problems for s in upstream.seen)
    assert all(s.body["instructions"] == "be brief" for s in upstream.seen)
    assert max(s.tokens for s in upstream.seen) <= 2_000
    last = upstream.seen[-1].body["input"]
    assert len(last) < len(items)
    for i, item in enumerate(last):  # a reasoning item is sent only before its call
        if item.get("type") == "reasoning":
            assert last[i + 1]["type"] == "function_call"
    conv = next(iter(proxy.sessions.conversations.values()))
    assert conv.api == "responses" and conv.stats.compactions >= 1


def test_responses_requests_are_read_only_where_they_are_new(
    fake: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    upstream, fake_url = fake
    app, proxy = _proxy(fake_url, tmp_path, budget=1_500)
    items: list[dict[str, Any]] = []
    with serving(app) as url:
        client = _openai(url)
        hello = "hello, I have a log to read with you " * 4
        client.responses.create(model="fake", instructions="be brief", input=hello)
        items.append({"role": "user", "content": hello})
        for t in range(16):
            items.append({"role": "user", "content": f"turn {t}: read the log"})
            if t == 9:  # an answer ends the request: its run goes on in the next one
                items.append({"role": "assistant", "content": f"reading {t}"})
            reply = client.responses.create(
                model="fake",
                instructions="be brief",
                input=items,  # type: ignore[arg-type]
                temperature=0.5,
                tools=[{"type": "function", "name": "read", "parameters": {}, "strict": False}],
            )
            assert reply.output_text == "ok"
            items += [
                {"type": "reasoning", "id": f"rs_{t}", "summary": [], "encrypted_content": "e"},
                {"type": "function_call", "id": f"fc_{t}", "call_id": f"call_{t}",
                 "name": "read", "arguments": "{}"},
                {"type": "function_call_output", "call_id": f"call_{t}", "output": "z" * 400},
            ]  # fmt: skip
    seen = upstream.seen
    assert len(seen) == 17 and all(not s.problems for s in seen)
    assert all(s.body["instructions"] == "be brief" for s in seen)
    temperatures = [s.body.get("temperature") for s in seen]
    assert temperatures == [None] + [0.5] * 16
    assert max(s.tokens for s in seen) <= 1_500
    # a string input is not an array: the second request is read whole too; the rest
    # follow, but the one that continues the run of model output the last one ended with
    assert proxy.sessions.followed == 17 - 3
    conv = max(proxy.sessions.conversations.values(), key=lambda c: len(c.items))
    assert conv.stats.compactions >= 1
    sent = {"instructions": "be brief", "input": items[:-3]}  # the last request's
    assert conv.items == source_of("responses", sent)


def test_a_reply_the_upstream_compacted_in_is_counted_at_the_tokens_it_reported(
    fake: tuple[FakeUpstream, str], tmp_path: Path
) -> None:
    upstream, fake_url = fake
    app, proxy = _proxy(fake_url, tmp_path, budget=50_000)
    history: list[Any] = []
    with serving(app) as url:
        client = anthropic.Anthropic(base_url=url, api_key=KEY, max_retries=0)
        for t in range(4):
            history.append({"role": "user", "content": f"turn {t}: " + "logs " * 300})
            upstream.compact_next = 1_234 if t == 1 else None
            reply = client.beta.messages.create(
                model="fake",
                max_tokens=50,
                messages=history,
                betas=["compact-2026-01-12"],
            )
            history.append({"role": "assistant", "content": reply.content})
    compacted = history[3]["content"]
    assert [b.type for b in compacted] == ["compaction", "text"]
    conv = next(iter(proxy.sessions.conversations.values()))
    index = conv.mirror.index
    holding = [
        (m.metadata.get("tokens"), tokens)
        for m, tokens in zip(index.messages, index.message_tokens, strict=True)
        if any(p.data.get("type") == "compaction" for p in m.content)
    ]
    # the compaction step's 1,234 and the 2 of the reply after it, not kompakt's estimate
    assert holding == [(1_236, 1_236)]
    assert sum(index.message_tokens) == index.total_tokens
