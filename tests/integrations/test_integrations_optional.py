"""The core imports no framework; a missing framework is a clear `MissingDependency`."""

from __future__ import annotations

import subprocess
import sys

import pytest

from kompakt.errors import MissingDependency
from kompakt.messages import Message

FRAMEWORKS = (
    "langchain",
    "langchain_core",
    "langgraph",
    "pydantic_ai",
    "agents",
    "agent_framework",
)


def test_core_and_adapter_modules_import_no_framework() -> None:
    code = (
        "import sys, kompakt\n"
        "from kompakt import Budgeted, Compactor, MemoryStore, apply_compaction\n"
        "import kompakt.integrations.langchain, kompakt.integrations.pydantic_ai\n"
        "import kompakt.integrations.openai_agents, kompakt.integrations.maf\n"
        f"print(sorted(m for m in {FRAMEWORKS!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("module", "call", "blocked", "extra"),
    [
        ("langchain", "to_langchain", "langchain_core.messages", "langchain"),
        ("pydantic_ai", "to_pydantic_ai", "pydantic_ai.messages", "pydantic-ai"),
        ("maf", "to_maf", "agent_framework", "maf"),
    ],
)
def test_missing_framework_names_the_extra(
    module: str, call: str, blocked: str, extra: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib

    adapter = importlib.import_module(f"kompakt.integrations.{module}")
    monkeypatch.setitem(sys.modules, blocked, None)  # makes `import blocked` fail
    with pytest.raises(MissingDependency, match=rf'pip install "kompakt\[{extra}\]"'):
        getattr(adapter, call)([Message.user("hi")])


def test_agents_conversion_needs_no_framework() -> None:
    from kompakt.integrations.openai_agents import from_openai_agents, to_openai_agents

    items = [{"role": "user", "content": "hi"}]
    assert to_openai_agents(from_openai_agents(items)) == items
