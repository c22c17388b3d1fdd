"""Formats: lossless round trips (every real transcript included), conversions, errors."""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from data_files import TRANSCRIPTS
from kompakt.compactor import apply_compaction
from kompakt.errors import ConfigError, FormatError, InvalidConversation, MessageError
from kompakt.formats import (
    FORMATS,
    Conversation,
    detect_format,
    dump,
    load,
    loads,
    message_from_dict,
    message_to_dict,
    to_dicts,
)
from kompakt.messages import Message, ToolCall
from kompakt.strategies import Budgeted
from kompakt.tokens import CharEstimator
from kompakt.validation import find_problems, validate
from strategies_conv import conversations

# Demonstration replays whose recorded call ids repeat across turns (SWE-agent replayed the
# same demo calls): they load and round-trip, but a provider would reject the id reuse.
REUSED_IDS = {
    "replay__marshmallow-code__marshmallow-1867__function_calling__install-1__"
    "marshmallow-code__marshmallow-1867.traj": 8,
    "replay__marshmallow-code__marshmallow-1867__function_calling_replace__install-1__"
    "marshmallow-code__marshmallow-1867.traj": 8,
    "replay__marshmallow-code__marshmallow-1867__function_calling_replace_from_source__"
    "marshmallow-code__marshmallow-1867.traj": 14,
}


def ids(paths: list[Path]) -> list[str]:
    return [p.name[:48] for p in paths]


def test_transcripts_are_there() -> None:
    assert len(TRANSCRIPTS) == 29, "expected the 29 transcripts of tests/data"


# -- every real transcript ---------------------------------------------------------------


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=ids(TRANSCRIPTS))
def test_transcript_round_trips_and_validates(path: Path) -> None:
    original = json.loads(path.read_text())
    conv = load(path)
    assert conv.format == ("mini-swe-agent" if path.name.endswith(".traj.json") else "swe-agent")
    assert dump(conv) == original
    assert loads(path.read_text()) == conv  # text, document and path load the same
    assert loads(copy.deepcopy(original)) == conv
    if path.name in REUSED_IDS:
        with pytest.raises(InvalidConversation) as info:
            validate(conv)
        first = info.value.problems[0]
        assert (first.index, first.rule) == (REUSED_IDS[path.name], "duplicate_call_id")
        assert str(info.value).startswith(f"invalid for openai: message {first.index}: ")
        assert {p.rule for p in info.value.problems} == {"duplicate_call_id"}
    else:
        validate(conv, format="openai")
        validate(conv, format="anthropic")


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=ids(TRANSCRIPTS))
def test_transcript_through_anthropic_keeps_every_pair(path: Path) -> None:
    conv = load(path)
    for provider in (False, True):
        there = dump(conv, format="anthropic", provider=provider)
        back = loads(dump(loads(there, format="anthropic"), format="openai"), format="openai")
        assert pairs(back) == pairs(conv)
        assert results(back) == results(conv)
    if path.name not in REUSED_IDS:
        validate(loads(dump(conv, format="anthropic", provider=True)), format="anthropic")


@pytest.mark.parametrize(
    "path", TRANSCRIPTS[:3] + TRANSCRIPTS[-3:], ids=ids(TRANSCRIPTS[:3] + TRANSCRIPTS[-3:])
)
def test_transcript_through_jsonl(path: Path) -> None:
    conv = load(path)
    text = dump(conv, format="jsonl")
    assert isinstance(text, str) and text.count("\n") == len(conv)
    again = loads(text)
    assert again.format == "jsonl"
    assert dump(again, format="openai") == dump(conv, format="openai")


def test_provider_output_has_only_accepted_fields() -> None:
    conv = load(TRANSCRIPTS[0])
    allowed = {"role", "content", "tool_calls", "tool_call_id", "name"}
    for d in dump(conv, provider=True):
        assert set(d) <= allowed
        for c in d.get("tool_calls", []):
            assert set(c) == {"id", "type", "function"}
            assert set(c["function"]) == {"name", "arguments"}
    assert "extra" in dump(conv, format="openai")[2]  # the lossless dump keeps them


