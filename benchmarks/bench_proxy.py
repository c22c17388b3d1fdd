"""What `kompakt serve` costs and saves, on loopback.

1. Latency added per request at 100, 1k and 10k-message conversations: each size is
   grown by requests of 2 new messages (the answer and a user turn), each body sent
   through the proxy and, in the same run, the same bytes straight to the same upstream;
   p50/p99 of the difference. The upstream answers at once, so only the hop is measured.
   Where the time goes: the proxy's own work (parse what is new, compact when due,
   splice the body), and the hop itself, measured on the same bytes two ways: through a
   route the proxy passes through unchanged (uvicorn, Starlette and httpx: what any proxy
   on this stack costs) and through a bare byte pipe in an event loop (the least a
   store-and-forward hop costs in Python: one more receive and send of the body). The
   upstream and the client run in processes of their own, the proxy in this one.
   Percentiles are over few requests on a shared machine: read the p99 as a rough bound.
2. Requests per second: 20 conversations at once, 20 requests each.
3. A replayed 300-turn tool-using run at a 6,000-token budget: upstream tokens saved,
   compactions, and the share of requests whose compacted prefix was unchanged
   (between compactions).

Run: ``PYTHONPATH=src:tests python benchmarks/bench_proxy.py``
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from kompakt.serve import ServeConfig, create_app
from serve_helpers import free_port, serving, tool_turns

ANSWER = (
    b'{"id":"c","object":"chat.completion","created":0,"model":"m","choices":[{"index":0,'
    b'"finish_reason":"stop","message":{"role":"assistant","content":"ok"}}]}'
)


async def _answer(request: Request) -> Response:
    await request.body()
    return Response(ANSWER, media_type="application/json")


def null_upstream() -> Starlette:
    return Starlette(routes=[Route("/{path:path}", _answer, methods=["POST"])])


def conversation(n: int, tag: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": "You run commands."}]
    for step in tool_turns(n, seed=tag, result_chars=200):
        out += step
        if len(out) >= n:
            break
    return out[:n]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def client(urls: dict[str, str], n: int, reps: int) -> None:
    """(In its own process.) Post each body to every one of `urls` in turn, `reps` times
    (plus two warm-ups: the first indexes the history cold); print the times as JSON."""
    history = conversation(n, f"n{n}-")
    times: dict[str, list[float]] = {name: [] for name in urls}
    head = {"content-type": "application/json"}
    with httpx.Client(timeout=600) as http:
        for r in range(reps + 2):
            history = [*history, {"role": "user", "content": f"next {r}"}]
            raw = json.dumps({"model": "m", "messages": history}).encode()
            for name, url in urls.items():
                t0 = time.perf_counter()
                http.post(url, content=raw, headers=head).raise_for_status()
                if r >= 2:
                    times[name].append((time.perf_counter() - t0) * 1000)
            history.append({"role": "assistant", "content": f"answer {r}"})
    times["bytes"] = [float(len(raw))]
    print(json.dumps(times))


def latency(proxy_url: str, direct_url: str, pipe_url: str, proxy: Any, n: int, reps: int) -> None:
    """Latency added at `n` messages, and where it goes."""
    urls = {
        "direct": f"{direct_url}/v1/chat/completions",
        "pipe": f"{pipe_url}/v1/chat/completions",
        "relay": f"{proxy_url}/v1/relayed",  # a route the proxy passes through unchanged
        "proxy": f"{proxy_url}/v1/chat/completions",
    }
    out = subprocess.run(
        [sys.executable, __file__, "--client", json.dumps(urls), str(n), str(reps)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    t = json.loads(out.splitlines()[-1])
    direct = t["direct"]

    def over(name: str) -> list[float]:  # each request's time less the direct one's
        return [b - a for a, b in zip(direct, t[name], strict=True)]

    added, relay, pipe = over("proxy"), over("relay"), over("pipe")
    conv = next(c for c in proxy.sessions.conversations.values() if len(c.items) >= n)
    turns = list(conv.timeline)[2:]
    read = [x.read_ms for x in turns]
    work = [x.added_ms - x.read_ms for x in turns]
    first = next(iter(conv.timeline)).added_ms
    last = turns[-1]
    print(
        f"{n:>6,} messages ({t['bytes'][0] / 1e6:.2f} MB): direct p50 {pct(direct, 0.5):5.2f} ms"
        f" | added by the proxy p50 {pct(added, 0.5):5.2f} p99 {pct(added, 0.99):5.2f} ms"
        f" ({pct(added, 0.5) / pct(direct, 0.5):.2f}x direct; upstream sent"
        f" {last.tokens_sent / last.tokens_full:.0%} of the tokens)"
        f" | first (cold) {first:6.1f} ms\n"
        f"        the proxy's own work p50 {pct(work, 0.5):4.2f} ms (parse what is new, compact"
        f" when due, splice), after the body arrived ({pct(read, 0.5):4.2f} ms from the app"
        f" being called)\n"
        f"        the hop alone, the same bytes forwarded (p50 added): uvicorn + Starlette +"
        f" httpx (the pass-through route) {pct(relay, 0.5):5.2f} | a bare byte pipe"
        f" {pct(pipe, 0.5):5.2f} ms"
    )


class _Framed(asyncio.Protocol):
    """Collects one HTTP message (head, then Content-Length bytes of body) at a time and
    hands it whole to `done`; parses nothing else."""

    def __init__(self, done: Callable[[bytes], None]) -> None:
        self.done = done
        self.parts: list[bytes] = []
        self.size = 0
        self.want: int | None = None
        self.transport: Any = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.parts.append(data)
        self.size += len(data)
        if self.want is None:
            joined = b"".join(self.parts)
            end = joined.find(b"\r\n\r\n")
            if end < 0:
                return
            found = re.search(rb"(?i)content-length: *(\d+)", joined[:end])
            self.want = end + 4 + (int(found.group(1)) if found else 0)
            self.parts = [joined]
        if self.size >= self.want:
            message = b"".join(self.parts)
            self.parts, self.size, self.want = [], 0, None
            self.done(message)


class _Pipe(_Framed):
    """A client's connection: each request whole to the upstream, each answer back."""

    def __init__(self, host: str, port: int) -> None:
        super().__init__(self._forward)
        self.upstream = (host, port)
        self.ahead: Any = None
        self.pending: list[bytes] = []
        self.tasks: set[asyncio.Task[None]] = set()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        task = asyncio.get_running_loop().create_task(self._connect())
        self.tasks.add(task)

    async def _connect(self) -> None:
        back = self.transport.write
        self.ahead, _ = await asyncio.get_running_loop().create_connection(
            lambda: _Framed(back), *self.upstream
        )
        for message in self.pending:
            self.ahead.write(message)
        self.pending.clear()

    def _forward(self, message: bytes) -> None:
        if self.ahead is None:
            self.pending.append(message)
        else:
            self.ahead.write(message)


