"""Anthropic context editing (``clear_tool_uses_20250919``): a request that asks for it,
a history whose old tool results (and, with ``clear_tool_inputs``, tool inputs) were
cleared to a placeholder, and a reply reporting the edits it applied all load, validate,
keep every block and round-trip; kompakt's own equivalent, collapsing old tool results,
goes out beside the request's ``context_management``.

The documents follow Anthropic's documented context-editing examples (the advanced
configuration, a memory-tool session, the ``applied_edits`` of a reply). The text the API
puts in place of a cleared result is not documented; any text there is kept as it is.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

import kompakt
from engine_helpers import check_view, validity
from kompakt.index import MessageIndex
from kompakt.strategies import CollapseToolResults
from kompakt.tokens import CharEstimator
from kompakt.validation import find_problems
from kompakt.view import View
from test_invariants import STRATEGIES, run

CLEARED = "[Tool result cleared to save context]"
EDITS = {
    "edits": [
        {
            "type": "clear_tool_uses_20250919",
            "trigger": {"type": "input_tokens", "value": 30000},
            "keep": {"type": "tool_uses", "value": 3},
            "clear_at_least": {"type": "input_tokens", "value": 5000},
            "exclude_tools": ["web_search"],
            "clear_tool_inputs": True,
        },
        {"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 2}},
    ]
}


def step(n: int, *, cleared: bool) -> list[dict[str, Any]]:
    """One memory-tool step; a cleared one has its input emptied and its result replaced."""
    tool_input = {} if cleared else {"command": "view", "path": f"/memories/notes_{n}.md"}
    result: Any = CLEARED if cleared else f"Here's the content of /memories/notes_{n}.md:\n"
    if not cleared:
        result += "- the parser fails on nested quotes\n" * 40
    return [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": f"Checking my notes ({n})."},
                {"type": "tool_use", "id": f"toolu_0{n}", "name": "memory", "input": tool_input},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": f"toolu_0{n}", "content": result}],
        },
    ]


def request(cleared: int = 4, kept: int = 3) -> dict[str, Any]:
    """A request with context editing on, its first `cleared` tool uses already cleared."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Fix the CSV parser; keep notes in your memory."}
    ]
    for n in range(cleared + kept):
        messages.extend(step(n, cleared=n < cleared))
    # a cleared result as a list of blocks, and a server tool never cleared (excluded)
    if cleared:
        messages[2]["content"][0]["content"] = [{"type": "text", "text": CLEARED}]
    messages.append(
        {
            "role": "assistant",
            "content": [
                {
                    "type": "server_tool_use",
                    "id": "srvtoolu_01",
                    "name": "web_search",
                    "input": {"query": "csv nested quotes rfc 4180"},
                },
                {
                    "type": "web_search_tool_result",
                    "tool_use_id": "srvtoolu_01",
                    "content": [
                        {
                            "type": "web_search_result",
                            "url": "https://www.rfc-editor.org/rfc/rfc4180",
                            "title": "RFC 4180",
                            "encrypted_content": "EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5",
                            "page_age": None,
                        }
                    ],
                },
                {"type": "text", "text": "Quotes inside quoted fields are doubled."},
            ],
        }
    )
    messages.append({"role": "user", "content": "Go on with the fix."})
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 4096,
        "system": "You are a careful coding agent.",
        "tools": [
            {"type": "memory_20250818", "name": "memory"},
            {"type": "web_search_20250305", "name": "web_search", "max_uses": 5},
        ],
        "context_management": EDITS,
        "messages": messages,
    }


REPLY = {
    "id": "msg_013Zva2CMHLNnXjNJJKqJ2EF",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [{"type": "text", "text": "The fix is in parse_field()."}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 18432, "output_tokens": 412},
    "context_management": {
        "applied_edits": [
            {
                "type": "clear_tool_uses_20250919",
                "cleared_tool_uses": 8,
                "cleared_input_tokens": 50000,
            }
        ]
    },
}


def test_an_edited_history_loads_validates_and_round_trips() -> None:
    doc = request()
    conv = kompakt.loads(copy.deepcopy(doc))
    assert conv.format == "anthropic"
    assert conv.envelope is not None and conv.envelope["context_management"] == EDITS
    assert find_problems(conv, format="anthropic") == [] and find_problems(conv) == []
    assert kompakt.dump(conv) == doc
    # every cleared step is still a call with its result, in one group
    index = MessageIndex(conv, tokenizer=CharEstimator())
    kinds = [g.kind for g in index.groups]
    assert kinds.count("tool_call") == 4 + 3  # the server tool's call and result: one message
    cleared = [m for m in conv if m.role == "tool" and m.text == CLEARED]
    assert len(cleared) == 4
    assert [c.arguments for m in conv for c in m.tool_calls][:4] == ["{}"] * 4


def test_the_provider_request_keeps_every_block_of_the_edited_history() -> None:
    doc = request()
    sent = kompakt.dump(kompakt.loads(copy.deepcopy(doc)), format="anthropic", provider=True)
    assert sent["messages"] == doc["messages"]  # placeholders, empty inputs, server tools
    assert set(sent) == {"system", "messages"}  # the caller's other request keys are its own


def test_a_reply_that_reports_applied_edits_loads_and_is_sent_back_plain() -> None:
    doc = request()
    doc["messages"].append(copy.deepcopy(REPLY))
    doc["messages"].append({"role": "user", "content": "Thanks. One more case:"})
    conv = kompakt.loads(copy.deepcopy(doc))
    assert find_problems(conv, format="anthropic") == []
    assert kompakt.dump(conv) == doc
    sent = kompakt.dump(conv, format="anthropic", provider=True)["messages"]
    assert {"role": "assistant", "content": REPLY["content"]} in sent  # no id, usage, edits


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_every_strategy_keeps_an_edited_history_valid(name: str) -> None:
    conv = kompakt.loads(request())
    view, out = run(STRATEGIES[name](MessageIndex(conv).total_tokens), list(conv))
    check_view(view, validity(list(conv)))
    assert find_problems(out, format="anthropic") == []


def test_collapsing_old_results_goes_out_with_the_requests_context_management() -> None:
    doc = request(cleared=0, kept=7)
    out = kompakt.apply_compaction(
        doc,
        strategy=CollapseToolResults(
            keep_last_groups=3, exclude_tools=["web_search"], min_preserved=0
        ),
    )
    assert out["context_management"] == EDITS and out["tools"] == doc["tools"]
    assert find_problems(kompakt.loads(out), format="anthropic") == []
    results = [
        b["tool_use_id"]
        for m in out["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    assert results == ["toolu_04", "toolu_05", "toolu_06"]  # the newest three, as `keep` says
    assert json.dumps(out).count("web_search_tool_result") == 1  # an excluded server tool
    assert len(json.dumps(out)) < len(json.dumps(doc))


def test_a_view_of_an_edited_history_counts_what_it_sends() -> None:
    conv = kompakt.loads(request())
    index = MessageIndex(conv, tokenizer=CharEstimator())
    view = View(index)
    assert view.total_tokens == sum(index.tokenizer.count_message(m) for m in view.render())
