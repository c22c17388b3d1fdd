"""What `kompakt serve` costs and saves, on loopback.

1. Latency added per request at 100, 1k and 10k-message conversations: each size is
   grown by requests of 2 new messages (the answer and a user turn), each body sent
   through the proxy and, in the same run, the same bytes straight to the same upstream;
   p50/p99 of the difference, and the proxy's own time before forwarding (reading the
   body, then recognising, compacting when due, serialising). The upstream answers at
   once without reading the messages, so only the proxy is measured. The same body sent
   to a route the proxy passes through unchanged measures the HTTP hop alone (what any
   proxy on this stack costs). The upstream and the client run in processes of their
   own, the proxy in this one (as deployed: nothing shares its GIL). Percentiles are over
   few requests on a shared machine: read the p99 as a rough bound.
2. Requests per second: 20 conversations at once, 20 requests each.
3. A replayed 300-turn tool-using run at a 6,000-token budget: upstream tokens saved,
   compactions, and the share of requests whose compacted prefix was unchanged
   (between compactions).

Run: ``PYTHONPATH=src:tests python benchmarks/bench_proxy.py``
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator
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


def client(proxy_url: str, direct_url: str, n: int, reps: int) -> None:
    """(In its own process.) Time `reps` requests direct and through the proxy; print JSON."""
    history = conversation(n, f"n{n}-")
    through: list[float] = []
    direct: list[float] = []
    hop: list[float] = []
    with httpx.Client(timeout=600) as http:
        for r in range(reps + 2):  # two warm-up requests: the first indexes the history cold
            history = [*history, {"role": "user", "content": f"next {r}"}]
            raw = json.dumps({"model": "m", "messages": history}).encode()
            head = {"content-type": "application/json"}
            t0 = time.perf_counter()
            http.post(f"{direct_url}/v1/chat/completions", content=raw, headers=head)
            t1 = time.perf_counter()
            http.post(f"{proxy_url}/v1/chat/completions", content=raw, headers=head)
            t2 = time.perf_counter()
            http.post(f"{proxy_url}/v1/relayed", content=raw, headers=head)  # passed through
            t3 = time.perf_counter()
            if r >= 2:
                direct.append((t1 - t0) * 1000)
                through.append((t2 - t1) * 1000)
                hop.append((t3 - t2) * 1000)
            history.append({"role": "assistant", "content": f"answer {r}"})
    print(json.dumps({"direct": direct, "through": through, "hop": hop}))


def latency(proxy_url: str, direct_url: str, proxy: Any, n: int, reps: int) -> None:
    args = ["--client", proxy_url, direct_url, str(n), str(reps)]
    out = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=True
    ).stdout
    times = json.loads(out.splitlines()[-1])
    direct, through, hop = times["direct"], times["through"], times["hop"]
    conv = next(c for c in proxy.sessions.conversations.values() if len(c.items) >= n)
    turns = list(conv.timeline)[2:]
    inside = [t.added_ms for t in turns]
    work = [t.added_ms - t.read_ms for t in turns]
    first = next(iter(conv.timeline)).added_ms
    added = [b - a for a, b in zip(direct, through, strict=True)]
    relay = [b - a for a, b in zip(direct, hop, strict=True)]
    print(
        f"{n:>6,} messages: direct p50 {pct(direct, 0.5):7.2f} ms | through proxy p50 "
        f"{pct(through, 0.5):7.2f} ms | added p50 {pct(added, 0.5):6.2f} "
        f"p99 {pct(added, 0.99):6.2f} ms (the hop alone, an uncompacted route: p50 "
        f"{pct(relay, 0.5):5.2f}) | proxy's own time p50 {pct(inside, 0.5):6.2f} "
        f"p99 {pct(inside, 0.99):6.2f} ms"
        f" (after the body arrived: p50 {pct(work, 0.5):5.2f} p99 {pct(work, 0.99):5.2f})"
        f" | first (cold) {first:7.1f} ms"
    )


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


def main() -> None:
    if sys.argv[1:2] == ["--upstream"]:
        uvicorn.run(null_upstream(), host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
        return
    if sys.argv[1:2] == ["--client"]:
        proxy_url, direct_url, n, reps = sys.argv[2:6]
        client(proxy_url, direct_url, int(n), int(reps))
        return
    with upstream_process() as direct:
        app = create_app(
            ServeConfig(openai_upstream=f"{direct}/v1", budget=60_000, store=":memory:", env={})
        )
        with serving(app) as url:
            for n, reps in ((100, 60), (1_000, 40), (10_000, 20)):
                latency(url, direct, app.state.proxy, n, reps)
            rps = asyncio.run(throughput(url, 20, 20))
            print(f"throughput: {rps:,.0f} requests/s (20 conversations x 20 requests at once)")
        app = create_app(
            ServeConfig(openai_upstream=f"{direct}/v1", budget=6_000, store=":memory:", env={})
        )
        with serving(app) as url:
            replayed(url, app.state.proxy)


if __name__ == "__main__":
    main()
