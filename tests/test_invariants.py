"""Every strategy and pipeline keeps kompakt's invariants, on random and real conversations.

For each output: valid for OpenAI and Anthropic (when the input was), within the
budget or `BudgetImpossible`, system / pinned / memory / last user message / pending
call sent verbatim, every excluded original covered by exactly one synthetic message
or explicitly dropped, totals equal to the rendering's cost, and idempotent.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strategies_conv
from engine_helpers import check_view, conversations, sig, validity
from kompakt.compactor import apply_compaction
from kompakt.errors import BudgetImpossible
from kompakt.index import MessageIndex
from kompakt.messages import Message
from kompakt.models import ScriptedModel
from kompakt.strategies import (
    Budgeted,
    ClampOversized,
    CollapseToolResults,
    CompactionContext,
    KeepFirstAndLast,
    Pipeline,
    Rehydrate,
    RemoveToolCalls,
    SlidingWindow,
    Summarize,
    SupersedeReads,
    Truncation,
)
from kompakt.strategies._common import run_strategy_sync
from kompakt.tokens import CharEstimator
from kompakt.triggers import TokensExceed
from kompakt.view import View

CONVERSATIONS = st.one_of(strategies_conv.conversations(), conversations())
"""The suite's shared generator (images, shuffled parallel results, developer messages)
and the engine's (repeated reads, memory messages, partial pending calls)."""

DATA = Path(__file__).resolve().parent / "data"

Factory = Callable[[int], Any]
"""Builds a strategy given the conversation's total tokens."""

