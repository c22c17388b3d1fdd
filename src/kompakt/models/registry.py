"""Models from a short string, and from the environment.

======================================  ==============================================
spec                                    model
======================================  ==============================================
``extractive``                          `ExtractiveModel` (no weights, no key, no cost)
``local``                               `LocalModel` with SmolLM2-135M (extra [local])
``local:/path/model.gguf``              `LocalModel` with that GGUF file
``openai:gpt-4.1-mini``                 `OpenAIModel` (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``)
``openai:qwen3@http://host:8080/v1``    `OpenAIModel` on that server (Ollama, vLLM, ...)
``anthropic:claude-haiku-4-5``          `AnthropicModel` (``ANTHROPIC_API_KEY``)
======================================  ==============================================

``KOMPAKT_MODEL`` names the agent's model, ``KOMPAKT_SUMMARIZER`` the summarizer's:
a summarizing strategy given no summarizer (neither its own nor the compaction's) asks
the model ``KOMPAKT_SUMMARIZER`` names, else uses the extractive digest
(`default_summarizer`).

>>> model_from_string("extractive").name
'extractive'
>>> m = model_from_string("openai:qwen3@http://localhost:8080/v1")
>>> m.name, m.base_url
('openai:qwen3', 'http://localhost:8080/v1')
"""

from __future__ import annotations

import os
from typing import Any

from kompakt.errors import ConfigError
from kompakt.models.base import ChatModel

__all__ = [
    "as_model",
    "default_summarizer",
    "model_from_env",
    "model_from_string",
    "summarizer_from_env",
]

SPEC_FORMS = (
    "extractive",
    "local",
    "local:/path/model.gguf",
    "openai:<model>",
    "openai:<model>@<base_url>",
    "anthropic:<model>",
)


def model_from_string(spec: str | None = None, **options: Any) -> ChatModel:
    """The model a spec string names (None: ``KOMPAKT_MODEL``, else ``extractive``).

    `options` go to the model's constructor (``timeout=30``, ``n_ctx=4096``...).
    """
    if spec is None:
        spec = os.environ.get("KOMPAKT_MODEL") or "extractive"
    text = spec.strip()
    provider, _, rest = text.partition(":")
    provider = provider.lower()
    if provider == "extractive" and not rest:
        from kompakt.models.extractive import ExtractiveModel

        return ExtractiveModel(**options)
    if provider == "local":
        from kompakt.models.local import LocalModel

        return LocalModel(rest or None, **options)
    if provider == "openai" and rest:
        from kompakt.models.openai import OpenAIModel

        model, _, base_url = rest.partition("@")
        if not model:
            raise ConfigError(f"model spec {spec!r} names no model: write openai:<model>")
        return OpenAIModel(model, base_url=base_url or options.pop("base_url", None), **options)
    if provider == "anthropic" and rest:
        from kompakt.models.anthropic import AnthropicModel

        return AnthropicModel(rest, **options)
    raise ConfigError(f"unknown model spec {spec!r}: use one of {', '.join(SPEC_FORMS)}")


def as_model(model: ChatModel | str | None, parameter: str = "summarizer") -> ChatModel | None:
    """A model object from a model or a spec string (None stays None).

    Every ``summarizer=`` / ``model=`` takes either, so a typo fails where it is written,
    not at the first compaction.

    >>> as_model("extractive").name
    'extractive'
    """
    if model is None or not isinstance(model, str):
        if model is not None and not callable(getattr(model, "chat", None)):
            raise ConfigError(
                f"`{parameter}` must be a ChatModel or a spec such as 'openai:gpt-4.1-mini', "
                f"got {model!r}"
            )
        return model
    return model_from_string(model)


def model_from_env(**options: Any) -> ChatModel:
    """The agent's model: ``KOMPAKT_MODEL`` (default ``extractive``)."""
    return model_from_string(None, **options)


def summarizer_from_env(**options: Any) -> ChatModel | None:
    """The summarizer ``KOMPAKT_SUMMARIZER`` names, or None when it is unset."""
    spec = os.environ.get("KOMPAKT_SUMMARIZER")
    return model_from_string(spec, **options) if spec else None


_DEFAULTS: dict[str, ChatModel] = {}


def default_summarizer() -> ChatModel | None:
    """The summarizer of a strategy and compaction that name none: the model
    ``KOMPAKT_SUMMARIZER`` names (built once per spec, so a local model loads once),
    or None, which means the extractive digest (also for ``extractive``).

    >>> import os
    >>> os.environ.pop("KOMPAKT_SUMMARIZER", None) and None
    >>> default_summarizer() is None
    True
    """
    spec = (os.environ.get("KOMPAKT_SUMMARIZER") or "").strip()
    if not spec or spec.lower() == "extractive":
        return None
    if spec not in _DEFAULTS:
        try:
            _DEFAULTS[spec] = model_from_string(spec)
        except ConfigError as exc:
            raise ConfigError(f"KOMPAKT_SUMMARIZER: {exc}") from None
    return _DEFAULTS[spec]
