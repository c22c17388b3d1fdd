"""Every strategy on Responses and Gemini histories gives documents the provider accepts.

Random agent conversations are written as Responses items (a reasoning item before
every model output, sometimes a provider ``compaction`` item) or as Gemini contents,
loaded back, compacted by every strategy, rendered in that format and validated. Beside
kompakt's invariants (engine_helpers.check_view): a reasoning item in the output is one
of the input's, unchanged, and still followed by the item it preceded; nothing before the
newest compaction item is sent but system messages (and the omission note).
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine_helpers import check_view, conversations, validity
from kompakt.formats import dump, loads, to_dicts
from kompakt.index import MessageIndex
from kompakt.messages import Message
from kompakt.strategies import CompactionContext
from kompakt.strategies._common import run_strategy_sync
from kompakt.tokens import CharEstimator
from kompakt.validation import find_problems
from kompakt.view import OMITTED_NOTE, View
from test_invariants import STRATEGIES, check_budgeted

NAMES = sorted(STRATEGIES)


def _with_reasoning(items: list[dict[str, Any]], compact_at: int | None) -> list[dict[str, Any]]:
    """A reasoning item before each run of model output; a compaction item after the
    `compact_at`-th user message."""
    out: list[dict[str, Any]] = []
    users = 0
    model = False
    for item in items:
        output = item.get("type") == "function_call" or item.get("role") == "assistant"
        if output and not model:
            n = len(out)
            out.append(
                {
                    "type": "reasoning",
                    "id": f"rs_{n}",
                    "summary": [],
                    "encrypted_content": f"gAAA{n}",
                }
            )
        model = output
        out.append(item)
        if item.get("role") == "user":
            users += 1
            if users == compact_at:
                out.append({"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAcmp"})
                model = False
    return out


@st.composite
def responses_items(draw: Any) -> list[dict[str, Any]]:
    conv = draw(conversations())
    items = to_dicts(conv, format="responses", provider=True)
    compact_at = draw(st.one_of(st.none(), st.integers(1, 3)))
    return _with_reasoning(items, compact_at)


def _compact(strategy: Any, messages: list[Message]) -> View:
    view = View(MessageIndex(messages, tokenizer=CharEstimator()))
    run_strategy_sync(strategy, view, CompactionContext(view))
    return view


def _check_reasoning(source: list[dict[str, Any]], sent: list[dict[str, Any]]) -> None:
    following = {
        item["id"]: source[k + 1]
        for k, item in enumerate(source[:-1])
        if item.get("type") == "reasoning"
    }
    originals = {item["id"]: item for item in source if item.get("type") == "reasoning"}
    for k, item in enumerate(sent):
        if item.get("type") != "reasoning":
            continue
        assert item == originals[item["id"]]  # never edited
        nxt, was = sent[k + 1], following[item["id"]]
        assert nxt.get("type") == was.get("type") and nxt.get("call_id") == was.get("call_id")


def _check_compaction(sent: list[dict[str, Any]]) -> None:
    at = [k for k, item in enumerate(sent) if item.get("type") == "compaction"]
    if not at:
        return
    for item in sent[: at[-1]]:  # only system messages and the omission note before it
        assert item.get("role") in ("system", "developer") or item.get("content") == OMITTED_NOTE


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=responses_items(), name=st.sampled_from(NAMES))
def test_every_strategy_on_responses_items(items: list[dict[str, Any]], name: str) -> None:
    conv = list(loads(items, format="responses"))
    assert dump(loads(items, format="responses")) == items
    valid = {**validity(conv), "responses": not find_problems(conv, format="responses")}
    assert valid["responses"] and valid["openai"]
    total = MessageIndex(conv, tokenizer=CharEstimator()).total_tokens
    view = _compact(STRATEGIES[name](total), conv)
    check_view(view, valid)
    sent = to_dicts(view.render(), format="responses", provider=True)
    assert find_problems(loads(sent, format="responses"), format="responses") == []
    _check_reasoning(items, sent)
    _check_compaction(sent)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=responses_items(), fraction=st.sampled_from((0.5, 0.2, 0.05)))
def test_budgeted_on_responses_items(items: list[dict[str, Any]], fraction: float) -> None:
    conv = list(loads(items, format="responses"))
    total = MessageIndex(conv, tokenizer=CharEstimator()).total_tokens
    check_budgeted(conv, max(1, int(total * fraction)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(conv=conversations(), name=st.sampled_from(NAMES))
def test_every_strategy_on_gemini_contents(conv: list[Message], name: str) -> None:
    doc = dump(conv, format="gemini", provider=True)
    loaded = loads(doc)
    assert loaded.format == "gemini" and dump(loaded) == doc
    history = list(loaded)
    valid = {**validity(history), "gemini": not find_problems(history, format="gemini")}
    assert valid["gemini"]
    total = MessageIndex(history, tokenizer=CharEstimator()).total_tokens
    view = _compact(STRATEGIES[name](total), history)
    check_view(view, valid)
    sent = dump(view.render(), format="gemini", provider=True)
    again = loads(sent)
    assert find_problems(again, format="gemini") == []
    roles = [c["role"] for c in sent["contents"]]
    assert all(a != b for a, b in pairwise(roles))  # turns alternate


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    items=responses_items(),
    cuts=st.lists(st.integers(1, 8), min_size=1, max_size=8),
    fraction=st.sampled_from((0.3, 0.6)),
)
def test_persistent_compactor_over_growing_responses_items(
    items: list[dict[str, Any]], cuts: list[int], fraction: float
) -> None:
    from kompakt.compactor import Compactor
    from kompakt.strategies import Budgeted
    from kompakt.triggers import TokensExceed

    conv = list(loads(items, format="responses"))
    total = MessageIndex(conv, tokenizer=CharEstimator()).total_tokens
    budget = max(50, int(total * fraction))
    compactor = Compactor(TokensExceed(budget), strategy=Budgeted(budget * 2 // 3, strict=False))
    index = MessageIndex(tokenizer=CharEstimator())
    pos = 0
    for cut in [*cuts, len(conv)]:
        index.extend(conv[pos : pos + cut])  # a compaction item may arrive in any batch
        pos += cut
        if compactor.check(index):
            view, _ = compactor.compact(index)
            history = list(index.messages)
            valid = {
                **validity(history),
                "responses": not find_problems(history, format="responses"),
            }
            check_view(view, valid)
        if pos >= len(conv):
            break
    if compactor.view is not None:
        history = list(index.messages)
        check_view(compactor.view, {"responses": not find_problems(history, format="responses")})
        sent = to_dicts(compactor.view.render(), format="responses", provider=True)
        _check_compaction(sent)
        _check_reasoning(items, sent)
