"""Background compaction: prepared while the agent waits on its model, never used stale."""

from __future__ import annotations

import asyncio
import itertools
import json
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strategies_conv
from engine_helpers import check_view, conversations, validity
from kompakt.agent import Agent, BackgroundCompaction, BackgroundCompactor, Cadence
from kompakt.agent.target import close_gap
from kompakt.compactor import CompactionEvent, Compactor
from kompakt.index import MessageIndex
from kompakt.messages import Message, ToolCall
from kompakt.models import ScriptedModel
from kompakt.strategies import Summarize
from kompakt.strategies.base import CompactionContext
from kompakt.tokens import CharEstimator
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


def loop(steps: int, answer: str = "done") -> list[Message | str]:
    out: list[Message | str] = []
    for i in range(steps):
        c = ToolCall(id=f"c{i}", name="read_log", arguments=json.dumps({"n": i}))
        out.append(Message.assistant("", tool_calls=[c]))
    return [*out, answer]


class Clock:
    """A scripted agent model that notes when each answer is given."""

    def __init__(self, script: list[Message | str]) -> None:
        self.times: list[float] = []
        self.script = iter(script)

    def __call__(self, messages: list[Message]) -> Message | str:
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
        strategy=Summarize(keep_last_groups=2, summarizer=model),
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
        flat = CharEstimator(chars_per_token=4)  # the sizes assume four characters a token
        script = loop(3, "first done") + loop(3, "second done")[:3] + ["second done"]
        model = ScriptedModel(script, tokenizer=flat)  # the usage it reports counts too
        agent = Agent(
            model, tools=[read_log], compactor=compactor(summ), prepare_at=1200, tokenizer=flat
        )
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


# -- timed preparations, swap-in to the target, nothing wasted ----------------------------

FAST_MODEL = 0.04
FAST_SUMMARY = 0.12


def slow_summarizer(delay: float = FAST_SUMMARY, fail: bool = False) -> ScriptedModel:
    n = itertools.count(1)

    def answer(msgs: list[Message]) -> str:
        if fail:
            raise ConnectionError("summarizer unreachable")
        return f"## Goal\n- read the logs (summary #{next(n)})"

    return ScriptedModel(answer, delay=delay, name="slow-summarizer")


def run_agent(
    steps: int,
    summ: ScriptedModel,
    *,
    background: bool,
    keep_last_groups: int = 2,
    trigger: int = 3000,
    target: int = 2000,
    **options: object,
) -> tuple[Agent, object]:
    model = ScriptedModel(loop(steps), delay=FAST_MODEL)
    agent = Agent(
        model,
        tools=[read_log],
        compactor=Compactor(
            trigger=TokensExceed(trigger),
            strategy=Summarize(keep_last_groups=keep_last_groups, summarizer=summ),
            target=TokensBelow(target),
        ),
        max_steps=steps + 1,
        background=background,
        **options,  # type: ignore[arg-type]
    )
    return agent, agent.run_sync("read the logs")


def test_a_timed_preparation_is_ready_when_the_trigger_fires() -> None:
    summ = slow_summarizer()
    agent, result = run_agent(24, summ, background=True)
    assert agent.background is not None and agent.background.prepare_at is None
    events = result.compactions  # type: ignore[attr-defined]
    assert len(events) >= 2
    assert all(e.reason == "prepared in the background" for e in events)
    # timed from the cadence: the summary was ready, the agent did not wait on it
    assert agent.background.stats["waited"] < FAST_SUMMARY / 2
    cadence = agent.background.cadence
    assert cadence.call_seconds is not None and cadence.call_seconds >= FAST_SUMMARY * 0.9
    assert cadence.step_seconds is not None and cadence.step_seconds >= FAST_MODEL


def test_background_makes_no_more_summarizer_calls_than_foreground() -> None:
    calls, shapes = {}, {}
    for background in (False, True):
        summ = slow_summarizer(delay=0.1)
        _, result = run_agent(
            40, summ, background=background, keep_last_groups=4, trigger=4000, target=2500
        )
        events = result.compactions  # type: ignore[attr-defined]
        assert len(events) >= 3 and all(e.shortfall is None for e in events)  # targets reached
        assert all(e.tokens_after <= 2500 for e in events)
        calls[background] = summ.calls
        shapes[background] = [e.messages_after for e in events]
    assert calls[True] <= calls[False] + 1, calls
    # the prepared summary covered what a compaction at the trigger covers: the view
    # after the swap is the foreground's (one digest note more at most)
    assert all(b - f in (0, 1) for f, b in zip(shapes[False], shapes[True], strict=False)), shapes


