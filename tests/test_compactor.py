"""Compactor, CompactionEvent, config, registry and apply_compaction."""

from __future__ import annotations

import asyncio
import copy
import gc
import json
import statistics
import time
from pathlib import Path
from typing import Any

import pytest

from engine_helpers import check_view, sig, validity
from kompakt.compactor import (
    STRATEGY_NAMES,
    CompactionEvent,
    Compactor,
    apply_compaction,
    apply_compaction_async,
    as_history_processor,
    strategy_from_name,
)
from kompakt.errors import BudgetImpossible, ConfigError
from kompakt.index import MessageIndex
from kompakt.messages import Message, ToolCall
from kompakt.strategies import (
    BaseStrategy,
    Budgeted,
    CollapseToolResults,
    CompactionContext,
    Pipeline,
    SupersedeReads,
    Truncation,
)
from kompakt.strategies._common import run_strategy_sync
from kompakt.tokens import CharEstimator
from kompakt.triggers import Never, TokensBelow, TokensExceed
from kompakt.view import View

DATA = Path(__file__).resolve().parent / "data"


def turn(i: int, size: int = 2_000) -> list[Message]:
    cid = f"c{i}"
    return [
        Message.user(f"question {i}"),
        Message.assistant(tool_calls=[ToolCall(id=cid, name="bash", arguments='{"cmd": "ls"}')]),
        Message.tool(f"out {i}\n" + "y" * size, tool_call_id=cid),
        Message.assistant(f"answer {i}"),
    ]


FLAT = CharEstimator(chars_per_token=4)
"""The thresholds here are sized for four characters a token (text of repeated letters)."""


def history(turns: int, size: int = 2_000) -> MessageIndex:
    idx = MessageIndex([Message.system("sys")], tokenizer=FLAT)
    for i in range(turns):
        idx.extend(turn(i, size))
    return idx


def test_hysteresis_and_persistent_view() -> None:
    idx = history(20)
    c = Compactor(TokensExceed(8_000), strategy=Truncation(), target=TokensBelow(5_000))
    assert c.check(idx)
    view, event = c.compact(idx)
    assert view is c.view and view.total_tokens <= 5_000 and not c.check(idx)
    assert event.changed and event.tokens_before == idx.total_tokens
    assert event.tokens_after == view.total_tokens and event.messages_after == len(view.render())
    assert "Truncation" in event.summary() and event.reason.endswith("fired")
    dropped = set(view.dropped_ids())
    # new messages appear included; the next compaction builds on the first
    idx.extend(turn(100))
    assert c.view is view and view.render()[-1].text == "answer 100"
    while not c.check(idx):
        idx.extend(turn(len(idx)))
    view2, event2 = c.compact(idx)
    assert dropped <= view2.dropped_ids()
    assert event2.tokens_before < idx.total_tokens  # started from the compacted view
    check_view(view2, validity(list(idx.messages)), 5_000)


def test_compact_is_a_noop_when_quiet_unless_forced() -> None:
    idx = history(2)
    c = Compactor(
        TokensExceed(10**9), strategy=Truncation(min_preserved=1), target=TokensBelow(500)
    )
    _, event = c.compact(idx)
    assert not event.changed and "did not fire" in event.reason
    assert event.summary().startswith("no compaction")
    _, event = c.compact(idx, force=True)
    assert event.changed and event.reason == "forced"


def test_failed_compaction_leaves_view_untouched() -> None:
    idx = MessageIndex([Message.system("s" * 4_000), Message.user("q")])
    c = Compactor(strategy=Budgeted(100))
    with pytest.raises(BudgetImpossible):
        c.compact(idx)
    assert c.view is not None and not c.view.changed


def test_default_trigger_from_budgeted_and_min_preserved_override() -> None:
    strategy = Budgeted(3_000)
    c = Compactor(strategy=strategy, min_preserved=5)
    assert c.trigger == TokensExceed(3_000)
    assert c.strategy is strategy and strategy.min_preserved == 2  # overridden per run only
    assert c.overrides.min_preserved == 5
    idx = history(10)
    view, _ = c.compact(idx)
    assert view.total_tokens <= 3_000


