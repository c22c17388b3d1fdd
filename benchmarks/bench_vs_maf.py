"""kompakt against Microsoft Agent Framework's compaction, side by side in one run.

Both libraries get the same synthetic agent conversation (a system prompt, user
turns, assistant tool calls with results of a few KB, assistant answers) at each
size, and both count tokens with a 4-characters-a-token estimate. Measured:

(a) per turn: append one message and ask whether to compact (nothing to do);
(b) cold budgeted truncation of a fresh history to a fixed token budget;
(c) collapsing old tool results into short notes (and the tokens that saves).

Medians. The peer runs in a child process under a time limit per call; a call
that hits it is reported as "> N s". Nothing is installed here: MAF is measured
when `agent_framework` is importable (``pip install agent-framework-core``, the
``maf`` extra); otherwise only kompakt's column is filled.

    python benchmarks/bench_vs_maf.py                       # 1k, 10k, 50k messages
    python benchmarks/bench_vs_maf.py --sizes 1000,3000 --limit 30 --repeat 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from kompakt.compactor import Compactor, apply_compaction
from kompakt.index import MessageIndex
from kompakt.messages import Message, ToolCall
from kompakt.strategies import Budgeted, CollapseToolResults, Truncation
from kompakt.tokens import CharEstimator
from kompakt.triggers import TokensExceed

BUDGET = 80_000
"""Token budget of the cold truncation (b)."""
QUIET = 10**12
"""A trigger threshold never reached: the per-turn check has nothing to do."""
KEEP_TOOL_GROUPS = 2


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
            out.append(MafMessage("tool", [Content.from_function_result(s.call_id, result=s.text)]))
        else:
            out.append(MafMessage(s.role, [Content.from_text(s.text)]))
    return out


# -- kompakt measurements ----------------------------------------------------------------


def kompakt_per_turn(n: int, turns: int) -> list[float]:
    index = MessageIndex(to_kompakt(conversation(n)), tokenizer=CharEstimator())
    compactor = Compactor(TokensExceed(QUIET), Truncation())
    compactor.check(index)
    extra = to_kompakt(conversation(n + turns))[n:]
    out = []
    for m in extra:
        t0 = time.perf_counter()
        index.append(m)
        compactor.check(index)
        out.append(time.perf_counter() - t0)
    return out


def kompakt_cold(n: int, repeat: int, make: Callable[[], Any]) -> tuple[list[float], int]:
    msgs = to_kompakt(conversation(n))
    times, tokens = [], 0
    for _ in range(repeat):
        tok = CharEstimator()  # a fresh cache: every message is counted
        t0 = time.perf_counter()
        out = apply_compaction(msgs, make(), tokenizer=tok)
        times.append(time.perf_counter() - t0)
        tokens = sum(tok.count_message(m) for m in out)
    return times, tokens


# -- MAF measurements (run in a child process) ------------------------------------------


def maf_available() -> str | None:
    try:
        import agent_framework
    except ImportError:
        return None
    return str(getattr(agent_framework, "__version__", "?"))


def _maf_worker(kind: str, n: int, repeat: int, q: Any) -> None:
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
            extra = to_maf(conversation(n + repeat))[n:]
            q.put(("ready", 0.0, 0))
            for m in extra:
                t0 = time.perf_counter()
                msgs.append(m)
                await apply_compaction(msgs, strategy=quiet, tokenizer=tok)
                q.put(("result", time.perf_counter() - t0, 0))
            return
        q.put(("ready", 0.0, 0))
        for _ in range(repeat):
            msgs = to_maf(conversation(n))  # fresh: MAF annotates messages in place
            if kind == "truncate":
                strategy: Any = TruncationStrategy(max_n=BUDGET, compact_to=BUDGET, tokenizer=tok)
            else:
                strategy = ToolResultCompactionStrategy(keep_last_tool_call_groups=KEEP_TOOL_GROUPS)
            t0 = time.perf_counter()
            await apply_compaction(msgs, strategy=strategy, tokenizer=tok)
            dt = time.perf_counter() - t0
            q.put(("result", dt, included_token_count(msgs)))

    asyncio.run(run())


def maf_measure(kind: str, n: int, repeat: int, limit: float) -> tuple[list[float], int, bool]:
    """Timings, tokens after, and whether the time limit was hit."""
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    proc = ctx.Process(target=_maf_worker, args=(kind, n, repeat, q), daemon=True)
    proc.start()
    times: list[float] = []
    tokens = 0
    hit = False
    try:
        q.get(timeout=max(600.0, limit * 10))  # setup is not measured
        for _ in range(repeat):
            _, dt, tokens = q.get(timeout=limit)
            times.append(dt)
    except Exception:
        hit = True
    finally:
        proc.terminate()
        proc.join(5)
    return times, tokens, hit


# -- report ------------------------------------------------------------------------------


def fmt_time(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds:.2f} s"


def row(size: int, what: str, ours: float, peer: float | None, hit: bool, limit: float,
        note: str = "") -> str:  # fmt: skip
    peer_s = f"> {limit:g} s" if hit else ("n/a" if peer is None else fmt_time(peer))
    if hit:
        ratio = f"< {ours / limit:.2g}"
    elif peer is None:
        ratio = ""
    else:
        ratio = f"{ours / peer:.2g} ({peer / ours:,.0f}× faster)"
    return f"{size:>7,}  {what:<30} {fmt_time(ours):>10} {peer_s:>11}  {ratio:<26} {note}"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="1000,10000,50000", help="message counts, comma-separated")
    p.add_argument("--limit", type=float, default=60.0, help="seconds allowed per peer call")
    p.add_argument("--repeat", type=int, default=3, help="repetitions of each cold measurement")
    p.add_argument("--turns", type=int, default=5, help="appended turns measured for the peer")
    args = p.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    maf = maf_available()
    print(f"kompakt vs Microsoft Agent Framework {maf or '(not installed: kompakt only)'}")
    print(f"budget {BUDGET:,} tokens; 4 chars/token on both sides; medians; limit {args.limit:g} s")
    print(f"{'msgs':>7}  {'measure':<30} {'kompakt':>10} {'MAF':>11}  {'kompakt/MAF':<26} tokens")
    for n in sizes:
        ours = statistics.median(kompakt_per_turn(n, 200))
        peer: list[float] = []
        hit = False
        if maf:
            peer, _, hit = maf_measure("turn", n, args.turns, args.limit)
        print(row(n, "(a) per turn: append + check", ours, _med(peer), hit, args.limit))

        times, tokens = kompakt_cold(n, args.repeat, lambda: Budgeted(BUDGET, []))
        peer_tokens = 0
        if maf:
            peer, peer_tokens, hit = maf_measure("truncate", n, args.repeat, args.limit)
        note = f"{tokens:,} vs {peer_tokens:,}" if peer else f"{tokens:,}"
        print(row(n, f"(b) cold truncation to {BUDGET // 1000}k", statistics.median(times),
                  _med(peer), hit, args.limit, note))  # fmt: skip

        collapse = lambda: CollapseToolResults(keep_last=KEEP_TOOL_GROUPS, min_preserved=0)  # noqa: E731
        times, tokens = kompakt_cold(n, args.repeat, collapse)
        if maf:
            peer, peer_tokens, hit = maf_measure("collapse", n, args.repeat, args.limit)
        note = f"{tokens:,} vs {peer_tokens:,}" if peer else f"{tokens:,}"
        print(row(n, "(c) collapse tool results", statistics.median(times), _med(peer), hit,
                  args.limit, note))  # fmt: skip
        sys.stdout.flush()


def _med(xs: list[float]) -> float | None:
    return statistics.median(xs) if xs else None


if __name__ == "__main__":
    main()
