"""Hostile inputs found by an adversarial bug hunt: each test is a bug that was fixed."""

from __future__ import annotations

import re
from typing import Any

import pytest

from kompakt.compactor import Compactor
from kompakt.errors import ConfigError
from kompakt.eval.retention import parse_budgets


@pytest.mark.parametrize("raw", ["nan", "inf", "-inf", "1e999", "nan%"])
def test_a_non_finite_budget_is_a_usage_error(raw: str) -> None:
    with pytest.raises(ConfigError, match="finite number > 0"):
        parse_budgets(raw)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"strategy": 7}, "`strategy` must be a strategy name, a table or a list, got 7"),
        ({"strategy": "truncation", "trigger": 5}, "`trigger` must be a table"),
        ({"strategy": "truncation", "trigger": "x"}, "`trigger` must be a table"),
        ({"strategy": "truncation", "target": [1]}, "`target` must be a table"),
        ({"strategy": "truncation", "trigger": {"fraction": "x"}}, "`trigger.fraction` must be"),
        ({"strategy": [{"name": "pipeline", "strategies": 5}]}, "`pipeline.strategies` must"),
        ({"strategy": "truncation", "min_preserved": "a"}, "`min_preserved` must be an int"),
        ({"strategy": "truncation", "min_preserved": -1}, "`min_preserved` must be an int"),
        ({"budget": 100, "early_stop": "no"}, "`early_stop` must be true or false"),
    ],
)
def test_a_config_of_the_wrong_type_is_a_config_error(config: dict[str, Any], message: str) -> None:
    """Was a TypeError/ValueError traceback, or silently accepted ("no" as early_stop=True)."""
    with pytest.raises(ConfigError, match=re.escape(message)):
        Compactor.from_config(config)