STRATEGIES: dict[str, Factory] = {
    "truncation": lambda total: Truncation(),
    "truncation_trigger": lambda total: Truncation(trigger=TokensExceed(total // 2)),
    "window_turns": lambda total: SlidingWindow(keep_last_turns=2),
    "window_groups": lambda total: SlidingWindow(keep_last_groups=4),
    "first_last": lambda total: KeepFirstAndLast(keep_last_groups=3),
    "collapse": lambda total: CollapseToolResults(keep_last_groups=1),
    "collapse_excl": lambda total: CollapseToolResults(keep_last_groups=0, exclude_tools=["plan"]),
    "remove_tools": lambda total: RemoveToolCalls(keep_last_groups=1),
    "clamp": lambda total: ClampOversized(max_message_tokens=200),
    "clamp_all": lambda total: ClampOversized(max_message_tokens=200, min_preserved=0),
    "supersede": lambda total: SupersedeReads(),
    "supersede_path": lambda total: SupersedeReads(key="path", min_preserved=0),
    "rehydrate": lambda total: Pipeline(
        [SlidingWindow(keep_last_turns=1), Rehydrate(files=3, max_file_tokens=60)]
    ),
    "pipeline": lambda total: Pipeline(
        [
            SupersedeReads(),
            CollapseToolResults(trigger=TokensExceed(total // 2)),
            Truncation(trigger=TokensExceed(total // 3)),
        ]
    ),
}
NOT_IDEMPOTENT = frozenset({"rehydrate"})
"""A rehydrated copy is an original to a second pass over the output (a new user turn
the window may drop); in a persistent view the next compaction replaces it instead."""
BUDGET_FRACTIONS = (0.5, 0.2, 0.05)
SUMMARY = "Goal: the user's task. Done so far: files read, tests run. Next: continue."


def run(strategy: Any, messages: list[Message]) -> tuple[View, list[Message]]:
    index = MessageIndex(messages, tokenizer=CharEstimator())
    view = View(index)
    run_strategy_sync(strategy, view, CompactionContext(view))
    return view, view.render()


def assert_idempotent(strategy: Any, out: list[Message]) -> None:
    again = apply_compaction(out, strategy=strategy, tokenizer=CharEstimator())
    assert sig(again) == sig(out)


def check_budgeted(messages: list[Message], budget: int, strategy: Any | None = None) -> None:
    valid = validity(messages)
    strategy = strategy or Budgeted(budget)
    try:
        view, out = run(strategy, messages)
    except BudgetImpossible as e:
        assert e.required > budget
        assert sum(e.breakdown.values()) == e.required
        return
    check_view(view, valid, budget)
    assert_idempotent(strategy, out)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conv=CONVERSATIONS, name=st.sampled_from(sorted(STRATEGIES)))
def test_every_strategy_keeps_the_invariants(conv: list[Message], name: str) -> None:
    total = MessageIndex(conv, tokenizer=CharEstimator()).total_tokens
    strategy = STRATEGIES[name](total)
    view, out = run(strategy, conv)
    check_view(view, validity(conv))
    if name not in NOT_IDEMPOTENT:
        assert_idempotent(strategy, out)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conv=CONVERSATIONS, fraction=st.sampled_from((0.8, *BUDGET_FRACTIONS, 0.01)))
def test_budgeted_holds_the_budget_or_says_why(conv: list[Message], fraction: float) -> None:
    total = MessageIndex(conv, tokenizer=CharEstimator()).total_tokens
    check_budgeted(conv, max(1, int(total * fraction)))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    conv=CONVERSATIONS,
    fraction=st.sampled_from(BUDGET_FRACTIONS),
    chain=st.sampled_from(["collapse_window", "remove_first_last", "clamp_only", "summarize"]),
    early_stop=st.booleans(),
)
def test_budgeted_custom_chains(
    conv: list[Message], fraction: float, chain: str, early_stop: bool
) -> None:
    total = MessageIndex(conv, tokenizer=CharEstimator()).total_tokens
    budget = max(1, int(total * fraction))
    chains: dict[str, list[Any]] = {
        "collapse_window": [
            CollapseToolResults(keep_last_groups=0),
            SlidingWindow(keep_last_turns=1),
        ],
        "remove_first_last": [
            RemoveToolCalls(keep_last_groups=1),
            KeepFirstAndLast(keep_last_groups=2),
        ],
        "clamp_only": [ClampOversized(max_message_tokens=100)],
        "summarize": [
            SupersedeReads(),
            Summarize(keep_last_groups=2, summarizer=ScriptedModel(SUMMARY)),
        ],
    }
    strategies = chains[chain]
    check_budgeted(conv, budget, Budgeted(budget, strategies=strategies, early_stop=early_stop))


def _transcripts() -> list[Path]:
    return sorted(p for p in DATA.rglob("*") if p.suffix in (".json", ".traj"))


@pytest.mark.parametrize("path", _transcripts(), ids=lambda p: p.name)
def test_real_transcripts_at_every_budget(path: Path) -> None:
    from kompakt.formats import load

    conv = list(load(path))
    total = MessageIndex(conv, tokenizer=CharEstimator()).total_tokens
    for fraction in BUDGET_FRACTIONS:
        budget = int(total * fraction)
        check_budgeted(conv, budget)
        check_budgeted(
            conv,
            budget,
            Budgeted(budget, strategies=[CollapseToolResults(keep_last_groups=1), Truncation()]),
        )
    for name, factory in STRATEGIES.items():
        view, out = run(factory(total), conv)
        check_view(view, validity(conv))
        if name != "pipeline" and name not in NOT_IDEMPOTENT:
            assert_idempotent(factory(total), out)


def test_real_transcripts_exist() -> None:
    assert len(_transcripts()) >= 10, DATA


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    conv=CONVERSATIONS,
    cuts=st.lists(st.integers(1, 8), min_size=1, max_size=8),
    fraction=st.sampled_from((0.3, 0.6)),
)
def test_persistent_compactor_over_a_growing_history(
    conv: list[Message], cuts: list[int], fraction: float
) -> None:
    from kompakt.compactor import Compactor

    total = MessageIndex(conv, tokenizer=CharEstimator()).total_tokens
    budget = max(50, int(total * fraction))
    compactor = Compactor(TokensExceed(budget), strategy=Budgeted(budget * 2 // 3, strict=False))
    index = MessageIndex(tokenizer=CharEstimator())
    pos = 0
    for cut in [*cuts, len(conv)]:
        index.extend(conv[pos : pos + cut])
        pos += cut
        if compactor.check(index):
            view, event = compactor.compact(index)
            assert event.changed or view.total_tokens > budget * 2 // 3
            check_view(view, validity(list(index.messages)))
        if pos >= len(conv):
            break
    if compactor.view is not None:
        check_view(compactor.view, validity(list(index.messages)))
