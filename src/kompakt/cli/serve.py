"""`kompakt serve`: run the compacting proxy (see `kompakt.serve`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kompakt.cli.common import err_console
from kompakt.cli.errors import handled
from kompakt.errors import ConfigError

__all__ = ["serve_command"]


def serve_command(
    openai_upstream: Annotated[
        str | None,
        typer.Option(
            "--openai-upstream",
            help="OpenAI-compatible upstream, /v1 included (default: $OPENAI_BASE_URL).",
        ),
    ] = None,
    anthropic_upstream: Annotated[
        str | None,
        typer.Option(
            "--anthropic-upstream",
            help="Anthropic upstream, without /v1 (default: $ANTHROPIC_BASE_URL).",
        ),
    ] = None,
    budget: Annotated[
        int | None, typer.Option("--budget", help="Token budget per request (compact above it).")
    ] = None,
    target: Annotated[
        float,
        typer.Option("--target", help="Compact down to this share of --budget."),
    ] = 0.75,
    config: Annotated[
        Path | None,
        typer.Option("--config", help="A kompakt.toml compactor config (instead of --budget)."),
    ] = None,
    store: Annotated[
        str,
        typer.Option(
            "--store", help="SQLite file, :memory:, or a postgresql:// URL for the originals."
        ),
    ] = "kompakt-serve.db",
    host: Annotated[str, typer.Option("--host", help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port to bind.")] = 8787,
    api_key: Annotated[
        str | None,
        typer.Option(
            "--api-key",
            envvar="KOMPAKT_SERVE_KEY",
            help="Key clients must present (X-Kompakt-Key, or as their bearer / x-api-key).",
        ),
    ] = None,
    max_body_bytes: Annotated[
        int, typer.Option("--max-body-bytes", help="Largest request body accepted.")
    ] = 32 * 1024 * 1024,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds to wait on the upstream.")
    ] = 600.0,
    max_conversations: Annotated[
        int,
        typer.Option(
            "--max-conversations",
            help="Conversations kept in memory (least recently used let go; rebuilt from "
            "--store when continued).",
        ),
    ] = 256,
    log_level: Annotated[str, typer.Option("--log-level", help="uvicorn log level.")] = "info",
) -> None:
    """Run a compacting proxy: point agents at it with OPENAI_BASE_URL / ANTHROPIC_BASE_URL.

    Example: kompakt serve --openai-upstream http://127.0.0.1:8080/v1 --budget 6000

    Example: OPENAI_BASE_URL=http://127.0.0.1:8787/v1 my-agent   (then open /kompakt/)
    """
    with handled():
        try:
            from kompakt.serve import ServeConfig, run
        except ImportError as e:  # pragma: no cover
            raise ConfigError('kompakt serve needs: pip install "kompakt[serve]"') from e
        settings = ServeConfig(
            openai_upstream=openai_upstream,
            anthropic_upstream=anthropic_upstream,
            budget=budget,
            target=target,
            config=config,
            store=store,
            host=host,
            port=port,
            api_key=api_key,
            max_body_bytes=max_body_bytes,
            timeout=timeout,
            max_conversations=max_conversations,
        )
        if host not in ("127.0.0.1", "localhost", "::1") and api_key is None:
            err_console.print(
                f"warning: listening on {host} without --api-key: anyone who can reach it "
                "can use your upstream through it",
                style="yellow",
                highlight=False,
            )
        err_console.print(
            f"kompakt serve on http://{host}:{port}  (page: http://{host}:{port}/kompakt/)",
            highlight=False,
        )
        run(settings, log_level=log_level)
