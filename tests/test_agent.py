"""The agent loop with a scripted model: checkpoints, hooks, tools, limits, recall."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from kompakt.agent import RECALL_NOTE, Agent, as_tool
from kompakt.compactor import Compactor
from kompakt.messages import Message, ToolCall
from kompakt.models import ScriptedModel
from kompakt.store import MemoryStore, SQLiteStore
from kompakt.strategies import Budgeted, CompactionContext, Summarize, Truncation
from kompakt.tokens import CharEstimator
from kompakt.triggers import TokensBelow, TokensExceed
from kompakt.validation import find_problems
from kompakt.view import View


def call(name: str, args: object = None, cid: str = "", raw: str | None = None) -> ToolCall:
    arguments = raw if raw is not None else json.dumps(args or {})
    return ToolCall(id=cid or f"c_{name}_{time.perf_counter_ns()}", name=name, arguments=arguments)


def calls(*tool_calls: ToolCall) -> Message:
    return Message.assistant("", tool_calls=tool_calls)


def big_output(n: int) -> str:
    return f"output {n}: " + ("lorem ipsum dolor sit amet " * 60)


def read_log(n: int) -> str:
    """Read log number n.

    Args:
        n: which log.
    """
    return big_output(n)


def tool_loop(steps: int, answer: str = "done") -> list[Message | str]:
    return [calls(call("read_log", {"n": i}, cid=f"c{i}")) for i in range(steps)] + [answer]


def small_compactor(limit: int = 600, min_preserved: int = 2) -> Compactor:
    return Compactor(
        trigger=TokensExceed(limit),
        strategy=Truncation(min_preserved=min_preserved),
        target=TokensBelow(limit // 2),
    )


def assert_valid(messages: list[Message]) -> None:
    problems = find_problems(messages)
    assert not problems, problems


# -- checkpoints --------------------------------------------------------------------


@pytest.mark.parametrize("min_preserved", [0, 2])
def test_fresh_tool_results_reach_the_next_request_after_a_checkpoint(min_preserved: int) -> None:
    model = ScriptedModel(tool_loop(6))
    agent = Agent(model, tools=[read_log], compactor=small_compactor(600, min_preserved))
    result = agent.run_sync("read the logs")
    assert result.output == "done" and result.compactions
    for i, request in enumerate(model.requests[1:]):
        results = [m for m in request if m.role == "tool" and m.tool_call_id == f"c{i}"]
        assert results and results[0].text == big_output(i), f"request {i + 1} lost results"
        assert request[-1].tool_call_id == f"c{i}"  # and they are the newest thing sent
        assert_valid(list(request))
    assert any(len(r) < len(model.requests[-1]) + 5 for r in model.requests)
    assert max(len(r) for r in model.requests) < 12  # the checkpoints did compact


HUGE = "".join(f"line {i}: " + "abcdefghij" * 4 + "\n" for i in range(8_000))[:400_000]


def cat(path: str) -> str:
    """Print a file.

    Args:
        path: the file.
    """
    return HUGE


def cat_then_answer() -> ScriptedModel:
    return ScriptedModel([calls(call("cat", {"path": "big.log"}, cid="c1")), "done"])


def test_a_clamped_fresh_result_is_sent_clamped_within_the_budget() -> None:
    """A 400k-character result: Budgeted clamps it, and the clamp is what is sent."""
    store = MemoryStore()
    model = cat_then_answer()
    compactor = Compactor(strategy=Budgeted(8_000))
    agent = Agent(model, tools=[cat], compactor=compactor, store=store, session="s")
    result = agent.run_sync("show big.log")
    assert result.output == "done" and result.compactions
    request = model.requests[1]
    assert request.input_tokens <= 8_000  # what the provider counted, tool schemas included
    assert result.request_tokens[1] <= 8_000
    fresh = request[-1]
    assert fresh.role == "tool" and fresh.tool_call_id == "c1"
    assert fresh.synthetic == "clamped" and "tokens elided" in fresh.text
    assert fresh.text.startswith("line 0: ") and HUGE.rstrip().endswith(fresh.text[-200:].rstrip())
    assert request[-2].tool_calls[0].id == "c1"
    assert_valid(list(request))
    assert not any("restored" in w for w in result.warnings), result.warnings
    assert [m.text for m in store.messages("s") if m.role == "tool"] == [HUGE]  # whole


def _drop_newest(view: View, context: CompactionContext) -> bool:
    last = view.index.groups[-1].index
    if view.is_dropped(last):
        return False
    view.drop(last)
    return True


@pytest.mark.parametrize("how", ["budgeted", "context_window"])
def test_a_removed_oversized_fresh_result_is_restored_clamped_to_fit(how: str) -> None:
    """A strategy drops the fresh 400k-character result: it comes back, clamped to fit."""
    model = cat_then_answer()
    if how == "budgeted":
        compactor = Compactor(strategy=Budgeted(8_000, strategies=[_drop_newest]))
        agent = Agent(model, tools=[cat], compactor=compactor)
    else:
        compactor = Compactor(trigger=TokensExceed(8_000), strategy=_drop_newest)
        agent = Agent(model, tools=[cat], compactor=compactor, context_window=8_000)
    result = agent.run_sync("show big.log")
    request = model.requests[1]
    assert request.input_tokens <= 8_000
    fresh = request[-1]
    assert fresh.tool_call_id == "c1" and fresh.synthetic == "clamped"
    assert fresh.text.startswith("line 0: ") and "tokens elided" in fresh.text
    assert_valid(list(request))
    assert any("restored, clamped to fit" in w for w in result.warnings), result.warnings


def test_a_dropped_fresh_result_that_fits_is_restored_whole_with_a_warning() -> None:
    model = ScriptedModel(tool_loop(2))
    compactor = Compactor(trigger=TokensExceed(100), strategy=_drop_newest)
    result = Agent(model, tools=[read_log], compactor=compactor).run_sync("read")
    assert model.requests[1][-1].text == big_output(0)
    assert model.requests[2][-1].text == big_output(1)
    assert "a strategy removed the newest tool results; they were restored" in result.warnings


def test_pending_call_is_never_orphaned_even_when_cancelled(tmp_path: Path) -> None:
    started = asyncio.Event()

    async def slow(seconds: float) -> str:
        """Sleep."""
        started.set()
        await asyncio.sleep(seconds)
        return "woke"

    store = SQLiteStore(tmp_path / "a.db")
    model = ScriptedModel(
        [calls(call("slow", {"seconds": 30}, cid="s1"), call("slow", {"seconds": 0}, cid="s2"))]
    )

    async def main() -> None:
        agent = Agent(model, tools=[slow], store=store, session="s", compactor=small_compactor())
        task = asyncio.create_task(agent.run("sleep"))
        await started.wait()
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    history = store.messages("s")
    assert [m.role for m in history] == ["user", "assistant", "tool", "tool"]
    assert {m.tool_call_id for m in history[2:]} == {"s1", "s2"}
    assert_valid(history)
    # a new agent on the session continues from a valid history
    nxt = ScriptedModel("resumed")
    assert Agent(nxt, store=store, session="s").run_sync("go on").output == "resumed"
    assert_valid(list(nxt.requests[0]))


def test_a_stored_dangling_call_is_closed_on_load() -> None:
    store = MemoryStore()
    store.append("s", [Message.user("x"), calls(call("read_log", {"n": 1}, cid="d1"))])
    model = ScriptedModel("ok")
    Agent(model, tools=[read_log], store=store, session="s").run_sync("continue")
    assert_valid(list(model.requests[0]))
    assert store.messages("s")[2].tool_call_id == "d1"


def test_max_steps_ends_cleanly() -> None:
    model = ScriptedModel(calls(call("read_log", {"n": 1})))  # calls a tool forever
    agent = Agent(model, tools=[read_log], max_steps=3)
    result = agent.run_sync("loop")
    assert result.stopped_reason == "max_steps" and result.stopped
    assert result.steps == 3 == len(model.requests) == len(result.usage)
    assert result.messages[-1].role == "tool"  # the last call has its result
    assert_valid(agent.history())
    assert any("max_steps" in w for w in result.warnings)


# -- tools --------------------------------------------------------------------------


def test_tool_failures_become_error_results() -> None:
    def boom(x: int) -> str:
        """Always fails."""
        raise ValueError(f"boom {x}")

    model = ScriptedModel(
        [
            calls(
                call("boom", {"x": 7}, cid="a"),
                call("boom", raw='{"x": ', cid="b"),  # invalid JSON
                call("boom", {"x": "seven"}, cid="c"),  # wrong type
                call("nope", {}, cid="d"),  # unknown tool
                call("boom", raw="[1, 2]", cid="e"),  # not an object
            ),
            "recovered",
        ]
    )
    result = Agent(model, tools=[boom]).run_sync("try")
    assert result.output == "recovered"
    got = {m.tool_call_id: m.text for m in model.requests[1] if m.role == "tool"}
    assert got["a"] == "Error: ValueError: boom 7"
    assert got["b"].startswith("Error: arguments are not valid JSON")
    assert got["c"].startswith("Error: invalid arguments: x:")
    assert got["d"].startswith("Error: unknown tool 'nope'")
    assert got["e"].startswith("Error: arguments must be a JSON object")


def test_junk_calls_from_a_tiny_model_are_survived() -> None:
    junk = Message.assistant(
        "",
        tool_calls=[
            ToolCall(id="", name="read_log", arguments="n=3"),
            ToolCall(id="", name="", arguments="{}"),
        ],
    )
    model = ScriptedModel([junk, "ok"])
    agent = Agent(model, tools=[read_log])
    assert agent.run_sync("go").output == "ok"
    assert_valid(agent.history())
    ids = [c.id for c in agent.history()[1].tool_calls]
    assert all(ids) and len(set(ids)) == 2


@pytest.mark.parametrize("kind", ["async", "sync"])
def test_parallel_tool_calls_run_concurrently(kind: str) -> None:
    async def wait_async(label: str) -> str:
        """Wait."""
        await asyncio.sleep(0.4)
        return label

    def wait_sync(label: str) -> str:
        """Wait."""
        time.sleep(0.4)
        return label

    fn = wait_async if kind == "async" else wait_sync
    name = fn.__name__
    model = ScriptedModel(
        [calls(*(call(name, {"label": f"l{i}"}, cid=f"p{i}") for i in range(4))), "ok"]
    )
    agent = Agent(model, tools=[fn])
    t0 = time.perf_counter()
    agent.run_sync("wait")
    elapsed = time.perf_counter() - t0
    print(f"\n4 parallel {kind} tool calls of 0.4 s took {elapsed:.2f} s")
    assert elapsed < 1.0
    assert [m.text for m in model.requests[1] if m.role == "tool"] == ["l0", "l1", "l2", "l3"]


def test_tool_schema_from_hints_and_docstring() -> None:
    async def search(query: str, limit: int = 5, paths: list[str] | None = None) -> list[str]:
        """Search the code.

        Args:
            query: what to look for.
            limit: most hits.
            paths: where to look.
        """
        return [query] * limit

    t = as_tool(search)
    assert t.description == "Search the code."
    props = t.parameters["properties"]
    assert props["query"] == {"type": "string", "description": "what to look for."}
    assert props["limit"]["default"] == 5 and props["limit"]["type"] == "integer"
    assert t.parameters["required"] == ["query"]
    assert asyncio.run(t.run('{"query": "x", "limit": 2}')) == '["x","x"]'


# -- hooks --------------------------------------------------------------------------


def test_before_model_keeps_the_store_whole() -> None:
    store = MemoryStore()
    model = ScriptedModel(tool_loop(6))
    agent = Agent(model, tools=[read_log], compactor=small_compactor(), store=store, session="s")
    result = agent.run_sync("read")
    assert result.compactions
    assert store.messages("s") == result.messages  # every original, in order
    assert store.compactions("s") == []
    sent_last = len(model.requests[-1])
    assert sent_last < len(result.messages)
    fresh = ScriptedModel("ok")
    Agent(fresh, store=store, session="s").run_sync("next")
    assert len(fresh.requests[0]) == len(result.messages) + 1  # the whole history again


def test_after_run_shrinks_what_the_next_run_sends(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "h.db")
    model = ScriptedModel(tool_loop(6))
    agent = Agent(
        model,
        tools=[read_log],
        compactor=small_compactor(),
        store=store,
        session="s",
        hook="after_run",
    )
    result = agent.run_sync("read")
    # during the run nothing was compacted: requests only grew
    sizes = [len(r) for r in model.requests]
    assert sizes == sorted(sizes) and sizes[-1] == len(result.messages) - 1
    assert len(result.compactions) == 1 and len(store.compactions("s")) == 1
    assert len(store.messages("s")) == len(result.messages)  # originals all kept
    fresh = ScriptedModel("ok")
    tok = CharEstimator()
    Agent(fresh, store=SQLiteStore(tmp_path / "h.db"), session="s").run_sync("next")
    first = fresh.requests[0]
    full = sum(tok.count_message(m) for m in store.messages("s"))
    assert sum(tok.count_message(m) for m in first) < full // 2
    assert first[-1].text == "next"


def test_compact_now_between_phases_is_recorded() -> None:
    store = MemoryStore()
    model = ScriptedModel([*tool_loop(3, "phase 1 done"), "phase 2 done"])
    agent = Agent(model, tools=[read_log], store=store, session="s")
    agent.run_sync("phase 1: collect")
    before = len(model.requests[-1])
    event = agent.compact_now_sync(Truncation(min_preserved=1))
    assert event.tokens_after < event.tokens_before
    assert len(store.compactions("s")) == 1
    agent.run_sync("phase 2: decide")
    assert len(model.requests[-1]) < before


@pytest.mark.parametrize("sync", [True, False])
def test_compact_now_stops_at_target_in_both_apis(sync: bool) -> None:
    def agent() -> Agent:
        a = Agent(ScriptedModel(tool_loop(6)), tools=[read_log], compactor=small_compactor())
        a.run_sync("collect")  # trigger 600 / target 300: the checkpoints kept it small
        return a

    full = agent()
    everything = full.compact_now_sync(Truncation(min_preserved=1), record=False)
    stopped = agent()
    target = TokensBelow(everything.tokens_before - 100)
    if sync:
        event = stopped.compact_now_sync(Truncation(min_preserved=1), target=target)
    else:
        event = asyncio.run(stopped.compact_now(Truncation(min_preserved=1), target=target))
    assert everything.tokens_before == event.tokens_before
    assert everything.tokens_after < event.tokens_after < event.tokens_before  # it stopped


# -- usage, warnings, calibration -----------------------------------------------------


def test_usage_per_call_and_warning_near_the_window() -> None:
    model = ScriptedModel(tool_loop(3))
    agent = Agent(model, tools=[read_log], context_window=1000, warn_fraction=0.5)
    result = agent.run_sync("read")
    assert len(result.usage) == 4 and all(u.input_tokens > 0 for u in result.usage)
    assert result.total_usage.input_tokens == model.input_tokens
    assert any("context near its limit" in w for w in result.warnings)


@pytest.mark.parametrize("strategy", ["truncation", "budgeted"])
def test_provider_reported_tokens_calibrate_the_trigger(strategy: str) -> None:
    """The provider bills more than the estimator thinks: compaction follows the provider."""

    def run(model: ScriptedModel) -> int:
        if strategy == "budgeted":
            compactor = Compactor(strategy=Budgeted(2000))
        else:
            compactor = small_compactor(2000)
        flat = CharEstimator(chars_per_token=4)  # an estimate the provider bills above
        agent = Agent(model, tools=[read_log], compactor=compactor, recall=False, tokenizer=flat)
        result = agent.run_sync("read")
        # the calibrated target may be out of reach of what min_preserved keeps: said once
        others = [w for w in result.warnings if "lower min_preserved" not in w]
        assert not others and len(result.warnings) <= 1, result.warnings
        return len(result.compactions)

    provider = ScriptedModel(tool_loop(4), tokenizer=CharEstimator(chars_per_token=3.0))
    assert run(provider) >= 1

    class Silent(ScriptedModel):  # reports no input tokens: only the estimate is used
        async def _request(self, *a: object, **kw: object):  # type: ignore[no-untyped-def]
            r = await super()._request(*a, **kw)  # type: ignore[arg-type]
            return type(r)(r.message, type(r.usage)(0, r.usage.output_tokens))

    assert run(Silent(tool_loop(4))) == 0


# -- recall and compact_context ----------------------------------------------------------


def test_summaries_mention_recall_and_recall_returns_verbatim_originals() -> None:
    secret = "ImportError: cannot import name 'frobnicate' from 'pkg.util'"

    def run_tests() -> str:
        """Run the tests."""
        return "collected 12 items\n" + ("." * 400) + "\n" + secret + "\n" + ("x" * 600)

    step = iter(range(100))

    def script(messages: list[Message]) -> Message | str:
        n = next(step)
        if n == 0:
            return calls(call("run_tests", cid="t0"))
        if n < 4:
            return calls(call("read_log", {"n": n}, cid=f"c{n}"))
        if n == 4:
            return calls(call("recall", {"query": "frobnicate"}, cid="r1"))
        return "found it"

    summarizer = ScriptedModel("## Goal\n- fix the import")
    compactor = Compactor(
        trigger=TokensExceed(900),
        strategy=Summarize(keep_last_groups=2, summarizer=summarizer),
        target=TokensBelow(500),
    )
    model = ScriptedModel(script)
    agent = Agent(model, tools=[run_tests, read_log], compactor=compactor)
    result = agent.run_sync("fix it")
    assert result.output == "found it"
    for request in model.requests:
        assert_valid(list(request))
    summaries = [m for r in model.requests for m in r if m.synthetic == "summary"]
    assert summaries and RECALL_NOTE in summaries[-1].text
    recalled = next(m for m in model.requests[-1] if m.tool_call_id == "r1")
    assert secret in recalled.text and run_tests() in recalled.text  # verbatim
    assert not any(secret in m.text for m in model.requests[-2] if m.tool_call_id == "t0")


def test_compact_context_tool_compacts_before_the_next_request() -> None:
    model = ScriptedModel(
        [*tool_loop(4)[:-1], calls(call("compact_context", {"reason": "full"})), "ok"]
    )
    compactor = Compactor(trigger=TokensExceed(100_000), strategy=Truncation(min_preserved=1))
    agent = Agent(model, tools=[read_log], compactor=compactor)
    result = agent.run_sync("go")
    assert [e.reason for e in result.compactions] == ["requested by the model (compact_context)"]
    assert len(model.requests[-1]) < len(model.requests[-2])
    assert model.requests[-1][-1].text.startswith("OK: the conversation will be compacted")


def test_hook_both_compacts_during_the_run_and_records_at_its_end() -> None:
    store = MemoryStore()
    model = ScriptedModel(tool_loop(6))
    agent = Agent(
        model, tools=[read_log], compactor=small_compactor(), store=store, session="s", hook="both"
    )
    result = agent.run_sync("read")
    assert max(len(r) for r in model.requests) < 12  # compacted during the run
    (record,) = store.compactions("s")
    assert record.upto == len(result.messages)
    assert store.current_view("s").render() == agent.view.render()
    assert store.messages("s") == result.messages


def test_an_agent_sees_what_another_agent_appended_to_its_session(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    first = ScriptedModel(["one", "three"])
    a = Agent(first, store=SQLiteStore(path), session="s")
    a.run_sync("first task")
    Agent(ScriptedModel("two"), store=SQLiteStore(path), session="s").run_sync("second task")
    a.run_sync("third task")
    texts = [m.text for m in first.requests[-1]]
    assert texts == ["first task", "one", "second task", "two", "third task"]
    assert_valid(SQLiteStore(path).messages("s"))


def test_docstring_continuation_lines_stay_with_their_argument() -> None:
    def grep(pattern: str, path: str = ".") -> str:
        """Search files.

        Args:
            pattern: a regular expression,
                default: none; note: anchored.
            path: where.

        Returns:
            matching lines.
        """
        return ""

    props = as_tool(grep).parameters["properties"]
    assert props["pattern"]["description"] == "a regular expression, default: none; note: anchored."
    assert props["path"]["description"] == "where."
    assert set(props) == {"pattern", "path"}


def test_recall_by_the_ids_a_summary_names() -> None:
    """The model reads the ids off a summary's note and gets exactly those originals back."""
    asked: list[str] = []

    def script(messages: list[Message]) -> Message | str:
        summary = next((m for m in messages if m.synthetic == "summary"), None)
        if summary is None:
            n = sum(1 for m in messages if m.role == "tool")
            return calls(call("read_log", {"n": n}, cid=f"c{n}"))
        if not asked:
            note = summary.text.split(RECALL_NOTE, 1)[1]
            asked.extend(note.split("):", 1)[1].strip(" ]").split(", ")[:2])
            assert asked == list(summary.covers[:2])  # the note names the provenance
            return calls(call("recall", {"ids": asked}, cid="r1"))
        return "done"

    compactor = Compactor(
        trigger=TokensExceed(1200),
        strategy=Summarize(keep_last_groups=2, summarizer=ScriptedModel("## Goal\n- read logs")),
        target=TokensBelow(700),
    )
    model = ScriptedModel(script)
    store = MemoryStore()
    agent = Agent(model, tools=[read_log], compactor=compactor, store=store, session="s")
    assert agent.run_sync("read the logs").output == "done"
    answer = next(m for m in model.requests[-1] if m.tool_call_id == "r1").text
    originals = [store.get("s", i) for i in asked]
    assert all(o is not None for o in originals)
    for o in originals:
        assert o is not None and f"id {o.id}" in answer
        assert (o.text or o.tool_calls[0].arguments) in answer  # verbatim
    assert answer.startswith("Recalled 2 original message(s)")


