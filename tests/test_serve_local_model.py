"""End to end: the real `openai` client, through `kompakt serve`, to llama.cpp's server
running SmolLM2 with a 2,048-token window. A tool-using run that outgrows the window
(up to 20 turns, then a long one of 150: see its docstring for why not 300; the 300-turn
replay runs against the fake upstream in test_serve.py) is answered on every request;
every request that reaches the server is a valid conversation within the proxy's budget;
the one the server refuses as too long is compacted harder and retried once. It is made
to overflow: its new user message is an index of rare CJK ideographs, which the server's
English-trained tokenizer splits into bytes, at about 2.6 times kompakt's estimate (which
is close to what larger vocabularies count), sized to go a little past the window. The
tiny model's answers are not judged, only the plumbing.

Every request asks for one token or a few: the server still reads every prompt, but with
the prefix the proxy keeps stable it reads only what is new (llama.cpp reuses the prompt
it has), so the run stays short."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

import kompakt
from kompakt.index import MessageIndex
from kompakt.serve import ServeConfig, create_app
from local_server import llama_cpp_server
from serve_helpers import serving, tool_turns

pytestmark = pytest.mark.model

WINDOW = 2_048
BUDGET = 1_500
"""The proxy's budget, by kompakt's estimate (calibrated by the usage the server reports)."""
OVER = 40
"""The overflowing request's prompt is this many tokens longer than the window (by the
server's count)."""
ROOM = range(900, 1_100)
"""Overflow, after a compaction, when the prompt is this large: large enough that the
rest of the history can make room for the listing, small enough that the listing does
not make the proxy compact first (its estimate of the listing is well under half)."""
TURNS = 20


@pytest.fixture(scope="module")
def small_llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with llama_cpp_server(tmp_path_factory.mktemp("llama2k"), n_ctx=WINDOW, threads=1) as url:
        yield url


def _code(call_id: str) -> str:
    """A tool's output that reads like code (denser in tokens than kompakt's estimate)."""
    return "\n".join(
        f"def handle_{call_id}_{i}(request, limit={i}):\n    return request.items[:limit]"
        for i in range(3)
    )


def _listing(tokens: int) -> str:
    """An index of at least `tokens` tokens by SmolLM2's own tokenizer: rare CJK
    ideographs, eight a line, which it splits into bytes."""
    from llama_cpp import Llama

    from kompakt.models import default_gguf

    vocab = Llama(model_path=str(default_gguf()), vocab_only=True, verbose=False)
    lines: list[str] = []
    while len(vocab.tokenize("\n".join(lines).encode(), add_bos=False)) < tokens:
        for k in range(len(lines), len(lines) + 4):
            lines.append("".join(chr(0x4E00 + (k * 7919 + i * 104_729) % 20_000) for i in range(8)))
    return "\n".join(lines)


def _steps() -> Iterator[list[dict[str, Any]]]:
    # llama-cpp-python's server takes no `content: null` beside tool calls
    for step in tool_turns(TURNS, call_text=""):
        for m in step:
            if m["role"] == "tool":
                m["content"] = _code(m["tool_call_id"])
        yield step


def _recording_client(upstream: list[tuple[list[str], int]]) -> httpx.AsyncClient:
    """The proxy's upstream client, recording each chat request it sends: its validation
    problems and its tokens by kompakt's estimate."""

    async def record(request: httpx.Request) -> None:
        if request.url.path.endswith("/chat/completions"):
            messages = kompakt.loads(json.loads(request.content)["messages"], format="openai")
            problems = [str(p) for p in kompakt.find_problems(list(messages), format="openai")]
            upstream.append((problems, MessageIndex(list(messages)).total_tokens))

    return httpx.AsyncClient(timeout=300, event_hooks={"request": [record]})


