"""Every `summarizer=` / `model=` takes a model object or a spec string, checked where written."""

from __future__ import annotations

import pytest

import kompakt
from kompakt.models.registry import as_model


def test_spec_strings_become_models() -> None:
    s = kompakt.Summarize(summarizer="extractive")
    assert s.summarizer is not None and s.summarizer.name == "extractive"
    f = kompakt.FactRetrieval(model="extractive")
    assert f.summarizer is not None and f.summarizer.name == "extractive"


def test_bad_spec_fails_at_construction() -> None:
    with pytest.raises(kompakt.ConfigError, match="unknown model spec"):
        kompakt.Summarize(summarizer="gpt-4o")


def test_non_model_is_refused_with_the_parameter_named() -> None:
    with pytest.raises(kompakt.ConfigError, match="`summarizer` must be a ChatModel"):
        as_model(42)  # type: ignore[arg-type]


def test_none_and_models_pass_through() -> None:
    model = kompakt.ScriptedModel(["ok"])
    assert as_model(None) is None
    assert as_model(model) is model
