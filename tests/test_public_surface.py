"""The "Public surface" snippets of issues 2, 3, 4 and 7, run as written, on real transcripts.

Each test keeps the issue's lines verbatim (only the placeholders `...` are filled in) and then
asserts on the real outputs: what the snippet promises is what a user gets.
"""

from __future__ import annotations

import importlib
import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import kompakt
from data_files import DATA_DIR

TRAJ = DATA_DIR / "mini-swe-agent" / "django__django-13658.traj.json"
"""A real mini-swe-agent run (77 messages, ~17k tokens by the char estimate)."""


@pytest.fixture
def run_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory holding `run.traj.json`, as the issue's snippet assumes."""
    shutil.copy(TRAJ, tmp_path / "run.traj.json")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _tokens(messages: list[kompakt.Message], tok: kompakt.Tokenizer | None = None) -> int:
    tok = tok or kompakt.CharEstimator()
    return sum(tok.count_message(m) for m in messages)


def _big_history(n_turns: int) -> list[kompakt.Message]:
    """A coding-agent history of `n_turns` tool calls with ~4k-char results."""
    msgs = [kompakt.Message.system("You are a coding agent."), kompakt.Message.user("fix the bug")]
    for i in range(n_turns):
        call = kompakt.ToolCall(
            id=f"call_{i}", name="read_file", arguments=json.dumps({"path": f"src/m{i}.py"})
        )
        msgs.append(kompakt.Message.assistant(f"reading src/m{i}.py", tool_calls=[call]))
        msgs.append(
            kompakt.Message.tool(f"def f{i}():\n" + "    pass\n" * 400, tool_call_id=call.id)
        )
    msgs.append(kompakt.Message.assistant("done: the bug was in src/m3.py"))
    return msgs


# -- load, dump, index, validate -----------------------------------------------------------


def test_a_loaded_trajectory_dumps_back_losslessly_and_indexes_every_message(run_dir: Path) -> None:
    msgs = kompakt.load("run.traj.json")  # a file; kompakt.loads parses text, dicts, lists
    kompakt.validate(msgs, format="openai")  # raises kompakt.InvalidConversation
    data = kompakt.dump(msgs, format="openai")  # or "anthropic", "jsonl", the source format
    tok = kompakt.CharEstimator()
    index = kompakt.MessageIndex(tokenizer=tok)
    index.append(msgs[0])
    index.extend(msgs[1:])
    totals = (
        index.total_tokens,
        index.message_count,
        index.group_count,
        index.turn_count,
        index.groups,
    )

    assert isinstance(msgs, list) and all(isinstance(m, kompakt.Message) for m in msgs)
    assert msgs.format == "mini-swe-agent"
    original = json.loads((run_dir / "run.traj.json").read_text())
    assert kompakt.dump(msgs) == original  # the source format by default, lossless
    assert isinstance(data, list) and [d["role"] for d in data] == [m.role for m in msgs]
    assert kompakt.loads(data) == list(msgs)
    total_tokens, message_count, group_count, turn_count, groups = totals
    assert total_tokens == _tokens(msgs, tok)
    assert message_count == len(msgs) == 77
    assert group_count == len(groups) > 1
    assert turn_count >= 1
    covered = [i for g in groups for i in range(g.start, g.end)]
    assert covered == list(range(len(msgs)))  # groups partition the messages, in order
    assert sum(g.tokens for g in groups) == total_tokens


def test_a_trajectory_round_trips_through_other_formats_and_tokenizers(run_dir: Path) -> None:
    msgs = kompakt.load("run.traj.json")
    for fmt in ("anthropic", "jsonl"):
        back = kompakt.loads(kompakt.dump(msgs, format=fmt))
        assert [m.text for m in back] == [m.text for m in msgs], fmt
        kompakt.validate(back, format="anthropic" if fmt == "anthropic" else "openai")
    kompakt.validate(kompakt.loads(kompakt.dump(msgs, format="anthropic")), format="anthropic")
    exact = kompakt.TiktokenTokenizer("cl100k_base")
    index = kompakt.MessageIndex(msgs, tokenizer=exact)
    assert index.total_tokens == _tokens(msgs, exact)
    assert 0.5 < index.total_tokens / kompakt.MessageIndex(msgs).total_tokens < 2


def test_validate_names_every_problem() -> None:
    call = kompakt.ToolCall(id="c1", name="ls")
    bad = [
        kompakt.Message.user("hi"),
        kompakt.Message.tool("orphan", tool_call_id="zz"),
        kompakt.Message.assistant("", tool_calls=[call]),
        kompakt.Message.user("next"),
    ]
    with pytest.raises(kompakt.InvalidConversation) as info:
        kompakt.validate(bad, format="openai")
    problems = info.value.problems
    assert "message 1" in str(info.value) and "zz" in str(info.value)
    assert {(p.index, p.rule) for p in problems} >= {(1, "orphan_result")}
    assert any(p.index == 2 and "c1" in p.message for p in problems)


