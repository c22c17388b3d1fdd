"""The public surface: one export table per package, which `__all__`, the lazy lookup and
the type checkers' imports all follow."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from types import ModuleType

import pytest

import kompakt
import kompakt.strategies
import kompakt.summarizers

LAZY_PACKAGES = [kompakt, kompakt.strategies, kompakt.summarizers]
"""Packages that import their public names on first use, from an `_EXPORTS` table."""


def _type_checking_imports(package: ModuleType) -> dict[str, str]:
    """``{name: module}`` of the imports under the package's ``if TYPE_CHECKING:``."""
    assert package.__file__ is not None
    tree = ast.parse(Path(package.__file__).read_text())
    imported: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom) and statement.module, statement
                for alias in statement.names:
                    assert alias.asname == alias.name, f"re-export {alias.name} as itself"
                    imported[alias.name] = statement.module
    return imported


@pytest.mark.parametrize("package", LAZY_PACKAGES, ids=lambda p: p.__name__)
def test_all_and_the_type_checking_imports_follow_the_export_table(package: ModuleType) -> None:
    exports = package._EXPORTS
    assert _type_checking_imports(package) == exports
    assert sorted(package.__all__) == sorted({*exports, *(["__version__"] * (package is kompakt))})
    assert len(package.__all__) == len(set(package.__all__))


@pytest.mark.parametrize("package", LAZY_PACKAGES, ids=lambda p: p.__name__)
def test_every_export_is_the_object_its_module_defines(package: ModuleType) -> None:
    for name, module in package._EXPORTS.items():
        assert getattr(package, name) is getattr(importlib.import_module(module), name), name


def test_exports_point_to_defining_module() -> None:
    for name, module in kompakt._EXPORTS.items():
        value = getattr(kompakt, name)
        defined_in = getattr(value, "__module__", module)
        if not defined_in.startswith("kompakt"):  # type aliases report typing or collections.abc
            continue
        # re-exports through a package's __init__ are fine; the name must live under it
        assert defined_in.startswith(module) or module.startswith(defined_in.rsplit(".", 1)[0]), (
            name,
            defined_in,
            module,
        )


def test_unknown_attribute_raises() -> None:
    with pytest.raises(AttributeError, match="module 'kompakt' has no attribute 'NoSuchThing'"):
        kompakt.NoSuchThing  # type: ignore[attr-defined]  # noqa: B018
    with pytest.raises(AttributeError, match=r"'kompakt\.strategies' has no attribute 'Nope'"):
        kompakt.strategies.Nope  # type: ignore[attr-defined]  # noqa: B018
