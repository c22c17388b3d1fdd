"""One compaction driver: what a run changes (min_preserved, kept counts, the budget's
calibration and room, strictness) travels in the context; the strategies stay as built."""

from __future__ import annotations

import asyncio

import pytest

from kompakt.agent import Agent
from kompakt.agent.background import BackgroundCompaction
from kompakt.compactor import Compactor
from kompakt.errors import BudgetImpossible
from kompakt.index import MessageIndex
from kompakt.messages import Message
from kompakt.models import ScriptedModel
from kompakt.strategies import (
    Budgeted,
    CompactionContext,
    ExtractiveDigest,
    Overrides,
    Pipeline,
    Rehydrate,
    Truncation,
)
from kompakt.strategies.base import own_target, own_trigger, token_budget_of
from kompakt.tokens import CharEstimator
from kompakt.triggers import TokensBelow, TokensExceed
from kompakt.view import View


def users(n: int, size: int = 400) -> list[Message]:
    return [Message.user(f"message {i} " + "x" * size) for i in range(n)]


def newest_numbers(view: View) -> list[int]:
    return [int(m.text.split()[1]) for m in view.render() if m.synthetic is None]


def test_overrides_change_the_run_not_the_strategy() -> None:
    inner = Truncation()
    strategy = Pipeline([inner])
    view = View(MessageIndex(users(10)))
    context = CompactionContext(view, target=TokensBelow(1), overrides=Overrides(min_preserved=4))
    assert strategy.apply(view, context)
    assert newest_numbers(view) == [6, 7, 8, 9]
    assert inner.min_preserved == 2


def test_fewer_kept_lowers_keep_last_and_min_preserved_alike() -> None:
    overrides = Overrides(min_preserved=5).fewer(3)
    assert overrides.preserved(2) == 2 and overrides.kept(4) == 1 and overrides.kept(2) == 0
    assert Overrides().fewer(-1) == Overrides()
    view = View(MessageIndex(users(8)))
    digest = ExtractiveDigest(keep_last_groups=4)
    before = dict(vars(digest))
    digest.apply(view, CompactionContext(view, overrides=Overrides().fewer(2)))
    assert newest_numbers(view) == [6, 7]
    assert vars(digest) == before


def test_a_budget_offset_moves_every_budget_of_the_run() -> None:
    strategy = Budgeted(3_000)
    view = View(MessageIndex(users(20), tokenizer=CharEstimator()))
    strategy.apply(view, CompactionContext(view, overrides=Overrides(budget_offset=1_000)))
    assert view.total_tokens <= 2_000
    assert strategy.token_budget == 3_000


def test_strict_false_in_the_overrides_leaves_the_core_instead_of_raising() -> None:
    system = Message.system("s" * 4_000)
    view = View(MessageIndex([system, *users(3)]))
    with pytest.raises(BudgetImpossible):
        Budgeted(100).apply(view.copy(), CompactionContext(view))
    lenient = view.copy()
    assert Budgeted(100).apply(
        lenient, CompactionContext(lenient, overrides=Overrides(strict=False))
    )
    assert lenient.render()[0] is system


def test_a_compactor_leaves_room_for_its_rehydration_without_copying_the_strategy() -> None:
    strategy = Budgeted(8_000)
    compactor = Compactor(strategy=strategy, rehydrate=Rehydrate(max_message_tokens=1_000))
    overrides, target = compactor.with_room()
    assert overrides.budget(8_000) == 7_000 and target == TokensBelow(7_000)
    view, event = compactor.compact(MessageIndex(users(120)))
    budgeted = next(s for s in event.steps if s.strategy == "Budgeted")
    assert budgeted.tokens_after <= 7_000 and view.total_tokens <= 8_000
    assert compactor.strategy is strategy and strategy.token_budget == 8_000


def test_an_agent_calibrates_the_budget_without_touching_its_strategy() -> None:
    strategy = Budgeted(1_500)
    before = dict(vars(strategy))
    model = ScriptedModel(
        ["answer " + "y" * 600],
        cycle=True,
        tokenizer=CharEstimator(chars_per_token=3.0),  # the provider counts more
    )
    agent = Agent(model, compactor=Compactor(strategy=strategy), recall=False)
    results = [agent.run_sync(f"question {i} " + "z" * 1_200) for i in range(6)]
    assert sum(len(r.compactions) for r in results) >= 2
    assert agent._offset > 100  # the provider's count is above the estimate
    # each request, as the provider counts it, stays within the budget once it filled
    assert all(t <= 1_500 for r in results for t in r.request_tokens)
    assert vars(strategy) == before


def test_a_background_preparation_keeps_what_a_compaction_at_the_trigger_keeps() -> None:
    strategy = ExtractiveDigest(keep_last_groups=4)
    before = dict(vars(strategy))

    async def main() -> list[list[int]]:
        compactor = Compactor(TokensExceed(1_200), strategy=strategy, target=TokensBelow(900))
        background = BackgroundCompaction(compactor, prepare_at=800)
        flat = CharEstimator(chars_per_token=4)  # the sizes assume four characters a token
        index = MessageIndex(users(1), tokenizer=flat)
        kept = []
        for i in range(1, 25):
            view, event = await background.checkpoint(index)
            if event is not None:
                assert event.reason == "prepared in the background"
                assert view.render()[0].synthetic == "summary"
                kept.append(newest_numbers(view))
            index.append(Message.user(f"message {i} " + "x" * 400))
        background.cancel()
        return kept

    kept = asyncio.run(main())
    assert len(kept) >= 2
    # the newest 4 at least, raw and unbroken (a chat's note may leave the tail one more)
    assert all(len(k) >= 4 and k == list(range(k[0], k[-1] + 1)) for k in kept), kept
    assert vars(strategy) == before


class OwnOptions:
    """A strategy by protocol alone (no BaseStrategy): its own trigger and target count."""

    trigger = TokensExceed(10)
    target = TokensBelow(5)
    token_budget = 50

    def apply(self, view: View, context: CompactionContext) -> bool:
        return False


def test_the_options_a_run_reads_are_found_on_any_strategy() -> None:
    s = OwnOptions()
    assert own_trigger(s) == TokensExceed(10) and own_target(s) == TokensBelow(5)
    assert token_budget_of(s) == 50 and token_budget_of(Truncation()) is None
    assert own_trigger(Truncation()) is None and own_target(Truncation()) is None
    assert Compactor(strategy=s).trigger == TokensExceed(10)
