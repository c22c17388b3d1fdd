"""What compaction adds to an agent's run time: digest, summarizer in the foreground, and
summarizer in the background.

The Agent runs 60 tool steps of 2-4 KB each against a scripted remote model that takes
300 ms per call, with ``TokensExceed(20_000)`` -> ``TokensBelow(12_000)`` and a
summarizer model that takes 800 ms per call. Per mode (best of 3 runs): the overhead
per turn (run time minus the model's own time, per model call) as a % of one model
call, the compactions, the summarizer calls, and whether every compaction reached its
target.

    python benchmarks/bench_agent_latency.py              # the real delays (~1 min a mode)
    python benchmarks/bench_agent_latency.py --scale 0.2  # every delay x0.2: fast
    python benchmarks/bench_agent_latency.py --keep-last 18  # a target out of reach, explained
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import time
from dataclasses import dataclass

from kompakt import Agent, Compactor, Message, TokensBelow, TokensExceed, ToolCall
from kompakt.models import ScriptedModel
from kompakt.strategies import ExtractiveDigest, Summarize

STEPS = 60
MODEL_SECONDS = 0.3
SUMMARY_SECONDS = 0.8
TRIGGER, TARGET = 20_000, 12_000
WORDS = [
    "build",
    "test",
    "deploy",
    "cache",
    "index",
    "token",
    "parser",
    "module",
    "config",
    "error",
    "retry",
    "request",
    "response",
    "handler",
    "session",
    "store",
    "query",
    "commit",
    "branch",
    "merge",
]


def read_log(n: int) -> str:
    """Read log number n.

    Args:
        n: which log.
    """
    rng = random.Random(n)
    size = rng.randint(2_000, 4_000)
    lines, length = [], 0
    while length < size:
        line = f"{n}:{len(lines)} " + " ".join(rng.choice(WORDS) for _ in range(10))
        lines.append(line)
        length += len(line) + 1
    return "\n".join(lines)[:size]


def script() -> list[object]:
    calls: list[object] = []
    for i in range(STEPS):
        call = ToolCall(id=f"c{i}", name="read_log", arguments=json.dumps({"n": i}))
        calls.append(Message.assistant("", tool_calls=[call]))
    return [*calls, "all logs read"]


def summary(messages: list[Message]) -> str:
    return "## Goal\n- read every log\n## Current state\n" + "- logs read so far, all fine\n" * 20


@dataclass
class Outcome:
    overhead: float
    """Seconds per model call beyond the model's own time."""
    compactions: int
    summarizer_calls: int
    shortfall: str | None
    """Why a compaction missed its target (None: every one reached it)."""
    worst_after: int
    """The most tokens a compaction left (estimated, before calibration)."""


def run(mode: str, scale: float, keep_last_groups: int) -> Outcome:
    model = ScriptedModel(script(), delay=MODEL_SECONDS * scale)
    summarizer = ScriptedModel(summary, delay=SUMMARY_SECONDS * scale, name="summarizer")
    strategy = (
        ExtractiveDigest(keep_last_groups=keep_last_groups)
        if mode == "digest"
        else Summarize(keep_last_groups=keep_last_groups, summarizer=summarizer)
    )
    compactor: Compactor | None = Compactor(TokensExceed(TRIGGER), strategy, TokensBelow(TARGET))
    if mode == "none":
        compactor = None
    background = mode == "background"
    agent = Agent(
        model, [read_log], compactor=compactor, max_steps=STEPS + 1, background=background
    )
    t0 = time.perf_counter()
    result = agent.run_sync("read the logs 0 to 59")
    elapsed = time.perf_counter() - t0
    assert result.output == "all logs read", result.output
    steps = result.steps
    overhead = (elapsed - steps * MODEL_SECONDS * scale) / steps
    afters = [e.tokens_after for e in result.compactions]
    missed = [e.shortfall for e in result.compactions if e.shortfall]
    return Outcome(
        overhead,
        len(result.compactions),
        summarizer.calls,
        missed[0] if missed else None,
        max(afters, default=0),
    )


def best(mode: str, scale: float, repeat: int, keep_last_groups: int) -> Outcome:
    runs = [run(mode, scale, keep_last_groups) for _ in range(repeat)]
    return min(runs, key=lambda o: o.overhead)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every delay")
    parser.add_argument("--repeat", type=int, default=3, help="runs per mode (best is kept)")
    parser.add_argument("--keep-last", type=int, default=4, help="newest groups kept verbatim")
    args = parser.parse_args()
    logging.getLogger("kompakt.agent").setLevel(logging.ERROR)  # shortfalls are printed below
    call = MODEL_SECONDS * args.scale
    print(
        f"{STEPS} tool steps, model {call * 1000:.0f} ms/call, summarizer "
        f"{SUMMARY_SECONDS * args.scale * 1000:.0f} ms/call, TokensExceed({TRIGGER:,}) -> "
        f"TokensBelow({TARGET:,}), best of {args.repeat}"
    )
    print(
        f"{'mode':<24}{'per turn':>10}{'compactions':>13}{'summarizer':>12}{'target':>10}"
        f"{'worst after':>13}"
    )
    results: dict[str, Outcome] = {}
    for mode, label in (
        ("none", "no compactor"),
        ("digest", "digest"),
        ("foreground", "summarizer, foreground"),
        ("background", "summarizer, background"),
    ):
        o = results[mode] = best(mode, args.scale, args.repeat, args.keep_last_groups)
        reached = "missed" if o.shortfall else "reached"
        print(
            f"{label:<24}{o.overhead / call:>9.1%}{o.compactions:>13}{o.summarizer_calls:>12}"
            f"{reached:>10}{o.worst_after:>13,}"
        )
    for o in results.values():
        if o.shortfall:
            print(f"  {o.shortfall}")
            break
    bg, fg = results["background"], results["foreground"]
    print(
        f"background: overhead per turn {bg.overhead / call:.1%} of a model call; "
        f"summarizer calls background {bg.summarizer_calls} vs foreground {fg.summarizer_calls}"
    )


if __name__ == "__main__":
    main()
