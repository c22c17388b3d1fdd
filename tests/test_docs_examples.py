"""Every ```python block in README.md, docs/*.md and docs/integrations/*.md runs, offline.

Blocks of one page run in order in one namespace (a later block may use what an earlier one
defined), in a temporary directory holding `run.traj.json` (a real mini-swe-agent run), with
the names the prose assumes (`messages`, `openai_dicts`, `send`, ...) filled in from real data.
Top-level ``await`` is allowed. A block that cannot run offline says so right above its fence:

    <!-- not-runnable: needs an OpenAI API key (the offline version: examples/x.py) -->

and is then only compiled. A block known to fail is listed in `KNOWN_FAILURES` with why; it
runs as a strict xfail, so fixing it makes this test say so.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import inspect
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import kompakt
from data_files import DATA_DIR

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PAGES += sorted((ROOT / "docs" / "integrations").glob("*.md"))
TRAJ = DATA_DIR / "mini-swe-agent" / "django__django-13658.traj.json"

FENCE = re.compile(r"^```python[^\n]*\n(.*?)^```", re.M | re.S)
MARK = re.compile(r"<!--\s*not-runnable:\s*(.*?)\s*-->\s*$")

KNOWN_FAILURES: dict[tuple[str, str], str] = {
    # ("docs/page.md", "a line of the block"): "why it fails (who must fix it)",
}
SELF_CONTAINED = {
    "langchain.md": "langchain",
    "pydantic-ai.md": "pydantic_ai",
    "openai-agents.md": "agents",
    "maf.md": "agent_framework",
}
"""Pages whose blocks define every name they use (they run in an empty namespace), and the
framework each needs."""
NOT_RUNNABLE: dict[tuple[str, str], str] = {
    # blocks on pages this file's author does not own; their owners may use the marker instead
}


@dataclass(frozen=True)
class Block:
    page: Path
    line: int
    code: str
    skip: str | None

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    def listed(self, table: dict[tuple[str, str], str]) -> str | None:
        """The reason `table` gives for this block (matched by page and a line of code)."""
        page = str(self.page.relative_to(ROOT))
        return next(
            (why for (p, line), why in table.items() if p == page and line in self.code), None
        )


def _blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    out = []
    for m in FENCE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        before = [s for s in text[: m.start()].rstrip("\n").splitlines()[-2:] if s.strip()]
        mark = MARK.search(before[-1]) if before else None
        out.append(Block(page, line, m.group(1), mark.group(1) if mark else None))
    return out


BLOCKS = [b for page in PAGES for b in _blocks(page)]


def _namespace(page: Path) -> dict[str, Any]:
    """The names the docs' prose assumes, built from real data and the frameworks' test models."""
    from kompakt.models import ScriptedModel

    if page.name in SELF_CONTAINED:
        return {"__name__": "__docs__"}
    messages = kompakt.load(TRAJ)
    compactor = kompakt.Compactor(
        trigger=kompakt.TokensExceed(6_000),
        strategy=kompakt.Budgeted(4_000),
        target=kompakt.TokensBelow(4_000),
    )
    extra = PAGE_NAMES[page.name](compactor) if page.name in PAGE_NAMES else {}
    return {
        "kompakt": kompakt,
        "compactor": compactor,
        "agent": kompakt.Agent(ScriptedModel("Done: the bug is fixed.")),
        "__name__": "__docs__",
        "messages": list(messages),
        "openai_dicts": kompakt.dump(messages, format="openai"),
        "send": lambda rendered: None,
        "small_model": kompakt.model_from_string("extractive"),
        "model": ScriptedModel("Done: the bug is fixed."),
        "tools": [],
        **extra,
    }


PAGE_NAMES: dict[str, Callable[[kompakt.Compactor], dict[str, Any]]] = {}
"""Per page: the framework objects its fragments take as given (`model`, `state`, `items` ...)."""


def _run(code: str, ns: dict[str, Any], name: str) -> None:
    compiled = compile(code, name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    if inspect.CO_COROUTINE & compiled.co_flags:
        asyncio.run(eval(compiled, ns))  # a block with top-level await
    else:
        exec(compiled, ns)


@pytest.fixture
def docs_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copy(TRAJ, tmp_path / "run.traj.json")
    monkeypatch.chdir(tmp_path)
    for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "KOMPAKT_MODEL"):
        monkeypatch.delenv(key, raising=False)
    return tmp_path


def test_blocks_were_found() -> None:
    assert len(BLOCKS) >= 20
    assert {b.page.name for b in BLOCKS} >= {"README.md", "formats.md", "langchain.md"}


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_block_runs(block: Block, docs_dir: Path, request: pytest.FixtureRequest) -> None:
    compile(block.code, block.id, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    skip = block.skip or block.listed(NOT_RUNNABLE)
    if skip:
        pytest.skip(f"not runnable offline: {skip}")
    known = block.listed(KNOWN_FAILURES)
    if known:
        request.applymarker(pytest.mark.xfail(strict=True, reason=known))
    if block.page.name in SELF_CONTAINED:
        pytest.importorskip(SELF_CONTAINED[block.page.name])
    ns = _namespace(block.page)
    for earlier in _blocks(block.page):  # what the page defined before this block
        if earlier.line >= block.line:
            break
        if earlier.skip is None and not earlier.listed({**KNOWN_FAILURES, **NOT_RUNNABLE}):
            with contextlib.suppress(Exception):  # its own test reports it
                _run(earlier.code, ns, earlier.id)
    _run(block.code, ns, block.id)


def test_marked_blocks_give_a_reason() -> None:
    for block in BLOCKS:
        if block.skip is not None:
            assert len(block.skip) > 10, block.id
    for page, line in {**KNOWN_FAILURES, **NOT_RUNNABLE}:
        assert any(str(b.page.relative_to(ROOT)) == page and line in b.code for b in BLOCKS), (
            f"stale entry: no block of {page} contains {line!r}"
        )


LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_docs_index_links_every_page() -> None:
    index = ROOT / "docs" / "index.md"
    linked = {(index.parent / link).resolve() for link in LINK.findall(index.read_text())}
    pages = {p.resolve() for p in PAGES if p.parent != ROOT and p != index}
    assert pages - linked == set(), "docs/index.md must link every page"


def test_relative_links_resolve() -> None:
    for page in PAGES:
        for link in LINK.findall(page.read_text(encoding="utf-8")):
            if "://" not in link and not link.startswith("mailto:"):
                assert (page.parent / link).exists(), f"{page.relative_to(ROOT)}: {link}"
