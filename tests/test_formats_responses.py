"""OpenAI Responses API items: round trip, detection, pairing, validation, provider output.

The documents follow the shapes of OpenAI's own documented examples (function calling
with parallel calls, reasoning items with ``encrypted_content`` carried between turns,
built-in tools, custom tools, MCP approvals, compaction).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

import kompakt
from kompakt.errors import FormatError, MessageError
from kompakt.formats import detect_format, dump, loads, to_dicts
from kompakt.index import MessageIndex
from kompakt.messages import Message, Part, ToolCall
from kompakt.validation import find_problems

WEATHER_ARGS = '{"location":"Paris, France"}'

PARALLEL = [
    {"role": "developer", "content": "You are a weather assistant."},
    {"role": "user", "content": "What's the weather like in Paris and Bogotá today?"},
    {
        "type": "reasoning",
        "id": "rs_6806bfca0b2481918a5748308061a2600d3ce51bdffd5476",
        "summary": [],
        "encrypted_content": "gAAAAABoBr_K...Q9nw==",
    },
    {
        "type": "function_call",
        "id": "fc_12345xyz",
        "call_id": "call_12345xyz",
        "name": "get_weather",
        "arguments": WEATHER_ARGS,
        "status": "completed",
    },
    {
        "type": "function_call",
        "id": "fc_67890abc",
        "call_id": "call_67890abc",
        "name": "get_weather",
        "arguments": '{"location":"Bogotá, Colombia"}',
        "status": "completed",
    },
    {"type": "function_call_output", "call_id": "call_12345xyz", "output": "18°C, clear"},
    {"type": "function_call_output", "call_id": "call_67890abc", "output": "14°C, rain"},
    {
        "type": "reasoning",
        "id": "rs_2",
        "summary": [{"type": "summary_text", "text": "Both cities answered."}],
        "encrypted_content": "gAAAAABoBr_L...",
    },
    {
        "id": "msg_67ccd3acc8d48190a77525dc6de64b4104becb25c6ec0ba6",
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [
            {
                "type": "output_text",
                "text": "Paris: 18°C and clear. Bogotá: 14°C with rain.",
                "annotations": [],
            }
        ],
    },
]

BUILT_IN: list[dict[str, Any]] = [
    {
        "type": "message",
        "role": "user",
        "content": [
            {"type": "input_text", "text": "What's in this image, and what's new on it?"},
            {
                "type": "input_image",
                "image_url": "https://upload.wikimedia.org/x/2560px-Gfp.jpg",
                "detail": "auto",
            },
        ],
    },
    {
        "type": "web_search_call",
        "id": "ws_67c9fa0502748190b7dd390736892e100be649c1a5ff9609",
        "status": "completed",
        "action": {"type": "search", "query": "green fluorescent protein news"},
    },
    {
        "type": "file_search_call",
        "id": "fs_1",
        "status": "completed",
        "queries": ["gfp"],
        "results": None,
    },
    {
        "type": "code_interpreter_call",
        "id": "ci_1",
        "status": "completed",
        "code": "print(2 + 2)",
        "container_id": "cntr_1",
        "outputs": [{"type": "logs", "logs": "4"}],
    },
    {
        "type": "image_generation_call",
        "id": "ig_1",
        "status": "completed",
        "result": "iVBORw0KGgo...",
    },
    {
        "type": "mcp_list_tools",
        "id": "mcpl_1",
        "server_label": "deepwiki",
        "tools": [{"name": "ask_question", "input_schema": {}}],
    },
    {
        "type": "mcp_call",
        "id": "mcp_1",
        "server_label": "deepwiki",
        "name": "ask_question",
        "arguments": '{"repoName":"modelcontextprotocol/modelcontextprotocol"}',
        "output": "Transports: stdio, streamable HTTP.",
        "error": None,
    },
    {
        "type": "mcp_approval_request",
        "id": "mcpr_682d498e3bd4819196a0ce1664f8e77b04ad1e533afccbfa",
        "server_label": "deepwiki",
        "name": "ask_question",
        "arguments": '{"question":"What transports are in the 2025-03-26 spec?"}',
    },
    {
        "type": "mcp_approval_response",
        "approve": True,
        "approval_request_id": "mcpr_682d498e3bd4819196a0ce1664f8e77b04ad1e533afccbfa",
    },
    {
        "type": "computer_call",
        "id": "cu_67cc",
        "call_id": "call_zw3",
        "action": {"type": "click", "button": "left", "x": 156, "y": 50},
        "pending_safety_checks": [],
        "status": "completed",
    },
    {
        "type": "computer_call_output",
        "call_id": "call_zw3",
        "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,iVBO"},
        "acknowledged_safety_checks": [],
    },
    {
        "type": "local_shell_call",
        "id": "lsh_1",
        "call_id": "call_sh1",
        "action": {"type": "exec", "command": ["ls", "-la"], "env": {}},
        "status": "completed",
    },
    {"type": "local_shell_call_output", "id": "call_sh1", "output": "total 0"},
    {
        "type": "custom_tool_call",
        "id": "ctc_1",
        "call_id": "call_code",
        "name": "code_exec",
        "input": "print('hello world')",
        "status": "completed",
    },
    {"type": "custom_tool_call_output", "call_id": "call_code", "output": "hello world"},
    {
        "type": "message",
        "role": "assistant",
        "id": "msg_2",
        "status": "completed",
        "content": [
            {"type": "refusal", "refusal": "I can't identify people in images."},
            {"type": "output_text", "text": "It shows a glowing protein.", "annotations": []},
        ],
    },
]

COMPACTED = [
    {"role": "user", "content": "Refactor the parser."},
    {"type": "function_call", "call_id": "c1", "name": "read", "arguments": '{"p":"a.py"}'},
    {"type": "function_call_output", "call_id": "c1", "output": "x" * 4000},
    {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAAABpM0Yj-...="},
    {"role": "user", "content": "Now add tests."},
    {"type": "function_call", "call_id": "c2", "name": "read", "arguments": '{"p":"t.py"}'},
    {"type": "function_call_output", "call_id": "c2", "output": "y" * 4000},
    {"role": "assistant", "content": "Tests added."},
]


@pytest.mark.parametrize(
    "items", [PARALLEL, BUILT_IN, COMPACTED], ids=["parallel", "builtin", "compaction"]
)
def test_items_round_trip_and_are_detected(items: list[Any]) -> None:
    source = copy.deepcopy(items)
    conv = loads(items)
    assert conv.format == "responses" and detect_format(items) == "responses"
    assert dump(conv) == items == source
    assert dump(loads(json.dumps(items))) == items  # through JSON text too
    assert find_problems(conv, format="responses") == []


def test_parallel_calls_and_their_reasoning_make_one_group() -> None:
    conv = loads(PARALLEL)
    assert [m.role for m in conv] == ["developer", "user", "assistant", "tool", "tool", "assistant"]
    call = conv[2]
    assert [c.id for c in call.tool_calls] == ["call_12345xyz", "call_67890abc"]
    assert call.content[0].data["encrypted_content"] == "gAAAAABoBr_K...Q9nw=="
    kinds = [g.kind for g in MessageIndex(conv).groups]
    assert kinds == ["system", "user", "tool_call", "assistant_text"]
    final = conv[5]  # the second reasoning item stays with the message it precedes
    assert final.content[0].data["id"] == "rs_2" and final.text.endswith("Bogotá: 14°C with rain.")


def test_built_in_tools_pair_by_call_id_and_stay_whole() -> None:
    conv = loads(BUILT_IN)
    calls = {c.id: c for m in conv for c in m.tool_calls}
    assert set(calls) == {
        "mcpr_682d498e3bd4819196a0ce1664f8e77b04ad1e533afccbfa",
        "call_zw3",
        "call_sh1",
        "call_code",
    }
    results = [m for m in conv if m.role == "tool"]
    assert [r.tool_call_id for r in results] == list(calls)
    assert results[1].content[0].kind == "image"  # the screenshot, kept whole
    opaque = [p.data["type"] for m in conv for p in m.content if p.kind == "other"]
    assert opaque[:6] == [
        "web_search_call", "file_search_call", "code_interpreter_call",
        "image_generation_call", "mcp_list_tools", "mcp_call",
    ]  # fmt: skip
    assert find_problems(conv, format="openai") == []


def test_an_output_without_its_call_is_invalid() -> None:
    items = [{"role": "user", "content": "hi"}, PARALLEL[5]]
    assert [p.rule for p in find_problems(loads(items), format="responses")] == ["orphan_result"]
    missing = PARALLEL[:6]  # the second parallel call has no output, and more follows
    missing = [*missing, {"role": "user", "content": "and?"}]
    assert [p.rule for p in find_problems(loads(missing), format="responses")] == ["missing_result"]


def test_a_reasoning_item_without_what_it_led_to_is_invalid() -> None:
    items = [PARALLEL[1], PARALLEL[2], {"role": "user", "content": "go on"}]
    problems = find_problems(loads(items), format="responses")
    assert [(p.index, p.rule) for p in problems] == [(1, "reasoning_orphaned")]
    assert find_problems(loads(items), format="openai") == []  # a rule of this API alone


def test_an_output_of_another_kind_than_its_call_is_invalid() -> None:
    items = copy.deepcopy(BUILT_IN[-3:-1])
    items[1]["type"] = "function_call_output"
    problems = find_problems(loads(items), format="responses")
    assert [(p.index, p.rule) for p in problems] == [(1, "output_kind_mismatch")]
    assert find_problems(loads(BUILT_IN), format="responses") == []


def test_provider_output_drops_hints_and_keeps_what_the_api_takes() -> None:
    conv = loads(PARALLEL)
    body = dump(conv, provider=True)
    assert list(body) == ["input"]
    assert body["input"] == PARALLEL  # every field here is one the API accepts
    assert to_dicts(conv, format="responses", provider=True) == PARALLEL
    assert "_kompakt" not in json.dumps(dump(loads(BUILT_IN), provider=True))


def test_a_request_document_keeps_instructions_and_its_envelope() -> None:
    doc = {"model": "gpt-5", "instructions": "Be brief.", "input": PARALLEL[1:], "store": False}
    conv = loads(doc)
    assert conv[0].role == "system" and conv[0].text == "Be brief."
    assert dump(conv) == doc
    assert dump(conv, provider=True) == {"instructions": "Be brief.", "input": PARALLEL[1:]}
    text = {"model": "gpt-5", "input": "Tell me a joke."}
    assert dump(loads(text)) == text and loads(text)[0].text == "Tell me a joke."


def test_a_response_object_loads_its_output() -> None:
    response = {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "output": PARALLEL[2:5],
    }
    conv = loads(response)
    assert conv.format == "responses" and conv[0].tool_calls[1].id == "call_67890abc"
    assert dump(conv) == response


def test_other_formats_render_as_responses_items() -> None:
    chat = [
        Message.system("be brief"),
        Message.user("list files"),
        Message.assistant("Looking.", tool_calls=[ToolCall(id="c1", name="ls", arguments="{}")]),
        Message.tool("a.py", tool_call_id="c1"),
        Message.assistant("One file."),
    ]
    items = to_dicts(chat, format="responses", provider=True)
    assert items == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "list files"},
        {"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "Looking.", "annotations": []}]},
        {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "a.py"},
        {"type": "message", "role": "assistant", "content": [
            {"type": "output_text", "text": "One file.", "annotations": []}]},
    ]  # fmt: skip
    assert dump(loads(items)) == items
    anthropic_doc = {"messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "hm", "signature": "sig"},
            {"type": "tool_use", "id": "t1", "name": "ls", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a"}]},
    ]}  # fmt: skip
    items = to_dicts(loads(anthropic_doc), format="responses", provider=True)
    assert [i.get("type") for i in items] == [None, "function_call", "function_call_output"]
    with pytest.raises(FormatError, match="'audio' part cannot be sent to the Responses API"):
        to_dicts(
            [Message(role="user", content=(Part(kind="audio"),))], format="responses", provider=True
        )


def test_a_custom_tool_output_answers_with_its_own_kind_after_a_clamp() -> None:
    conv = loads(BUILT_IN[-3:-1])
    clamped = [conv[0], conv[1].evolve(content="hello", extra={})]
    out = to_dicts(clamped, format="responses", provider=True)
    assert out[1] == {"type": "custom_tool_call_output", "call_id": "call_code", "output": "hello"}


def test_bad_items_name_the_index_and_field() -> None:
    with pytest.raises(MessageError, match=r"message 1: field 'call_id'"):
        loads([{"role": "user", "content": "hi"}, {"type": "function_call_output", "output": "x"}])
    with pytest.raises(MessageError, match=r"message 0: field 'arguments'"):
        loads(
            [{"type": "function_call", "call_id": "c", "name": "f", "arguments": {}}],
            format="responses",
        )
    with pytest.raises(MessageError, match=r"message 0: field 'type'"):
        loads([{"content": "no role, no type"}], format="responses")


def test_both_new_formats_are_registered() -> None:
    assert {"responses", "gemini"} <= set(kompakt.formats.FORMATS)
