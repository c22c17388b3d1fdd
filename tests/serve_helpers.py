"""What the proxy tests share: a fake upstream that validates and records every request,
real uvicorn servers on free loopback ports, and a generated tool-using conversation."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

import kompakt
from kompakt.index import MessageIndex


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    tokens: int
    problems: list[str]


@dataclass
class FakeUpstream:
    """OpenAI and Anthropic endpoints that check each conversation with `kompakt.validate`.

    `overflow_at`: answer a context-overflow error (in the provider's own words) when a
    request's messages are over this many tokens. `fail_status`: answer every request
    for model ``"fail"`` with this status and body.
    """

    overflow_at: int | None = None
    usage_extra: int = 0
    compact_next: int | None = None
    """The next Anthropic answer compacts (as the server-side compaction does): a
    ``compaction`` block first, and usage naming a compaction step of this many tokens."""
    seen: list[Seen] = field(default_factory=list)

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/v1/chat/completions", self.chat, methods=["POST"]),
                Route("/v1/messages", self.messages, methods=["POST"]),
                Route("/v1/responses", self.responses, methods=["POST"]),
                Route("/v1/models", self.models, methods=["GET"]),
            ]
        )

    def _check(self, request: Request, body: dict[str, Any], dialect: str) -> Seen:
        given = body.get("input")
        if isinstance(given, str):  # a Responses input may be one user message's text
            given = [{"role": "user", "content": given}]
        doc: Any = {"openai": body.get("messages"), "responses": given}.get(dialect, body)
        msgs = kompakt.loads(doc, format=dialect)
        problems = [str(p) for p in kompakt.find_problems(list(msgs), format=dialect)]  # type: ignore[arg-type]
        seen = Seen(
            request.url.path,
            dict(request.headers),
            body,
            MessageIndex(list(msgs)).total_tokens,
            problems,
        )
        self.seen.append(seen)
        return seen

    async def models(self, request: Request) -> Response:
        return JSONResponse(
            {
                "object": "list",
                "data": [{"id": "fake", "object": "model", "created": 0, "owned_by": "test"}],
            }
        )

    async def chat(self, request: Request) -> Response:
        body = json.loads(await request.body())
        seen = self._check(request, body, "openai")
        if body.get("model") == "fail":
            return JSONResponse({"error": {"message": "slow down", "type": "rate_limit"}}, 429)
        if seen.problems:
            return JSONResponse(
                {"error": {"message": "; ".join(seen.problems), "type": "invalid_request_error"}},
                400,
            )
        if self.overflow_at is not None and seen.tokens > self.overflow_at:
            return JSONResponse(
                {
                    "error": {
                        "message": "This model's maximum context length is "
                        f"{self.overflow_at} tokens. "
                        f"However, your messages resulted in {seen.tokens} tokens. Please reduce "
                        "the length of the messages.",
                        "type": "invalid_request_error",
                        "param": "messages",
                        "code": "context_length_exceeded",
                    }
                },
                400,
            )
        usage = {
            "prompt_tokens": seen.tokens + self.usage_extra,
            "completion_tokens": 3,
            "total_tokens": seen.tokens + self.usage_extra + 3,
        }
        if body.get("stream"):
            return StreamingResponse(_openai_stream(body, usage), media_type="text/event-stream")
        return JSONResponse(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 0,
                "model": body.get("model", "fake"),
                "usage": usage,
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": "ok"},
                    }
                ],
            }
        )

    async def responses(self, request: Request) -> Response:
        body = json.loads(await request.body())
        seen = self._check(request, body, "responses")
        if seen.problems:
            return JSONResponse(
                {"error": {"message": "; ".join(seen.problems), "type": "invalid_request_error"}},
                400,
            )
        return JSONResponse(
            {
                "id": "resp_1", "object": "response", "created_at": 0, "status": "completed",
                "model": body.get("model", "fake"), "parallel_tool_calls": True,
                "tool_choice": "auto", "tools": [],
                "output": [{"type": "message", "id": "msg_1", "role": "assistant",
                            "status": "completed", "content": [
                                {"type": "output_text", "text": "ok", "annotations": []}]}],
                "usage": {"input_tokens": seen.tokens, "output_tokens": 1,
                          "total_tokens": seen.tokens + 1,
                          "input_tokens_details": {"cached_tokens": 0},
                          "output_tokens_details": {"reasoning_tokens": 0}},
            }
        )  # fmt: skip

    async def messages(self, request: Request) -> Response:
        body = json.loads(await request.body())
        seen = self._check(request, body, "anthropic")
        if seen.problems:
            return JSONResponse(
                {
                    "type": "error",
                    "error": {"type": "invalid_request_error", "message": "; ".join(seen.problems)},
                },
                400,
            )
        if self.overflow_at is not None and seen.tokens > self.overflow_at:
            return JSONResponse(
                {
                    "type": "error",
                    "error": {
                        "type": "invalid_request_error",
                        "message": f"prompt is too long: {seen.tokens} tokens > "
                        f"{self.overflow_at} maximum",
                    },
                },
                400,
            )
        usage: dict[str, Any] = {"input_tokens": seen.tokens + self.usage_extra, "output_tokens": 2}
        content: list[dict[str, Any]] = [{"type": "text", "text": "ok"}]
        if self.compact_next is not None:
            content.insert(0, {"type": "compaction", "content": "The user asked for the logs."})
            step = {"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
            usage["iterations"] = [
                {**step, "type": "compaction", "input_tokens": seen.tokens,
                 "output_tokens": self.compact_next},
                {**step, "type": "message", "input_tokens": self.compact_next,
                 "output_tokens": 2},
            ]  # fmt: skip
            self.compact_next = None
        message = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "fake"),
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": usage,
            "content": content,
        }
        if body.get("stream"):
            return StreamingResponse(_anthropic_stream(message), media_type="text/event-stream")
        return JSONResponse(message)


async def _openai_stream(body: dict[str, Any], usage: dict[str, int]) -> AsyncIterator[bytes]:
    base = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": body.get("model", "fake"),
    }
    for i, piece in enumerate(["o", "k", ""]):
        delta: dict[str, Any] = {"content": piece} if piece else {}
        if i == 0:
            delta["role"] = "assistant"
        choice = {"index": 0, "delta": delta, "finish_reason": None if piece else "stop"}
        yield f"data: {json.dumps({**base, 'choices': [choice]})}\n\n".encode()
        await asyncio.sleep(0.01)
    if (body.get("stream_options") or {}).get("include_usage"):
        yield f"data: {json.dumps({**base, 'choices': [], 'usage': usage})}\n\n".encode()
    yield b"data: [DONE]\n\n"


async def _anthropic_stream(message: dict[str, Any]) -> AsyncIterator[bytes]:
    start = {**message, "content": [], "stop_reason": None}
    events = [
        ("message_start", {"type": "message_start", "message": start}),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "ok"},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 2},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    for name, data in events:
        yield f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
        await asyncio.sleep(0.01)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """`app` served by uvicorn on a free loopback port, in a thread; yields its base URL."""
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(20)


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "run",
            "description": "run a shell command",
            "parameters": {
                "type": "object",
                "properties": {"cmd": {"type": "string"}},
                "required": ["cmd"],
            },
        },
    }
]


def tool_turns(
    turns: int, *, seed: str = "", result_chars: int = 600, call_text: str | None = None
) -> Iterator[list[dict[str, Any]]]:
    """OpenAI messages of a tool-using run, one list per step the model answers: each turn
    is a user request, one call (every third turn two parallel calls) with results, then
    a text answer. Yields what each model request adds to the conversation."""
    for t in range(turns):
        user = {"role": "user", "content": f"{seed}step {t}: check file_{t}.py"}
        n = 2 if t % 3 == 0 else 1
        calls = [
            {
                "id": f"{seed}c{t}_{k}",
                "type": "function",
                "function": {"name": "run", "arguments": json.dumps({"cmd": f"cat f{t}_{k}"})},
            }
            for k in range(n)
        ]
        call = {"role": "assistant", "content": call_text, "tool_calls": calls}
        results = [
            {
                "role": "tool",
                "tool_call_id": c["id"],
                "content": f"output of {c['id']}: " + "x" * result_chars,
            }
            for c in calls
        ]
        yield [user]
        yield [call, *results]
        yield [{"role": "assistant", "content": f"file_{t}.py is fine"}]
