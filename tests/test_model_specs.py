"""Every `summarizer=` / `model=` takes a model object or a spec string, checked where written."""

from __future__ import annotations

import sys

import pytest

import kompakt
from kompakt.models.registry import as_model


def test_spec_strings_become_models() -> None:
    s = kompakt.Summarize(summarizer="openai:gpt-4.1-mini@http://localhost:9/v1")
    assert s.summarizer is not None and s.summarizer.name.startswith("openai:gpt-4.1-mini")
    f = kompakt.FactRetrieval(summarizer="openai:gpt-4.1-mini@http://localhost:9/v1")
    assert f.summarizer is not None and f.summarizer.name.startswith("openai:gpt-4.1-mini")


def test_the_extractive_spec_is_the_digest_itself() -> None:
    """No request is built for the model-free summarizer: the strategy runs the digest."""
    s = kompakt.Summarize(summarizer="extractive")
    assert isinstance(s.summarizer, kompakt.DigestSummarizer)
    assert isinstance(
        kompakt.FactRetrieval(summarizer="extractive").summarizer, kompakt.DigestSummarizer
    )


def test_bad_spec_fails_at_construction() -> None:
    with pytest.raises(kompakt.ConfigError, match="unknown model spec"):
        kompakt.Summarize(summarizer="gpt-4o")


@pytest.mark.parametrize(
    ("spec", "sdk", "adapter"),
    [
        ("openai:gpt-4.1-mini", "openai", "OpenAIModel"),
        ("anthropic:x", "anthropic", "AnthropicModel"),
    ],
)
def test_a_provider_spec_without_its_sdk_names_the_extra(
    spec: str, sdk: str, adapter: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, sdk, None)  # how an uninstalled package looks to find_spec
    with pytest.raises(kompakt.MissingDependency) as caught:
        kompakt.model_from_string(spec)
    assert str(caught.value) == f'{adapter} needs the [{sdk}] extra: pip install "kompakt[{sdk}]"'
    assert caught.value.extra == sdk


def test_non_model_is_refused_with_the_parameter_named() -> None:
    with pytest.raises(kompakt.ConfigError, match="`summarizer` must be a ChatModel"):
        as_model(42)  # type: ignore[arg-type]


def test_none_and_models_pass_through() -> None:
    model = kompakt.ScriptedModel(["ok"])
    assert as_model(None) is None
    assert as_model(model) is model


def test_compactor_and_apply_compaction_take_spec_strings() -> None:
    compactor = kompakt.Compactor(
        trigger=kompakt.Always(), strategy=kompakt.Truncation(), summarizer="extractive"
    )
    assert compactor.summarizer is not None and compactor.summarizer.name == "extractive"
    msgs = [kompakt.Message.user("a" * 400), kompakt.Message.user("b")]
    out = kompakt.apply_compaction(msgs, strategy=kompakt.Budgeted(40), summarizer="extractive")
    assert out[-1].text == "b"


def test_agent_takes_a_spec_string_or_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert kompakt.Agent("extractive").model.name == "extractive"
    monkeypatch.setenv("KOMPAKT_MODEL", "extractive")
    assert kompakt.Agent().model.name == "extractive"
    with pytest.raises(kompakt.ConfigError, match="`model` must be a ChatModel"):
        kompakt.Agent(42)  # type: ignore[arg-type]


def test_config_tokenizer_takes_chars_per_token() -> None:
    compactor = kompakt.Compactor.from_config(
        {"tokenizer": "chars:3", "trigger": {"tokens": 100}, "strategy": [{"name": "truncation"}]}
    )
    assert isinstance(compactor.tokenizer, kompakt.CharEstimator)
    assert compactor.tokenizer.chars_per_token == 3.0