def test_mini_swe_agent_exit_record_survives_compaction() -> None:
    conv = load(TRANSCRIPTS[0])
    shorter = conv.with_messages([conv[0], conv[1]])
    doc = dump(shorter)
    assert doc["info"] == conv.envelope["info"]  # type: ignore[index]
    assert [m["role"] for m in doc["messages"]] == ["system", "user", "exit"]


def pairs(msgs: list[Message]) -> list[tuple[str, str, Any]]:
    return [(c.id, c.name, c.parsed_arguments()) for m in msgs for c in m.tool_calls]


def results(msgs: list[Message]) -> list[tuple[str | None, str]]:
    return [(m.tool_call_id, m.text) for m in msgs if m.role == "tool"]


# -- OpenAI ------------------------------------------------------------------------------

OPENAI_DOC: list[dict[str, Any]] = [
    {"role": "system", "content": "be brief", "name": "rules"},
    {"role": "developer", "content": [{"type": "text", "text": "use tools"}]},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "what is here?"},
            {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "low"}},
            {"type": "input_audio", "input_audio": {"data": "UklGR", "format": "wav"}},
            {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBE"}},
        ],
    },
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"index": 0, "id": "c1", "type": "function",
             "function": {"name": "ls", "arguments": "{\"path\":\".\"}"}},
            {"index": 1, "id": "c2", "type": "function",
             "function": {"name": "cat", "arguments": "not json"}},
        ],
        "function_call": None,
        "provider_specific_fields": {"x": 1},
    },
    {"role": "tool", "tool_call_id": "c2", "content": "", "extra": {"raw": 1}},
    {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "a.py"}]},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c3", "function": {"name": "x", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c3", "content": None},
    {"role": "assistant", "function_call": {"name": "old", "arguments": "{\"a\": 1}"},
     "content": None},
    {"role": "function", "name": "old", "content": "legacy result"},
    {"role": "assistant", "content": "done", "tool_calls": []},
    {"role": "user", "content": "thanks", "tool_calls": None},
    {"role": "assistant", "refusal": None, "content": [{"type": "refusal", "refusal": "no"}]},
    {"role": "user"},
]  # fmt: skip


def test_openai_round_trip_is_exact() -> None:
    doc = copy.deepcopy(OPENAI_DOC)
    conv = loads(doc)
    assert conv.format == "openai"
    assert dump(conv) == OPENAI_DOC
    assert doc == OPENAI_DOC  # the input was not touched
    assert dump(loads(dump(conv, format="jsonl")), format="openai") == OPENAI_DOC


def test_openai_model_view() -> None:
    conv = loads(copy.deepcopy(OPENAI_DOC))
    user = conv[2]
    assert [p.kind for p in user.content] == ["text", "image", "audio", "file"]
    assert user.content[1].data == OPENAI_DOC[2]["content"][1]
    a = conv[3]
    assert [(c.id, c.name, c.arguments) for c in a.tool_calls] == [
        ("c1", "ls", '{"path":"."}'),
        ("c2", "cat", "not json"),
    ]
    assert a.tool_calls[0].extra["index"] == 0
    assert a.extra["provider_specific_fields"] == {"x": 1} and a.extra["function_call"] is None
    legacy_call, legacy_result = conv[8], conv[9]
    assert legacy_call.tool_calls[0].name == "old"
    assert legacy_result.role == "tool" and legacy_result.name == "old"
    assert legacy_result.tool_call_id == legacy_call.tool_calls[0].id
    assert find_problems(conv) == []


def test_openai_provider_mode_modernises_legacy_calls() -> None:
    out = dump(loads(copy.deepcopy(OPENAI_DOC)), provider=True)
    assert "function_call" not in out[8] and out[8]["tool_calls"][0]["function"]["name"] == "old"
    assert out[9]["role"] == "tool" and out[9]["tool_call_id"] == out[8]["tool_calls"][0]["id"]
    assert "provider_specific_fields" not in out[3] and "extra" not in out[4]
    assert out[9] == {"role": "tool", "content": "legacy result", "tool_call_id": "legacy_call_8"}
    assert out[0]["name"] == "rules"


