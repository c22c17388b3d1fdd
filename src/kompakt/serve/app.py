"""The ASGI app: compacting routes, pass-through for everything else, the page.

``POST /v1/chat/completions`` (OpenAI), ``POST /v1/responses`` (OpenAI Responses)
and ``POST /v1/messages`` (Anthropic) are compacted: the request's conversation is
recognised (`Sessions`), its new originals stored, the compactor run when due, and the
body forwarded with only the conversation (``messages``, ``system``, ``input``,
``instructions``) changed. Everything else (``/v1/models``, embeddings, token
counting ...) goes through as it is. Responses stream back as they arrive.

Failure rules: a malformed request gets the provider's own 400 error shape naming the
problem; an upstream error comes back unchanged (status and body); a context overflow
is compacted harder and retried once; a crash in compaction is logged and the request
forwarded as it came, never a 500.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from kompakt.errors import FormatError
from kompakt.overflow import parse_overflow
from kompakt.serve.body import Body, scan
from kompakt.serve.config import Api, ServeConfig
from kompakt.serve.conversation import Conversation, Rendered, Turn, source_of, split_source
from kompakt.serve.errors import error_response
from kompakt.serve.page import conversation_page, index_page
from kompakt.serve.sessions import Sessions
from kompakt.serve.upstream import Upstream, join, request_headers, response_headers
from kompakt.serve.usage import UsageSniffer, compacted_reply_tokens, input_tokens
from kompakt.store import CompactionRecord, HistoryStore

__all__ = ["Proxy", "create_app"]

log = logging.getLogger("kompakt.serve")


class _TooLarge(Exception):
    pass


@dataclass
class _Request:
    """A compacting route's request, read."""

    api: Api
    raw: bytes
    fields: dict[str, Any]
    """Its members (the conversation array's own may be missing: see `messages`)."""
    body: Body | None
    """The body located, when it could be (its conversation array is then spliced)."""
    messages: int
    """Elements in its conversation array."""
    items: int = 0
    """The conversation's items once it was taken in."""

    @property
    def streaming(self) -> bool:
        return self.fields.get("stream") is True