def test_a_tool_run_through_the_proxy_to_llama_cpp_stays_valid_and_recovers_an_overflow(
    small_llama: str, tmp_path: Path
) -> None:
    upstream: list[tuple[list[str], int]] = []
    client = _recording_client(upstream)
    config = ServeConfig(
        openai_upstream=small_llama, budget=BUDGET, target=0.6, store=str(tmp_path / "s.db")
    )
    app = create_app(config, client=client)
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    answered = prompt = 0
    overflow = False
    sessions = app.state.proxy.sessions
    with serving(app) as url:
        llm = openai.OpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0, timeout=300)
        for n, step in enumerate(_steps()):
            history += step
            if history[-1]["role"] == "assistant":
                continue
            compacted = any(c.stats.compactions for c in sessions.conversations.values())
            overflow = history[-1]["role"] == "user" and prompt in ROOM and compacted
            if overflow:  # the user pastes a listing: just past the window
                listing = _listing(WINDOW - prompt + OVER)
                history[-1] = {"role": "user", "content": f"What is in here?\n{listing}"}
            elif n % 9 == 0:  # now and then a streamed answer of a few tokens
                stream = llm.chat.completions.create(
                    model="smollm2",
                    messages=history,  # type: ignore[arg-type]
                    max_tokens=4,
                    stream=True,
                )
                answered += any(c.choices for c in list(stream))  # type: ignore[attr-defined]
                continue
            reply = llm.chat.completions.create(
                model="smollm2",
                messages=history,  # type: ignore[arg-type]
                max_tokens=1,
            )
            assert reply.usage is not None
            prompt = reply.usage.prompt_tokens
            answered += 1
            if overflow:
                break
    proxy = app.state.proxy
    conv = next(iter(proxy.sessions.conversations.values()))
    requests = conv.stats.requests
    assert overflow, f"no prompt of {ROOM} tokens after a compaction in {TURNS} turns"
    assert answered == requests
    assert len(proxy.sessions.conversations) == 1
    assert all(t.status == 200 for t in conv.timeline), [t.note for t in conv.timeline]
    assert all(not problems for problems, _ in upstream), upstream
    # within the budget by the server's own count, which the proxy calibrates its estimate
    # to; the retry is held to what the refusal said fits
    assert max(t.usage for t in list(conv.timeline)[:-1] if t.usage is not None) <= BUDGET
    recovered = [t for t in conv.timeline if t.note.startswith("upstream overflow")]
    assert len(recovered) == 1 and "retried" in recovered[0].note, [t.note for t in recovered]
    assert recovered[0] is conv.timeline[-1]
    assert len(upstream) == requests + 1  # the refused request and its one retry
    assert conv.stats.compactions >= 2 and requests >= 16
    assert conv.timeline[-1].tokens_full > BUDGET  # uncompacted, it would not fit
    reported = [t.usage for t in conv.timeline if t.usage is not None]
    assert reported and max(reported) <= WINDOW


LONG_TURNS = 150
"""As many turns as fit in about two and a half minutes here."""


def test_a_long_tool_run_through_the_proxy_to_llama_cpp_is_valid_and_within_budget_throughout(
    small_llama: str, tmp_path: Path
) -> None:
    """A long run with short tool outputs: every request that reaches the server is a
    valid conversation, within the budget by the server's own count, and answered.

    Why 150 turns and not 300: the server reads every new prompt token, about 120 a
    second on the one core it gets here. Measured on this run: 300 requests, 14,400
    prompt tokens read (some 34 new per request, and 4,300 read again after 9
    compactions, since a prompt cache resumes from the first changed token; a low
    target keeps those re-reads few), 150 s. 300 turns read twice that: 5 minutes."""
    upstream: list[tuple[list[str], int]] = []
    client = _recording_client(upstream)
    config = ServeConfig(
        openai_upstream=small_llama, budget=BUDGET, target=0.25, store=str(tmp_path / "s.db")
    )
    app = create_app(config, client=client)
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    answered = streamed = 0
    with serving(app) as url:
        llm = openai.OpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0, timeout=300)
        for n, step in enumerate(tool_turns(LONG_TURNS, call_text="", result_chars=40)):
            history += step
            if history[-1]["role"] == "assistant":
                continue
            if n % 7 == 0:
                stream = llm.chat.completions.create(
                    model="smollm2",
                    messages=history,  # type: ignore[arg-type]
                    max_tokens=1,
                    stream=True,
                )
                answered += any(c.choices for c in list(stream))  # type: ignore[attr-defined]
                streamed += 1
            else:
                reply = llm.chat.completions.create(
                    model="smollm2",
                    messages=history,  # type: ignore[arg-type]
                    max_tokens=1,
                )
                answered += reply.usage is not None
    conv = next(iter(app.state.proxy.sessions.conversations.values()))
    assert len(app.state.proxy.sessions.conversations) == 1
    assert conv.stats.requests == answered == len(upstream) == 2 * LONG_TURNS
    assert all(t.status == 200 for t in conv.timeline), [t.note for t in conv.timeline]
    assert all(not problems for problems, _ in upstream), upstream
    # by the server's own count (it reports usage on the requests that are not streamed)
    reported = [t.usage for t in conv.timeline if t.usage is not None]
    assert len(reported) == answered - streamed and max(reported) <= BUDGET, reported
    assert conv.stats.compactions >= 3
    assert conv.timeline[-1].tokens_full > 2 * BUDGET  # uncompacted, far over the window
