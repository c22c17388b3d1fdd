"""The framework examples in examples/ run offline and show compaction happening."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize(
    ("script", "framework"),
    [
        ("langchain_agent.py", "langchain"),
        ("pydantic_ai_agent.py", "pydantic_ai"),
        ("openai_agents_session.py", "agents"),
        ("maf_agent.py", "agent_framework"),
    ],
)
def test_example_runs(script: str, framework: str, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip(framework)
    runpy.run_path(str(EXAMPLES / script), run_name="__main__")
    out = capsys.readouterr().out
    assert "compacted" in out and "fired" in out
    assert "done" in out or "f7.py" in out