class Proxy:
    """The proxy's state: config, store, upstream client, conversations."""

    def __init__(
        self,
        config: ServeConfig,
        *,
        store: HistoryStore | None = None,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.config = config
        self.store = store if store is not None else config.open_store()
        self.upstream = Upstream(timeout=config.timeout, client=client)
        self.sessions = Sessions(
            config.make_compactor,
            store=self.store,
            max_conversations=config.max_conversations,
            max_timeline=config.max_timeline,
        )
        self.started = time.time()
        self._writes: set[asyncio.Task[None]] = set()

    # -- the request's edges -----------------------------------------------------------

    def _denied(self, request: Request, api: Api) -> tuple[Response | None, frozenset[str]]:
        """An error when a proxy key is required and missing; else the headers it came in."""
        key = self.config.api_key
        if key is None:
            return None, frozenset()
        h = request.headers
        if _same(h.get("x-kompakt-key"), key) or _same(request.query_params.get("key"), key):
            return None, frozenset()
        if _same(h.get("x-api-key"), key):
            return None, frozenset({"x-api-key"})
        auth = h.get("authorization", "")
        if auth.lower().startswith("bearer ") and _same(auth[7:].strip(), key):
            return None, frozenset({"authorization"})
        return error_response(api, 401, "this kompakt proxy needs its key: X-Kompakt-Key"), (
            frozenset()
        )

    async def _body(self, request: Request) -> bytes:
        limit = self.config.max_body_bytes
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise _TooLarge
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise _TooLarge
            chunks.append(chunk)
        return b"".join(chunks)

    def _too_large(self, api: Api) -> Response:
        return error_response(
            api, 413, f"request body over {self.config.max_body_bytes:,} bytes (--max-body-bytes)"
        )

    def _url(self, api: Api, request: Request) -> str | None:
        base = self.config.upstream(api)
        return None if base is None else join(base, request.url.path, request.url.query)

    def _no_upstream(self, api: Api) -> Response:
        flag = "--anthropic-upstream" if api == "anthropic" else "--openai-upstream"
        return error_response(api, 502, f"no {api} upstream configured: start with {flag} URL")

    async def _send(
        self,
        api: Api,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes,
        sent: asyncio.Event | None = None,
    ) -> httpx.Response | Response:
        """The upstream's response, or an error response when it could not be reached
        (`sent` is set once the body is written, or it failed)."""
        try:
            return await self.upstream.send(method, url, headers, body, sent)
        except httpx.TimeoutException:
            return error_response(
                api, 504, f"upstream timed out after {self.config.timeout:g} s (--timeout)"
            )
        except httpx.HTTPError as e:
            return error_response(api, 502, f"upstream unreachable: {type(e).__name__}")

    # -- pass-through -------------------------------------------------------------------

    async def passthrough(self, request: Request) -> Response:
        api = self.config.api_for(request.url.path, request.headers)
        admitted = await self._admit(request, api)
        if isinstance(admitted, Response):
            return admitted
        url, body, headers = admitted
        sent = await self._send(api, request.method, url, headers, body)
        return sent if isinstance(sent, Response) else await self.upstream.answer(sent)

    async def _admit(
        self, request: Request, api: Api
    ) -> Response | tuple[str, bytes, dict[str, str]]:
        """The checks every route makes first (key, upstream, size): an error response, or
        the upstream URL, the raw body and the headers to forward."""
        denied, drop = self._denied(request, api)
        if denied is not None:
            return denied
        url = self._url(api, request)
        if url is None:
            return self._no_upstream(api)
        try:
            body = await self._body(request)
        except _TooLarge:
            return self._too_large(api)
        return url, body, request_headers(request.headers, drop)

    # -- compacting routes ----------------------------------------------------------------

    async def openai(self, request: Request) -> Response:
        return await self.compacting(request, "openai")

    async def anthropic(self, request: Request) -> Response:
        return await self.compacting(request, "anthropic")

    async def responses(self, request: Request) -> Response:
        return await self.compacting(request, "responses")

    async def compacting(self, request: Request, api: Api) -> Response:
        started = time.perf_counter()
        admitted = await self._admit(request, api)
        if isinstance(admitted, Response):
            return admitted
        url, raw, headers = admitted
        read = time.perf_counter()
        name = request.headers.get("x-kompakt-session")
        try:
            claimed = await self._claim(api, raw, name)
        except FormatError as e:
            return error_response(api, 400, f"messages: {e}")
        if isinstance(claimed, str):
            return error_response(api, 400, claimed)
        if claimed is None:  # the upstream holds the history: only the new items are here
            sent = await self._send(api, "POST", url, headers, raw)
            return sent if isinstance(sent, Response) else await self.upstream.answer(sent)
        conv, new, req = claimed
        gone = asyncio.Event()  # set once the request is upstream: the store is written then
        try:  # the lock is held while the conversation changes, not while upstream answers
            content, turn, sent_items = await self._prepare(conv, new, req, gone)
        finally:
            conv.lock.release()
        turn.added_ms = (time.perf_counter() - started) * 1000
        turn.read_ms = (read - started) * 1000
        upstream = await self._send(api, "POST", url, headers, content, gone)
        if isinstance(upstream, httpx.Response) and upstream.status_code >= 400:
            upstream, sent_items = await self._recover(
                conv, url, headers, req, upstream, turn, sent_items
            )
        conv.record(turn, sent_items)
        turn.status = upstream.status_code
        log.info(
            "conversation %s: %d messages (%d new), %d -> %d tokens, upstream %d",
            conv.id, turn.messages, turn.new, turn.tokens_full, turn.tokens_sent, turn.status,
        )  # fmt: skip
        if isinstance(upstream, Response):
            return upstream
        return await self._respond(conv, upstream, turn, streaming=req.streaming)

    async def _claim(
        self, api: Api, raw: bytes, name: str | None
    ) -> tuple[Conversation, list[Any], _Request] | str | None:
        """The request's conversation, locked, with the request taken in; its new
        originals and the request read. What is wrong with the body when it is
        malformed; None for a Responses request the upstream holds the history of.

        A request that repeats its conversation's last body byte for byte with more
        messages after it is parsed only where it is new (`Sessions.follow`)."""
        followed = await self.sessions.follow(api, raw, name)
        if followed is not None:
            conv, body, new = followed
            req = _Request(api, raw, body.fields, body, body.count, len(conv.items))
            return conv, new, req
        key = "input" if api == "responses" else "messages"
        located = scan(raw, key)
        fields: dict[str, Any] | None
        if located is not None:
            fields = {**located.fields, key: located.new}
            problem = _problem(fields, api)
        else:
            fields, problem = _parse(raw, api)
        if fields is None or problem:
            return problem
        if api == "responses" and fields.get("previous_response_id") is not None:
            return None
        source = source_of(api, fields)
        conv, new = await self.sessions.claim(api, source, name, located)
        count = len(fields[key])
        return conv, new, _Request(api, raw, fields, located, count, len(conv.items))

    async def _prepare(
        self, conv: Conversation, new: list[Any], req: _Request, gone: asyncio.Event
    ) -> tuple[bytes, Turn, list[Any]]:
        """Store the new originals, compact when due: the bytes to send, the request's
        record, and the items sent."""
        conv.model = str(req.fields.get("model", conv.model))
        note = ""
        try:
            rendered: Rendered | None = await conv.render(conv.items)
        except Exception as e:  # never a 500 for compaction: forward as it came
            log.warning("conversation %s: compaction failed, forwarding as is: %r", conv.id, e)
            rendered, note = None, f"compaction failed ({type(e).__name__}); forwarded as is"
        self._persist(conv, rendered, gone)
        index = conv.mirror.index
        turn = Turn(
            at=time.time(),
            messages=req.messages,
            new=len(new),
            tokens_full=index.total_tokens,
            tokens_sent=rendered.tokens_sent if rendered is not None else index.total_tokens,
            prefix_stable=False,
            added_ms=0.0,
            compaction=rendered.event.summary() if rendered and rendered.event else "",
            note=note,
        )
        sent_items = rendered.items if rendered is not None else list(conv.items)
        return _content(req, rendered, conv), turn, sent_items

    async def _recover(
        self,
        conv: Conversation,
        url: str,
        headers: Mapping[str, str],
        req: _Request,
        failed: httpx.Response,
        turn: Turn,
        sent_items: list[Any],
    ) -> tuple[httpx.Response | Response, list[Any]]:
        """An upstream error as it came, or, for a context overflow, the answer to the
        request compacted harder (one retry)."""
        data = await failed.aread()
        await failed.aclose()
        as_is = Response(
            data, status_code=failed.status_code, headers=response_headers(failed.headers)
        )
        overflow = parse_overflow(data)
        if overflow is None:
            return as_is, sent_items
        started = time.perf_counter()
        async with conv.lock:
            if len(conv.items) != req.items:  # the conversation moved on meanwhile
                return as_is, sent_items
            try:
                rendered = await conv.compact_harder(conv.items, overflow)
            except Exception as e:
                log.warning("conversation %s: overflow; compacting harder failed: %r", conv.id, e)
                turn.note = f"upstream overflow; compacting harder failed ({type(e).__name__})"
                return as_is, sent_items
            self._persist(conv, rendered)
            content = _content(req, rendered, conv)
        turn.added_ms += (time.perf_counter() - started) * 1000
        turn.tokens_sent = rendered.tokens_sent
        turn.compaction = rendered.event.summary() if rendered.event else turn.compaction
        turn.note = (
            f"upstream overflow ({overflow.message[:120]}); "
            f"compacted to {rendered.tokens_sent:,}, retried"
        )
        sent = rendered.tokens_sent
        log.info("conversation %s: upstream overflow, retrying at %d tokens", conv.id, sent)
        return await self._send(req.api, "POST", url, headers, content), rendered.items

    async def _respond(
        self, conv: Conversation, upstream: httpx.Response, turn: Turn, *, streaming: bool
    ) -> Response:
        """The upstream's answer for the client; the input tokens it reports calibrate
        `conv` (a stream's as it passes, a JSON answer's read whole)."""

        def calibrate(reported: int | None, reply: int | None) -> None:
            if upstream.status_code >= 400:
                return
            if reported is not None:
                turn.usage = reported
                conv.calibrate(reported, turn.tokens_sent)
            if reply is not None:  # the reply compacted: counted so when it is sent back
                conv.compacted_reply = reply

        if streaming or "event-stream" in upstream.headers.get("content-type", ""):
            sniffer = UsageSniffer()
            return await self.upstream.answer(
                upstream,
                on_chunk=sniffer.feed,
                background=BackgroundTask(lambda: calibrate(sniffer.tokens, sniffer.reply)),
            )
        answer = await self.upstream.answer(upstream, whole=True)
        with contextlib.suppress(ValueError):
            body = json.loads(bytes(answer.body))
            calibrate(input_tokens(body), compacted_reply_tokens(body))
        return answer

    # -- the store ---------------------------------------------------------------------

    def _persist(
        self, conv: Conversation, rendered: Rendered | None, gone: asyncio.Event | None = None
    ) -> None:
        """Write `conv`'s new originals, then the compaction `rendered` made (if any),
        once the request has gone upstream (`gone`: the write does not slow the sending)
        while the upstream answers: a conversation's writes run one after another, in
        the order its requests took the lock; `close` waits for them."""
        record = None
        if rendered is not None and rendered.event is not None:
            record = CompactionRecord.from_view(conv.mirror.view, rendered.event)
        if record is None and not conv.unstored():
            return
        before = conv.writing

        async def write() -> None:
            if before is not None:
                await asyncio.wait([before])
            if gone is not None:
                await gone.wait()
            try:
                await self._store_originals(conv)
                if record is not None:
                    await asyncio.to_thread(self.store.record_compaction, conv.id, record)
            except Exception as e:  # the request is on its way: say so, do not fail it
                log.error("conversation %s: writing to the store failed: %r", conv.id, e)

        task = asyncio.ensure_future(write())
        conv.writing = task
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    async def _store_originals(self, conv: Conversation) -> None:
        pending = conv.unstored()
        if not pending:
            return
        if conv.stored == 0:
            meta: dict[str, Any] = {"api": conv.api, "model": conv.model, "source": "kompakt serve"}
            if conv.parent is not None:
                meta.update(parent=conv.parent, fork_at=conv.fork_at)
            await asyncio.to_thread(self.store.create_session, conv.id, metadata=meta)
        await asyncio.to_thread(self.store.append, conv.id, pending)
        conv.stored += len(pending)

    # -- the page ----------------------------------------------------------------------

    async def page(self, request: Request) -> Response:
        denied, _ = self._denied(request, "openai")
        if denied is not None:
            return denied
        return HTMLResponse(index_page(self))

    async def conversation(self, request: Request) -> Response:
        denied, _ = self._denied(request, "openai")
        if denied is not None:
            return denied
        conv = self.sessions.get(request.path_params["cid"])
        if conv is None:
            return HTMLResponse(
                "<!doctype html><title>not found</title><p>no such conversation", 404
            )
        return HTMLResponse(conversation_page(self, conv))

    async def close(self) -> None:
        while self._writes:
            await asyncio.wait(list(self._writes))
        await self.upstream.close()
        self.store.close()


def _same(given: str | None, key: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), key.encode())


