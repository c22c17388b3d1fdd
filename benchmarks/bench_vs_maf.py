"""kompakt against Microsoft Agent Framework's compaction (and pydantic-ai-harness), side by side.

Every library gets the same synthetic agent conversation (a system prompt, user
turns, assistant tool calls with results of a few KB, assistant answers) at each
size, and both count tokens with a 4-characters-a-token estimate (kompakt's
``CharEstimator(chars_per_token=4)``, the same work as the harness's ``len // 4``;
``--tokenizer default`` times kompakt's script-aware default estimate instead). Measured:

(a) per turn: append one message and ask whether to compact (nothing to do);
(b) cold budgeted truncation of a fresh history to a fixed token budget;
(c) collapsing old tool results into short notes (and the tokens that saves);
(d) the cheap chain held to the budget: kompakt's default `Budgeted` chain without its
    digest (supersede, clamp, clamp to budget, collapse, then truncation) against the
    harness's `TieredCompaction` of dedupe -> clamp -> clear -> slide.

Per-turn rows are medians; cold rows (b)-(d) are the best of ``--repeat`` runs on a
fresh list, after one warm-up run on a small list on every side (lazy imports loaded),
the sides taking turns run by run (kompakt, then each peer), so that a load that comes
and goes on a shared machine falls on both alike.
Each peer runs in a child process under a time limit per call; a call that hits it is
reported as "> N s". Nothing is installed here: MAF is measured when `agent_framework`
is importable (``pip install agent-framework-core``, the ``maf`` extra),
pydantic-ai-harness when `pydantic_ai_harness` is. The harness pins its own
pydantic-ai, so give it an environment of its own and point the script at that
interpreter:

    python -m venv /tmp/harness && /tmp/harness/bin/pip install -q pydantic-ai-harness
    python benchmarks/bench_vs_maf.py --sizes 3000 --harness-python /tmp/harness/bin/python

(the child runs this file there; kompakt's sources are on its path, and the core imports
with that environment's pydantic). Peers that are missing get no column. On a machine
shared with other jobs, ``--clock cpu`` times the cold rows in each process's CPU time,
which their load moves far less than wall time.

Pairings: (a) MAF `apply_compaction` with a quiet `TruncationStrategy` (what its
`CompactionProvider` runs before each model call), harness `exceeds(...)` (the check
its capabilities run before each request); (b) MAF `TruncationStrategy(max_n=budget,
compact_to=budget)`, harness `SlidingWindowCompaction(keep_tokens=budget)`, kompakt
`Budgeted(budget, strategies=[])` (its truncation fallback); (c) MAF
`ToolResultCompactionStrategy`, harness `ClearToolResults`, kompakt
`CollapseToolResults`, each keeping the newest 2 tool groups; (d) kompakt
`Budgeted(budget, strategies=chain)` with `chain_without_digest`, harness `TieredCompaction` over
`DeduplicateFileReads` (same file key: the path read), `ClampOversizedMessages` (the same
per-part limit as kompakt's clamp), `ClearToolResults` (newest 2 pairs kept) and
`SlidingWindowCompaction`. The harness's `compact()` is called directly, so its own
trigger check is not in (b)-(d).

    python benchmarks/bench_vs_maf.py                       # 1k, 10k, 50k messages
    python benchmarks/bench_vs_maf.py --sizes 1000,3000 --limit 30 --repeat 5
    python benchmarks/bench_vs_maf.py --sizes 3000 --peers harness --harness-python PY
    python benchmarks/bench_vs_maf.py --replay 5000         # kompakt only: see below

``--replay N`` measures what an agent loop pays instead: the same conversation arrives
one message at a time and a persistent `Compactor` compacts whenever its trigger fires
(nearly every turn once the history is over 20k tokens), with `CollapseToolResults` and
with the default `Budgeted` chain; each compaction should cost what is new, not the
history.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from kompakt.compactor import Compactor, apply_compaction
from kompakt.index import MessageIndex
from kompakt.messages import Message, ToolCall
from kompakt.strategies import Budgeted, CollapseToolResults, StrategyLike, Truncation
from kompakt.strategies.budgeted import default_chain
from kompakt.tokens import CharEstimator
from kompakt.triggers import TokensExceed

BUDGET = 80_000
"""Token budget of the cold truncation (b)."""
QUIET = 10**12
"""A trigger threshold never reached: the per-turn check has nothing to do."""
KEEP_TOOL_GROUPS = 2
CLAMP_AT = max(64, min(4_000, BUDGET // 10))
"""The per-part limit of kompakt's default clamp step, given to the harness's clamp too."""
WARM = 200
"""Messages in the warm-up list each side compacts once before it is timed."""
CLOCK = {"wall": time.perf_counter, "cpu": time.process_time}
TOKENIZERS: dict[str, Callable[[], CharEstimator]] = {
    "chars4": lambda: CharEstimator(chars_per_token=4),
    "default": CharEstimator,
}
TOKENIZER = ["chars4"]
"""kompakt's token estimate in the cold rows (``--tokenizer``): 4 characters a token like
the peers, or its default script-aware estimate (more work per character)."""
CLOCKS: list[str] = ["wall"]
"""The clock of the cold rows (``--clock``): wall time, or this process's CPU time (which
the load of other jobs on a shared machine moves far less)."""


def clock() -> float:
    return CLOCK[CLOCKS[0]]()


# -- the conversation, library-neutral --------------------------------------------------


@dataclass(frozen=True)
class Spec:
    role: str
    text: str = ""
    call: tuple[str, str, str] | None = None  # (id, tool, JSON arguments)
    call_id: str | None = None


def conversation(n: int) -> list[Spec]:
    """`n` messages: system, then turns of user, 3 tool rounds (call + ~2-4 KB result), answer."""
    out = [Spec("system", "You are a coding agent. Use the tools to inspect and fix the repo.")]
    turn = 0
    while len(out) < n:
        turn += 1
        out.append(Spec("user", f"Turn {turn}: please look into issue #{turn} and fix it."))
        for r in range(3):
            cid = f"call_{turn}_{r}"
            args = json.dumps({"path": f"src/module_{(turn * 3 + r) % 97}.py"})
            out.append(Spec("assistant", call=(cid, "read_file", args)))
            size = 2_000 + ((turn * 7 + r * 13) % 5) * 500
            body = "\n".join(f"{i:4d}  def f_{turn}_{r}_{i}(x): return x * {i}" for i in range(400))
            out.append(Spec("tool", body[:size], call_id=cid))
        out.append(Spec("assistant", f"Fixed issue #{turn}: adjusted the return values."))
    return out[:n]


def to_kompakt(specs: list[Spec]) -> list[Message]:
    out = []
    for s in specs:
        if s.call is not None:
            cid, name, args = s.call
            out.append(Message.assistant(tool_calls=[ToolCall(id=cid, name=name, arguments=args)]))
        elif s.role == "tool":
            out.append(Message.tool(s.text, tool_call_id=s.call_id or ""))
        else:
            out.append(Message(role=s.role, content=s.text))  # type: ignore[arg-type]
    return out


def to_pydantic(specs: list[Spec]) -> list[Any]:
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        SystemPromptPart,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    out: list[Any] = []
    for s in specs:
        if s.call is not None:
            cid, name, args = s.call
            out.append(ModelResponse(parts=[ToolCallPart(name, args, tool_call_id=cid)]))
        elif s.role == "tool":
            part = ToolReturnPart("read_file", s.text, tool_call_id=s.call_id or "")
            out.append(ModelRequest(parts=[part]))
        elif s.role == "system":
            out.append(ModelRequest(parts=[SystemPromptPart(s.text)]))
        elif s.role == "user":
            out.append(ModelRequest(parts=[UserPromptPart(s.text)]))
        else:
            out.append(ModelResponse(parts=[TextPart(s.text)]))
    return out


def to_maf(specs: list[Spec]) -> list[Any]:
    from agent_framework import Content
    from agent_framework import Message as MafMessage

    out = []
    for s in specs:
        if s.call is not None:
            cid, name, args = s.call
            call = Content.from_function_call(cid, name, arguments=args)
            out.append(MafMessage("assistant", [call]))
        elif s.role == "tool":
            result = Content.from_function_result(s.call_id or "", result=s.text)
            out.append(MafMessage("tool", [result]))
        else:
            out.append(MafMessage(s.role, [Content.from_text(s.text)]))
    return out


# -- kompakt measurements ----------------------------------------------------------------


def kompakt_per_turn(n: int, turns: int) -> list[float]:
    index = MessageIndex(to_kompakt(conversation(n)), tokenizer=CharEstimator())
    compactor = Compactor(TokensExceed(QUIET), strategy=Truncation())
    compactor.check(index)
    extra = to_kompakt(conversation(n + turns)[n:])
    out = []
    for m in extra:
        t0 = time.perf_counter()
        index.append(m)
        compactor.check(index)
        out.append(time.perf_counter() - t0)
    return out


def kompakt_cold(n: int, make: Callable[[], Any]) -> Iterator[tuple[float, int]]:
    """Cold compactions of a fresh `n`-message list (after a warm-up run on a small one),
    one per step: the seconds each took and the tokens of its output."""
    new_tokenizer = TOKENIZERS[TOKENIZER[0]]
    apply_compaction(to_kompakt(conversation(WARM)), make(), tokenizer=new_tokenizer())
    msgs = to_kompakt(conversation(n))
    while True:
        tok = new_tokenizer()  # a fresh cache: every message is counted
        t0 = clock()
        out = apply_compaction(msgs, make(), tokenizer=tok)
        seconds = clock() - t0
        yield seconds, sum(tok.count_message(m) for m in out)


def cold_in_turn(
    n: int, make: Callable[[], Any], repeat: int, peers: list[PeerRun]
) -> tuple[float, int]:
    """kompakt's cold runs and each peer's, in turn (a load that comes and goes on a shared
    machine falls on both sides alike): kompakt's best seconds and its output's tokens."""
    ours = kompakt_cold(n, make)
    times, tokens = [], 0
    for _ in range(repeat):
        seconds, tokens = next(ours)
        times.append(seconds)
        for peer in peers:
            peer.step()
    return min(times), tokens


def chain_without_digest() -> list[StrategyLike]:
    """`Budgeted`'s default chain without its digest (the harness's tiers write no note
    either): supersede, clamp, clamp to budget, collapse."""
    from kompakt.strategies.digest import ExtractiveDigest

    return [s for s in default_chain(BUDGET) if not isinstance(s, ExtractiveDigest)]


# -- the peers (each runs in a child process) ---------------------------------------------


def _maf_worker(kind: str, n: int, repeat: int, q: Any, go: Callable[[], Any]) -> None:
    from agent_framework._compaction import (
        CharacterEstimatorTokenizer,
        ToolResultCompactionStrategy,
        TruncationStrategy,
        apply_compaction,
        included_token_count,
    )

    tok = CharacterEstimatorTokenizer()

    async def run() -> None:
        if kind == "turn":
            msgs = to_maf(conversation(n))
            quiet = TruncationStrategy(max_n=QUIET, compact_to=QUIET, tokenizer=tok)
            await apply_compaction(msgs, strategy=quiet, tokenizer=tok)  # annotate once
            extra = to_maf(conversation(n + repeat)[n:])
            q.put(("ready", 0.0, 0))
            for m in extra:
                t0 = time.perf_counter()
                msgs.append(m)
                await apply_compaction(msgs, strategy=quiet, tokenizer=tok)
                q.put(("result", time.perf_counter() - t0, 0))
            return
        warm = TruncationStrategy(max_n=BUDGET, compact_to=BUDGET, tokenizer=tok)
        await apply_compaction(to_maf(conversation(WARM)), strategy=warm, tokenizer=tok)
        q.put(("ready", 0.0, 0))
        for _ in range(repeat):
            go()  # in turn with kompakt's run: the machine's load falls on both alike
            msgs = to_maf(conversation(n))  # fresh: MAF annotates messages in place
            if kind == "truncate":
                strategy: Any = TruncationStrategy(max_n=BUDGET, compact_to=BUDGET, tokenizer=tok)
            else:
                strategy = ToolResultCompactionStrategy(keep_last_tool_call_groups=KEEP_TOOL_GROUPS)
            t0 = clock()
            await apply_compaction(msgs, strategy=strategy, tokenizer=tok)
            dt = clock() - t0
            q.put(("result", dt, included_token_count(msgs)))

    asyncio.run(run())


def _harness_strategy(kind: str) -> Any:
    from pydantic_ai_harness.compaction import (
        ClampOversizedMessages,
        ClearToolResults,
        DeduplicateFileReads,
        SlidingWindowCompaction,
        TieredCompaction,
    )

    def file_key(call: Any) -> str | None:
        return call.args_as_dict().get("path") if call.tool_name == "read_file" else None

    if kind == "truncate":
        return SlidingWindowCompaction(max_tokens=BUDGET, keep_tokens=BUDGET)
    if kind == "collapse":
        return ClearToolResults(max_tokens=BUDGET, keep_pairs=KEEP_TOOL_GROUPS)
    tiers = [
        DeduplicateFileReads(file_key=file_key),
        ClampOversizedMessages(max_part_tokens=CLAMP_AT),
        ClearToolResults(max_tokens=BUDGET, keep_pairs=KEEP_TOOL_GROUPS),
        SlidingWindowCompaction(max_tokens=BUDGET, keep_tokens=BUDGET),
    ]
    return TieredCompaction(tiers=tiers, target_tokens=BUDGET)


class _RunContext:
    """What `TieredCompaction.compact` reads of its run context: the model (a name only
    resolves a fraction of its window, and the target here is absolute)."""

    model = "test"


def _harness_worker(kind: str, n: int, repeat: int, q: Any, go: Callable[[], Any]) -> None:
    from pydantic_ai_harness.compaction._shared import estimate_token_count, exceeds

    async def run() -> None:
        if kind == "turn":
            msgs = to_pydantic(conversation(n))
            exceeds(msgs, None, QUIET, None)
            extra = to_pydantic(conversation(n + repeat)[n:])
            q.put(("ready", 0.0, 0))
            for m in extra:
                t0 = time.perf_counter()
                msgs.append(m)
                exceeds(msgs, None, QUIET, None)
                q.put(("result", time.perf_counter() - t0, 0))
            return
        await _harness_strategy(kind).compact(to_pydantic(conversation(WARM)), _RunContext())
        q.put(("ready", 0.0, 0))
        for _ in range(repeat):
            go()  # in turn with kompakt's run: the machine's load falls on both alike
            msgs = to_pydantic(conversation(n))
            strategy = _harness_strategy(kind)
            t0 = clock()
            out = await strategy.compact(msgs, _RunContext())
            dt = clock() - t0
            q.put(("result", dt, estimate_token_count(out)))

    asyncio.run(run())


GOALS = {"truncate": "drop oldest first", "chain": "the cheap chain"}
"""The cold rows kompakt must run at least 2x faster than the harness."""

PEERS: dict[str, tuple[str, Callable[[str, int, int, Any, Callable[[], Any]], None]]] = {
    "MAF": ("agent_framework", _maf_worker),
    "harness": ("pydantic_ai_harness", _harness_worker),
}
DISTS = {"MAF": "agent-framework-core", "harness": "pydantic-ai-harness"}
KINDS = {
    "MAF": ("turn", "truncate", "collapse"),
    "harness": ("turn", "truncate", "collapse", "chain"),
}
"""What each peer has a counterpart for."""
PYTHONS: dict[str, str] = {}
"""Peer name -> the interpreter of its own environment (`--harness-python`)."""


def available_peers() -> dict[str, str]:
    """Peer name -> version, for the peers importable here (or in their own environment)."""
    import importlib
    import importlib.metadata as md

    out = {}
    for name, (module, _) in PEERS.items():
        if name in PYTHONS:
            code = f"import importlib.metadata as m; print(m.version({DISTS[name]!r}))"
            done = subprocess.run([PYTHONS[name], "-c", code], capture_output=True, text=True)
            if done.returncode == 0:
                out[name] = done.stdout.strip()
            continue
        try:
            importlib.import_module(module)
        except Exception:
            continue
        try:
            out[name] = md.version(DISTS[name])
        except md.PackageNotFoundError:
            out[name] = "?"
    return out


@dataclass
class Measured:
    seconds: float | None
    tokens: int = 0
    hit: bool = False
    error: bool = False


class _Child:
    """A peer worker running this file under another interpreter, its results read from
    its stdout (one JSON line each) into a queue: the same surface as a forked process."""

    def __init__(self, python: str, peer: str, kind: str, n: int, repeat: int) -> None:
        import queue

        argv = [python, __file__, "--peer-worker", peer, kind, str(n), str(repeat), CLOCKS[0]]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.queue: queue.Queue[Any] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.queue.put(tuple(json.loads(line)))

    def go(self) -> None:
        """Let the worker start its next cold run."""
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def is_alive(self) -> bool:
        return self.proc.poll() is None

    def terminate(self) -> None:
        self.proc.terminate()

    def join(self, timeout: float) -> None:
        self.proc.wait(timeout)


class _StdoutQueue:
    """The worker's side of `_Child`: `put` writes one JSON line."""

    def put(self, item: Any) -> None:
        print(json.dumps(item), flush=True)