def test_openai_request_document_keeps_its_envelope() -> None:
    doc = {"model": "gpt-4o", "temperature": 0, "messages": [{"role": "user", "content": "hi"}]}
    conv = loads(doc)
    assert conv.envelope == {"model": "gpt-4o", "temperature": 0}
    assert dump(conv) == doc
    assert dump(conv, provider=True) == doc["messages"]


def test_plain_messages_load_equal_to_built_ones() -> None:
    conv = loads([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}])
    assert list(conv) == [Message.user("hi"), Message.assistant("yo")]


# -- Anthropic ---------------------------------------------------------------------------

ANTHROPIC_DOC: dict[str, Any] = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 1024,
    "tools": [{"name": "ls", "input_schema": {"type": "object"}}],
    "system": [
        {"type": "text", "text": "be brief"},
        {"type": "text", "text": "big docs", "cache_control": {"type": "ephemeral"}},
    ],
    "messages": [
        {"role": "user", "content": "list files"},
        {"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                         "data": "iVBOR"}},
            {"type": "document", "source": {"type": "text", "media_type": "text/plain",
                                            "data": "notes"}},
        ]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "sig"},
            {"type": "tool_use", "id": "t1", "name": "ls", "input": {"path": "."}},
            {"type": "text", "text": "and also"},
            {"type": "tool_use", "id": "t2", "name": "ls", "input": {"path": "/", "n": 2},
             "cache_control": {"type": "ephemeral"}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "a.py"},
            {"type": "tool_result", "tool_use_id": "t2", "is_error": True,
             "content": [{"type": "text", "text": "denied"}]},
            {"type": "text", "text": "go on"},
        ]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t3", "name": "ls", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t3"}],
         "note": "kept"},
        {"role": "assistant", "content": "done"},
    ],
}  # fmt: skip


def test_anthropic_round_trip_is_exact() -> None:
    conv = loads(copy.deepcopy(ANTHROPIC_DOC))
    assert conv.format == "anthropic"
    assert dump(conv) == ANTHROPIC_DOC
    assert dump(loads(dump(conv))) == ANTHROPIC_DOC


def test_anthropic_model_view() -> None:
    conv = loads(copy.deepcopy(ANTHROPIC_DOC))
    roles = [m.role for m in conv]
    assert roles == ["system", "user", "user", "assistant", "tool", "tool", "user", "assistant",
                     "tool", "assistant"]  # fmt: skip
    assistant = conv[3]
    assert [p.kind for p in assistant.content] == ["other", "text"]
    assert [json.loads(c.arguments) for c in assistant.tool_calls] == [
        {"path": "."},
        {"path": "/", "n": 2},
    ]
    assert conv[5].extra["is_error"] is True and conv[5].text == "denied"
    assert conv[6].text == "go on"
    assert find_problems(conv, format="anthropic") == []
    assert find_problems(conv, format="openai") == []


def test_anthropic_bare_list_round_trips() -> None:
    items = copy.deepcopy(ANTHROPIC_DOC["messages"])
    conv = loads(items)
    assert conv.format == "anthropic" and conv.envelope is None
    assert dump(conv) == ANTHROPIC_DOC["messages"]


def test_anthropic_provider_request_shape() -> None:
    out = dump(loads(copy.deepcopy(ANTHROPIC_DOC)), provider=True)
    assert set(out) == {"system", "messages"}
    assert out["messages"][2]["content"][1] == {
        "type": "tool_result",
        "tool_use_id": "t2",
        "is_error": True,
        "content": [{"type": "text", "text": "denied"}],
    }
    assert "note" not in out["messages"][4]
    assert [m["role"] for m in out["messages"]] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
    ]  # fmt: skip  (the two user messages in a row merge)


def test_openai_messages_render_for_anthropic() -> None:
    doc = copy.deepcopy(OPENAI_DOC[:8])
    del doc[2]["content"][2]  # audio: no Anthropic equivalent (see the next test)
    out = dump(loads(doc), format="anthropic", provider=True)
    assert out["system"] == [
        {"type": "text", "text": "be brief"},
        {"type": "text", "text": "use tools"},
    ]
    user = out["messages"][0]["content"]
    assert user[1] == {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}}
    calls = out["messages"][1]["content"]
    assert [b["type"] for b in calls] == ["tool_use", "tool_use"]
    assert calls[0]["input"] == {"path": "."}
    assert calls[1]["input"] == {"_raw_arguments": "not json"}  # invalid JSON kept, not lost
    merged = out["messages"][2]
    assert merged["role"] == "user"
    assert [b["tool_use_id"] for b in merged["content"]] == ["c2", "c1"]