def test_groups_that_arrived_since_are_closed_to_the_target_without_a_model() -> None:
    summ = slow_summarizer(delay=0.02)
    # prepared far too early on purpose: many groups arrive before the trigger fires
    agent, result = run_agent(14, summ, background=True, prepare_at=600)
    event = result.compactions[0]  # type: ignore[attr-defined]
    assert event.reason == "prepared in the background"
    digest_steps = [s for s in event.steps if s.strategy == "ExtractiveDigest"]
    assert digest_steps and digest_steps[0].model_calls == 0
    assert event.tokens_after <= 2000 and event.shortfall is None
    assert event.model_calls == 1  # one summary, no second one at the next step
    sent = agent.view.render()
    assert not find_problems(sent)
    assert [m.metadata.get("kind") for m in sent if m.synthetic == "summary"][-1] == "remainder"


def test_an_unreachable_target_is_explained_once_naming_the_option() -> None:
    summ = slow_summarizer(delay=0.0)
    _, result = run_agent(16, summ, background=False, keep_last_groups=6)
    events = result.compactions  # type: ignore[attr-defined]
    assert events and all(e.shortfall for e in events)
    assert (
        "keep_last_groups=6" in events[0].shortfall
        and "lower keep_last_groups" in events[0].shortfall
    )
    assert "keep_last_groups=6" in events[0].summary()
    warnings = [w for w in result.warnings if "not reached" in w]  # type: ignore[attr-defined]
    assert len(warnings) == 1


def test_a_failing_background_summary_falls_back_to_the_digest_and_says_so() -> None:
    summ = slow_summarizer(fail=True)
    agent, result = run_agent(14, summ, background=True)
    event = result.compactions[0]  # type: ignore[attr-defined]
    assert event.reason == "prepared in the background"
    assert any("summarizer unreachable" in f for f in event.fallbacks), event.fallbacks
    summary = next(m for m in agent.view.render() if m.synthetic == "summary")
    assert summary.text.startswith("[Summary of")


def test_a_preparation_that_raises_is_compacted_in_the_foreground_and_recorded() -> None:
    def broken(view: View) -> None:
        raise RuntimeError("strategy bug")

    async def main() -> tuple[BackgroundCompaction, list[CompactionEvent]]:
        compactor = Compactor(
            TokensExceed(300), strategy=Summarize(keep_last_groups=1), target=TokensBelow(200)
        )
        background = BackgroundCompaction(compactor, prepare_at=200)
        index = MessageIndex([Message.user("task")])
        events = []
        for i in range(12):
            if background.pending:  # break the pending preparation
                background._compactor._prepared.task.cancel()  # type: ignore[union-attr]
            _, event = await background.checkpoint(index)
            if event is not None:
                events.append(event)
            index.append(Message.assistant(f"step {i} " + "word " * 40))
        return background, events

    background, events = asyncio.run(main())
    assert background.stats["failed"] >= 1
    first = events[0]
    assert first.reason.startswith("TokensExceed")
    assert any("background preparation failed" in f for f in first.fallbacks)


def test_a_run_ending_with_a_preparation_pending_cancels_it_unbilled() -> None:
    summ = slow_summarizer(delay=0.3)
    model = ScriptedModel(loop(2), delay=FAST_MODEL)
    compactor = Compactor(
        trigger=TokensExceed(50_000),
        strategy=Summarize(keep_last_groups=1, summarizer=summ),
        target=TokensBelow(20_000),
    )
    agent = Agent(model, tools=[read_log], compactor=compactor, prepare_at=200)
    result = agent.run_sync("read two logs")
    assert result.output == "done"
    assert agent.background is not None
    assert agent.background.stats["prepared"] == 1
    assert agent.background.stats["cancelled"] == 1 and not agent.background.pending
    assert summ.calls == 1 and summ.max_concurrent == 1  # it had started, and was stopped
    assert not result.compactions  # nothing billed on an event
    assert all(not m.synthetic for m in agent.view.render())


