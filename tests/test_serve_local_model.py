"""End to end: the real `openai` client, through `kompakt serve`, to llama.cpp's server
running SmolLM2 (a 4,096-token window). A tool-using run that outgrows the window gets an
answer on every request, the budget calibrated by the usage the server reports. The tiny
model's answers are not judged, only the plumbing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openai
import pytest

from kompakt.serve import ServeConfig, create_app
from serve_helpers import serving, tool_turns

pytestmark = [pytest.mark.model, pytest.mark.slow]


def _run(url: str, turns: int) -> list[Any]:
    client = openai.OpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0, timeout=300)
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    replies: list[Any] = []
    # llama-cpp-python's server takes no `content: null` beside tool calls
    for n, step in enumerate(tool_turns(turns, result_chars=1500, call_text="")):
        history += step
        if history[-1]["role"] == "assistant":
            continue
        if n % 4 == 0:
            stream = client.chat.completions.create(
                model="smollm2",
                messages=history,  # type: ignore[arg-type]
                max_tokens=4,
                stream=True,
                stream_options={"include_usage": True},
            )
            replies.append(list(stream))
        else:
            replies.append(
                client.chat.completions.create(
                    model="smollm2",
                    messages=history,  # type: ignore[arg-type]
                    max_tokens=4,
                )
            )
    return replies


def test_a_run_longer_than_the_window_is_answered_on_every_request(
    llama_server: str, tmp_path: Path
) -> None:
    budget = 2_000
    app = create_app(
        ServeConfig(openai_upstream=llama_server, budget=budget, store=str(tmp_path / "s.db"))
    )
    with serving(app) as url:
        replies = _run(url, 8)
    conv = next(iter(app.state.proxy.sessions.conversations.values()))
    assert len(replies) == conv.stats.requests == 16
    assert all(t.status == 200 for t in conv.timeline), [t.note for t in conv.timeline]
    assert conv.timeline[-1].tokens_full > 4_096  # uncompacted, it would not fit
    assert conv.stats.compactions >= 1
    reported = [t.usage for t in conv.timeline if t.usage is not None]
    assert reported and max(reported) <= 4_096