def test_audio_cannot_go_to_anthropic() -> None:
    conv = loads(copy.deepcopy(OPENAI_DOC[:3]))
    with pytest.raises(FormatError, match="message 2: a 'input_audio' part cannot be sent"):
        dump(conv, format="anthropic", provider=True)


def test_is_error_and_merging_from_kompakt_messages() -> None:
    msgs = [
        Message.system("s"),
        Message.user("u"),
        Message.assistant(tool_calls=[ToolCall(id="a", name="f"), ToolCall(id="b", name="g")]),
        Message.tool("boom", tool_call_id="a", extra={"is_error": True}),
        Message.tool("fine", tool_call_id="b"),
        Message.user("more"),
        Message.assistant("one"),
        Message.assistant("two"),
    ]
    out = dump(msgs, format="anthropic", provider=True)
    assert out["system"] == "s"
    assert [m["role"] for m in out["messages"]] == ["user", "assistant", "user", "assistant"]
    results_msg = out["messages"][2]["content"]
    assert results_msg[0] == {
        "type": "tool_result", "tool_use_id": "a", "content": "boom", "is_error": True,
    }  # fmt: skip
    assert results_msg[2] == {"type": "text", "text": "more"}
    assert out["messages"][3]["content"] == [
        {"type": "text", "text": "one"},
        {"type": "text", "text": "two"},
    ]


def test_synthetic_messages_render_as_plain_text() -> None:
    summary = Message.user("[summary] fixed a.py", synthetic="summary", covers=("m1", "m2"))
    msgs = [Message.system("s"), summary, Message.assistant("ok")]
    assert dump(msgs, provider=True)[1] == {"role": "user", "content": "[summary] fixed a.py"}
    out = dump(msgs, format="anthropic", provider=True)
    assert out["messages"][0] == {"role": "user", "content": "[summary] fixed a.py"}


# -- OpenAI -> Anthropic -> OpenAI ------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(conversations())
def test_openai_anthropic_openai_keeps_pairs(msgs: list[Message]) -> None:
    openai_doc = dump(msgs, format="openai")
    for provider in (False, True):
        there = dump(loads(openai_doc), format="anthropic", provider=provider)
        back = loads(dump(loads(there, format="anthropic"), format="openai"), format="openai")
        assert pairs(back) == pairs(msgs)
        assert results(back) == results(msgs)
        assert find_problems(back, format="anthropic") == []


# -- JSONL and native dicts --------------------------------------------------------------


def test_jsonl_annotations_round_trip() -> None:
    msgs = [
        Message.user("task", pinned=True),
        Message.user("summary", synthetic="summary", covers=("a", "b"), metadata={"k": 1}),
        Message.assistant("x", id="custom"),
        Message.assistant("y", memory=True),
    ]
    text = dump(msgs, format="jsonl")
    lines = [json.loads(line) for line in text.splitlines()]
    assert lines[0]["kompakt"] == {"pinned": True}
    assert lines[2]["kompakt"] == {"id": "custom"}
    assert list(loads(text)) == msgs
    assert all(
        "kompakt" not in line
        for line in map(json.loads, dump(msgs, format="jsonl", annotate=False).splitlines())
    )
    always = [json.loads(x) for x in dump(msgs, format="jsonl", annotate=True).splitlines()]
    assert [x["kompakt"]["id"] for x in always] == [m.id for m in msgs]
    assert dump(msgs, format="openai", annotate=True)[2]["kompakt"] == {"id": "custom"}


def test_jsonl_file(tmp_path: Path) -> None:
    msgs = [Message.user("a"), Message.assistant("b")]
    path = tmp_path / "t.jsonl"
    path.write_text(dump(msgs, format="jsonl"))
    conv = load(path)
    assert conv.format == "jsonl" and list(conv) == msgs
    assert dump(conv) == path.read_text()
    single = tmp_path / "one.jsonl"
    single.write_text('{"role": "user", "content": "a"}\n')
    assert list(load(single)) == [Message.user("a")]