def test_min_preserved_override_keeps_that_many_newest_groups() -> None:
    idx = MessageIndex([Message.user(f"message {i} " + "x" * 400) for i in range(12)])
    kept = {}
    for n in (1, 5):
        c = Compactor(
            TokensExceed(100), strategy=Truncation(), target=TokensBelow(100), min_preserved=n
        )
        view, _ = c.compact(idx, force=True)
        kept[n] = [m.text.split()[1] for m in view.render()]
    assert kept[1] == ["11"]
    assert kept[5] == ["7", "8", "9", "10", "11"]


class AsyncDrop(BaseStrategy):
    async def apply_async(self, view: View, context: CompactionContext) -> bool:
        await asyncio.sleep(0)
        changed = False
        for g in view.candidates(2):
            if context.done():
                break
            view.drop(g)
            context.note(model_calls=1, model_input_tokens=10)
            changed = True
        return changed


def test_compact_async_counts_model_calls() -> None:
    idx = history(10)
    c = Compactor(TokensExceed(5_000), strategy=AsyncDrop())
    view, event = asyncio.run(c.compact_async(idx))
    assert view.total_tokens <= 5_000
    assert event.model_calls > 0 and event.model_input_tokens == 10 * event.model_calls
    assert f"{event.model_calls} model call(s)" in event.summary()


def test_check_and_append_are_constant_time() -> None:
    idx = history(2_500, size=200)  # 10k messages
    c = Compactor(TokensExceed(10**9), strategy=Truncation())
    c.check(idx)
    times = []
    for i in range(200):
        t0 = time.perf_counter()
        idx.append(Message.user(f"more {i}"))
        c.check(idx)
        times.append(time.perf_counter() - t0)
    assert statistics.median(times) < 200e-6, statistics.median(times)


def test_cold_budgeted_compaction_of_3k_messages_is_fast() -> None:
    msgs = list(history(750, size=3_000).messages)  # 3k messages
    t0 = time.perf_counter()
    out = apply_compaction(msgs, strategy=Budgeted(80_000), tokenizer=CharEstimator())
    assert time.perf_counter() - t0 < 2.0  # typically ~0.1 s, CharEstimator counts included
    assert sum(CharEstimator().count_message(m) for m in out) <= 80_000


def test_a_one_shot_compaction_leaves_no_garbage_cycle() -> None:
    # its view and index are freed when it returns, not left for the collector to find
    # (which then walks them inside some later, timed, compaction)
    msgs = list(history(100, size=400).messages)
    gc.collect()
    gc.disable()
    try:
        for strategy in (Budgeted(5_000), SupersedeReads(min_preserved=0)):
            apply_compaction(msgs, strategy=strategy, tokenizer=CharEstimator())
            assert gc.collect() == 0, strategy
    finally:
        gc.enable()


# -- config and registry ---------------------------------------------------------------


CONFIG = """
min_preserved = 3
[trigger]
tokens = 100000
[target]
tokens = 60000
[[strategy]]
name = "collapse_tool_results"
keep_last_groups = 3
[[strategy]]
name = "truncation"
trigger = { tokens = 90000 }
"""


def test_from_config_toml_text_file_and_dict(tmp_path: Path) -> None:
    f = tmp_path / "kompakt.toml"
    f.write_text(CONFIG)
    for source in (CONFIG, f, str(f)):
        c = Compactor.from_config(source)
        assert c.trigger == TokensExceed(100_000) and c.target == TokensBelow(60_000)
        assert isinstance(c.strategy, Pipeline)
        collapse, trunc = c.strategy.strategies
        assert isinstance(collapse, CollapseToolResults) and collapse.keep_last_groups == 3
        assert isinstance(trunc, Truncation)
        assert trunc.trigger == TokensExceed(90_000)
        assert c.overrides.preserved(trunc.min_preserved) == 3  # min_preserved, per run