def _get(q: Any, proc: Any, timeout: float) -> Any:
    """The next result, or TimeoutError (limit hit) / RuntimeError (the child died)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            return q.get(timeout=min(0.2, max(0.01, deadline - time.monotonic())))
        except Exception:
            if not proc.is_alive() and q.empty():
                raise RuntimeError("peer failed") from None
    raise TimeoutError


class PeerRun:
    """A peer measured in a child process, each call under `limit`: all its runs at once
    (`collect`), or a cold run at a time (`step`), in turn with kompakt's."""

    def __init__(self, peer: str, kind: str, n: int, repeat: int, limit: float) -> None:
        self.limit, self.repeat = limit, repeat
        self.proc: Any
        if peer in PYTHONS:
            self.proc = _Child(PYTHONS[peer], peer, kind, n, repeat)
            self.q: Any = self.proc.queue
            self.go: Callable[[], Any] = self.proc.go
        else:
            ctx = mp.get_context("fork")
            self.q, go = ctx.Queue(), ctx.Queue()
            self.go = lambda: go.put(None)
            args = (kind, n, repeat, self.q, go.get)
            self.proc = ctx.Process(target=PEERS[peer][1], args=args, daemon=True)
            self.proc.start()
        self.times: list[float] = []
        self.tokens = 0
        self.hit = self.error = False
        self._next(max(600.0, limit * 10))  # building the history is not measured

    def _next(self, timeout: float) -> None:
        if self.hit or self.error:
            return
        try:
            what, dt, tokens = _get(self.q, self.proc, timeout)
        except TimeoutError:
            self.hit = True
        except RuntimeError:
            self.error = True
        else:
            if what == "result":
                self.times.append(dt)
                self.tokens = tokens

    def step(self) -> None:
        """One cold run, now."""
        if not (self.hit or self.error):
            self.go()
            self._next(self.limit)

    def collect(self) -> None:
        """Every run, as the worker makes them (the per-turn row)."""
        for _ in range(self.repeat):
            self._next(self.limit)

    def result(self, *, best: bool) -> Measured:
        """Median (or with `best`, the least) of the runs; the child is ended."""
        self.proc.terminate()
        self.proc.join(5)
        times = self.times
        seconds = (min(times) if best else statistics.median(times)) if times else None
        return Measured(seconds, self.tokens, self.hit, self.error)


