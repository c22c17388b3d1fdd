"""`kompakt serve`: a compacting proxy in front of OpenAI- and Anthropic-compatible APIs.

Point an agent at it (``OPENAI_BASE_URL=http://127.0.0.1:8787/v1`` or
``ANTHROPIC_BASE_URL=http://127.0.0.1:8787``) and every request's conversation is kept
inside the budget on its way upstream; the originals go to the store, and
``/kompakt/`` shows what happened. Needs ``pip install "kompakt[serve]"``.

>>> from kompakt.serve import ServeConfig, create_app
>>> app = create_app(ServeConfig(openai_upstream="http://127.0.0.1:8080/v1",
...                              budget=8_000, store=":memory:"))
>>> type(app.state.proxy).__name__
'Proxy'
"""

from __future__ import annotations

from typing import Any

from kompakt.errors import MissingDependency

try:
    import httpx  # noqa: F401
    import starlette  # noqa: F401
except ImportError as e:  # pragma: no cover - the extra is missing
    raise MissingDependency("kompakt serve", "serve") from e

from kompakt.serve.app import Proxy, create_app
from kompakt.serve.config import ServeConfig

__all__ = ["Proxy", "ServeConfig", "create_app", "run"]


def run(config: ServeConfig, **uvicorn_options: Any) -> None:
    """Serve `config` with uvicorn until interrupted."""
    try:
        import uvicorn
    except ImportError as e:
        raise MissingDependency("kompakt serve", "serve") from e
    uvicorn.run(create_app(config), host=config.host, port=config.port, **uvicorn_options)