@settings(max_examples=40, deadline=None)
@given(conversations())
def test_native_dicts_are_lossless(msgs: list[Message]) -> None:
    for i, m in enumerate(msgs):
        m = m.evolve(metadata={"n": i}, covers=("x",), synthetic="collapsed") if i % 3 else m
        d = json.loads(json.dumps(message_to_dict(m)))
        assert message_from_dict(d, i) == m


def test_native_dict_errors() -> None:
    with pytest.raises(MessageError, match=r"message 4: field 'tool_calls\[0\].id'"):
        message_from_dict({"role": "assistant", "tool_calls": [{"name": "x"}]}, 4)
    with pytest.raises(MessageError, match="field 'synthetic': expected one of"):
        message_from_dict({"role": "user", "synthetic": "weird"})


@settings(max_examples=30, deadline=None)
@given(conversations())
def test_every_format_round_trips_generated_conversations(msgs: list[Message]) -> None:
    for fmt in ("openai", "jsonl", "mini-swe-agent", "swe-agent"):
        doc = dump(msgs, format=fmt)
        assert dump(loads(doc, format=fmt)) == doc
    anthropic = dump(msgs, format="anthropic")
    assert dump(loads(anthropic)) == anthropic
    assert list(loads(dump(msgs, format="jsonl"))) == msgs


# -- SWE-agent repr strings --------------------------------------------------------------


def swe_doc(tool_calls: Any, ids: Any = "['c1']") -> dict[str, Any]:
    return {
        "environment": "main",
        "history": [
            {"role": "system", "content": "sys", "agent": "main"},
            {"role": "user", "content": "task", "agent": "main", "message_type": "observation"},
            {"role": "assistant", "content": "look", "thought": "look", "action": "ls",
             "agent": "main", "tool_calls": tool_calls, "message_type": "action"},
            {"role": "tool", "content": "a.py", "agent": "main", "tool_call_ids": ids},
        ],
    }  # fmt: skip


def test_swe_agent_repr_strings_parse_and_round_trip() -> None:
    calls = "[{'function': {'arguments': '{\"path\": \"a\"}', 'name': 'open'}, 'id': 'c1'}]"
    doc = swe_doc(calls)
    conv = loads(copy.deepcopy(doc))
    assert conv.format == "swe-agent"
    assert conv[2].tool_calls[0].name == "open" and conv[3].tool_call_id == "c1"
    assert dump(conv) == doc
    validate(conv)
    provider = dump(conv, provider=True)
    assert provider[2]["tool_calls"][0]["id"] == "c1" and provider[3]["tool_call_id"] == "c1"


def test_swe_agent_bad_repr_is_rejected_with_index_and_field() -> None:
    with pytest.raises(MessageError) as info:
        loads(swe_doc("[{'function': oops"))
    assert info.value.index == 2 and info.value.field == "tool_calls"
    assert str(info.value).startswith(
        "message 2: field 'tool_calls': expected a list of tool calls (JSON or a Python repr)"
    )
    with pytest.raises(MessageError, match="message 3: field 'tool_call_ids'"):
        loads(swe_doc([], ids=[]))


@pytest.mark.parametrize(
    "path",
    [p for p in TRANSCRIPTS if p.name.endswith(".traj")],
    ids=ids([p for p in TRANSCRIPTS if p.name.endswith(".traj")]),
)
def test_swe_agent_task_is_pinned_when_observations_are_user_messages(path: Path) -> None:
    """In SWE-agent's text mode the task is not the last user message: it is pinned instead,
    so no strategy truncates it away; the document still round-trips."""
    conv = load(path)
    users = [m for m in conv if m.role == "user"]
    assert users[0].pinned is (len(users) > 1)
    assert not any(m.pinned for m in conv if m is not users[0])
    assert dump(conv) == json.loads(path.read_text())
    budget = sum(CharEstimator().count_message(m) for m in conv[:2]) + 2 * sum(
        CharEstimator().count_message(m) for m in conv[-2:]
    )
    out = apply_compaction(conv, strategy=Budgeted(budget))
    assert users[0] in out


