"""Background compaction: prepared while the agent waits on its model, never used stale."""

from __future__ import annotations

import asyncio
import itertools
import json
import time

from kompakt.agent import Agent, BackgroundCompactor
from kompakt.compactor import Compactor
from kompakt.index import MessageIndex
from kompakt.messages import Message, ToolCall
from kompakt.models import ScriptedModel
from kompakt.strategies import Summarize
from kompakt.strategies.base import CompactionContext
from kompakt.triggers import TokensBelow, TokensExceed
from kompakt.validation import find_problems
from kompakt.view import View

SUMMARY_SECONDS = 0.5
MODEL_SECONDS = 0.6


def read_log(n: int) -> str:
    """Read log number n.

    Args:
        n: which log.
    """
    return f"log {n}: " + "lorem ipsum dolor sit amet " * 60


def loop(steps: int, answer: str = "done") -> list[object]:
    out: list[object] = []
    for i in range(steps):
        c = ToolCall(id=f"c{i}", name="read_log", arguments=json.dumps({"n": i}))
        out.append(Message.assistant("", tool_calls=[c]))
    return [*out, answer]


class Clock:
    """A scripted agent model that notes when each answer is given."""

    def __init__(self, script: list[object]) -> None:
        self.times: list[float] = []
        self.script = iter(script)

    def __call__(self, messages: list[Message]) -> object:
        self.times.append(time.perf_counter())
        return next(self.script)


def summarizer() -> ScriptedModel:
    n = itertools.count(1)
    return ScriptedModel(
        lambda msgs: f"## Goal\n- read the logs (summary #{next(n)})", delay=SUMMARY_SECONDS
    )


def compactor(model: ScriptedModel) -> Compactor:
    return Compactor(
        trigger=TokensExceed(2000),
        strategy=Summarize(keep_last=2, summarizer=model),
        target=TokensBelow(1200),
    )


def gaps(clock: Clock) -> list[float]:
    """Seconds between consecutive model answers, minus the model's own delay."""
    return [b - a - MODEL_SECONDS for a, b in itertools.pairwise(clock.times)]


def first_summary_request(model: ScriptedModel) -> int:
    return next(i for i, r in enumerate(model.requests) if any(m.synthetic for m in r))


def test_the_turn_crossing_the_trigger_does_not_wait_for_the_summarizer() -> None:
    results = {}
    for mode in ("background", "blocking"):
        clock = Clock(loop(7))
        model = ScriptedModel(clock, delay=MODEL_SECONDS)
        summ = summarizer()
        agent = Agent(
            model,
            tools=[read_log],
            compactor=compactor(summ),
            prepare_at=1700 if mode == "background" else None,
        )
        result = agent.run_sync("read the logs")
        assert result.output == "done"
        at = first_summary_request(model)
        overhead = gaps(clock)[at - 1]  # the checkpoint just before that request
        results[mode] = overhead
        assert not find_problems(list(model.requests[at]))
        if mode == "background":
            event = result.compactions[0]
            assert event.reason == "prepared in the background"
            assert agent.background is not None and agent.background.stats["used"] >= 1
            assert event.seconds < 0.05
            assert "summary #1" in next(m.text for m in model.requests[at] if m.synthetic)
    print(
        f"\nturn crossing the trigger: {results['background'] * 1000:.0f} ms of compaction "
        f"with background preparation, {results['blocking'] * 1000:.0f} ms blocking "
        f"(summarizer takes {SUMMARY_SECONDS * 1000:.0f} ms)"
    )
    assert results["background"] < 0.15
    assert results["blocking"] >= SUMMARY_SECONDS - 0.05


def test_a_stale_prepared_summary_is_never_used() -> None:
    def drop_one_tool_group(view: View, context: CompactionContext) -> bool:
        g = next(view.candidates(min_preserved=2, kinds=["tool_call"]))
        view.drop(g)
        return True

    async def main() -> tuple[Agent, ScriptedModel, ScriptedModel]:
        summ = summarizer()
        model = ScriptedModel(loop(3, "first done") + loop(3, "second done")[:3] + ["second done"])
        agent = Agent(model, tools=[read_log], compactor=compactor(summ), prepare_at=1200)
        await agent.run("first")  # passes prepare_at: a summary is prepared
        assert agent.background is not None and agent.background.pending
        await asyncio.sleep(SUMMARY_SECONDS + 0.1)
        assert agent.background.ready
        # the span the prepared summary covers changes before the trigger fires
        await agent.compact_now(drop_one_tool_group, record=False)
        await agent.run("second")  # crosses the trigger
        return agent, model, summ

    agent, model, summ = asyncio.run(main())
    assert agent.background is not None and agent.background.stats["stale"] == 1
    sent = [m.text for r in model.requests for m in r if m.synthetic == "summary"]
    assert sent, "a summary was made at the trigger"
    assert all("summary #1" not in t for t in sent)  # the stale one never reached the model
    assert summ.calls >= 2


def test_swap_in_unit_used_stale_and_grown() -> None:
    async def drop_first(view: View) -> None:
        await asyncio.sleep(0.01)
        view.drop(next(view.candidates(min_preserved=1)))

    def history(n: int) -> MessageIndex:
        return MessageIndex([Message.user(f"q{i}") for i in range(n)])

    async def used() -> tuple[str, list[str]]:
        live = View(history(4))
        bg = BackgroundCompactor(lambda m: True, drop_first)
        bg.prepare(live)
        live.index.append(Message.user("newer"))  # appended after the snapshot: fine
        return await bg.swap_in(live), [m.text for m in live.render()]

    async def stale() -> tuple[str, list[str]]:
        live = View(history(4))
        bg = BackgroundCompactor(lambda m: True, drop_first)
        bg.prepare(live)
        live.replace(0, [Message.user("edited", synthetic="clamped", covers=("x",))])
        return await bg.swap_in(live), [m.text for m in live.render()]

    async def grown() -> str:
        call = ToolCall(id="k", name="ls")
        live = View(MessageIndex([Message.user("a"), Message.assistant("", tool_calls=[call])]))

        async def drop_pending(view: View) -> None:
            view.drop(1)

        bg = BackgroundCompactor(lambda m: True, drop_pending)
        bg.prepare(live)
        live.index.append(Message.tool("out", tool_call_id="k"))  # the group grew
        return await bg.swap_in(live)

    assert asyncio.run(used()) == ("used", ["q1", "q2", "q3", "newer"])
    assert asyncio.run(stale()) == ("stale", ["edited", "q1", "q2", "q3"])
    assert asyncio.run(grown()) == "stale"


def test_a_budgeted_compaction_is_prepared_as_if_at_the_trigger() -> None:
    from kompakt.strategies import Budgeted

    model = ScriptedModel(loop(7))
    agent = Agent(
        model, tools=[read_log], compactor=Compactor(strategy=Budgeted(2000)), prepare_at=1500
    )
    result = agent.run_sync("read the logs")
    reasons = [e.reason for e in result.compactions]
    assert reasons and reasons[0] == "prepared in the background", reasons
    assert all(r == "prepared in the background" for r in reasons)  # never a blocking one
    assert max(result.request_tokens) <= 2000 + 500  # the trigger plus one step of growth
    assert all(not find_problems(list(r)) for r in model.requests)