class Patch(BaseModel):
    path: str
    lines: list[int] = Field(default_factory=list)


def apply(patch: Patch, mode: Literal["dry", "real"] = "dry") -> str:
    """Apply a patch.

    Args:
        patch: the patch to apply.
        mode: dry or real.
    """
    return f"{patch.path} {patch.lines} {mode}"


def test_tool_schema_of_pydantic_models_and_literals_and_their_validation() -> None:
    t = as_tool(apply)
    props = t.parameters["properties"]
    assert (
        props["mode"]["enum"] == ["dry", "real"] and props["mode"]["description"] == "dry or real."
    )
    assert props["patch"]["description"] == "the patch to apply."
    ref = props["patch"]["$ref"].rsplit("/", 1)[-1]
    assert t.parameters["$defs"][ref]["required"] == ["path"]
    assert t.parameters["required"] == ["patch"]
    assert asyncio.run(t.run('{"patch": {"path": "a.py", "lines": [3]}}')) == "a.py [3] dry"
    model = ScriptedModel(
        [calls(call("apply", {"patch": {"path": "a.py"}, "mode": "bogus"}, cid="x")), "ok"]
    )
    Agent(model, tools=[apply]).run_sync("patch it")
    (answer,) = [m.text for m in model.requests[1] if m.role == "tool"]
    assert "mode" in answer and "'dry' or 'real'" in answer  # an error result, not a crash


def test_an_unresolvable_hint_costs_only_its_own_parameter_and_says_so() -> None:
    class Local(BaseModel):  # a string annotation cannot see a function's local class
        x: int

    def use(item: Local, count: int = 1) -> str:
        """Use it.

        Args:
            item: the item.
            count: how many.
        """
        return str(count)

    with pytest.warns(UserWarning, match="'item'.*Define the type at module level"):
        t = as_tool(use)
    props = t.parameters["properties"]
    assert props["count"]["type"] == "integer"  # the resolvable one keeps its type
    assert "type" not in props["item"] and props["item"]["description"] == "the item."