def test_openai_messages_as_swe_agent_history() -> None:
    msgs = loads(copy.deepcopy(OPENAI_DOC[3:6]))
    history = dump(msgs, format="swe-agent")["history"]
    assert history[1]["tool_call_ids"] == ["c2"] and "tool_call_id" not in history[1]
    assert [m.tool_call_id for m in loads({"history": history})[1:]] == ["c2", "c1"]


# -- errors ------------------------------------------------------------------------------


def bad(doc: Any, pattern: str, **kw: Any) -> None:
    with pytest.raises(MessageError, match=pattern):
        loads(doc, **kw)


def test_malformed_openai_messages_name_index_and_field() -> None:
    msgs: list[dict[str, Any]] = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "x", "type": "function", "function": {"name": "f", "arguments": 42}}]},
    ]  # fmt: skip
    with pytest.raises(MessageError) as info:
        loads(msgs)
    assert str(info.value) == (
        "message 3: field 'tool_calls[0].function.arguments': expected a JSON string, got 42"
    )
    bad([{"role": "robot", "content": "x"}], r"message 0: field 'role': expected one of")
    bad([{"role": "user", "content": 5}], "message 0: field 'content': expected a string, a list")
    bad([{"role": "tool", "content": "x"}], "message 0: field 'tool_call_id': expected a string")
    bad([{"role": "user", "content": [{"type": "text"}]}], r"field 'content\[0\].text'")
    bad([{"role": "user", "content": ["x"]}], r"field 'content\[0\]': expected a content part")
    bad(["hello"], "message 0: field 'message': expected an object")
    bad([{"role": "assistant", "tool_calls": [{"id": "x"}]}], r"tool_calls\[0\].function'")
    bad([{"role": "assistant", "tool_calls": {"id": "x"}}], "field 'tool_calls': expected a list")


def test_malformed_anthropic_messages_name_index_and_field() -> None:
    doc: dict[str, Any] = {"system": "s", "messages": [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": [{"type": "tool_use", "name": "f", "input": {}}]},
    ]}  # fmt: skip
    bad(doc, r"message 1: field 'content\[0\].id': expected a string")
    doc["messages"][1] = {"role": "assistant", "content": [
        {"type": "tool_use", "id": "t", "name": "f", "input": "x"}]}  # fmt: skip
    bad(doc, r"message 1: field 'content\[0\].input': expected an object")
    doc["messages"][1] = {"role": "system", "content": "x"}
    bad(doc, "message 1: field 'role': expected 'user' or 'assistant'")
    doc["messages"][1] = {"role": "user", "content": [{"type": "tool_result", "content": "x"}]}
    bad(doc, r"message 1: field 'content\[0\].tool_use_id'")
    with pytest.raises(FormatError) as info:
        loads({"system": [{"type": "text", "text": 3}], "messages": []})
    assert str(info.value) == (
        "Anthropic document: field 'system[0].text': expected a string, got 3"
    )


def test_format_errors_are_one_line() -> None:
    with pytest.raises(FormatError) as info:
        loads([], format="bard")
    assert str(info.value) == (
        "unknown format 'bard': expected one of openai, anthropic, responses, gemini, jsonl, "
        "mini-swe-agent, swe-agent"
    )
    with pytest.raises(FormatError, match="unknown format 'xml'"):
        dump([], format="xml")
    with pytest.raises(FormatError, match=r"file not found: '/no/such/run.traj.json'"):
        load("/no/such/run.traj.json")
    with pytest.raises(FormatError, match="file not found"):
        load(Path("/no/such/run.traj.json"))
    with pytest.raises(FormatError, match="JSON text is not JSON"):
        loads('{"messages": [')
    with pytest.raises(FormatError, match="JSONL line 2: not valid JSON"):
        loads('{"role": "user", "content": "a"}\n{oops\n', format="jsonl")
    with pytest.raises(FormatError, match="cannot detect the format of a document with keys"):
        loads({"foo": 1})
    for err in (info.value,):
        assert "\n" not in str(err)


def test_dump_option_errors() -> None:
    with pytest.raises(ConfigError, match="annotate=True"):
        dump([Message.user("a")], format="anthropic", annotate=True)
    with pytest.raises(ConfigError, match="provider=True"):
        dump([Message.user("a")], provider=True, annotate=True)
    with pytest.raises(FormatError, match="use dump"):
        to_dicts([Message.system("s")], format="anthropic")


