"""Summaries: what rolling saves, and what concurrency saves. Deterministic.

1. A 300-turn agent session is compacted whenever its view passes a token budget.
   The summarizer is a scripted model that sleeps a fixed time per call and counts the
   input tokens it receives. Compare the total summarizer input of kompakt's rolling
   `Summarize` (previous summary + only the evicted span) with a whole-history
   re-summarize (Koog's WholeHistory: every compaction re-reads every original).
2. Wall time of an 8-concept `FactRetrieval` (all concepts at once) against asking the
   concepts one after another (Koog's behaviour), with 50 ms per call.

Run: ``PYTHONPATH=src python benchmarks/bench_summaries.py``
"""

from __future__ import annotations

import asyncio
import json
import time

from kompakt.index import MessageIndex
from kompakt.messages import Message, ToolCall
from kompakt.models import ScriptedModel
from kompakt.strategies import (
    CODING_AGENT_CONCEPTS,
    CompactionContext,
    FactRetrieval,
    Summarize,
    WholeHistory,
    run_strategy,
)
from kompakt.strategies.base import BaseStrategy
from kompakt.view import View

TURNS = 300
BUDGET = 12_000
SUMMARY = "## Goal\n- " + "keep going with the refactor " * 20  # ~150 tokens
CALL_SECONDS = 0.005
KEEP = 24  # newest groups kept verbatim (6 turns)


def turn(i: int) -> list[Message]:
    call = ToolCall(id=f"c{i}", name="bash", arguments=json.dumps({"command": f"pytest -k t{i}"}))
    return [
        Message.user(f"step {i}: refactor module_{i % 17}.py and keep the tests green"),
        Message.assistant(f"Running the tests for module_{i % 17}.", tool_calls=[call]),
        Message.tool(
            f"<returncode>{i % 3}</returncode>\n"
            + "".join(f"test_{i}_{j} PASSED\n" for j in range(40)),
            tool_call_id=f"c{i}",
        ),
        Message.assistant(f"Step {i} done: module_{i % 17}.py now passes. " * 3),
    ]


async def session(strategy: BaseStrategy, model: ScriptedModel) -> tuple[int, int, float]:
    """Append turn by turn; compact whenever the view passes the budget."""
    index = MessageIndex([Message.system("You are a coding agent.")])
    view = View(index)
    compactions = 0
    t0 = time.perf_counter()
    for i in range(TURNS):
        index.extend(turn(i))
        if view.total_tokens > BUDGET:
            await run_strategy(strategy, view, CompactionContext(view, summarizer=model))
            compactions += 1
    return model.input_tokens, compactions, time.perf_counter() - t0


async def facts(max_concurrency: int) -> tuple[float, int]:
    index = MessageIndex([m for i in range(12) for m in turn(i)])
    view = View(index)
    model = ScriptedModel('{"facts": ["module_3.py passes"]}', delay=0.05)
    strategy = FactRetrieval(
        CODING_AGENT_CONCEPTS, model, keep_last_groups=2, max_concurrency=max_concurrency
    )
    t0 = time.perf_counter()
    await run_strategy(strategy, view, CompactionContext(view))
    return time.perf_counter() - t0, model.calls


async def main() -> None:
    print(f"== {TURNS}-turn session, compacted whenever it passes {BUDGET:,} tokens, keep {KEEP}")
    rolling = Summarize(keep_last_groups=KEEP, mode="replace")
    koog = WholeHistory(keep_last_groups=KEEP, rolling=False, max_input_tokens=10_000_000)
    results = {}
    for label, strategy in (("rolling Summarize", rolling), ("whole-history (Koog)", koog)):
        model = ScriptedModel(SUMMARY, delay=CALL_SECONDS)
        tokens, compactions, seconds = await session(strategy, model)
        results[label] = tokens
        print(
            f"{label:>22}: {tokens:>12,} summarizer input tokens, {model.calls:>4} calls, "
            f"{compactions:>3} compactions, {seconds:6.2f} s"
        )
    ratio = results["whole-history (Koog)"] / max(1, results["rolling Summarize"])
    print(f"   whole-history / rolling input tokens: {ratio:.1f}x")

    print("== 8-concept fact retrieval, 50 ms per call")
    together, calls = await facts(max_concurrency=16)
    one_by_one, _ = await facts(max_concurrency=1)
    print(f"{'all concepts at once':>22}: {together * 1000:7.0f} ms ({calls} calls)")
    print(f"{'one after another':>22}: {one_by_one * 1000:7.0f} ms")
    print(f"   sequential / concurrent wall time: {one_by_one / together:.1f}x")


if __name__ == "__main__":
    asyncio.run(main())