@contextmanager
def byte_pipe(upstream_url: str) -> Iterator[str]:
    """The least a store-and-forward hop costs on loopback in Python: an event loop (in a
    thread, uvloop when it is installed) that takes each request whole, writes it to the
    upstream, and writes the answer back the same way, parsing only the framing."""
    up = httpx.URL(upstream_url)
    port = free_port()
    ready = threading.Event()
    stop: list[Any] = []

    async def serve() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: _Pipe(up.host, up.port or 80), "127.0.0.1", port)
        done = loop.create_future()
        stop.append((loop, done))
        ready.set()
        async with server:
            await done

    def run() -> None:
        try:
            import uvloop

            uvloop.run(serve())
        except ImportError:
            asyncio.run(serve())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    ready.wait(20)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        loop, done = stop[0]
        loop.call_soon_threadsafe(done.set_result, None)
        thread.join(20)


@contextmanager
def upstream_process() -> Iterator[str]:
    """The null upstream served by uvicorn in a process of its own."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, __file__, "--upstream", str(port)])
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.post(f"{url}/v1/chat/completions", content=b"{}", timeout=2)
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("the null upstream did not start") from None
                time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(20)


async def throughput(url: str, conversations: int, requests: int) -> float:
    async def one(client: httpx.AsyncClient, n: int) -> None:
        history: list[dict[str, Any]] = [{"role": "user", "content": f"conversation {n}"}]
        for t in range(requests):
            r = await client.post("/v1/chat/completions", json={"model": "m", "messages": history})
            r.raise_for_status()
            history += [
                {"role": "assistant", "content": f"a{t}"},
                {"role": "user", "content": f"q{t} " + "w" * 200},
            ]

    limits = httpx.Limits(max_connections=conversations)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=600) as client:
        started = time.perf_counter()
        await asyncio.gather(*(one(client, n) for n in range(conversations)))
        return conversations * requests / (time.perf_counter() - started)


def replayed(url: str, proxy: Any) -> None:
    history: list[dict[str, Any]] = [{"role": "system", "content": "You run commands."}]
    with httpx.Client(timeout=600) as client:
        for step in tool_turns(300, seed="replay-"):
            history += step
            if history[-1]["role"] != "assistant":
                body = {"model": "m", "messages": history}
                client.post(f"{url}/v1/chat/completions", json=body).raise_for_status()
    conv = next(
        c
        for c in proxy.sessions.conversations.values()
        if str(c.items[1].get("content", "")).startswith("replay-")
    )
    s = conv.stats
    between = s.requests - 1 - s.compactions
    print(
        f"replayed 300-turn run ({s.requests} requests, budget 6,000): upstream tokens "
        f"{s.tokens_sent:,} vs {s.tokens_full:,} without compaction "
        f"({1 - s.tokens_sent / s.tokens_full:.0%} saved), {s.compactions} compactions, "
        f"prefix unchanged on {s.stable}/{between} requests between compactions "
        f"({s.stable / between:.0%})"
    )


def _stack() -> str:
    """The HTTP parser and event loop uvicorn picks here."""
    try:
        import httptools  # noqa: F401

        parser = "httptools"
    except ImportError:
        parser = "h11"
    try:
        import uvloop  # noqa: F401

        loop = "uvloop"
    except ImportError:
        loop = "asyncio"
    return f"uvicorn ({parser}, {loop}), httpx to the upstream"


def main() -> None:
    if sys.argv[1:2] == ["--upstream"]:
        uvicorn.run(null_upstream(), host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
        return
    if sys.argv[1:2] == ["--client"]:
        urls, size, count = sys.argv[2:5]
        client(json.loads(urls), int(size), int(count))
        return
    print(f"serving with {_stack()}")
    with upstream_process() as direct, byte_pipe(direct) as pipe:
        app = create_app(
            ServeConfig(openai_upstream=f"{direct}/v1", budget=60_000, store=":memory:", env={})
        )
        with serving(app) as url:
            for n, reps in ((100, 60), (1_000, 40), (10_000, 40)):
                latency(url, direct, pipe, app.state.proxy, n, reps)
            rps = asyncio.run(throughput(url, 20, 20))
            print(f"throughput: {rps:,.0f} requests/s (20 conversations x 20 requests at once)")
        app = create_app(
            ServeConfig(openai_upstream=f"{direct}/v1", budget=6_000, store=":memory:", env={})
        )
        with serving(app) as url:
            replayed(url, app.state.proxy)


if __name__ == "__main__":
    main()