# -- report ------------------------------------------------------------------------------


def fmt_time(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds:.2f} s"


def cells(ours: float, peer: Measured, limit: float) -> str:
    """The peer's time and the kompakt/peer ratio."""
    if peer.hit:
        return f"{'> ' + format(limit, 'g') + ' s':>10} {'< ' + format(ours / limit, '.2g'):>24}"
    if peer.seconds is None:
        return f"{'failed' if peer.error else 'n/a':>10} {'':>24}"
    if peer.seconds >= ours:
        times = peer.seconds / ours
        ratio = f"{ours / peer.seconds:.2g} ({times:,.{0 if times >= 10 else 1}f}× faster)"
    else:
        ratio = f"{ours / peer.seconds:.2g} ({ours / peer.seconds:.1f}× slower)"
    return f"{fmt_time(peer.seconds):>10} {ratio:>24}"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--sizes", default="1000,10000,50000", help="message counts, comma-separated")
    p.add_argument("--limit", type=float, default=60.0, help="seconds allowed per peer call")
    p.add_argument("--repeat", type=int, default=3, help="runs of each cold measurement (best)")
    p.add_argument("--turns", type=int, default=5, help="appended turns measured for the peers")
    p.add_argument("--peers", default=",".join(PEERS), help="peers to compare, comma-separated")
    p.add_argument("--harness-python", help="interpreter of an environment with the harness")
    p.add_argument("--clock", choices=list(CLOCK), default="wall", help="clock of cold rows")
    p.add_argument("--replay", type=int, default=0, help="kompakt only: replay N messages")
    p.add_argument(
        "--tokenizer", choices=list(TOKENIZERS), default="chars4", help="kompakt's estimate"
    )
    args = p.parse_args(argv)
    if args.replay:
        replay(args.replay)
        return
    if args.harness_python:
        PYTHONS["harness"] = args.harness_python
    CLOCKS[0] = args.clock
    TOKENIZER[0] = args.tokenizer
    sizes = [int(s) for s in args.sizes.split(",")]
    found = available_peers()
    peers = [x for x in args.peers.split(",") if x in found]
    names = ", ".join(f"{x} {found[x]}" for x in peers) or "no peer installed: kompakt only"
    print(f"kompakt vs {names}")
    print(
        f"budget {BUDGET:,} tokens; ~4 chars/token everywhere; per turn: medians; "
        f"cold: best of {args.repeat}, warmed, {args.clock} time; limit {args.limit:g} s; "
        f"kompakt's estimate: {args.tokenizer}"
    )
    header = f"{'msgs':>7}  {'measure':<28} {'kompakt':>10}"
    for x in peers:
        header += f" {x:>10} {'kompakt/' + x:>24}"
    print(
        header
        + "  tokens after, each by its own count (kompakt"
        + "".join(f", {x}" for x in peers)
        + ")"
    )
    cold: list[tuple[str, str, Callable[[], Any]]] = [
        (
            f"(b) cold truncation to {BUDGET // 1000}k",
            "truncate",
            lambda: Budgeted(BUDGET, strategies=[]),
        ),
        ("(c) collapse tool results", "collapse", _collapse),
        (
            "(d) cheap chain to budget",
            "chain",
            lambda: Budgeted(BUDGET, strategies=chain_without_digest()),
        ),
    ]
    speedups: list[tuple[int, str, float]] = []
    for n in sizes:
        history = MessageIndex(to_kompakt(conversation(n)), tokenizer=CharEstimator())
        per_turn = statistics.median(kompakt_per_turn(n, 200)), history.total_tokens
        del history
        rows: list[tuple[str, str, Callable[[], Any] | None]] = [
            ("(a) per turn: append + check", "turn", None),
            *cold,
        ]
        for label, kind, make in rows:
            repeat = args.turns if make is None else args.repeat
            runs = {x: PeerRun(x, kind, n, repeat, args.limit) for x in peers if kind in KINDS[x]}
            if make is None:
                (ours, tokens), after = per_turn, [f"(history: {per_turn[1]:,})"]
                for run in runs.values():
                    run.collect()
            else:
                ours, tokens = cold_in_turn(n, make, repeat, list(runs.values()))
                after = [f"{tokens:,}"]
            line = f"{n:>7,}  {label:<28} {fmt_time(ours):>10}"
            for x in peers:
                if x not in runs:
                    line += f" {'-':>10} {'':>24}"
                    if make is not None:
                        after.append("-")
                    continue
                m = runs[x].result(best=make is not None)
                line += " " + cells(ours, m, args.limit)
                if x == "harness" and kind in GOALS and m.seconds:
                    speedups.append((n, GOALS[kind], m.seconds / ours))
                if make is not None:
                    after.append(f"{m.tokens:,}" if m.tokens else "-")
            print(line + "  " + " / ".join(after))
            sys.stdout.flush()
    for n, what, times in speedups:
        verdict = "ok" if times >= 2 else "below the 2x goal"
        print(f"cold ratio at {n:,} messages, {what}: {times:.2f}x the harness's speed ({verdict})")


