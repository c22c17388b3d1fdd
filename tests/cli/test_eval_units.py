"""The evaluation layer under the command: replay, probes, retention, charts."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from clihelp import SMALL
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kompakt
from kompakt.compactor import Compactor
from kompakt.errors import BudgetImpossible, ConfigError
from kompakt.eval.compactors import STRATEGIES, make_compactor
from kompakt.eval.probes import extract_artifacts, plant_needles, visible_text
from kompakt.eval.replay import replay
from kompakt.eval.retention import evaluate, parse_budgets
from kompakt.eval.svg import Series, line_chart
from kompakt.index import MessageIndex
from kompakt.messages import Message
from kompakt.models import ScriptedModel
from kompakt.tokens import CharEstimator
from kompakt.triggers import Never
from kompakt.validation import find_problems

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from strategies_conv import conversations


@pytest.fixture(scope="module")
def run() -> list[Message]:
    return list(kompakt.load(SMALL))


def test_artifacts_of_a_real_run(run: list[Message]) -> None:
    arts = extract_artifacts(run)
    by_kind = {k: [a.text for a in arts if a.kind == k] for k in ("path", "command", "error")}
    assert "/testbed/django/core/management/__init__.py" in by_kind["path"]
    assert any(c.startswith('grep -r "class ManagementUtility"') for c in by_kind["command"])
    assert "ModuleNotFoundError: No module named 'asgiref'" in by_kind["error"]
    assert all(not e.startswith(("except", "raise", "class")) for e in by_kind["error"])
    text = visible_text(run)
    assert all(a.key in text for a in arts)  # every artifact is in the originals


def test_needles_are_deterministic_and_keep_the_run_valid(run: list[Message]) -> None:
    planted, needles = plant_needles(run, seed="a")
    again, same = plant_needles(run, seed="a")
    _, other = plant_needles(run, seed="b")
    assert needles == same and [m.text for m in planted] == [m.text for m in again]
    assert {n.value for n in needles}.isdisjoint({n.value for n in other})
    assert sorted(n.kind for n in needles) == ["constraint"] * 2 + ["decision"] * 2 + ["value"] * 2
    changed = [i for i, (a, b) in enumerate(zip(run, planted, strict=True)) if a.text != b.text]
    assert changed == sorted(n.position for n in needles)
    for n in needles:
        before, after = run[n.position], planted[n.position]
        assert after.text.endswith(n.statement) and after.text.startswith(before.text)
        assert (after.role, after.tool_call_id) == (before.role, before.tool_call_id)
        assert (n.kind == "decision") == (after.role == "assistant")
    assert find_problems(planted, format="openai") == []


def test_replay_without_compaction_shows_everything(run: list[Message]) -> None:
    result = replay(run, Compactor(trigger=Never(), strategy="truncation"))
    assert not result.events
    assert all(s.tokens_sent == s.tokens_full for s in result.steps)
    assert all(a.visible == a.total and a.recoverable == 0 for a in result.artifacts)
    assert result.steps[-1].tokens_full == MessageIndex(run).total_tokens
    assert result.final_messages == list(MessageIndex(run).messages)


@pytest.mark.parametrize("name", sorted(set(STRATEGIES) - {"summarize"}))
def test_replay_every_named_strategy_keeps_the_conversation_valid(
    run: list[Message], name: str
) -> None:
    result = replay(run, make_compactor(name, 5000), budget=5000, strategy=name)
    final = result.final_messages
    assert (
        find_problems(final, format="openai") == []
        and find_problems(final, format="anthropic") == []
    )
    assert result.events and result.steps[-1].tokens_sent < result.steps[-1].tokens_full
    for e in result.events:
        assert e.tokens_after <= e.tokens_before
    if name in ("budgeted", "extractive_digest", "truncation"):  # these always reach their target
        assert result.peak_tokens_sent <= 5000
    json.dumps(result.to_dict())  # what --json prints


def test_replay_records_model_calls_with_a_scripted_summarizer(run: list[Message]) -> None:
    model = ScriptedModel("Goal: fix ManagementUtility prog name. Files: core/management.")
    result = replay(run, make_compactor("summarize", 5000, summarizer=model), budget=5000)
    calls = sum(e.model_calls for e in result.events)
    assert calls == len(model.requests) > 0
    assert result.summarizer_tokens > 0
    assert any(e.groups_summarized for e in result.events)
    assert any(
        m.synthetic == "summary" and "ManagementUtility" in m.text for m in result.final_messages
    )


_CODE = r"(KP-[0-9A-F]{4}-[0-9A-F]{4})"
_ANSWERS = {  # question cue -> what the planted sentence says
    r"build number for step (\d+)": r"build number for step {n} of this fix is " + _CODE,
    r"rule (\d+)": r"\(ticket " + _CODE + r"\)[^(]*\(rule {n}\)",
    r"decision (\d+)": r"Decision " + _CODE + r":[^(]*\(decision {n}\)",
    r"top of every commit message": r"put the tag " + _CODE + " at the top",
    r"every log line carry": r"prefix it with " + _CODE,
    r"the vendored folder": r"mention ticket " + _CODE,
    r"staging database is current": r"the database is " + _CODE + " now",
    r"reviewer slot": r"the slot is " + _CODE + " instead",
    r"build image is pinned": r"build image to " + _CODE,
}


def _reader(messages: list[Message]) -> str:
    """A scripted model that answers from what its context still shows."""
    context, question = visible_text(messages[:-1]), messages[-1].text
    for cue, pattern in _ANSWERS.items():
        asked = re.search(cue, question)
        if asked:
            n = asked.group(1) if asked.groups() else ""
            found = re.findall(pattern.replace("{n}", n), context)
            return found[-1] if found else "I do not know"
    return "?"


def test_model_answered_probes_follow_what_is_visible(run: list[Message]) -> None:
    from kompakt.cli.evaluate import model_asker

    model = ScriptedModel(_reader)
    result = evaluate(
        [("r", run)],
        ["truncation"],
        parse_budgets("1.0,0.2"),
        lambda s, b: make_compactor(s, b),
        ask=model_asker(model),
    )
    full, small = result.cells
    assert full.result is not None and small.result is not None
    needles = len(full.result.needles)
    assert needles == 10  # two of each kind: value, constraint, decision, instruction, update
    assert len(model.requests) == 2 * needles
    # with the whole run every question is answered, the model saw each question
    assert all(full.answered.values()) and len(full.answered) == needles
    # under a 20% budget: answered exactly when the needle is still visible
    for needle in small.result.needles:
        assert small.answered[needle.value] == needle.visible
    assert not all(small.answered.values())
    assert result.row("truncation", "100%").answered == 1.0


def test_evaluate_pools_counts_and_records_errors(run: list[Message]) -> None:
    result = evaluate(
        [("a", run), ("b", run[:40])],
        ["truncation", "budgeted"],
        parse_budgets("0.5,200"),
        lambda s, b: make_compactor(s, b),
    )
    assert len(result.cells) == 8
    failed = [c for c in result.cells if c.error]
    assert failed and all(c.budget == "200" and c.strategy == "budgeted" for c in failed)
    assert all("BudgetImpossible" in (c.error or "") for c in failed)
    row = result.row("truncation", "50%")
    ok = [c for c in result.cells if c.strategy == "truncation" and c.budget == "50%"]
    visible = sum(c.counts()["command"][0] for c in ok)
    total = sum(c.counts()["command"][1] for c in ok)
    assert row.survival["command"] == pytest.approx(visible / total)
    assert result.row("budgeted", "200").errors == 2


@pytest.mark.parametrize("bad", ["", "lots", "-1", "0", "150%", "0.5,,x"])
def test_parse_budgets_rejects(bad: str) -> None:
    with pytest.raises(ConfigError, match="--budget"):
        parse_budgets(bad)


@given(st.lists(st.integers(1, 10**6), min_size=1, max_size=4))
def test_parse_budgets_tokens_roundtrip(values: list[int]) -> None:
    budgets = parse_budgets(",".join(map(str, values)))
    assert [b.resolve(123) for b in budgets] == [v if v >= 1 else 1 for v in values]


def test_line_chart_points_and_thinning() -> None:
    many = [(float(i), float(i % 7)) for i in range(1000)]
    svg = line_chart([Series("a", many), Series("b", [(0, 1), (5, 2)])], title="t <&>")
    assert svg.count('class="pt"') == 400 + 2
    assert "t &lt;&amp;&gt;" in svg and "<script" not in svg


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conversations(max_turns=4, huge_size=6_000), st.integers(60, 3_000))
def test_replay_property_budget_holds_and_output_is_valid(msgs: list[Message], budget: int) -> None:
    tok = CharEstimator()
    try:
        result = replay(msgs, make_compactor("budgeted", budget, tokenizer=tok), tokenizer=tok)
    except BudgetImpossible:
        return
    assert (
        len(result.steps) == sum(1 for i, m in enumerate(msgs) if i and m.role == "assistant") + 1
    )
    full = [s.tokens_full for s in result.steps]
    assert full == sorted(full)
    assert full[-1] == MessageIndex(msgs, tokenizer=tok).total_tokens
    for s in result.steps:
        if s.compacted:
            assert s.tokens_sent <= budget
    assert find_problems(result.final_messages, format="openai") == []


def test_recall_through_a_real_store(run: list[Message]) -> None:
    from kompakt.eval.probes import Artifact
    from kompakt.eval.replay import store_recall

    recover = store_recall(run)
    assert recover(Artifact("error", "ModuleNotFoundError: No module named 'asgiref'", 0))
    assert recover(Artifact("path", "/testbed/django/core/management/__init__.py", 0))
    assert not recover(Artifact("path", "/nowhere/never_seen_in_this_run.py", 0))
    result = replay(run, make_compactor("truncation", 3000), recall=True)
    lost = sum(a.total - a.visible for a in result.artifacts)
    assert lost > 0 and sum(a.recoverable for a in result.artifacts) == lost


def test_strategy_names_are_the_registry_names_in_any_spelling() -> None:
    from kompakt.eval.compactors import make_strategy
    from kompakt.strategies import Budgeted, CollapseToolResults, ExtractiveDigest, WholeHistory

    assert isinstance(make_strategy("collapse_tool_results", 1000), CollapseToolResults)
    assert isinstance(make_strategy("CollapseToolResults", 1000), CollapseToolResults)
    assert isinstance(make_strategy("whole-history", 1000), WholeHistory)
    digest = make_strategy("Extractive-Digest", 1000)  # held to the budget
    assert isinstance(digest, Budgeted) and isinstance(digest.strategies[0], ExtractiveDigest)
    with pytest.raises(ConfigError, match=r"unknown strategy 'nope'.*collapse_tool_results"):
        make_strategy("nope", 1000)
    with pytest.raises(ConfigError, match="--model"):
        make_strategy("summarize", 1000)


def test_an_old_value_counts_as_stale_only_when_nothing_newer_follows_it(
    run: list[Message],
) -> None:
    from kompakt.eval.replay import _shown_as_current

    assert _shown_as_current("KP-OLD", "KP-NEW", "now KP-NEW ... KP-OLD")
    assert _shown_as_current("KP-OLD", "KP-NEW", "only KP-OLD")
    assert not _shown_as_current("KP-OLD", "KP-NEW", "was KP-OLD, then KP-NEW")
    assert not _shown_as_current("KP-OLD", "KP-NEW", "only KP-NEW")
    # the whole run, uncompacted: each old value is followed by its update
    result = evaluate([("r", run)], ["truncation"], parse_budgets("1.0"), make_compactor)
    (cell,) = result.cells
    assert cell.stale() == (0, 2)
    assert result.row("truncation", "100%").stale == 0
