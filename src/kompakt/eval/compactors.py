"""Moved to `kompakt.presets` (the command line and serve use them too); kept for imports."""

from kompakt.presets import (
    DEFAULT_STRATEGY,
    DEFAULT_TARGET,
    STRATEGIES,
    Compacted,
    budget_warning,
    compact_messages,
    compact_once,
    compactor_from_config,
    load_model,
    load_tokenizer,
    make_compactor,
    make_strategy,
    registry_name,
)

__all__ = [
    "DEFAULT_STRATEGY",
    "DEFAULT_TARGET",
    "STRATEGIES",
    "Compacted",
    "budget_warning",
    "compact_messages",
    "compact_once",
    "compactor_from_config",
    "load_model",
    "load_tokenizer",
    "make_compactor",
    "make_strategy",
    "registry_name",
]