def peer_worker(argv: list[str]) -> None:
    """``--peer-worker PEER KIND N REPEAT CLOCK``: run one peer here, results on stdout."""
    peer, kind, n, repeat, CLOCKS[0] = argv
    PEERS[peer][1](kind, int(n), int(repeat), _StdoutQueue(), sys.stdin.readline)


def replay(n: int) -> None:
    """Append `n` messages one by one, compacting whenever the trigger fires."""
    print(f"kompakt: {n:,} messages appended one at a time, compacting whenever over 20k tokens")
    compactors: list[tuple[str, Callable[[], Compactor]]] = [
        ("CollapseToolResults", lambda: Compactor(TokensExceed(20_000), strategy=_collapse())),
        ("Budgeted(20k), default chain", lambda: Compactor(strategy=Budgeted(20_000))),
    ]
    for label, make in compactors:
        index = MessageIndex(tokenizer=CharEstimator())
        compactor = make()
        times: list[float] = []
        for m in to_kompakt(conversation(n)):
            index.append(m)
            t0 = time.perf_counter()
            if compactor.check(index):
                compactor.compact(index)
                times.append(time.perf_counter() - t0)
        total = fmt_time(sum(times))
        each = fmt_time(statistics.median(times)) if times else "-"
        print(f"  {label:<30} {len(times):>6,} compactions, {total} in all, median {each} each")


def _collapse() -> CollapseToolResults:
    return CollapseToolResults(keep_last_groups=KEEP_TOOL_GROUPS, min_preserved=0)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--peer-worker"]:
        peer_worker(sys.argv[2:])
    else:
        main()
