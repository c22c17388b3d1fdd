"""The examples in the docstrings of the command line and eval modules run."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "kompakt.eval.probes",
    "kompakt.eval.replay",
    "kompakt.eval.retention",
    "kompakt.eval.report",
    "kompakt.eval.svg",
    "kompakt.cli.fallbacks",
    "kompakt.eval.batch",
    "kompakt.cli.errors",
    "kompakt.cli.printable",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {name}"