# -- detection and the surface -----------------------------------------------------------


def test_detect_format() -> None:
    assert detect_format([]) == "openai"
    assert detect_format({"role": "user", "content": "x"}) == "openai"
    assert detect_format({"model": "m", "messages": []}) == "openai"
    assert detect_format({"messages": [], "system": "s"}) == "anthropic"
    assert detect_format(ANTHROPIC_DOC["messages"]) == "anthropic"
    assert detect_format({"history": []}) == "swe-agent"
    assert detect_format({"messages": [], "info": {}}) == "mini-swe-agent"
    assert detect_format('{"role": "user", "content": "a"}\n{"role": "user", "content": "b"}')
    assert detect_format(TRANSCRIPTS[-1]) == "swe-agent"
    assert set(FORMATS) == {
        "openai",
        "anthropic",
        "responses",
        "gemini",
        "jsonl",
        "mini-swe-agent",
        "swe-agent",
    }


def test_loads_accepts_messages_and_conversations() -> None:
    msgs = [Message.user("a")]
    conv = loads(msgs)
    assert isinstance(conv, Conversation) and list(conv) == msgs
    assert loads(conv) is conv
    assert to_dicts(msgs) == [{"role": "user", "content": "a"}]
    assert to_dicts(msgs, format="anthropic") == [{"role": "user", "content": "a"}]


def test_public_surface() -> None:
    import kompakt

    assert kompakt.load is load and kompakt.dump is dump
    assert kompakt.Conversation is Conversation and kompakt.detect_format is detect_format


# -- random raw documents: whatever spelling the source used comes back -----------------


class _Absent:
    pass


_ABSENT = _Absent()


_json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=5))
_extras = st.dictionaries(
    st.sampled_from(["extra", "provider_specific_fields", "refusal", "annotations", "audio"]),
    _json_scalars,
    max_size=2,
)
_text = st.text(max_size=12)
_openai_parts = st.lists(
    st.one_of(
        st.builds(lambda t: {"type": "text", "text": t}, _text),
        st.builds(lambda u: {"type": "image_url", "image_url": {"url": u}}, _text),
        st.just({"type": "input_audio", "input_audio": {"data": "UklG", "format": "wav"}}),
        st.just({"type": "file", "file": {"file_id": "f1"}}),
        st.builds(lambda t: {"type": "refusal", "refusal": t}, _text),
    ),
    max_size=3,
)
_content = st.one_of(st.just(_ABSENT), st.none(), _text, _openai_parts)


@st.composite
def raw_openai_message(draw: st.DrawFn, n: int) -> dict[str, Any]:
    role = draw(st.sampled_from(["system", "developer", "user", "assistant", "tool"]))
    d: dict[str, Any] = {"role": role, **draw(_extras)}
    content = draw(_content)
    if content is not _ABSENT:
        d["content"] = content
    if draw(st.booleans()):
        d["name"] = draw(st.one_of(st.none(), _text))
    if role == "tool":
        d["tool_call_id"] = f"c{n}"
    elif draw(st.integers(0, 5)) == 0:
        d["tool_call_id"] = None
    if role == "assistant":
        form = draw(st.sampled_from(["absent", "null", "empty", "calls", "legacy"]))
        if form == "null":
            d["tool_calls"] = None
        elif form == "empty":
            d["tool_calls"] = []
        elif form == "calls":
            d["tool_calls"] = [
                {
                    **({"index": k} if draw(st.booleans()) else {}),
                    "id": f"c{n}_{k}",
                    **({"type": "function"} if draw(st.booleans()) else {}),
                    "function": {"name": draw(_text), "arguments": draw(_text)},
                }
                for k in range(draw(st.integers(1, 3)))
            ]
        elif form == "legacy":
            d["function_call"] = {"name": draw(_text), "arguments": draw(_text)}
        if draw(st.booleans()):
            d["function_call"] = d.get("function_call")
    return d


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 8).flatmap(lambda k: st.tuples(*(raw_openai_message(n) for n in range(k)))))
def test_random_openai_documents_round_trip(items: tuple[dict[str, Any], ...]) -> None:
    doc = list(items)
    conv = loads(copy.deepcopy(doc), format="openai")
    assert dump(conv) == doc
    assert dump(loads(dump(conv, format="jsonl"), format="jsonl"), format="openai") == doc
    native = [message_from_dict(json.loads(json.dumps(message_to_dict(m)))) for m in conv]
    assert dump(native, format="openai") == doc


