"""Each model-free strategy does what its docstring says, on hand-built conversations."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine_helpers import check_view, validity
from kompakt.errors import BudgetImpossible, ConfigError
from kompakt.index import MessageIndex
from kompakt.messages import Message, Part, ToolCall, text_stand_in
from kompakt.strategies import (
    BaseStrategy,
    Budgeted,
    ClampOversized,
    CollapseToolResults,
    CompactionContext,
    KeepFirstAndLast,
    Pipeline,
    RemoveToolCalls,
    SlidingWindow,
    SupersedeReads,
    Truncation,
)
from kompakt.strategies._common import run_strategy_sync
from kompakt.tokens import CharEstimator
from kompakt.triggers import TokensBelow, TokensExceed
from kompakt.validation import find_problems
from kompakt.view import View

DATA = Path(__file__).resolve().parent / "data"


def call(cid: str, name: str = "read_file", **args: object) -> Message:
    return Message.assistant(
        tool_calls=[ToolCall(id=cid, name=name, arguments=json.dumps(args or {"path": "a.py"}))]
    )


def result(cid: str, text: str) -> Message:
    return Message.tool(text, tool_call_id=cid)


def big(n: int, tag: str = "x") -> str:
    return "\n".join(f"{tag} line {i} of output" for i in range(n))


def agent_run(groups: int = 8, size: int = 200) -> list[Message]:
    msgs = [Message.system("you are an agent"), Message.user("fix the bug in a.py")]
    for i in range(groups):
        msgs += [call(f"c{i}", "bash", command=f"step {i}"), result(f"c{i}", big(size, f"r{i}"))]
    msgs.append(Message.assistant("done"))
    return msgs


def apply(strategy: object, messages: list[Message], target: object = None) -> View:
    view = View(MessageIndex(messages, tokenizer=CharEstimator()))
    ctx = CompactionContext(view) if target is None else CompactionContext(view, target=target)  # type: ignore[arg-type]
    run_strategy_sync(strategy, view, ctx)  # type: ignore[arg-type]
    check_view(view, validity(messages))
    return view


# -- truncation and windows -------------------------------------------------------------


def test_truncation_stops_at_target_and_keeps_newest() -> None:
    msgs = agent_run()
    view = apply(Truncation(), msgs, target=TokensBelow(2_000))
    assert view.total_tokens <= 2_000
    out = view.render()
    assert out[0].role == "system" and out[1].text == "fix the bug in a.py"
    assert out[-1].text == "done"
    before = View(MessageIndex(msgs, tokenizer=CharEstimator())).total_tokens
    assert view.total_tokens > 2_000 - before // 8  # stopped as soon as the target held


def test_truncation_without_target_drops_all_it_may() -> None:
    view = apply(Truncation(min_preserved=1), agent_run())
    assert [m.text for m in view.render()] == ["you are an agent", "fix the bug in a.py", "done"]


def test_truncation_own_trigger_is_its_stop() -> None:
    msgs = agent_run()
    view = apply(Truncation(trigger=TokensExceed(3_000)), msgs)
    assert view.total_tokens <= 3_000
    view = apply(Truncation(trigger=TokensExceed(10**9)), msgs)
    assert not view.changed


def test_sliding_window_drops_whole_turns() -> None:
    msgs = [Message.system("s")]
    for t in range(5):
        msgs += [
            Message.user(f"q{t}"),
            call(f"c{t}"),
            result(f"c{t}", "r"),
            Message.assistant(f"a{t}"),
        ]
    view = apply(SlidingWindow(keep_last_turns=2), msgs)
    texts = [m.text for m in view.render()]
    assert texts[:2] == ["s", "q3"] and texts[-1] == "a4"
    assert view.turn_count == 2


def test_sliding_window_groups() -> None:
    msgs = [Message.user(f"q{i}") if i % 2 == 0 else Message.assistant(f"a{i}") for i in range(10)]
    view = apply(SlidingWindow(keep_last_groups=3), msgs)
    assert [m.text for m in view.render() if not m.synthetic] == ["q6", "a7", "q8", "a9"][-3:]


@pytest.mark.parametrize("kw", [{}, {"keep_last_turns": 1, "keep_last_groups": 1}])
def test_sliding_window_needs_one_limit(kw: dict[str, int]) -> None:
    with pytest.raises(ConfigError, match="exactly one"):
        SlidingWindow(**kw)  # type: ignore[arg-type]


def test_keep_first_and_last_keeps_the_task() -> None:
    view = apply(KeepFirstAndLast(keep_last_groups=2), agent_run())
    out = view.render()
    assert out[1].text == "fix the bug in a.py"
    assert len(out) == 5  # system, task, the last tool group (call + result), done
    assert view.tool_call_group_count == 1


# -- tool results ----------------------------------------------------------------------


def test_collapse_makes_one_short_note_per_group() -> None:
    msgs = agent_run(groups=6, size=300)
    view = apply(CollapseToolResults(keep_last_groups=2, max_note_chars=160), msgs)
    notes = [m for m in view.render() if m.synthetic == "collapsed"]
    assert len(notes) == 4
    for i, note in enumerate(notes):
        assert note.role == "assistant" and not note.tool_calls
        assert len(note.text) <= 160
        assert note.text == (
            "[Record of tool calls; output quoted as data]\n"
            f'<tool_output tool="bash" call="c{i}" args="command=step {i}">r{i} line 0 of output …'
            "</tool_output>"
        )
        assert len(note.covers) == 2
    assert view.tool_call_group_count == 2


def test_collapse_exclude_tools() -> None:
    msgs = [
        Message.user("go"),
        call("c1", "plan", step="1"),
        result("c1", big(100)),
        call("c2"),
        result("c2", big(100)),
        call("c3"),
        result("c3", "ok"),  # a note would cost more than this group: it stays
        Message.user("next"),
    ]
    view = apply(
        CollapseToolResults(keep_last_groups=0, exclude_tools=["plan"], min_preserved=0), msgs
    )
    kinds = [m.synthetic for m in view.render()]
    assert kinds == [None, None, None, "collapsed", None, None, None]  # plan is excluded


def test_collapse_saves_most_of_a_real_trajectory() -> None:
    path = DATA / "mini-swe-agent" / "django__django-11797.traj.json"
    from kompakt.formats import load

    conv = list(load(path))
    view = apply(CollapseToolResults(keep_last_groups=3), conv)
    before = MessageIndex(conv, tokenizer=CharEstimator()).total_tokens
    assert view.total_tokens < before * 0.75  # MAF's collapse saved a median 2.6%


def test_remove_tool_calls_keeps_newest() -> None:
    view = apply(RemoveToolCalls(keep_last_groups=2, min_preserved=0), agent_run(groups=5))
    out = view.render()
    assert [m.tool_call_id for m in out if m.role == "tool"] == ["c3", "c4"]
    assert len(view.dropped_ids()) == 6


# -- clamp ---------------------------------------------------------------------------


def test_clamp_keeps_head_tail_and_pairing() -> None:
    msgs = [
        Message.user("run"),
        call("c1", "bash", command="pytest"),
        result("c1", big(3000)),
        Message.assistant("failing"),
        Message.user("fix it"),
    ]
    view = apply(ClampOversized(max_message_tokens=300, min_preserved=1), msgs)
    clamped = [m for m in view.render() if m.synthetic == "clamped"]
    assert len(clamped) == 1
    m = clamped[0]
    assert m.role == "tool" and m.tool_call_id == "c1" and m.covers == (msgs[2].id,)
    assert m.text.startswith("x line 0 of output") and m.text.endswith("x line 2999 of output")
    assert "tokens elided …]" in m.text
    assert CharEstimator().count_text(m.text) <= 300


def partial_batch() -> list[Message]:
    """A parallel batch where one result has arrived and the other is still running."""
    batch = Message.assistant(
        tool_calls=[ToolCall(id="c2", name="bash"), ToolCall(id="c3", name="bash")]
    )
    return [
        Message.system("s"),
        Message.user("u"),
        call("c1"),
        result("c1", "x" * 40_000),
        batch,
        result("c2", "y" * 30_000),
    ]


def test_budgeted_clamps_the_results_of_a_partial_batch() -> None:
    from kompakt.compactor import apply_compaction

    msgs = partial_batch()
    out = apply_compaction(msgs, strategy=Budgeted(2000))
    assert sum(CharEstimator().count_message(m) for m in out) <= 2000
    assert out[4] is msgs[4]  # the call waits for c3, verbatim
    assert out[5].synthetic == "clamped" and out[5].tool_call_id == "c2"
    assert out[5].covers == (msgs[5].id,) and out[5].text.startswith("yyy")
    assert [m.role for m in out] == [m.role for m in msgs]


def test_clamp_with_nothing_over_its_limit_still_clamps_what_comes_later() -> None:
    # with no message over the limit, the clamp settles its walk without reading each
    # group: a huge result that joins a batch waiting for it, or comes in a new group,
    # or a note put in since, is still found by the next compaction
    from kompakt.compactor import Compactor

    many = [m for i in range(40) for m in (call(f"a{i}"), result(f"a{i}", "small output"))]
    waiting = Message.assistant(
        tool_calls=[ToolCall(id="p1", name="bash"), ToolCall(id="p2", name="bash")]
    )
    msgs = [Message.user("go"), *many, waiting, result("p1", "ok")]
    index = MessageIndex(msgs, tokenizer=CharEstimator())
    clamp = ClampOversized(max_message_tokens=500, min_preserved=0)
    compactor = Compactor(strategy=clamp)
    view, _ = compactor.compact(index, force=True)
    assert view.messages_within(500) and not view.changed  # nothing to cut
    index.append(result("p2", big(800)))  # completes the batch that was waiting
    index.extend([Message.user("and?"), call("n1"), result("n1", big(800, "n"))])
    view.replace(3, [index.messages[5], result("a2", big(800, "note"))])
    assert not view.messages_within(500)
    view, _ = compactor.compact(index, force=True)
    out = view.render()
    clamped = [m for m in out if m.synthetic == "clamped"]
    assert [m.text[:7] for m in clamped] == ["note li", "x line ", "n line "]
    assert all(CharEstimator().count_message(m) <= 500 for m in out)


def test_a_result_arriving_after_its_batch_was_clamped_joins_it() -> None:
    from kompakt.compactor import Compactor

    msgs = partial_batch()
    index = MessageIndex(msgs, tokenizer=CharEstimator())
    compactor = Compactor(strategy=ClampOversized(max_message_tokens=500, min_preserved=0))
    view, _ = compactor.compact(index)
    assert view.render()[5].synthetic == "clamped"
    late = index.append(result("c3", "z" * 30_000))
    out = check_view(view, validity(list(index.messages)))
    counted = CharEstimator().count_message(late)
    assert out[-1] is late and view.total_tokens > counted  # sent as it came, and counted
    assert view.replacement(3) == (msgs[4], out[5], late)  # what a store records
    view, _ = compactor.compact(index)  # the next compaction clamps it too
    out = check_view(view, validity(list(index.messages)))
    assert [m.synthetic for m in out[-3:]] == [None, "clamped", "clamped"]
    assert out[-1].covers == (late.id,) and view.total_tokens < 1_500


def test_clamp_head_tail_validation() -> None:
    with pytest.raises(ConfigError, match="head"):
        ClampOversized(max_message_tokens=100, head=80, tail=30)


# -- supersede -----------------------------------------------------------------------


def reads(*specs: tuple[str, str]) -> list[Message]:
    msgs = [Message.user("go")]
    for i, (name, path) in enumerate(specs):
        msgs += [call(f"c{i}", name, path=path), result(f"c{i}", f"v{i} " + big(50))]
    return [*msgs, Message.assistant("ok"), Message.user("next")]


def superseded(view: View) -> list[str | None]:
    return [m.tool_call_id for m in view.render() if m.synthetic == "superseded"]


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(["tool", "assistant", "user"]),
    st.text(max_size=40),
    st.text(min_size=1, max_size=40),
    st.sampled_from(["superseded", "clamped", "collapsed"]),
    st.booleans(),
    st.booleans(),
)
def test_a_stand_in_is_the_message_evolve_makes(
    role: str, original: str, text: str, synthetic: str, call: bool, flags: bool
) -> None:
    # the notes SupersedeReads writes are built directly: the same message, id and digest
    calls = [ToolCall(id="c1", name="ls", arguments='{"p": 1}')] if call and role != "tool" else []
    m = Message(
        role=role,  # type: ignore[arg-type]
        content=(Part(text=original),) if original else (),
        tool_calls=tuple(calls),
        tool_call_id="c1" if role == "tool" else None,
        pinned=flags,
        metadata={"k": 1} if flags else {},
        extra={"x": 2},
    )
    covers = (m.id, "m_other") if flags else (m.id,)
    made = text_stand_in(m, text, synthetic=synthetic, covers=covers)  # type: ignore[arg-type]
    evolved = m.evolve(content=text, synthetic=synthetic, covers=covers, extra={})
    assert made == evolved
    assert (made.id, made.digest, made.metadata) == (evolved.id, evolved.digest, evolved.metadata)


def test_supersede_same_arguments() -> None:
    msgs = reads(("read_file", "a.py"), ("read_file", "b.py"), ("read_file", "a.py"))
    view = apply(SupersedeReads(min_preserved=0), msgs)
    assert superseded(view) == ["c0"]
    note = next(m for m in view.render() if m.synthetic == "superseded")
    assert note.role == "tool" and "\n" not in note.text and note.covers == (msgs[2].id,)


def test_supersede_by_key_and_tools() -> None:
    msgs = reads(("read_file", "a.py"), ("view", "a.py"), ("view", "a.py"))
    assert (
        superseded(apply(SupersedeReads(min_preserved=0, include_tools=["read_file"]), msgs)) == []
    )
    assert superseded(apply(SupersedeReads(min_preserved=0, key="path"), msgs)) == ["c1"]
    by_path = SupersedeReads(min_preserved=0, key=lambda c: c.parsed_arguments()["path"])
    assert superseded(apply(by_path, msgs)) == ["c1"]


def test_collapse_leaves_a_superseded_read_as_its_stub_and_collapses_the_newer_one() -> None:
    path = "src/" + "deeply/nested/" * 6 + "a.py"  # a long call: a note would be cheaper
    msgs = reads(("read_file", path), ("read_file", "b.py"), ("read_file", path))
    view = apply(SupersedeReads(min_preserved=0), msgs)
    ctx = CompactionContext(view)
    assert CollapseToolResults(keep_last_groups=0, min_preserved=0).apply(view, ctx)
    rendered = view.render()
    kinds = [m.synthetic for m in rendered if m.synthetic]
    assert kinds == ["superseded", "collapsed", "collapsed"]
    stub = next(m for m in rendered if m.synthetic == "superseded")
    assert stub.tool_call_id == "c0" and "v0" not in stub.text  # the stale read is not quoted back
    assert not find_problems(rendered)


# -- composition ---------------------------------------------------------------------


def test_pipeline_runs_each_on_its_own_trigger() -> None:
    msgs = agent_run(groups=8, size=200)
    view = View(MessageIndex(msgs, tokenizer=CharEstimator()))
    ctx = CompactionContext(view)
    Pipeline(
        [CollapseToolResults(trigger=TokensExceed(1_000)), Truncation(trigger=TokensExceed(10**9))]
    ).apply(view, ctx)
    assert [(s.strategy, s.changed) for s in ctx.steps] == [
        ("CollapseToolResults", True),
        ("Truncation", False),
    ]
    assert ctx.steps[1].detail == "own trigger did not fire"


def test_budgeted_default_chain_clamps_then_digests_before_it_collapses() -> None:
    msgs = agent_run(groups=20, size=200)
    view = View(MessageIndex(msgs, tokenizer=CharEstimator()))
    ctx = CompactionContext(view)
    assert Budgeted(3_000).apply(view, ctx)
    assert view.total_tokens <= 3_000
    names = [s.strategy for s in ctx.steps]
    assert names[:4] == ["SupersedeReads", "ClampOversized", "ClampToBudget", "ExtractiveDigest"]
    assert "Truncation" not in names
    note = next(m for m in view.render() if m.synthetic == "summary")
    assert "## Commands run" in note.text  # the agent's steps are in the note


def test_budgeted_default_chain_collapses_only_after_the_digest() -> None:
    assert [type(s).__name__ for s in Budgeted(3_000).strategies] == [
        "SupersedeReads",
        "ClampOversized",
        "ClampToBudget",
        "ExtractiveDigest",
        "CollapseToolResults",
    ]


@pytest.mark.parametrize("follow_up", [False, True], ids=["request-last", "follow-up-after"])
def test_budgeted_clamps_a_huge_fresh_result_before_any_request_goes(follow_up: bool) -> None:
    request = Message.user("Why does the nightly build fail? Fix it.")
    log = "\n".join(f"line {i}: test_parser_{i} FAILED AssertionError" for i in range(1250))
    msgs = [
        Message.system("You are a coding agent."),
        request,
        call("c1", "bash", command="make test"),
        result("c1", log),
    ]
    if follow_up:
        msgs.append(Message.user("go on"))
    index = MessageIndex(msgs, tokenizer=CharEstimator())
    assert 10 <= index.message_tokens[1] <= 25 and index.message_tokens[3] >= 14_000
    view = View(index)
    ctx = CompactionContext(view)
    assert Budgeted(2_000).apply(view, ctx)
    out = view.render()
    assert request in out  # the user's request stays, verbatim
    assert 1_500 <= view.total_tokens <= 2_000  # near the budget, not at 481 tokens
    (clamped,) = [m for m in out if m.synthetic == "clamped"]
    assert clamped.text.startswith("line 0:") and clamped.text.endswith(
        "line 1249: test_parser_1249 FAILED AssertionError"
    )
    assert [s.strategy for s in ctx.steps if s.changed] == ["ClampToBudget"]
    assert not find_problems(out)


def test_budgeted_falls_back_and_records_it() -> None:
    msgs = agent_run(groups=10, size=200)
    flat = CharEstimator(chars_per_token=4)  # the sizes assume four characters a token
    view = View(MessageIndex(msgs, tokenizer=flat))
    ctx = CompactionContext(view)
    Budgeted(1_500, strategies=[SupersedeReads()]).apply(view, ctx)
    assert view.total_tokens <= 1_500
    assert [s.fallback for s in ctx.steps if s.fallback] == ["chain did not reach the budget"]


def test_budget_impossible_names_what_exceeds() -> None:
    msgs = [
        Message.system("s" * 4000),
        Message.user("old"),
        Message.assistant("a"),
        Message.user("task " * 200),
    ]
    flat = CharEstimator(chars_per_token=4)  # the sizes assume four characters a token
    system, task = (flat.count_message(m) for m in (msgs[0], msgs[3]))
    assert system > 1000 and task > 200
    view = View(MessageIndex(msgs, tokenizer=flat))
    with pytest.raises(BudgetImpossible) as err:
        Budgeted(500).apply(view, CompactionContext(view))
    assert err.value.breakdown["system"] == system
    assert err.value.breakdown["last user message"] == task
    assert f"system {system}" in str(err.value) and f"last user message {task}" in str(err.value)
    view = View(MessageIndex(msgs, tokenizer=flat))
    Budgeted(500, strict=False).apply(view, CompactionContext(view))
    assert view.total_tokens == system + task  # down to the protected core


class SlowDrop(BaseStrategy):
    """An async strategy (stands in for one that awaits a model)."""

    async def apply_async(self, view: View, context: CompactionContext) -> bool:
        await asyncio.sleep(0)
        for g in view.candidates(self.min_preserved):
            view.drop(g)
            context.note(model_calls=1)
            return True
        return False


def test_budgeted_with_async_strategy_sync_and_async() -> None:
    msgs = agent_run(groups=10, size=100)
    view = View(MessageIndex(msgs, tokenizer=CharEstimator()))
    assert Budgeted(2_000, strategies=[SlowDrop()]).apply(view, CompactionContext(view))
    assert view.total_tokens <= 2_000

    async def main() -> View:
        v = View(MessageIndex(msgs, tokenizer=CharEstimator()))
        await Budgeted(2_000, strategies=[SlowDrop()]).apply_async(v, CompactionContext(v))
        return v

    assert asyncio.run(main()).total_tokens <= 2_000


def test_function_strategy() -> None:
    def drop_first(view: View, context: CompactionContext) -> bool:
        for g in view.candidates(1):
            view.drop(g)
            return True
        return False

    view = apply(drop_first, [Message.user("a"), Message.assistant("b"), Message.user("c")])
    assert [m.synthetic for m in view.render()] == ["omitted", None, None]
    assert [m.text for m in view.render()][1:] == ["b", "c"]


def test_custom_strategy_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    import runpy

    example = Path(__file__).resolve().parents[1] / "examples" / "custom_strategy.py"
    runpy.run_path(str(example), run_name="__main__")
    out = capsys.readouterr().out
    assert "DropFailedTestRuns" in out and "within budget: True" in out
    assert "task kept: Make the test suite pass." in out


def _summary_run(turns: int = 12, last_result: int = 60) -> list[Message]:
    msgs = [Message.system("you are an agent")]
    for t in range(turns):
        msgs.append(Message.user(f"turn {t}: fix the bug in src/mod{t}.py " + "please " * 40))
        lines = last_result if t == turns - 1 else 60
        msgs += [
            call(f"c{t}", "bash", command=f"pytest tests/test_mod{t}.py"),
            result(f"c{t}", big(lines, f"r{t}")),
        ]
        msgs.append(Message.assistant(f"The bug in src/mod{t}.py was a typo. " + "ok " * 60))
    return msgs


def test_budgeted_fallback_keeps_the_summary_the_chain_wrote() -> None:
    from kompakt.compactor import Compactor
    from kompakt.strategies import ExtractiveDigest

    budget = 1_600
    msgs = _summary_run()
    index = MessageIndex(msgs, tokenizer=CharEstimator())
    compactor = Compactor(
        strategy=Budgeted(budget, strategies=[ExtractiveDigest(keep_last_groups=4)])
    )
    view, event = compactor.compact(index)
    assert [m.synthetic for m in view.render()].count("summary") == 1
    assert not event.fallbacks  # the digest alone reached the budget
    # the agent goes on and a huge result arrives: a chain that cannot reach the budget
    # hands over to truncation, which must drop originals before the digest's summary
    grown = [call("c_big", "bash", command="pytest -x"), result("c_big", big(400, "log"))]
    index.extend([*grown, Message.assistant("The log shows the failure in src/mod11.py.")])
    ctx = CompactionContext(view)
    assert Budgeted(budget, strategies=[SupersedeReads()]).apply(view, ctx)
    assert next(s.fallback for s in ctx.steps if s.fallback) == "chain did not reach the budget"
    out = check_view(view, validity([*msgs, *grown]), budget)
    assert [m.synthetic for m in out].count("summary") == 1
    assert sum(CharEstimator().count_message(m) for m in out) <= budget


def test_truncation_drops_originals_before_a_summary() -> None:
    msgs = _summary_run(6)
    view = View(MessageIndex(msgs, tokenizer=CharEstimator()))
    groups = list(view.candidates(2, originals_only=False))[:4]
    summary = Message.user("[Summary] earlier work", synthetic="summary")
    view.summarize(groups, summary)
    before = view.total_tokens
    run_strategy_sync(Truncation(), view, CompactionContext(view, target=TokensBelow(before - 50)))
    out = check_view(view, validity(msgs))
    assert any(m.synthetic == "summary" for m in out)  # originals after it went first
    run_strategy_sync(Truncation(), view, CompactionContext(view))  # no target: all it may
    assert not any(m.synthetic == "summary" for m in view.render())  # nothing else was left
    kept = Truncation(drop_summaries=False)
    view2 = View(view.index)
    view2.summarize(groups, summary)
    run_strategy_sync(kept, view2, CompactionContext(view2))
    assert any(m.synthetic == "summary" for m in check_view(view2, validity(msgs)))