def _parse(raw: bytes, api: Api) -> tuple[dict[str, Any] | None, str]:
    """The request body, or None and what is wrong with it."""
    try:
        body = json.loads(raw)
    except ValueError as e:
        return None, f"request body is not valid JSON: {e}"
    if not isinstance(body, dict):
        return None, f"request body must be a JSON object, got {type(body).__name__}"
    problem = _problem(body, api)
    return (None if problem else body), problem


def _problem(body: Mapping[str, Any], api: Api) -> str:
    """What is wrong with a parsed request body's conversation fields ("" when nothing)."""
    if api == "responses":
        if not isinstance(body.get("input"), (str, list)):
            return "input: required, a string or a list of input items"
        return ""
    if not isinstance(body.get("messages"), list):
        return "messages: required, and must be a list of messages"
    if api == "anthropic" and not isinstance(body.get("system", ""), (str, list)):
        return "system: must be a string or a list of content blocks"
    return ""


def _content(req: _Request, rendered: Rendered | None, conv: Conversation) -> bytes:
    """The body to send: the client's own bytes when nothing changed; else its bytes
    with the compacted conversation array spliced in (each message's JSON made once,
    see `Conversation.messages_json`)."""
    if rendered is None or rendered.unchanged:
        return req.raw
    api = req.api
    system, messages = split_source(api, rendered.items)
    same_system = api == "openai" or (rendered.items and rendered.items[0] is conv.items[0])
    if req.body is not None and same_system:
        return req.body.splice(conv.messages_json(messages))
    out = dict(req.fields)
    out["input" if api == "responses" else "messages"] = _SLOT
    if api != "openai":
        key = "system" if api == "anthropic" else "instructions"
        if system is None:
            out.pop(key, None)
        else:
            out[key] = system
    text = json.dumps(out, ensure_ascii=False)
    head, _, tail = text.partition(f'"{_SLOT}"')
    array = conv.messages_json(messages)
    return b"".join((_utf8(head), array, _utf8(tail)))


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


_SLOT = "__kompakt_messages_slot__"


def create_app(
    config: ServeConfig,
    *,
    store: HistoryStore | None = None,
    client: httpx.AsyncClient | None = None,
) -> Starlette:
    """The proxy as an ASGI app (``app.state.proxy`` is its `Proxy`).

    >>> app = create_app(ServeConfig(openai_upstream="http://127.0.0.1:9/v1", budget=1000,
    ...                              store=":memory:"))
    >>> sorted(r.path for r in app.routes)[:3]
    ['/kompakt/', '/kompakt/{cid}', '/v1/chat/completions']
    """
    proxy = Proxy(config, store=store, client=client)
    every = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
    routes = [
        Route("/v1/chat/completions", proxy.openai, methods=["POST"]),
        Route("/v1/messages", proxy.anthropic, methods=["POST"]),
        Route("/v1/responses", proxy.responses, methods=["POST"]),
        Route("/kompakt/", proxy.page, methods=["GET"]),
        Route("/kompakt/{cid}", proxy.conversation, methods=["GET"]),
        Route("/{path:path}", proxy.passthrough, methods=every),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await proxy.close()

    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.proxy = proxy
    return app
