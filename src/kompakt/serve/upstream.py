"""The upstream client: one pooled `httpx.AsyncClient`, URLs joined, headers filtered,
answers handed back.

Headers go through untouched except hop-by-hop ones, ``host``, ``content-length``,
``accept-encoding`` (the proxy reads streams as they pass, so it asks for them
unencoded) and the proxy's own ``x-kompakt-*``. Credentials are forwarded and nothing
else: never stored, never logged. An answer is streamed back as it arrives unless it is
known to be small and whole (a JSON answer, a declared length under `WHOLE`): that one
is read and sent in one piece, which spares a stream's per-response machinery.

>>> join("http://127.0.0.1:8080/v1", "/v1/chat/completions", "")
'http://127.0.0.1:8080/v1/chat/completions'
>>> join("https://api.anthropic.com", "/v1/messages", "beta=true")
'https://api.anthropic.com/v1/messages?beta=true'
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import httpx
from starlette.background import BackgroundTask
from starlette.responses import Response, StreamingResponse

__all__ = ["HOP_BY_HOP", "WHOLE", "Upstream", "join", "request_headers", "response_headers"]

HOP_BY_HOP = frozenset(
    {
        "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
        "trailer", "trailers", "transfer-encoding", "upgrade", "host", "content-length",
    }
)  # fmt: skip


WHOLE = 1 << 20
"""An answer declaring at most this many bytes is read whole before it is passed on."""


def join(base: str, path: str, query: str) -> str:
    """`base` + `path` (a ``/v1`` both end and start with is written once) + `query`."""
    base = base.rstrip("/")
    if base.endswith("/v1") and (path == "/v1" or path.startswith("/v1/")):
        path = path[3:]
    url = base + path
    return f"{url}?{query}" if query else url


def request_headers(
    headers: Mapping[str, str], drop: frozenset[str] = frozenset()
) -> dict[str, str]:
    """The client's headers as sent upstream (`drop` names more to leave out)."""
    return {
        k: v
        for k, v in headers.items()
        if (low := k.lower()) not in HOP_BY_HOP
        and low != "accept-encoding"
        and not low.startswith("x-kompakt-")
        and low not in drop
    }


def response_headers(headers: httpx.Headers) -> dict[str, str]:
    """The upstream's response headers as returned to the client (the body is re-framed)."""
    return {
        k: v
        for k, v in headers.items()
        if k.lower() not in HOP_BY_HOP and k.lower() != "content-encoding"
    }


class Upstream:
    """Sends requests to the upstreams and streams their responses back."""

    def __init__(self, *, timeout: float, client: httpx.AsyncClient | None = None) -> None:
        self.timeout = timeout
        self.client = client or httpx.AsyncClient(
            timeout=httpx.Timeout(timeout, connect=min(timeout, 30.0)),
            # idle connections are let go before common servers' 5 s keep-alive runs out
            limits=httpx.Limits(
                max_connections=256, max_keepalive_connections=64, keepalive_expiry=2.0
            ),
            follow_redirects=False,
        )

    async def send(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes,
        sent: asyncio.Event | None = None,
    ) -> httpx.Response:
        """Send and return as soon as the status and headers arrive (the body streams);
        `sent` is set once the request's body is written (or it failed)."""
        extensions = {} if sent is None else {"trace": _tracer(sent)}
        try:
            request = self.client.build_request(
                method, url, headers=headers, content=body, extensions=extensions
            )
            try:
                return await self.client.send(request, stream=True)
            except (httpx.RemoteProtocolError, httpx.ReadError):
                # a pooled connection the server closed as the request went out: once
                # more, on a fresh one (a server that did answer never raises these)
                request = self.client.build_request(
                    method, url, headers=headers, content=body, extensions=extensions
                )
                return await self.client.send(request, stream=True)
        finally:
            if sent is not None:
                sent.set()

    async def answer(
        self,
        response: httpx.Response,
        *,
        whole: bool = False,
        on_chunk: Callable[[bytes], None] | None = None,
        background: BackgroundTask | None = None,
    ) -> Response:
        """The upstream's `response` as the client's: read whole when `whole` or when it
        declares a length up to `WHOLE`, else streamed as it arrives (`relay`)."""
        headers = response_headers(response.headers)
        declared = response.headers.get("content-length", "")
        if whole or (declared.isdigit() and int(declared) <= WHOLE):
            try:
                data = await response.aread()
            finally:
                await response.aclose()
            if on_chunk is not None:
                on_chunk(data)
            return Response(data, response.status_code, headers, background=background)
        return StreamingResponse(
            self.relay(response, on_chunk), response.status_code, headers, background=background
        )

    @staticmethod
    async def relay(
        response: httpx.Response, on_chunk: Callable[[bytes], None] | None = None
    ) -> AsyncIterator[bytes]:
        """The response body as it arrives; `on_chunk` sees each piece; closed at the end."""
        try:
            async for chunk in response.aiter_bytes():
                if on_chunk is not None:
                    on_chunk(chunk)
                yield chunk
        finally:
            await response.aclose()

    async def close(self) -> None:
        await self.client.aclose()


def _tracer(sent: asyncio.Event) -> Callable[[str, Any], Awaitable[None]]:
    """An httpcore trace callback that sets `sent` when a request's body is written."""

    async def trace(event: str, info: Any) -> None:
        if event.endswith("send_request_body.complete"):
            sent.set()

    return trace