_anthropic_blocks = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, _text),
    st.builds(lambda t: {"type": "text", "text": t, "cache_control": {"type": "ephemeral"}}, _text),
    st.just({"type": "image", "source": {"type": "url", "url": "https://x/a.png"}}),
    st.builds(lambda t: {"type": "thinking", "thinking": t, "signature": "s"}, _text),
)


@st.composite
def raw_anthropic_message(draw: st.DrawFn, n: int) -> dict[str, Any]:
    role = draw(st.sampled_from(["user", "assistant"]))
    if draw(st.integers(0, 3)) == 0:
        return {"role": role, "content": draw(_text)}
    blocks = draw(st.lists(_anthropic_blocks, max_size=3))
    for k in range(draw(st.integers(0, 2))):
        at = draw(st.integers(0, len(blocks)))
        block: dict[str, Any]
        if role == "assistant":
            block = {"type": "tool_use", "id": f"t{n}_{k}", "name": "f", "input": {"k": k}}
        else:
            block = {"type": "tool_result", "tool_use_id": f"t{n}_{k}"}
            choice = draw(st.integers(0, 3))
            if choice == 1:
                block["content"] = draw(_text)
            elif choice == 2:
                block["content"] = draw(st.lists(_anthropic_blocks, max_size=2))
            if draw(st.booleans()):
                block["is_error"] = draw(st.booleans())
        blocks.insert(at, block)
    return {"role": role, "content": blocks}


@settings(max_examples=150, deadline=None)
@given(
    st.integers(0, 6).flatmap(lambda k: st.tuples(*(raw_anthropic_message(n) for n in range(k)))),
    st.one_of(st.none(), _text, st.lists(_anthropic_blocks, min_size=1, max_size=2)),
)
def test_random_anthropic_documents_round_trip(
    items: tuple[dict[str, Any], ...], system: Any
) -> None:
    doc: dict[str, Any] = {"model": "m", "messages": list(items)}
    if system is not None:
        doc["system"] = system
    conv = loads(copy.deepcopy(doc), format="anthropic")
    assert dump(conv) == doc
    assert dump(loads(copy.deepcopy(doc["messages"]), format="anthropic")) == doc["messages"] or (
        any(m.role == "system" for m in conv)
    )


_ANTHROPIC_BLOCK_TYPES = {"text", "image", "document", "thinking", "redacted_thinking",
                          "tool_use", "tool_result"}  # fmt: skip


def assert_anthropic_request(doc: dict[str, Any]) -> None:
    assert set(doc) <= {"system", "messages"}
    roles = [m["role"] for m in doc["messages"]]
    assert all(a != b for a, b in itertools.pairwise(roles)), "roles must alternate"
    for m in doc["messages"]:
        assert set(m) == {"role", "content"}
        for b in m["content"] if isinstance(m["content"], list) else []:
            assert b["type"] in _ANTHROPIC_BLOCK_TYPES
            if b["type"] == "tool_use":
                assert set(b) <= {"type", "id", "name", "input", "cache_control"}
            if b["type"] == "tool_result":
                assert set(b) <= {"type", "tool_use_id", "content", "is_error", "cache_control"}


@pytest.mark.parametrize(
    "path", TRANSCRIPTS[:2] + TRANSCRIPTS[-2:], ids=ids(TRANSCRIPTS[:2] + TRANSCRIPTS[-2:])
)
def test_anthropic_provider_output_is_a_clean_request(path: Path) -> None:
    assert_anthropic_request(dump(load(path), format="anthropic", provider=True))


@settings(max_examples=40, deadline=None)
@given(conversations())
def test_generated_anthropic_requests_are_clean(msgs: list[Message]) -> None:
    assert_anthropic_request(dump(msgs, format="anthropic", provider=True))
