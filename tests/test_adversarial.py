"""Hostile inputs found by an adversarial bug hunt: each test is a bug that was fixed."""

from __future__ import annotations

import pytest

from kompakt.errors import ConfigError
from kompakt.eval.retention import parse_budgets


@pytest.mark.parametrize("raw", ["nan", "inf", "-inf", "1e999", "nan%"])
def test_a_non_finite_budget_is_a_usage_error(raw: str) -> None:
    with pytest.raises(ConfigError, match="finite number > 0"):
        parse_budgets(raw)
