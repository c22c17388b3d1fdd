"""`kompakt replay`, `compact` and `inspect` on Responses items and Gemini contents."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from clihelp import SMALL, invoke, run

import kompakt
from kompakt.index import MessageIndex
from kompakt.tokens import CharEstimator
from kompakt.validation import find_problems


def responses_run(tmp_path: Path, *, compaction: bool = False) -> Path:
    """The real mini-swe-agent run as Responses items, a reasoning item before each output."""
    items: list[dict[str, Any]] = []
    for item in kompakt.to_dicts(kompakt.load(SMALL), format="responses", provider=True):
        output = item.get("type") == "function_call" or item.get("role") == "assistant"
        if output and not (items and items[-1].get("type") in ("function_call", "reasoning")):
            n = len(items)
            items.append(
                {"type": "reasoning", "id": f"rs_{n}", "summary": [], "encrypted_content": "gAAA"}
            )
        items.append(item)
    if compaction:
        items.insert(
            len(items) // 2, {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAx"}
        )
    path = tmp_path / "run.responses.json"
    path.write_text(json.dumps({"model": "gpt-5", "input": items}))
    return path


def gemini_run(tmp_path: Path) -> Path:
    path = tmp_path / "run.gemini.json"
    path.write_text(json.dumps(kompakt.dump(kompakt.load(SMALL), format="gemini", provider=True)))
    return path


@pytest.mark.parametrize("make,fmt", [(responses_run, "responses"), (gemini_run, "gemini")])
def test_inspect_replay_and_compact(tmp_path: Path, make: Any, fmt: str) -> None:
    path = make(tmp_path)
    data = invoke("inspect", str(path), "--json").json()
    assert data["format"] == fmt
    assert data["problems"] == {"openai": [], "anthropic": [], fmt: []}
    assert data["tools"][0]["name"] == "bash" and data["tools"][0]["calls"] == 38
    assert data["provider_compaction"] is None

    r = invoke("replay", str(path), "--budget", "4000", "--json")
    assert r.code == 0, r.stderr
    steps = r.json()["steps"]
    assert steps and all(s["tokens_sent"] <= 4000 for s in steps)

    out = tmp_path / f"small.{fmt}.json"
    r = invoke("compact", str(path), "--budget", "3000", "-o", str(out))
    assert r.code == 0, r.stderr
    conv = kompakt.load(out)
    assert conv.format == fmt
    assert MessageIndex(conv, tokenizer=CharEstimator()).total_tokens <= 3000
    assert find_problems(conv, format=fmt) == []  # type: ignore[arg-type]
    written, source = json.loads(out.read_text()), json.loads(path.read_text())
    assert set(written) == set(source)  # the document around the items is kept


def test_inspect_shows_the_provider_compaction(tmp_path: Path) -> None:
    path = responses_run(tmp_path, compaction=True)
    data = invoke("inspect", str(path), "--json").json()
    pc = data["provider_compaction"]
    assert pc["count"] == 1 and data["by_kind"]["compaction"]["groups"] == 1
    assert 0 < pc["superseded_tokens"] < data["tokens"]
    r = run("inspect", str(path))
    assert r.code == 0, r.stderr
    assert "Provider compaction: 1" in r.stdout


def test_compact_keeps_the_compaction_item(tmp_path: Path) -> None:
    path = responses_run(tmp_path, compaction=True)
    out = tmp_path / "o.json"
    r = invoke("compact", str(path), "--budget", "2000", "-o", str(out))
    assert r.code == 0, r.stderr
    items = json.loads(out.read_text())["input"]
    kinds = [i.get("type") for i in items]
    assert kinds.count("compaction") == 1
    assert {"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAx"} in items