def test_an_awaited_run_keeps_its_preparation_for_the_next_run() -> None:
    async def main() -> tuple[Agent, ScriptedModel]:
        summ = slow_summarizer(delay=0.2)
        model = ScriptedModel(loop(3, "first done") + loop(4, "second done"), delay=FAST_MODEL)
        compactor = Compactor(
            trigger=TokensExceed(2500),
            strategy=Summarize(keep_last_groups=1, summarizer=summ),
            target=TokensBelow(1500),
        )
        agent = Agent(model, tools=[read_log], compactor=compactor, prepare_at=1000)
        await agent.run("first")
        assert agent.background is not None and agent.background.pending
        second = await agent.run("second")
        assert second.compactions[0].reason == "prepared in the background"
        return agent, summ

    agent, summ = asyncio.run(main())
    assert agent.background is not None
    assert agent.background.stats["cancelled"] == 0
    used = agent.background.stats["used"]
    assert used >= 1 and summ.calls == agent.background.stats["prepared"]


def test_cancel_stops_an_unfinished_preparation() -> None:
    async def main() -> tuple[BackgroundCompaction, ScriptedModel, bool]:
        summ = slow_summarizer(delay=5.0)
        compactor = Compactor(
            TokensExceed(300),
            strategy=Summarize(keep_last_groups=1, summarizer=summ),
            target=TokensBelow(200),
        )
        background = BackgroundCompaction(compactor, prepare_at=0)
        view = View(MessageIndex([Message.user("task " + "word " * 80), Message.user("next")]))
        started = background.prepare(view)
        await asyncio.sleep(0.05)
        t0 = time.perf_counter()
        cancelled = background.cancel()
        await asyncio.sleep(0)
        assert time.perf_counter() - t0 < 0.5
        return background, summ, started and cancelled

    background, summ, ok = asyncio.run(main())
    assert ok and background.stats["cancelled"] == 1 and not background.pending
    assert summ.calls == 1 and background.stats["used"] == 0


def test_the_cadence_starts_a_preparation_as_late_as_it_can() -> None:
    c = Cadence(margin=1.0)
    for _ in range(4):
        c.step(seconds=0.1, tokens=500)
    c.summary(seconds=0.25, calls=1)
    assert c.steps_ahead(4_000) == 3
    assert c.steps_ahead(20_000) == 8  # three calls, one after another
    assert not c.due(tokens=8_400, limit=10_000, span_tokens=4_000)
    assert c.due(tokens=8_600, limit=10_000, span_tokens=4_000)


def test_a_loop_that_is_not_the_agents_hides_the_summarizer_too() -> None:
    """A proxy or framework adapter: history in, view out, before each model call."""

    async def main() -> tuple[list[float], list[CompactionEvent], ScriptedModel]:
        summ = slow_summarizer()
        compactor = Compactor(
            TokensExceed(3000),
            strategy=Summarize(keep_last_groups=3, summarizer=summ),
            target=TokensBelow(2000),
        )
        background = BackgroundCompaction(compactor)
        index = MessageIndex([Message.user("read the logs")])
        spent, events = [], []
        for i in range(30):
            t0 = time.perf_counter()
            view, event = await background.checkpoint(index)
            spent.append(time.perf_counter() - t0)
            if event is not None:
                events.append(event)
                assert not find_problems(view.render())
            await asyncio.sleep(FAST_MODEL)  # the upstream model call
            index.append(Message.assistant(f"step {i}: " + read_log(i)))
        background.cancel()
        return spent, events, summ

    spent, events, summ = asyncio.run(main())
    assert len(events) >= 2
    assert all(e.reason == "prepared in the background" for e in events)
    assert max(spent) < FAST_SUMMARY / 2  # never a whole summary's wait
    assert summ.calls <= len(events) + 1


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conv=st.one_of(strategies_conv.conversations(), conversations()), keep=st.integers(0, 4))
def test_closing_the_gap_keeps_the_invariants(conv: list[Message], keep: int) -> None:
    view = View(MessageIndex(conv, tokenizer=CharEstimator()))
    newest = [
        view.rendered(g)
        for g in range(max(0, view.index.group_count - keep), view.index.group_count)
    ]
    step = close_gap(view, keep=keep)
    check_view(view, validity(conv))
    assert step is None or (step.changed and step.model_calls == 0)
    n = view.index.group_count
    assert [view.rendered(g) for g in range(max(0, n - keep), n)] == newest  # kept verbatim
