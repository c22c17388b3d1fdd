"""Issue 4 items with no test of their own: a custom prompt, and `summarizer=` everywhere.

A scripted remote model records what it was sent; assertions are on those requests and on the
compacted output.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

import kompakt
from kompakt import Message, ToolCall
from kompakt.formats import load
from kompakt.models import ScriptedModel
from kompakt.strategies._summarizer import SummarizingStrategy
from kompakt.validation import find_problems


def _history(steps: int = 30) -> list[Message]:
    msgs = [Message.system("You are a coding agent."), Message.user("fix tests/test_io.py")]
    for i in range(steps):
        call = ToolCall(id=f"c{i}", name="read_file", arguments=json.dumps({"path": f"src/{i}.py"}))
        msgs.append(Message.assistant(f"reading src/{i}.py", tool_calls=[call]))
        msgs.append(Message.tool(f"src/{i}.py\n" + "value = 1\n" * 200, tool_call_id=call.id))
    return msgs


def _request_texts(model: ScriptedModel) -> list[str]:
    """Each request the model received, as one text (instructions and fenced data)."""
    return ["\n".join(m.text for m in request) for request in model.requests]


def test_a_custom_prompt_is_what_the_model_is_asked() -> None:
    model = ScriptedModel("- the parser is fixed")
    prompt = "Write three haiku about this agent's progress. Mention every file path."
    out = kompakt.apply_compaction(
        _history(),
        strategy=kompakt.Budgeted(
            4_000, strategies=[kompakt.Summarize(summarizer=model, prompt=prompt)]
        ),
    )
    assert model.requests
    texts = _request_texts(model)
    assert all(prompt in t and "## Decisions" not in t for t in texts)  # the prompt, not ours
    summary = next(m for m in out if m.synthetic == "summary")
    assert "the parser is fixed" in summary.text


def test_the_template_reaches_the_model_by_default() -> None:
    model = ScriptedModel("## Goal\n- fix")
    kompakt.apply_compaction(
        _history(),
        strategy=kompakt.Budgeted(4_000, strategies=[kompakt.Summarize(summarizer=model)]),
    )
    texts = _request_texts(model)
    sections = (
        "## Decisions",
        "## Current facts",
        "## Preferences",
        "## Open tasks and next steps",
    )
    assert texts and all(all(s in t for s in sections) for t in texts)


def test_the_compactors_summarizer_serves_strategies_without_one() -> None:
    small = ScriptedModel("## Goal\n- summarized by the small model")
    compactor = kompakt.Compactor(
        trigger=kompakt.TokensExceed(6_000),
        strategy=kompakt.Budgeted(4_000, strategies=[kompakt.Summarize(keep_last_groups=2)]),
        summarizer=small,
    )
    view, event = asyncio.run(compactor.compact_async(kompakt.MessageIndex(_history())))
    assert small.requests and event.model_calls == len(small.requests)
    assert any("small model" in m.text for m in view.render() if m.synthetic == "summary")


def test_apply_compaction_takes_a_summarizer() -> None:
    small = ScriptedModel("## Goal\n- from apply_compaction's summarizer")
    out = kompakt.apply_compaction(
        _history(),
        strategy=kompakt.Budgeted(4_000, strategies=[kompakt.Summarize(keep_last_groups=2)]),
        summarizer=small,
    )
    assert small.requests
    assert any("apply_compaction's summarizer" in m.text for m in out if m.synthetic)


def test_a_strategys_own_summarizer_wins() -> None:
    own, shared = ScriptedModel("## Goal\n- own"), ScriptedModel("## Goal\n- shared")
    out = kompakt.apply_compaction(
        _history(),
        strategy=kompakt.Budgeted(
            4_000, strategies=[kompakt.Summarize(keep_last_groups=2, summarizer=own)]
        ),
        summarizer=shared,
    )
    assert own.requests and not shared.requests
    assert any("- own" in m.text for m in out if m.synthetic == "summary")


def test_no_summarizer_anywhere_uses_the_digest() -> None:
    out = kompakt.apply_compaction(
        _history(),
        strategy=kompakt.Budgeted(4_000, strategies=[kompakt.Summarize(keep_last_groups=2)]),
    )
    summary = next(m for m in out if m.synthetic == "summary")
    assert "src/0.py" in summary.text  # the extractive digest keeps paths verbatim
    kompakt.validate(out, format="anthropic")


# -- a summary that fits the budget (real transcripts) -------------------------------------------

DATA = Path(__file__).resolve().parent / "data"
RUNS = sorted((DATA / "mini-swe-agent").glob("*.traj.json"))
LONG_ANSWER = "## Goal\n" + "- a finding about src/app/models.py that goes on and on\n" * 400


def _summarizing(kind: str) -> SummarizingStrategy:
    if kind == "digest":
        return kompakt.ExtractiveDigest(keep_last_groups=2)
    return kompakt.Summarize(keep_last_groups=2, summarizer=ScriptedModel(LONG_ANSWER))


def _check_fits(out: list[Message], budget: int) -> None:
    assert [m.synthetic for m in out].count("summary") == 1
    assert kompakt.MessageIndex(out).total_tokens <= budget
    assert not find_problems(out, format="openai") and not find_problems(out, format="anthropic")


@pytest.mark.parametrize("kind", ["digest", "summarize"])
@pytest.mark.parametrize("fraction", [0.2, 0.1])
@pytest.mark.parametrize("path", RUNS, ids=lambda p: p.name.split(".")[0])
def test_a_tight_budget_keeps_one_summary_that_fits(path: Path, fraction: float, kind: str) -> None:
    msgs = list(load(path))
    budget = int(kompakt.MessageIndex(msgs).total_tokens * fraction)
    out = kompakt.apply_compaction(
        msgs, strategy=kompakt.Budgeted(budget, strategies=[_summarizing(kind)])
    )
    _check_fits(out, budget)
    summary = next(m for m in out if m.synthetic == "summary")
    assert "## " in summary.text  # a note with content, not a bare header


@pytest.mark.parametrize("kind", ["digest", "summarize"])
@pytest.mark.parametrize("path", RUNS, ids=lambda p: p.name.split(".")[0])
def test_rolling_over_a_growing_run_keeps_one_summary(path: Path, kind: str) -> None:
    msgs = list(load(path))
    budget = kompakt.MessageIndex(msgs).total_tokens // 10
    compactor = kompakt.Compactor(
        trigger=kompakt.TokensExceed(budget),
        strategy=kompakt.Budgeted(budget, strategies=[_summarizing(kind)]),
    )
    half = len(msgs) // 2
    while msgs[half].role == "tool":  # cut between turns, not inside a call's results
        half += 1
    index = kompakt.MessageIndex(msgs[:half])
    for more in ([], msgs[half:]):
        index.extend(more)
        view, _ = compactor.compact(index)
        _check_fits(view.render(), budget)
