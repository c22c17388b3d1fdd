"""Gemini ``contents`` / ``parts``: round trip, detection, pairing, validation, provider output.

The documents follow the shapes of Google's documented ``generateContent`` examples
(parallel function calling, thought signatures, inline images, system instructions).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from kompakt.errors import FormatError, MessageError
from kompakt.formats import detect_format, dump, loads, to_dicts
from kompakt.index import MessageIndex
from kompakt.messages import Message, ToolCall
from kompakt.validation import find_problems

PARALLEL: dict[str, Any] = {
    "systemInstruction": {"parts": [{"text": "You are a party assistant."}]},
    "contents": [
        {"role": "user", "parts": [{"text": "Turn this place into a party!"}]},
        {
            "role": "model",
            "parts": [
                {
                    "functionCall": {"name": "power_disco_ball", "args": {"power": True}},
                    "thoughtSignature": "CiwBVKhc7nRyTi3HmggPD9iQiRc261f5jwuMdw3H/itDH0emsb9Z",
                },
                {
                    "functionCall": {
                        "name": "start_music",
                        "args": {"energetic": True, "loud": True},
                    }
                },
                {"functionCall": {"name": "dim_lights", "args": {"brightness": 0.5}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "power_disco_ball", "response": {"result": "ok"}}},
                {"functionResponse": {"name": "start_music", "response": {"result": "ok"}}},
                {"functionResponse": {"name": "dim_lights", "response": {"result": "ok"}}},
            ],
        },
        {"role": "model", "parts": [{"text": "Disco ball on, music playing, lights dimmed!"}]},
    ],
    "tools": [{"functionDeclarations": [{"name": "power_disco_ball"}]}],
    "generationConfig": {"temperature": 0.2},
}

WITH_IDS: list[Any] = [
    {
        "role": "user",
        "parts": [
            {"text": "What is in this picture, and what's the weather there?"},
            {"inlineData": {"mimeType": "image/jpeg", "data": "/9j/4AAQSkZJRg..."}},
        ],
    },
    {
        "role": "model",
        "parts": [
            {"text": "The user wants the weather.", "thought": True},
            {"text": "Looking it up."},
            {"functionCall": {"id": "fc-1", "name": "get_weather", "args": {"city": "Paris"}}},
            {"functionCall": {"id": "fc-2", "name": "get_weather", "args": {"city": "Lyon"}}},
        ],
    },
    {
        "role": "user",
        "parts": [
            {"functionResponse": {"id": "fc-2", "name": "get_weather", "response": {"t": 16}}},
            {"functionResponse": {"id": "fc-1", "name": "get_weather", "response": {"t": 18}}},
            {"text": "Also, which is warmer?"},
        ],
    },
    {"role": "model", "parts": [{"text": "Paris is warmer."}]},
]


@pytest.mark.parametrize("doc", [PARALLEL, WITH_IDS], ids=["parallel", "ids"])
def test_contents_round_trip_and_are_detected(doc: Any) -> None:
    source = copy.deepcopy(doc)
    conv = loads(doc)
    assert conv.format == "gemini" and detect_format(doc) == "gemini"
    assert dump(conv) == doc == source
    assert dump(loads(json.dumps(doc))) == doc
    assert find_problems(conv, format="gemini") == []


def test_calls_without_ids_pair_by_name_in_order() -> None:
    conv = loads(PARALLEL)
    assert [m.role for m in conv] == [
        "system",
        "user",
        "assistant",
        "tool",
        "tool",
        "tool",
        "assistant",
    ]
    calls = conv[2].tool_calls
    assert [(m.tool_call_id, m.name) for m in conv[3:6]] == [(c.id, c.name) for c in calls]
    assert calls[0].extra["thoughtSignature"].startswith("CiwB")
    groups = [g.kind for g in MessageIndex(conv).groups]
    assert groups == ["system", "user", "tool_call", "assistant_text"]


def test_calls_with_ids_pair_by_id_whatever_the_order() -> None:
    conv = loads(WITH_IDS)
    results = [m for m in conv if m.role == "tool"]
    assert [r.tool_call_id for r in results] == ["fc-2", "fc-1"]
    assert json.loads(results[1].text) == {"t": 18}
    assert conv[0].content[1].kind == "image"
    assert conv[-2].role == "user" and conv[-2].text == "Also, which is warmer?"


def test_provider_output_is_the_request_body() -> None:
    body = dump(loads(PARALLEL), provider=True)
    assert list(body) == ["systemInstruction", "contents"]
    assert body["contents"] == PARALLEL["contents"]  # the thought signature goes back too
    assert to_dicts(loads(WITH_IDS), format="gemini", provider=True) == WITH_IDS


def test_a_compacted_response_is_sent_as_an_object() -> None:
    conv = loads(PARALLEL)
    clamped = [*conv[:3], conv[3].evolve(content="[output clamped]", extra={}), *conv[4:]]
    body = dump(clamped, format="gemini", provider=True)
    part = body["contents"][2]["parts"][0]["functionResponse"]
    assert part == {"name": "power_disco_ball", "response": {"output": "[output clamped]"}}


def test_other_formats_render_as_gemini_contents() -> None:
    chat = [
        Message.system("be brief"),
        Message.user("list files"),
        Message.assistant("Looking.", tool_calls=[ToolCall(id="c1", name="ls", arguments="{}")]),
        Message.tool('{"files": ["a.py"]}', tool_call_id="c1"),
        Message.tool("b.py", tool_call_id="c2"),
    ]
    chat[2] = chat[2].evolve(
        tool_calls=[ToolCall(id="c1", name="ls"), ToolCall(id="c2", name="cat", arguments="{}")]
    )
    doc = dump(chat, format="gemini", provider=True)
    assert doc == {
        "systemInstruction": {"parts": [{"text": "be brief"}]},
        "contents": [
            {"role": "user", "parts": [{"text": "list files"}]},
            {"role": "model", "parts": [
                {"text": "Looking."},
                {"functionCall": {"id": "c1", "name": "ls", "args": {}}},
                {"functionCall": {"id": "c2", "name": "cat", "args": {}}}]},
            {"role": "user", "parts": [
                {"functionResponse": {"id": "c1", "name": "ls", "response": {"files": ["a.py"]}}},
                {"functionResponse": {"id": "c2", "name": "cat", "response": {"output": "b.py"}}}]},
        ],
    }  # fmt: skip
    with pytest.raises(FormatError, match="Gemini contents cannot hold system messages"):
        to_dicts(chat, format="gemini")


def test_gemini_rules() -> None:
    opening = [PARALLEL["contents"][1], PARALLEL["contents"][2]]
    rules = [p.rule for p in find_problems(loads(opening), format="gemini")]
    assert rules == ["call_not_after_user"]
    assert find_problems(loads(opening), format="openai") == []
    wrong = copy.deepcopy(WITH_IDS)
    wrong[2]["parts"][0]["functionResponse"]["name"] = "get_time"
    problems = find_problems(loads(wrong), format="gemini")
    assert [(p.index, p.rule) for p in problems] == [(2, "result_name_mismatch")]
    orphan = [{"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}]}]
    assert [p.rule for p in find_problems(loads(orphan), format="gemini")] == ["orphan_result"]


def test_bad_contents_name_the_index_and_field() -> None:
    with pytest.raises(MessageError, match=r"message 1: field 'role'"):
        loads([{"role": "user", "parts": []}, {"role": "bot", "parts": []}])
    with pytest.raises(MessageError, match=r"message 0: field 'parts\[0\].functionCall'"):
        loads([{"role": "model", "parts": [{"functionCall": {"args": {}}}]}])
    with pytest.raises(FormatError, match="'contents' must be a list"):
        loads({"contents": {}}, format="gemini")
