"""`ServeConfig`: everything `kompakt serve` is told, with safe defaults.

>>> config = ServeConfig(openai_upstream="http://127.0.0.1:8080/v1",
...                      anthropic_upstream="https://api.anthropic.com", budget=8_000)
>>> config.host, config.port, config.api_for("/v1/messages")
('127.0.0.1', 8787, 'anthropic')
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from kompakt.errors import ConfigError

if TYPE_CHECKING:
    from kompakt.compactor import Compactor
    from kompakt.store.base import HistoryStore

__all__ = ["Api", "ServeConfig"]

Api: TypeAlias = Literal["openai", "anthropic", "responses"]
"""The API a request speaks (the OpenAI upstream serves chat completions and Responses)."""

DEFAULT_TARGET = 0.75
"""Compact down to this share of the budget: trigger high, target low keeps the prefix
stable for many requests between compactions."""


@dataclass
class ServeConfig:
    """What the proxy forwards to, how it compacts, where it keeps originals, its limits.

    Give `budget` (tokens, with `target` the share to compact down to), or `compactor`:
    a function returning a fresh `Compactor` (one per conversation), or a config file
    (`config`, the ``kompakt.toml`` format of `Compactor.from_config`).
    """

    openai_upstream: str | None = None
    """Base URL of the OpenAI-compatible upstream, ``/v1`` included (default:
    ``OPENAI_BASE_URL``)."""
    anthropic_upstream: str | None = None
    """Base URL of the Anthropic upstream, without ``/v1`` (default: ``ANTHROPIC_BASE_URL``)."""
    budget: int | None = None
    target: float = DEFAULT_TARGET
    config: Path | Mapping[str, Any] | None = None
    compactor: Callable[[], Compactor] | None = None
    store: HistoryStore | str | Path | None = "kompakt-serve.db"
    """A store, a SQLite path, ``":memory:"``, or a ``postgresql://`` URL."""
    host: str = "127.0.0.1"
    port: int = 8787
    api_key: str | None = None
    """When set, clients must present it (``X-Kompakt-Key``, or as their bearer /
    ``x-api-key``, which is then not forwarded)."""
    max_body_bytes: int = 32 * 1024 * 1024
    timeout: float = 600.0
    """Seconds to wait on the upstream (connect, each read, each write)."""
    max_timeline: int = 500
    """Events kept per conversation for the page."""
    max_conversations: int = 256
    """Conversations kept in memory, the least recently used let go first; one let go
    is rebuilt from the store when a request continues it."""
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ), repr=False)

    def __post_init__(self) -> None:
        self.openai_upstream = self.openai_upstream or self.env.get("OPENAI_BASE_URL")
        self.anthropic_upstream = self.anthropic_upstream or self.env.get("ANTHROPIC_BASE_URL")
        for name in ("openai_upstream", "anthropic_upstream"):
            url = getattr(self, name)
            if url is not None and not url.startswith(("http://", "https://")):
                raise ConfigError(f"`{name}` must be an http(s) URL, got {url!r}")
        if not (self.openai_upstream or self.anthropic_upstream):
            raise ConfigError(
                "no upstream: give --openai-upstream or --anthropic-upstream "
                "(or set OPENAI_BASE_URL / ANTHROPIC_BASE_URL)"
            )
        given = [n for n in ("budget", "config", "compactor") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ConfigError(
                f"give exactly one of --budget or --config (got {', '.join(given) or 'neither'})"
            )
        if self.budget is not None and self.budget < 1:
            raise ConfigError(f"`budget` must be at least 1 token, got {self.budget!r}")
        if not 0 < self.target <= 1:
            raise ConfigError(f"`target` must be in (0, 1], got {self.target!r}")
        if self.max_body_bytes < 1:
            raise ConfigError(f"`max_body_bytes` must be > 0, got {self.max_body_bytes!r}")
        if self.max_conversations < 1:
            raise ConfigError(
                f"`max_conversations` must be at least 1, got {self.max_conversations!r}"
            )
        if self.timeout <= 0:
            raise ConfigError(f"`timeout` must be > 0 seconds, got {self.timeout!r}")

    def upstream(self, api: Api) -> str | None:
        """The upstream base URL for `api` (None when not configured)."""
        return self.anthropic_upstream if api == "anthropic" else self.openai_upstream

    def api_for(
        self, path: str, headers: Mapping[str, str] | None = None
    ) -> Literal["openai", "anthropic"]:
        """Which upstream a request to `path` goes to: Anthropic for ``/v1/messages...``
        or a request carrying ``anthropic-version``, else OpenAI; the only one given wins."""
        if not self.anthropic_upstream:
            return "openai"
        if not self.openai_upstream:
            return "anthropic"
        if path.rstrip("/").startswith("/v1/messages"):
            return "anthropic"
        if headers is not None and "anthropic-version" in headers:
            return "anthropic"
        return "openai"

    def make_compactor(self) -> Compactor:
        """A fresh compactor for one conversation."""
        if self.compactor is not None:
            return self.compactor()
        if self.config is not None:
            from kompakt.presets import compactor_from_config

            return compactor_from_config(self.config)
        from kompakt.presets import make_compactor

        assert self.budget is not None  # checked in __post_init__
        return make_compactor("budgeted", self.budget, target=self.target)

    def open_store(self) -> HistoryStore:
        """The store originals go to."""
        store = self.store
        if store is None or store == ":memory:":
            from kompakt.store import MemoryStore

            return MemoryStore()
        if isinstance(store, (str, Path)):
            text = str(store)
            if text.startswith(("postgresql://", "postgres://")):
                from kompakt.store import PostgresStore

                return PostgresStore(text)
            from kompakt.store import SQLiteStore

            return SQLiteStore(text)
        return store
