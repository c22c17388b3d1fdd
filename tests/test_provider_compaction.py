"""Anthropic thinking, server tools, cache_control and compaction blocks; provider
compaction items as opaque groups that no strategy edits and that end what is sent.

The Anthropic documents follow the shapes of Anthropic's documented examples (extended
thinking with tool use, web search results, prompt caching, server-side compaction).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from engine_helpers import check_view, validity
from kompakt.errors import FormatError
from kompakt.formats import dump, loads
from kompakt.index import MessageIndex
from kompakt.messages import Message, Part
from kompakt.strategies import Budgeted, CompactionContext
from kompakt.strategies._common import run_strategy_sync
from kompakt.tokens import CharEstimator
from kompakt.validation import find_problems
from kompakt.view import OMITTED_NOTE, View
from test_invariants import STRATEGIES

SIGNATURE = "WaUjzkypQ2mUEVM36O2TxuC06KN8xyfbJwyem2dw3URve/op91XWHOEBLLqIOMfFG/UvLEczmEsUjavL"
COMPACTION = {
    "type": "compaction",
    "content": "Summary: the user wants the weather in Paris (18C).",
}


def turn(n: int, size: int = 3000) -> list[dict[str, Any]]:
    """A user turn answered by thinking + a server search + a client tool call."""
    return [
        {"role": "user", "content": f"Question {n}: the weather in Paris, and the news?"},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "thinking",
                    "thinking": f"I need the weather tool ({n}).",
                    "signature": SIGNATURE,
                },
                {"type": "text", "text": "Let me check."},
                {
                    "type": "server_tool_use",
                    "id": f"srvtoolu_{n}",
                    "name": "web_search",
                    "input": {"query": "paris news"},
                },
                {
                    "type": "web_search_tool_result",
                    "tool_use_id": f"srvtoolu_{n}",
                    "content": [
                        {
                            "type": "web_search_result",
                            "url": "https://example.org/paris",
                            "title": "Paris today",
                            "encrypted_content": "EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5LTQ1NGUt",
                            "page_age": "April 30, 2025",
                        }
                    ],
                },
                {
                    "type": "tool_use",
                    "id": f"toolu_{n}",
                    "name": "get_weather",
                    "input": {"location": "Paris"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": f"toolu_{n}",
                    "content": "18C, clear. " * (size // 12),
                    "cache_control": {"type": "ephemeral"},
                }
            ],
        },
        {
            "role": "assistant",
            "content": [
                {
                    "type": "redacted_thinking",
                    "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP",
                },
                {"type": "text", "text": f"It is 18C ({n})."},
            ],
        },
    ]


def document(turns: int = 4, compact_after: int | None = 2) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    for n in range(turns):
        messages.extend(turn(n))
        if n + 1 == compact_after:
            messages.append({"role": "user", "content": "Keep going."})
            messages.append(
                {
                    "role": "assistant",
                    "content": [COMPACTION, {"type": "text", "text": "Continuing."}],
                }
            )
    return {
        "model": "claude-opus-4-6",
        "system": [
            {
                "type": "text",
                "text": "You are a weather agent.",
                "cache_control": {"type": "ephemeral"},
            }
        ],
        "messages": messages,
        "context_management": {"edits": [{"type": "compact_20260112"}]},
    }


def test_anthropic_blocks_round_trip_and_go_to_the_api_verbatim() -> None:
    doc = document()
    source = copy.deepcopy(doc)
    conv = loads(doc)
    assert dump(conv) == source
    body = dump(conv, provider=True)
    assert body["system"] == source["system"]  # cache_control kept
    assert body["messages"] == source["messages"]  # thinking, server tools, compaction as sent
    assert find_problems(conv, format="anthropic") == []


def test_groups_keep_thinking_with_its_tool_use_and_compaction_alone() -> None:
    index = MessageIndex(loads(document()))
    kinds = [g.kind for g in index.groups]
    assert kinds[:6] == ["system", "user", "tool_call", "assistant_text", "user", "tool_call"]
    assert kinds.count("compaction") == 1
    g = index.groups[index.compaction_group or 0]
    assert g.kind == "compaction" and g.pinned
    call = index.group_messages(index.groups[2])[0]
    assert [p.data.get("type") for p in call.content] == [
        "thinking", "text", "server_tool_use", "web_search_tool_result",
    ]  # fmt: skip
    assert call.tool_calls[0].id == "toolu_0"


def test_what_precedes_the_newest_compaction_is_not_sent_but_kept() -> None:
    conv = loads(document())
    index = MessageIndex(conv, tokenizer=CharEstimator())
    view = View(index)
    out = view.render()
    assert [m.role for m in out[:3]] == ["system", "user", "assistant"]
    assert out[1].text == OMITTED_NOTE  # Anthropic wants a user message first
    assert out[2] is index.messages[index.groups[index.compaction_group or 0].start]
    assert view.total_tokens == sum(index.tokenizer.count_message(m) for m in out)
    assert len(index.messages) == len(conv)  # the originals stay
    assert find_problems(out, format="anthropic") == []
    ids = view.dropped_ids()
    before = index.groups[index.compaction_group or 0].start
    assert ids == {m.id for m in index.messages[1:before]}


def test_a_compaction_arriving_later_ends_a_live_view() -> None:
    doc = document(turns=2, compact_after=None)
    index = MessageIndex(loads(doc), tokenizer=CharEstimator())
    view = View(index)
    full = view.total_tokens
    index.extend(
        loads(
            {
                "messages": [
                    {"role": "user", "content": "more"},
                    {"role": "assistant", "content": [COMPACTION, {"type": "text", "text": "ok"}]},
                ]
            }
        )
    )
    assert view.total_tokens < full
    assert view.total_tokens == sum(index.tokenizer.count_message(m) for m in view.render())


def test_compaction_tokens_come_from_usage_when_known() -> None:
    item = Part(kind="other", data={"type": "compaction", "encrypted_content": "gAAA" * 5000})
    counted = Message(role="assistant", content=(item,))
    reported = Message(role="assistant", content=(item,), metadata={"tokens": 812})
    index = MessageIndex([Message.user("hi"), counted], tokenizer=CharEstimator())
    assert index.message_tokens[1] != 812
    index = MessageIndex([Message.user("hi"), reported], tokenizer=CharEstimator())
    assert index.message_tokens[1] == 812 and index.total_tokens == index.message_tokens[0] + 812


# shaped on OpenAI's documented `/responses/compact` answer and Anthropic's documented
# reply to a request that crossed its compaction trigger
COMPACT_ANSWER: dict[str, Any] = {
    "id": "resp_001",
    "object": "response.compaction",
    "created_at": 1764967971,
    "output": [
        {
            "id": "msg_000",
            "type": "message",
            "status": "completed",
            "role": "user",
            "content": [{"type": "input_text", "text": "Create a simple landing page."}],
        },
        {"id": "cmp_001", "type": "compaction", "encrypted_content": "gAAAAABpM0Yj" * 2000},
    ],
    "usage": {
        "input_tokens": 139,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 438,
        "output_tokens_details": {"reasoning_tokens": 64},
        "total_tokens": 577,
    },
}
COMPACTED_REPLY = {
    "role": "assistant",
    "content": [
        {"type": "compaction", "content": "Summary of the conversation: the user is building..."},
        {"type": "text", "text": "Based on our conversation so far, the next step is..."},
    ],
    "usage": {
        "input_tokens": 23000,
        "output_tokens": 1000,
        "iterations": [
            {"type": "compaction", "input_tokens": 180000, "output_tokens": 3500},
            {"type": "message", "input_tokens": 23000, "output_tokens": 1000},
        ],
    },
}


def test_a_compact_answers_item_is_counted_from_its_usage() -> None:
    conv = loads(copy.deepcopy(COMPACT_ANSWER))
    index = MessageIndex(conv, tokenizer=CharEstimator())
    assert index.message_tokens[1] == 438 - 64  # not the estimate of 24k encrypted chars
    assert index.groups[index.compaction_group or 0].tokens == 374
    assert dump(conv) == COMPACT_ANSWER


def test_a_response_with_other_output_leaves_the_compaction_estimated() -> None:
    doc = copy.deepcopy(COMPACT_ANSWER)
    doc["object"] = "response"
    reply = {"type": "message", "role": "assistant", "content": [{"type": "output_text",
             "text": "Here is the page.", "annotations": []}]}  # fmt: skip
    doc["output"].append(reply)
    conv = loads(doc)
    assert all("tokens" not in m.metadata for m in conv)  # output tokens are shared: unknown


def test_an_anthropic_reply_that_compacted_is_counted_from_its_iterations() -> None:
    doc = {"messages": [{"role": "user", "content": "go on"}, copy.deepcopy(COMPACTED_REPLY)]}
    conv = loads(doc)
    index = MessageIndex(conv, tokenizer=CharEstimator())
    assert index.message_tokens[1] == 3500 + 1000
    assert dump(conv) == doc
    sent = dump(conv, format="anthropic", provider=True)["messages"][1]
    assert "usage" not in sent and sent["content"] == COMPACTED_REPLY["content"]


def test_usage_without_a_compaction_iteration_counts_nothing() -> None:
    reply = {**copy.deepcopy(COMPACTED_REPLY), "usage": {"input_tokens": 9, "output_tokens": 3}}
    conv = loads({"messages": [{"role": "user", "content": "go on"}, reply]})
    assert "tokens" not in conv[1].metadata


def _thinking_of(m: Message) -> list[Any]:
    return [p.data for p in m.content if p.data.get("type") in ("thinking", "redacted_thinking")]


@pytest.mark.parametrize("name", [*sorted(STRATEGIES), "budgeted"])
def test_no_strategy_edits_a_compaction_or_splits_thinking_from_its_call(name: str) -> None:
    conv = list(loads(document(turns=6, compact_after=3)))
    index = MessageIndex(conv, tokenizer=CharEstimator())
    total = index.total_tokens
    strategy = Budgeted(total // 8) if name == "budgeted" else STRATEGIES[name](total)
    view = View(index)
    run_strategy_sync(strategy, view, CompactionContext(view))
    out = check_view(view, validity(conv))
    compaction = index.messages[index.groups[index.compaction_group or 0].start]
    assert sum(1 for m in out if m is compaction) == 1
    originals = {m.id: m for m in index.messages}
    for m in out:
        if m.tool_calls:  # a call is sent with the thinking it was made with, unchanged
            source = originals[m.covers[0] if m.synthetic else m.id]
            assert _thinking_of(m) == _thinking_of(source)
    body = dump(out, format="anthropic", provider=True)
    assert find_problems(loads(body), format="anthropic") == []


def test_responses_compaction_item_ends_what_is_sent() -> None:
    items = [
        {"role": "user", "content": "Refactor the parser."},
        {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "x" * 4000},
        {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAAABpM0Yj-...="},
        {"role": "user", "content": "Now add tests."},
    ]
    view = View(MessageIndex(loads(items), tokenizer=CharEstimator()))
    sent = dump(view.render(), format="responses", provider=True)["input"]
    assert sent == [{"role": "user", "content": OMITTED_NOTE}, *items[3:]]


def test_one_providers_reasoning_and_encrypted_summary_never_reach_another() -> None:
    items = [
        {"role": "user", "content": "hi"},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "think"}]},
        {"role": "assistant", "content": "hello"},
    ]
    body = dump(loads(items), format="anthropic", provider=True)
    hello = [{"type": "text", "text": "hello"}]
    assert body == {
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": hello}]
    }
    assert "think" not in json.dumps(dump(loads(items), format="gemini", provider=True))
    assert "think" not in json.dumps(dump(loads(items), format="openai", provider=True))
    encrypted = [*items, {"type": "compaction", "encrypted_content": "gAAA"}]
    for fmt in ("anthropic", "gemini", "openai"):
        with pytest.raises(FormatError, match=r"message 2: .*compaction"):
            dump(loads(encrypted), format=fmt, provider=True)
    summary = {
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [COMPACTION]},
        ]
    }
    sent = dump(loads(summary), format="responses", provider=True)["input"]
    assert sent[-1]["content"][0]["text"] == COMPACTION["content"]
