"""Issue 3, item 1: every trigger and target, on a real index and on a view, and in a Compactor.

Also runs the docstring example of every kompakt module: the style guide asks for one on each
public name, and an example that no longer runs is worse than none.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import kompakt
from data_files import DATA_DIR
from kompakt.triggers import CONTEXT_WINDOWS, context_window

TRAJ = DATA_DIR / "mini-swe-agent" / "django__django-13658.traj.json"


@pytest.fixture(scope="module")
def index() -> kompakt.MessageIndex:
    return kompakt.MessageIndex(kompakt.load(TRAJ))


def test_each_threshold_trigger_reads_its_own_metric(index: kompakt.MessageIndex) -> None:
    cases = [
        (kompakt.TokensExceed, index.total_tokens),
        (kompakt.MessagesExceed, index.message_count),
        (kompakt.TurnsExceed, index.turn_count),
        (kompakt.GroupsExceed, index.group_count),
        (kompakt.CharsExceed, index.total_chars),
    ]
    for trigger, value in cases:
        assert trigger(value - 1)(index) is True, trigger
        assert trigger(value)(index) is False, trigger  # "exceed" is strict
    assert kompakt.TokensBelow(index.total_tokens)(index) is True
    assert kompakt.TokensBelow(index.total_tokens - 1)(index) is False
    assert kompakt.HasToolCalls()(index) is True
    assert kompakt.HasToolCalls()(kompakt.MessageIndex([kompakt.Message.user("hi")])) is False
    assert kompakt.Always()(index) and not kompakt.Never()(index)


def test_triggers_read_the_view_not_the_history(index: kompakt.MessageIndex) -> None:
    view = kompakt.View(index)
    strategy = kompakt.CollapseToolResults(keep_last_groups=2, trigger=kompakt.Always())
    assert strategy.apply(view, kompakt.CompactionContext(view))
    limit = (view.total_tokens + index.total_tokens) // 2
    assert kompakt.TokensExceed(limit)(index) and not kompakt.TokensExceed(limit)(view)
    assert kompakt.HasToolCalls()(view)  # the newest two groups are still calls + results
    # the newest two stay, and a group smaller than its note would be
    assert 2 <= view.tool_call_group_count < index.tool_call_group_count // 4


def test_combinators_and_callables(index: kompakt.MessageIndex) -> None:
    yes, no = kompakt.TokensExceed(0), kompakt.TokensExceed(10**9)
    assert kompakt.AllOf(yes, lambda m: m.message_count > 10)(index)
    assert not kompakt.AllOf(yes, no)(index)
    assert kompakt.AnyOf(no, yes)(index) and not kompakt.AnyOf(no, no)(index)
    assert kompakt.Not(no)(index) and not kompakt.Not(yes)(index)
    assert (yes & ~no)(index) and (no | yes)(index) and not (no & yes)(index)
    compactor = kompakt.Compactor(trigger=lambda m: m.turn_count >= 1, strategy="truncation")
    assert compactor.check(index)
    with pytest.raises(kompakt.ConfigError, match="trigger"):
        kompakt.Compactor(trigger=42, strategy="truncation")  # type: ignore[arg-type]
    with pytest.raises(kompakt.ConfigError, match="limit"):
        kompakt.TokensExceed(-1)


def test_context_fraction(index: kompakt.MessageIndex) -> None:
    assert kompakt.ContextFraction(0.5, context_window=2 * index.total_tokens - 2)(index)
    assert not kompakt.ContextFraction(0.5, context_window=2 * index.total_tokens)(index)
    assert kompakt.ContextFraction(0.8, model="gpt-4o").limit == int(128_000 * 0.8)
    # provider prefixes, dated snapshots and paths resolve to the known model
    for name in ("openai:gpt-4o-mini-2024-07-18", "anthropic:claude-sonnet-4-5", "x/gpt-4.1"):
        assert kompakt.ContextFraction(0.5, model=name).context_window in CONTEXT_WINDOWS.values()
    assert context_window("gpt-4o-mini") == 128_000  # the longest prefix, not "gpt-4"
    with pytest.raises(kompakt.ConfigError, match="window="):
        kompakt.ContextFraction(0.5, model="my-private-model")
    with pytest.raises(kompakt.ConfigError, match="fraction"):
        kompakt.ContextFraction(1.5, context_window=1000)


def test_default_target_is_the_trigger_no_longer_firing(index: kompakt.MessageIndex) -> None:
    limit = index.total_tokens // 2
    compactor = kompakt.Compactor(trigger=kompakt.TokensExceed(limit), strategy="truncation")
    view, event = compactor.compact(index)
    assert event.changed and view.total_tokens <= limit
    assert not compactor.check(index)
    # and stops there: it does not truncate further than the target needs
    assert view.total_tokens > limit * 0.6


def test_hysteresis_compacts_rarely(index: kompakt.MessageIndex) -> None:
    """Trigger high, target low: after a compaction, many appends pass before the next."""
    msgs = list(index.messages)
    total = index.total_tokens
    low = kompakt.Compactor(
        trigger=kompakt.TokensExceed(total // 2),
        strategy=kompakt.Truncation(),
        target=kompakt.TokensBelow(total // 5),
    )
    flat = kompakt.Compactor(trigger=kompakt.TokensExceed(total // 2), strategy="truncation")
    counts = []
    for compactor in (low, flat):
        grown = kompakt.MessageIndex(msgs[:2])
        n = 0
        for m in msgs[2:]:
            grown.append(m)
            if compactor.check(grown):
                _, event = compactor.compact(grown)
                n += event.changed
        counts.append(n)
    assert 0 < counts[0] < counts[1], counts


MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(kompakt.__path__, "kompakt.")
    if not info.name.startswith(("kompakt.cli", "kompakt.eval"))  # tests/cli runs those
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, report=False)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