def test_from_config_budget() -> None:
    c = Compactor.from_config({"budget": 8_000, "strategy": [{"name": "truncation"}]})
    assert isinstance(c.strategy, Budgeted) and c.trigger == TokensExceed(8_000)
    assert c.strategy.token_budget == 8_000
    tiny = Compactor.from_config({"budget": {"tokens": 10}}).strategy
    assert isinstance(tiny, Budgeted) and tiny.token_budget == 10


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"strategy": [{"name": "nope"}]}, "unknown strategy 'nope'"),
        ({"strategy": [{"name": "truncation", "keep": 1}]}, "bad options for strategy"),
        ({"trigger": {"tokenz": 1}, "budget": 5}, "unknown key"),
        ({"budgett": 5}, "unknown key"),
        ({}, "needs a `\\[\\[strategy\\]\\]`"),
        ("[trigger\n", "not valid TOML"),
        ("missing.toml", "not found"),
    ],
)
def test_config_errors_say_what_to_fix(config: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Compactor.from_config(config)  # type: ignore[arg-type]


def test_every_model_free_name_builds() -> None:
    needs: dict[str, dict[str, Any]] = {
        "sliding_window": {"keep_last_turns": 2},
        "budgeted": {"token_budget": 10},
        "pipeline": {"strategies": ["truncation"]},
    }
    model_free = [
        "truncation",
        "sliding_window",
        "keep_first_and_last",
        "collapse_tool_results",
        "remove_tool_calls",
        "clamp_oversized",
        "supersede_reads",
        "pipeline",
        "budgeted",
    ]
    assert set(model_free) <= set(STRATEGY_NAMES)
    for name in model_free:
        s = strategy_from_name(name, **needs.get(name, {}))
        assert hasattr(s, "apply")
    assert isinstance(strategy_from_name("CollapseToolResults"), CollapseToolResults)


# -- apply_compaction: the format in is the format out -----------------------------------


def openai_dicts() -> list[dict[str, object]]:
    out: list[dict[str, object]] = [{"role": "system", "content": "sys"}]
    for i in range(10):
        out += [
            {"role": "user", "content": f"q{i}"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {"name": "bash", "arguments": f'{{"cmd": "ls {i}"}}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": f"c{i}", "content": "z" * 2_000},
        ]
    return out


def test_openai_dicts_in_openai_dicts_out() -> None:
    dicts = openai_dicts()
    before = copy.deepcopy(dicts)
    out = apply_compaction(dicts, strategy=Budgeted(1_500), tokenizer=CharEstimator())
    assert dicts == before  # the input is not mutated
    assert isinstance(out, list) and all(isinstance(d, dict) for d in out)
    assert out[0] == {"role": "system", "content": "sys"} and out[-1] == dicts[-1]
    assert len(out) < len(dicts)


def test_anthropic_in_anthropic_out() -> None:
    doc = {
        "system": "sys",
        "messages": [
            {"role": "user", "content": "q" * 4_000},
            {"role": "assistant", "content": "a"},
            {"role": "user", "content": "last"},
        ],
    }
    out = apply_compaction(doc, strategy=Truncation(min_preserved=1), format="anthropic")
    assert out["system"] == "sys" and out["messages"][-1]["content"] == "last"


def test_messages_in_messages_out_and_processor() -> None:
    msgs = [Message.user("a" * 1_000), Message.assistant("b"), Message.user("c")]
    out = apply_compaction(msgs, strategy="truncation")
    assert [m.synthetic for m in out] == ["omitted", None, None] and out[1:] == msgs[1:]
    process = as_history_processor(Truncation(min_preserved=1))
    assert [m.text for m in process(msgs)][-1] == "c"


def test_async_apply_compaction() -> None:
    dicts = openai_dicts()
    out = asyncio.run(
        apply_compaction_async(
            dicts, strategy=Budgeted(1_500, strategies=[AsyncDrop()]), tokenizer=FLAT
        )
    )
    assert out == [dicts[0], *dicts[-6:]]  # the system prompt and the two newest turns


def test_trajectory_document_round_trips_compacted() -> None:
    path = DATA / "mini-swe-agent" / "django__django-11797.traj.json"
    doc = json.loads(path.read_text())
    out = apply_compaction(doc, strategy=Budgeted(10_000))
    assert set(out) == set(doc) and out["info"] == doc["info"]
    assert 2 < len(out["messages"]) < len(doc["messages"])


def test_event_summary_lists_fallbacks() -> None:
    idx = history(10)
    _, event = Compactor(
        strategy=Budgeted(2_000, strategies=[CollapseToolResults(keep_last_groups=5)])
    ).compact(idx)
    assert isinstance(event, CompactionEvent)
    assert event.fallbacks == ["Truncation: chain did not reach the budget"]
    assert "fallback: Truncation" in event.summary()


def test_budgeted_with_a_summarizing_strategy_sync_and_async() -> None:
    from kompakt.models import ScriptedModel
    from kompakt.strategies import Summarize

    def compactor() -> Compactor:
        model = ScriptedModel("Goal: fix issues. Done: turns summarized.")
        return Compactor(
            strategy=Budgeted(6_000, strategies=[Summarize(keep_last_groups=4, summarizer=model)])
        )

    idx = history(20)
    view, event = compactor().compact(idx)
    check_view(view, validity(list(idx.messages)), 6_000)
    assert event.model_calls >= 1 and any(m.synthetic == "summary" for m in view.render())

    view, event = asyncio.run(compactor().compact_async(idx))
    check_view(view, validity(list(idx.messages)), 6_000)
    assert event.model_calls >= 1


def test_agent_loop_compacts_rarely_and_stays_valid() -> None:
    idx = MessageIndex([Message.system("sys")], tokenizer=CharEstimator())
    c = Compactor(TokensExceed(20_000), strategy=Budgeted(12_000))
    events = []
    for i in range(300):
        idx.extend(turn(i, size=600))
        if c.check(idx):
            view, event = c.compact(idx)
            assert view.total_tokens <= 12_000
            events.append(event)
        assert c.view is not None and c.view.total_tokens <= 20_000 + 1_000
    assert 3 <= len(events) <= 40  # hysteresis: one compaction per ~8k tokens of growth
    assert all(e.tokens_before > 20_000 for e in events)
    assert c.view is not None
    check_view(c.view, validity(list(idx.messages)))


# -- repeated compaction of a growing history costs what it touches ----------------------


# a collapse note (a fenced, attributed record) costs ~30 tokens: 1 500 of them need 90k
# (under that, the default chain goes on to the digest, which leaves room for many turns);
# a cold walk over collapsed groups is cheap (each replacement's size is remembered, the
# walk asks each group a few questions without a call): the new group's note (it reads
# the result's ends for what it states), what a warm run pays, is a third of it or less
@pytest.mark.parametrize(
    ("strategy", "gain", "limit"), [("collapse", 2, 90_000), ("default", 2, 90_000)]
)
def test_each_compaction_of_a_growing_history_touches_only_what_is_new(
    strategy: str, gain: int, limit: int
) -> None:
    def make() -> Compactor:
        made = (
            CollapseToolResults(keep_last_groups=2, min_preserved=0)
            if strategy == "collapse"
            else Budgeted(limit)
        )
        return Compactor(TokensExceed(limit), strategy=made, target=TokensBelow(limit - 300))

    idx = history(1_500, size=400)
    c = make()
    c.compact(idx)
    warm, cold = [], []
    for i in range(1_500, 1_560):
        idx.extend(turn(i, size=400))
        assert c.view is not None
        if not c.check(idx):
            continue
        blank = c.view.copy()  # the same edits, but no walk remembers where it got to
        blank._cursors.clear()
        blank._revisit.clear()
        blank._memos.clear()
        t0 = time.perf_counter()
        view, _ = c.compact(idx)
        warm.append(time.perf_counter() - t0)
        assert view.total_tokens <= limit
        t0 = time.perf_counter()
        run_strategy_sync(c.strategy, blank, CompactionContext(blank, target=c.target))
        cold.append(time.perf_counter() - t0)
        assert blank.total_tokens == view.total_tokens
    assert len(warm) >= 10
    check_view(view, validity(list(idx.messages)))
    # a few new groups, not the 6,000 messages of the history
    assert statistics.median(warm) < statistics.median(cold) / gain, (warm, cold)


def test_clamp_reaches_an_old_request_once_a_newer_one_arrives() -> None:
    from kompakt.strategies import ClampOversized

    idx = MessageIndex([Message.user("the task " + "x" * 8_000)], tokenizer=CharEstimator())
    idx.extend(turn(0, size=100)[1:])
    clamp = ClampOversized(max_message_tokens=500, min_preserved=0)
    c = Compactor(trigger=TokensExceed(100), strategy=clamp)
    view, _ = c.compact(idx)
    assert view.is_original(0)  # the last user message stays verbatim
    idx.extend(turn(1, size=100))
    view, _ = c.compact(idx)
    assert view.render()[0].synthetic == "clamped"


def test_collapse_again_after_a_restore() -> None:
    idx = history(20, size=1_000)
    view = View(idx)
    strategy = CollapseToolResults(keep_last_groups=1, min_preserved=0)
    assert strategy.apply(view, CompactionContext(view))
    first_tool = next(g.index for g in idx.groups if g.kind == "tool_call")
    view.restore(first_tool)
    assert strategy.apply(view, CompactionContext(view))
    assert view.replacement(first_tool) is not None


def call_msg(cid: str, name: str, args: dict[str, str]) -> Message:
    return Message.assistant(tool_calls=[ToolCall(id=cid, name=name, arguments=json.dumps(args))])


class CountingSupersede(SupersedeReads):
    """Counts the groups it reads."""

    reads = 0

    def _read(self, view: View, seen: Any, g: int, done: frozenset[str]) -> frozenset[str]:
        CountingSupersede.reads += 1
        return super()._read(view, seen, g, done)


def test_supersede_reads_only_what_is_new_and_matches_a_fresh_run() -> None:
    reads = [
        [call_msg(f"c{i}", "read_file", {"path": f"f{i % 5}.py"}), Message.tool(
            f"v{i} " + "x" * 300, tool_call_id=f"c{i}")]
        for i in range(40)
    ]  # fmt: skip
    index = MessageIndex([Message.user("go")], tokenizer=CharEstimator())
    compactor = Compactor(strategy=CountingSupersede(min_preserved=0))
    for i, pair in enumerate(reads):
        index.extend(pair)
        CountingSupersede.reads = 0
        view, _ = compactor.compact(index, force=True)
        assert CountingSupersede.reads == 1  # the new group only
        fresh = View(MessageIndex(index.messages, tokenizer=CharEstimator()))
        run_strategy_sync(SupersedeReads(min_preserved=0), fresh, CompactionContext(fresh))
        assert sig(view.render()) == sig(fresh.render()), i
    superseded = [m for m in view.render() if m.synthetic == "superseded"]
    assert len(superseded) == 35  # every read but the newest of each of 5 files


def test_supersede_reads_a_batch_again_once_its_results_arrive() -> None:
    batch = Message.assistant(tool_calls=[
        ToolCall(id="b1", name="read_file", arguments='{"path": "a.py"}'),
        ToolCall(id="b2", name="read_file", arguments='{"path": "b.py"}')])  # fmt: skip
    msgs = [
        Message.user("go"),
        call_msg("c1", "read_file", {"path": "b.py"}),
        Message.tool("old b " + "x" * 400, tool_call_id="c1"),
        batch,
        Message.tool("a " + "x" * 400, tool_call_id="b1"),
    ]
    index = MessageIndex(msgs, tokenizer=CharEstimator())
    compactor = Compactor(strategy=SupersedeReads(min_preserved=0))
    view, _ = compactor.compact(index, force=True)
    assert not view.changed  # b.py was not read again yet
    index.append(Message.tool("new b " + "x" * 400, tool_call_id="b2"))
    view, _ = compactor.compact(index, force=True)
    out = check_view(view, validity(list(index.messages)))
    assert out[2].synthetic == "superseded" and out[-1].text.startswith("new b")


def test_event_before_and_finish_account_every_step() -> None:
    view = View(MessageIndex([Message.user("x" * 400)] * 3, tokenizer=CharEstimator()))
    event = CompactionEvent.before(view, "forced")
    ctx = CompactionContext(view)
    run_strategy_sync(Truncation(min_preserved=1), view, ctx)
    ctx.steps[0].model_calls, ctx.steps[0].fallback = 2, "why"
    event.finish(view, ctx.steps, seconds=0.5)
    before = 3 * CharEstimator().count_message(Message.user("x" * 400))
    assert (event.tokens_before, event.tokens_after) == (before, view.total_tokens)
    assert event.messages_after == view.message_count == 1 and event.seconds == 0.5
    assert event.model_calls == 2 and event.fallbacks == ["Truncation: why"]


def test_supersede_waits_while_the_newer_result_is_not_sent() -> None:
    msgs = [Message.user("go")]
    for i in (1, 2):
        msgs += [call_msg(f"c{i}", "read_file", {"path": "a.py"}),
                 Message.tool(f"v{i} " + "x" * 400, tool_call_id=f"c{i}")]  # fmt: skip
    msgs.append(Message.user("next"))
    view = View(MessageIndex(msgs, tokenizer=CharEstimator()))
    note = Message.note("[collapsed]", synthetic="collapsed", covers=(msgs[3].id, msgs[4].id))
    view.replace(2, (note,))  # the newer read is collapsed: the older one is all there is
    strategy = SupersedeReads(min_preserved=0)
    assert not run_strategy_sync(strategy, view, CompactionContext(view)).changed
    view.restore(2)
    assert run_strategy_sync(strategy, view, CompactionContext(view)).changed
    assert view.render()[2].synthetic == "superseded"


# -- a target the strategy cannot reach is explained -------------------------------------


def _big_tail() -> MessageIndex:
    """Twelve requests of 500 tokens each: the newest four groups alone take 2,000."""
    requests = [Message.user(f"request {i}: " + "x" * 1_988) for i in range(12)]
    return MessageIndex([Message.system("sys"), *requests], tokenizer=FLAT)


def test_compact_explains_a_target_the_kept_tail_alone_exceeds() -> None:
    from kompakt.strategies import ExtractiveDigest

    idx = _big_tail()
    compactor = Compactor(
        TokensExceed(3_000),
        strategy=ExtractiveDigest(keep_last_groups=4),
        target=TokensBelow(1_000),
    )
    view, event = compactor.compact(idx)
    assert view.total_tokens > 1_000  # the newest four groups stay, whatever the target
    assert event.shortfall is not None
    assert event.shortfall.startswith("target TokensBelow(limit=1000) not reached")
    assert "keep_last_groups=4 keeps the newest 4 groups" in event.shortfall
    assert "lower keep_last_groups" in event.shortfall
    assert event.shortfall in event.summary()
    # the same run, awaited, says the same; a target within reach says nothing
    _, awaited = asyncio.run(
        Compactor(
            TokensExceed(3_000),
            strategy=ExtractiveDigest(keep_last_groups=4),
            target=TokensBelow(1_000),
        ).compact_async(_big_tail())
    )
    assert awaited.shortfall == event.shortfall
    _, reached = Compactor(
        TokensExceed(3_000),
        strategy=ExtractiveDigest(keep_last_groups=1),
        target=TokensBelow(1_000),
    ).compact(_big_tail())
    assert reached.tokens_after <= 1_000 and reached.shortfall is None


def test_run_explains_against_the_target_it_was_given() -> None:
    compactor = Compactor(strategy=Truncation(min_preserved=3))
    view = View(_big_tail())
    event = compactor.run(view, target=TokensBelow(500))
    assert event.shortfall is not None and "min_preserved=3" in event.shortfall
    # a run to the strategy's end (apply_compaction's) has no target to miss
    assert compactor.run(View(_big_tail()), target=Never()).shortfall is None
    # a compactor's min_preserved is the option a shortfall names, at its value
    overridden = Compactor(strategy=Truncation(), min_preserved=5)
    event = overridden.run(View(_big_tail()), target=TokensBelow(500))
    assert event.shortfall is not None and "min_preserved=5" in event.shortfall