# -- compaction under a budget -------------------------------------------------------------


def test_apply_compaction_takes_and_returns_openai_dicts(run_dir: Path) -> None:
    openai_dicts = kompakt.dump(kompakt.load("run.traj.json"), format="openai")
    before = json.dumps(openai_dicts)
    out = kompakt.apply_compaction(
        openai_dicts, strategy=kompakt.Budgeted(8_000), tokenizer=kompakt.CharEstimator()
    )
    assert json.dumps(openai_dicts) == before  # input untouched
    assert isinstance(out, list) and all(isinstance(d, dict) and "role" in d for d in out)
    back = kompakt.loads(out, format="openai")
    kompakt.validate(back, format="openai")
    assert _tokens(back) <= 8_000 < _tokens(kompakt.loads(openai_dicts))
    assert out[0] == openai_dicts[0]  # the system message stays
    last_user = max(i for i, d in enumerate(openai_dicts) if d["role"] == "user")
    assert openai_dicts[last_user] in out  # the last user message stays verbatim


def test_budgeted_with_a_custom_chain_keeps_the_format_and_the_budget(run_dir: Path) -> None:
    msgs = kompakt.load("run.traj.json")
    chain = [kompakt.SupersedeReads(), kompakt.CollapseToolResults(keep_last_groups=1)]
    out = kompakt.apply_compaction(msgs, strategy=kompakt.Budgeted(6_000, strategies=chain))
    assert out.format == "mini-swe-agent"  # a Conversation in, a Conversation out
    kompakt.validate(out, format="anthropic")
    assert _tokens(out) <= 6_000
    with pytest.raises(kompakt.BudgetImpossible) as info:
        kompakt.apply_compaction(msgs, strategy=kompakt.Budgeted(50))
    assert info.value.budget == 50 and info.value.required > 50
    breakdown = info.value.breakdown
    assert breakdown["last user message"] > 50  # the task: the largest part that must stay
    assert sum(breakdown.values()) == info.value.required


def test_budget_impossible_names_pinned_content() -> None:
    msgs = [
        kompakt.Message.system("be brief"),
        kompakt.Message.user(
            "project facts: " + "the parser lives in src/p.py. " * 100, pinned=True
        ),
        kompakt.Message.assistant("noted " * 500),
        kompakt.Message.user("now fix it"),
    ]
    with pytest.raises(kompakt.BudgetImpossible) as info:
        kompakt.apply_compaction(msgs, strategy=kompakt.Budgeted(500))
    err = info.value
    assert err.breakdown["pinned"] > 500 > err.budget - 1
    assert "pinned" in str(err) and str(err.required) in str(err).replace(",", "")
    assert "\n" not in str(err)  # one line
    out = kompakt.apply_compaction(msgs, strategy=kompakt.Budgeted(1_000))
    assert msgs[1] in out and msgs[3] in out and msgs[2] not in out


def test_compactor_checks_then_compacts_below_its_target() -> None:
    msgs = _big_history(150)  # ~120k tokens by the char estimate
    compactor = kompakt.Compactor(
        trigger=kompakt.TokensExceed(100_000),
        strategy=kompakt.Budgeted(60_000),
        target=kompakt.TokensBelow(60_000),
    )
    index = kompakt.MessageIndex(msgs[:50])
    assert compactor.check(index) is False
    view, event = compactor.compact(index)
    assert not event.changed and view.render() == msgs[:50]
    index.extend(msgs[50:])
    assert index.total_tokens > 100_000
    assert compactor.check(index) is True
    view, event = compactor.compact(index)
    assert isinstance(event, kompakt.CompactionEvent)
    assert event.changed and event.steps
    assert event.tokens_before == index.total_tokens
    assert event.tokens_after == view.total_tokens < 60_000
    assert event.messages_before == len(msgs) > event.messages_after == len(view.render())
    kompakt.validate(view.render(), format="openai")
    assert compactor.check(index) is False  # hysteresis: below the trigger now
    assert index.messages == msgs  # originals never mutated


async def test_compact_async_reaches_the_target() -> None:
    compactor = kompakt.Compactor(
        trigger=kompakt.TokensExceed(20_000),
        strategy=kompakt.Budgeted(10_000),
        target=kompakt.TokensBelow(10_000),
    )
    index = kompakt.MessageIndex(_big_history(40))
    view, event = await compactor.compact_async(index)
    assert event.changed and view.total_tokens < 10_000
    kompakt.validate(view.render(), format="anthropic")


