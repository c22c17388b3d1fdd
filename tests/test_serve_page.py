"""The proxy's page renders in headless Chromium: conversations with their numbers, and a
conversation's timeline and compacted view (skips without Chromium outside CI)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from kompakt.serve import ServeConfig, create_app
from serve_helpers import FakeUpstream, serving, tool_turns
from test_report_browser import _browser, _colored_pixels

pytestmark = pytest.mark.browser


def test_the_page_lists_conversations_and_a_timeline(tmp_path: Path) -> None:
    upstream = FakeUpstream()
    with serving(upstream.app()) as fake_url:
        app = create_app(
            ServeConfig(openai_upstream=f"{fake_url}/v1", budget=2_000, store=":memory:", env={})
        )
        with serving(app) as url:
            history: list[dict[str, Any]] = []
            for step in tool_turns(15):
                history += step
                if history[-1]["role"] != "assistant":
                    r = httpx.post(
                        f"{url}/v1/chat/completions",
                        json={"model": "fake-model", "messages": history},
                    )
                    assert r.status_code == 200
            conv = next(iter(app.state.proxy.sessions.conversations.values()))
            shot = tmp_path / "page.png"
            run = _browser(
                [f"--screenshot={shot}", "--window-size=1280,1400", f"{url}/kompakt/"], tmp_path
            )
            assert shot.is_file(), run.stderr[-2000:]
            ink, blue = _colored_pixels(shot)
            assert ink > 5_000 and blue > 50, (ink, blue)  # text, and the sent / without bars
            index = _browser(["--dump-dom", f"{url}/kompakt/"], tmp_path).stdout
            page = _browser(["--dump-dom", f"{url}/kompakt/{conv.id}"], tmp_path).stdout
    row = re.search(r"<table id=\"conversations\">.*?</table>", index, flags=re.S)
    assert row is not None and conv.id in row.group(0) and "fake-model" in row.group(0)
    assert f">{conv.stats.compactions}<" in row.group(0) and conv.stats.compactions >= 1
    timeline = re.search(r"<table id=\"timeline\">.*?</table>", page, flags=re.S)
    assert timeline is not None
    assert timeline.group(0).count("<tr>") == 1 + conv.stats.requests == 31
    assert "compacted" in timeline.group(0)
    view = re.search(r"<table id=\"view\">.*?</table>", page, flags=re.S)
    assert view is not None and "step 14" in view.group(0)
