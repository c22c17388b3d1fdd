"""`kompakt replay` on one long tool run of 5k, 20k and 50k messages.

The run is the mini-swe-agent transcripts of tests/data concatenated, over and over, into
one task: the first system prompt and request, then every assistant step and tool result
of every transcript (call ids made unique per copy), cut at the size wanted. Each size is
replayed as the CLI does it (the default `budgeted` strategy, a 20 000-token budget, the
default target, artifacts checked by recall over a SQLite store of the originals), three
times; printed: the median seconds, compactions, and the 20k/5k and 50k/20k ratios. A
replay whose cost per compaction is proportional to what changed scales linearly: the
goal is 20k/5k <= 4.5 (4 is linear).

Run: ``PYTHONPATH=src python benchmarks/bench_replay.py`` (``--sizes 5000,20000`` for fewer)
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import time
from dataclasses import replace
from pathlib import Path

from kompakt.eval.replay import replay
from kompakt.formats import load
from kompakt.messages import Message
from kompakt.presets import DEFAULT_TARGET, make_compactor
from kompakt.tokens import CharEstimator

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "mini-swe-agent"
BUDGET = 20_000


def _steps(run: list[Message], copy: int) -> list[Message]:
    """The run's assistant steps and tool results, ids and call ids unique to `copy`, a
    call never answered in the run left out (the long run stays valid)."""
    answered = {m.tool_call_id for m in run if m.role == "tool"}
    out: list[Message] = []
    for m in run:
        if m.role in ("system", "user"):
            continue  # one task: no new request, no second system prompt
        calls = tuple(replace(c, id=f"{c.id}-{copy}") for c in m.tool_calls if c.id in answered)
        call_id = f"{m.tool_call_id}-{copy}" if m.tool_call_id else None
        out.append(m.evolve(id=f"{m.id}-{copy}", tool_calls=calls, tool_call_id=call_id))
    return out


def long_run(size: int) -> list[Message]:
    """One task of `size` messages: the transcripts' steps, repeated."""
    runs = [list(load(p)) for p in sorted(DATA.glob("*.traj.json"))]
    out = [m for m in runs[0][:2] if m.role in ("system", "user")]
    copy = 0
    while len(out) < size:
        copy += 1
        for run in runs:
            out.extend(_steps(run, copy))
    out = out[:size]
    while out[-1].role == "tool" or out[-1].tool_calls:  # end on a complete step
        out.pop()
    return out


def once(messages: list[Message]) -> tuple[float, int]:
    tok = CharEstimator()
    compactor = make_compactor("budgeted", BUDGET, target=DEFAULT_TARGET, tokenizer=tok)
    t0 = time.perf_counter()
    result = replay(messages, compactor, tokenizer=tok, budget=BUDGET, recall=True)
    return time.perf_counter() - t0, len(result.events)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="5000,20000,50000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    medians: dict[int, float] = {}
    print(f"{'messages':>9} {'median s':>9} {'compactions':>12} {'ms/compaction':>14}")
    for size in sizes:
        messages = long_run(size)
        times, events = [], 0
        for _ in range(args.repeat):
            seconds, events = once(messages)
            times.append(seconds)
        medians[size] = statistics.median(times)
        per = medians[size] * 1000 / max(1, events)
        print(f"{len(messages):>9,} {medians[size]:>9.2f} {events:>12,} {per:>14.2f}")
    for small, big in itertools.pairwise(sizes):
        ratio = medians[big] / medians[small]
        print(f"{big // 1000}k/{small // 1000}k: {ratio:.2f} (linear: {big / small:.2f})")


if __name__ == "__main__":
    main()