# -- summaries, facts and models -----------------------------------------------------------


def test_summaries_and_facts_replace_spans_within_the_budget(run_dir: Path) -> None:
    msgs = kompakt.load("run.traj.json")
    model = kompakt.model_from_string("extractive")
    summarize = kompakt.Summarize(keep_last_groups=4, summarizer=model)
    facts = kompakt.FactRetrieval(kompakt.CODING_AGENT_CONCEPTS, summarizer=model)
    concept = kompakt.Concept("tests", "Which tests fail?", kompakt.FactType.MULTIPLE)
    assert concept.keyword == "tests" and concept.fact_type is kompakt.FactType.MULTIPLE
    assert len(kompakt.CODING_AGENT_CONCEPTS) == 8
    out = kompakt.apply_compaction(
        msgs,
        strategy=kompakt.Budgeted(
            8_000, strategies=[kompakt.SupersedeReads(), kompakt.Summarize(summarizer=model)]
        ),
    )
    kinds = Counter(m.synthetic for m in out)
    assert kinds["summary"] == 1 and _tokens(out) <= 8_000
    kompakt.validate(out, format="anthropic")
    summary = next(m for m in out if m.synthetic == "summary")
    assert summary.covers and summary.text.strip()
    for strategy, kind in [(summarize, "summary"), (facts, "facts")]:
        out = kompakt.apply_compaction(
            msgs, strategy=kompakt.Budgeted(4_000, strategies=[strategy])
        )
        assert Counter(m.synthetic for m in out)[kind] == 1, strategy
        assert _tokens(out) <= 4_000


@pytest.mark.parametrize(
    "make",
    [
        lambda m: kompakt.WholeHistory(m),
        lambda m: kompakt.FromLastN(10, summarizer=m),
        lambda m: kompakt.Chunked(10, summarizer=m),
        lambda m: kompakt.ExtractiveDigest(),
        lambda m: kompakt.FactRetrieval(
            [kompakt.Concept("files", "Which files were edited?", kompakt.FactType.MULTIPLE)],
            summarizer=m,
        ),
    ],
    ids=["WholeHistory", "FromLastN", "Chunked", "ExtractiveDigest", "FactRetrieval"],
)
async def test_every_summarizer_runs_async_within_the_budget(run_dir: Path, make: Any) -> None:
    msgs = kompakt.load("run.traj.json")
    model = kompakt.model_from_string("extractive")
    strategy = make(model)
    out = await kompakt.apply_compaction_async(
        msgs, strategy=kompakt.Budgeted(4_000, strategies=[strategy])
    )
    assert out.format == "mini-swe-agent"
    kind = "facts" if isinstance(strategy, kompakt.FactRetrieval) else "summary"
    assert {m.synthetic for m in out} - {None} == {kind}
    assert _tokens(out) <= 4_000
    kompakt.validate(out, format="openai")
    assert out[0] == msgs[0]


@pytest.mark.parametrize(
    ("spec", "cls", "name"),
    [
        ("extractive", "ExtractiveModel", "extractive"),
        ("openai:gpt-4.1-mini", "OpenAIModel", "openai:gpt-4.1-mini"),
        ("anthropic:claude-haiku-4-5", "AnthropicModel", "anthropic:claude-haiku-4-5"),
        ("openai:qwen3@http://localhost:8080/v1", "OpenAIModel", "openai:qwen3"),
    ],
)
def test_model_specs_build_models_without_network(spec: str, cls: str, name: str) -> None:
    """Building a model from its spec needs no network (the SDK is only used on a call)."""
    model = kompakt.model_from_string(spec)
    assert type(model).__name__ == cls and model.name == name
    assert isinstance(model, kompakt.ChatModel)


# -- framework adapters --------------------------------------------------------------------

ADAPTERS = {
    "langchain": ["KompaktMiddleware", "pre_model_hook", "from_langchain", "to_langchain"],
    "pydantic_ai": ["KompaktCapability", "history_processor", "from_pydantic_ai", "to_pydantic_ai"],
    "openai_agents": [
        "AgentsChatModel",
        "KompaktSession",
        "model_input_filter",
        "from_openai_agents",
        "to_openai_agents",
    ],
    "maf": ["KompaktStrategy", "MAFChatModel", "from_maf", "to_maf"],
}


@pytest.mark.parametrize("adapter", sorted(ADAPTERS))
def test_adapter_modules_export_the_names_their_docs_import(adapter: str) -> None:
    """The names the docs pages import exist (the adapter module imports without its framework)."""
    module = importlib.import_module(f"kompakt.integrations.{adapter}")
    for name in ADAPTERS[adapter]:
        assert callable(getattr(module, name)), f"kompakt.integrations.{adapter}.{name}"
