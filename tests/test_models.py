"""The model layer: protocol, retries and timeouts, ScriptedModel, adapters (on a mock
transport, no network), ExtractiveModel and model_from_string."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx2
import pytest

import kompakt
from kompakt.errors import ConfigError, MissingDependency, ModelError
from kompakt.messages import Message, ToolCall
from kompakt.models import (
    AnthropicModel,
    ChatModel,
    ExtractiveModel,
    LocalModel,
    OpenAIModel,
    ScriptedModel,
    ToolSpec,
    Usage,
    model_from_string,
    summarizer_from_env,
)
from kompakt.models.base import is_transient

SCHEMA = {"type": "object", "properties": {"facts": {"type": "array"}}, "required": ["facts"]}


# -- Usage, protocol --------------------------------------------------------------------


def test_usage_adds_up() -> None:
    total = Usage(10, 2) + Usage(5, 1) + Usage(1, 1)
    assert total == Usage(16, 4, 3)
    assert total.total_tokens == 20


def test_every_model_is_a_chat_model() -> None:
    for model in (
        ScriptedModel("x"),
        ExtractiveModel(),
        OpenAIModel("m", base_url="http://127.0.0.1:9/v1"),
        AnthropicModel("claude-x", api_key="k"),
        LocalModel("/nowhere.gguf"),
    ):
        assert isinstance(model, ChatModel), model


def test_transient_errors() -> None:
    class Status(Exception):
        def __init__(self, code: int) -> None:
            self.status_code = code

    assert is_transient(ConnectionError()) and is_transient(TimeoutError())
    assert is_transient(Status(429)) and is_transient(Status(503)) and is_transient(Status(529))
    assert not is_transient(Status(400)) and not is_transient(ValueError("schema"))


# -- ScriptedModel --------------------------------------------------------------------------


def test_scripted_records_every_request_with_tools_and_format() -> None:
    model = ScriptedModel(["one", "two"])
    tool = ToolSpec("recall", "fetch an original", {"type": "object"})
    model.chat_sync([Message.user("a")], tools=[tool], response_format=SCHEMA, max_output_tokens=7)
    model.chat_sync([Message.system("s"), Message.user("b")])
    first, second = model.requests
    assert [m.text for m in first] == ["a"]
    assert (
        first.tools == [tool] and first.response_format == SCHEMA and first.max_output_tokens == 7
    )
    assert [m.role for m in second] == ["system", "user"] and second.tools == []
    assert model.calls == 2 and model.input_tokens == first.input_tokens + second.input_tokens


def test_scripted_list_runs_out_single_entry_repeats() -> None:
    listed = ScriptedModel(["only"])
    listed.chat_sync([Message.user("a")])
    with pytest.raises(ModelError, match="exhausted"):
        listed.chat_sync([Message.user("b")])
    single = ScriptedModel("same")
    assert [single.chat_sync([]).text for _ in range(3)] == ["same"] * 3
    cycling = ScriptedModel(["a", "b"], cycle=True)
    assert [cycling.chat_sync([]).text for _ in range(3)] == ["a", "b", "a"]


def test_scripted_callables_sync_and_async_and_tool_calls() -> None:
    async def shout(messages: list[Message]) -> str:
        await asyncio.sleep(0)
        return messages[-1].text.upper()

    call = Message.assistant(tool_calls=[ToolCall(id="c1", name="ls", arguments="{}")])
    model = ScriptedModel([lambda msgs: f"{len(msgs)} messages", shout, call])
    assert model.chat_sync([Message.user("a"), Message.user("b")]).text == "2 messages"
    assert model.chat_sync([Message.user("loud")]).text == "LOUD"
    answer = model.chat_sync([Message.user("list")])
    assert answer.message.tool_calls[0].name == "ls"
    assert answer.usage.calls == 1 and answer.usage.output_tokens > 0


def test_scripted_exceptions_surface_as_model_errors() -> None:
    model = ScriptedModel([ValueError("bad request")])
    with pytest.raises(ModelError, match="bad request") as info:
        model.chat_sync([Message.user("x")])
    cause = info.value.__cause__
    assert isinstance(cause, ValueError) and cause.args == ("bad request",)


async def test_scripted_delay_is_concurrent() -> None:
    model = ScriptedModel("x", delay=0.2)
    t0 = time.perf_counter()
    await asyncio.gather(*(model.chat([Message.user(str(i))]) for i in range(8)))
    assert time.perf_counter() - t0 < 1.0
    assert model.max_concurrent == 8


# -- retries, backoff, timeouts -------------------------------------------------------------


def test_transient_failures_are_retried_with_backoff() -> None:
    model = ScriptedModel([ConnectionError("reset"), TimeoutError(), "ok"], max_retries=2)
    model.backoff = 0.01
    assert model.chat_sync([Message.user("x")]).text == "ok"
    assert model.calls == 3
    assert model.total_usage.calls == 1  # usage counts answered calls


def test_non_transient_failures_are_not_retried() -> None:
    model = ScriptedModel([ValueError("schema"), "ok"], max_retries=3)
    with pytest.raises(ModelError):
        model.chat_sync([Message.user("x")])
    assert model.calls == 1


def test_retries_give_up_after_max_retries() -> None:
    model = ScriptedModel(ConnectionError("down"), max_retries=2)
    model.backoff = 0.0
    with pytest.raises(ModelError, match="down"):
        model.chat_sync([Message.user("x")])
    assert model.calls == 3


def test_timeout_per_attempt() -> None:
    model = ScriptedModel("late", delay=1.0, timeout=0.05)
    t0 = time.perf_counter()
    with pytest.raises(ModelError, match="timed out"):
        model.chat_sync([Message.user("x")])
    assert time.perf_counter() - t0 < 0.5


async def test_chat_sync_inside_a_running_loop() -> None:
    assert ScriptedModel("fine").chat_sync([Message.user("x")]).text == "fine"


def test_bad_options_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="max_retries"):
        ScriptedModel("x", max_retries=-1)
    with pytest.raises(ConfigError, match="timeout"):
        ScriptedModel("x", timeout=0)


# -- OpenAI-compatible adapter on a mock transport ----------------------------------------


def _openai_reply(content: str | None, tool_calls: list[dict[str, Any]] | None = None) -> Any:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "qwen3",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
    }


def _transport(handler: Any) -> tuple[Any, list[dict[str, Any]]]:
    seen: list[dict[str, Any]] = []

    def wrapped(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        seen.append(body)
        status, payload = handler(body, len(seen))
        return httpx2.Response(status, json=payload)

    return httpx2.AsyncClient(transport=httpx2.MockTransport(wrapped)), seen


def test_openai_adapter_sends_tools_schema_and_reads_usage() -> None:
    calls = [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]
    client, seen = _transport(lambda body, n: (200, _openai_reply("done", calls)))
    model = OpenAIModel("qwen3", base_url="http://test/v1", http_client=client)
    tool = ToolSpec("ls", "list files", {"type": "object", "properties": {}})
    answer = model.chat_sync(
        [Message.system("s"), Message.user("hi")],
        tools=[tool],
        response_format=SCHEMA,
        max_output_tokens=50,
    )
    body = seen[0]
    assert body["model"] == "qwen3" and body["max_tokens"] == 50
    assert body["messages"] == [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "hi"},
    ]
    assert body["tools"][0]["function"]["name"] == "ls"
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == SCHEMA
    assert answer.text == "done" and answer.message.tool_calls[0].id == "c1"
    assert answer.usage == Usage(11, 3)


def test_openai_itself_gets_max_completion_tokens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    client, seen = _transport(lambda body, n: (200, _openai_reply("ok")))
    model = OpenAIModel("gpt-4.1-mini", api_key="sk-x", http_client=client)
    model.chat_sync([Message.user("q")], max_output_tokens=9)
    assert seen[0]["max_completion_tokens"] == 9 and "max_tokens" not in seen[0]


def test_openai_adapter_falls_back_to_json_object() -> None:
    def handler(body: dict[str, Any], n: int) -> tuple[int, Any]:
        if body.get("response_format", {}).get("type") == "json_schema":
            return 400, {"error": {"message": "response_format json_schema is not supported"}}
        return 200, _openai_reply('{"facts": []}')

    client, seen = _transport(handler)
    model = OpenAIModel("m", base_url="http://test/v1", http_client=client)
    assert model.chat_sync([Message.user("q")], response_format=SCHEMA).text == '{"facts": []}'
    assert seen[-1]["response_format"] == {"type": "json_object", "schema": SCHEMA}
    assert "JSON schema" in seen[-1]["messages"][-1]["content"]
    assert model.json_schema_supported is False
    model.chat_sync([Message.user("q")], response_format=SCHEMA)
    assert len(seen) == 3  # no second json_schema attempt


def test_openai_adapter_retries_429_then_succeeds() -> None:
    def handler(body: dict[str, Any], n: int) -> tuple[int, Any]:
        if n == 1:
            return 429, {"error": {"message": "slow down"}}
        return 200, _openai_reply("ok")

    client, seen = _transport(handler)
    model = OpenAIModel("m", base_url="http://test/v1", http_client=client, max_retries=1)
    model.backoff = 0.0
    assert model.chat_sync([Message.user("q")]).text == "ok" and len(seen) == 2


def test_openai_adapter_does_not_retry_400() -> None:
    client, seen = _transport(lambda body, n: (400, {"error": {"message": "bad"}}))
    model = OpenAIModel("m", base_url="http://test/v1", http_client=client, max_retries=3)
    with pytest.raises(ModelError):
        model.chat_sync([Message.user("q")])
    assert len(seen) == 1


def test_anthropic_adapter_forces_an_answer_tool_for_structured_output() -> None:
    def handler(body: dict[str, Any], n: int) -> tuple[int, Any]:
        return 200, {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-x",
            "content": [
                {"type": "tool_use", "id": "t1", "name": "answer", "input": {"facts": ["a"]}}
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 20, "output_tokens": 5},
        }

    client, seen = _transport(handler)
    model = AnthropicModel("claude-x", api_key="k", http_client=client)
    answer = model.chat_sync([Message.system("s"), Message.user("q")], response_format=SCHEMA)
    body = seen[0]
    assert body["system"] == "s" and body["messages"] == [{"role": "user", "content": "q"}]
    assert body["tool_choice"] == {"type": "tool", "name": "answer"}
    assert json.loads(answer.text) == {"facts": ["a"]}
    assert answer.usage == Usage(20, 5)


# -- ExtractiveModel, model_from_string -------------------------------------------------------


def test_extractive_model_summarizes_and_answers_json() -> None:
    model = ExtractiveModel()
    msgs = [Message.user("Fix the crash in src/app.py"), Message.assistant("The bug is a None.")]
    summary = model.chat_sync(msgs)
    assert "src/app.py" in summary.text and summary.usage.input_tokens > 0
    facts = model.chat_sync([*msgs, Message.user("Which files matter?")], response_format=SCHEMA)
    assert "src/app.py" in json.loads(facts.text)["facts"]


def test_model_from_string_forms() -> None:
    extractive = model_from_string("extractive")
    assert isinstance(extractive, ExtractiveModel) and extractive.name == "extractive"
    local = model_from_string("local:/models/x.gguf", n_ctx=4096)
    assert isinstance(local, LocalModel) and local.n_ctx == 4096 and local.name == "local:x.gguf"
    remote = model_from_string("openai:qwen3@http://localhost:8080/v1")
    assert isinstance(remote, OpenAIModel) and remote.base_url == "http://localhost:8080/v1"
    claude = model_from_string("anthropic:claude-haiku-4-5")
    assert isinstance(claude, AnthropicModel) and claude.model == "claude-haiku-4-5"
    assert kompakt.model_from_string is model_from_string
    for bad in ("", "gpt-4", "openai:", "extractive:x"):
        with pytest.raises(ConfigError, match="model spec"):
            model_from_string(bad)


def test_environment_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KOMPAKT_MODEL", "openai:gpt-4.1-mini")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://proxy/v1")
    model = model_from_string()
    assert isinstance(model, OpenAIModel)
    assert (model.model, model.api_key, model.base_url) == (
        "gpt-4.1-mini",
        "sk-test",
        "http://proxy/v1",
    )
    monkeypatch.delenv("KOMPAKT_SUMMARIZER", raising=False)
    assert summarizer_from_env() is None
    monkeypatch.setenv("KOMPAKT_SUMMARIZER", "extractive")
    from_env = summarizer_from_env()
    assert isinstance(from_env, ExtractiveModel) and from_env.name == "extractive"


def test_local_model_missing_file_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="path"):
        LocalModel("/no/such/model.gguf").chat_sync([Message.user("x")])


def test_local_model_missing_package(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    with pytest.raises(MissingDependency, match=r'pip install "kompakt\[local\]"'):
        LocalModel(__file__).llama()
