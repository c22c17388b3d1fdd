"""A real HTTP server on loopback standing in for a model provider: it answers each POST
from a script (status, JSON body, headers) and records every request body."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["ANTHROPIC_OK", "OPENAI_OK", "FakeProvider", "Reply", "serving"]

Reply = tuple[int, Any, dict[str, str]]

OPENAI_OK = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1_700_000_000,
    "model": "m",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "done"}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 900, "completion_tokens": 1, "total_tokens": 901},
}
ANTHROPIC_OK = {
    "id": "msg_01",
    "type": "message",
    "role": "assistant",
    "model": "claude-haiku-4-5",
    "content": [{"type": "text", "text": "done"}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 900, "output_tokens": 1},
}


class FakeProvider:
    """A real HTTP server on loopback answering POSTs from a script, recording each body."""

    def __init__(self) -> None:
        self.script: list[Reply] = []
        self.requests: list[dict[str, Any]] = []
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                provider.requests.append(json.loads(self.rfile.read(length)))
                status, body, headers = provider.script.pop(0)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


def serving() -> Iterator[FakeProvider]:
    """A `FakeProvider` for the length of a fixture (closed after it)."""
    fake = FakeProvider()
    try:
        yield fake
    finally:
        fake.close()
