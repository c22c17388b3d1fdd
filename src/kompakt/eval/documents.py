"""Writing transcripts back: the source's own format and envelope, atomically."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kompakt.messages import Message

__all__ = ["render_document", "write_atomic"]


def render_document(messages: Sequence[Message], source: Any, to: str | None = None) -> str:
    """Text of the output document: format `to`, or the source's own format and envelope."""
    from kompakt.formats import Conversation, dump

    fmt = to or getattr(source, "format", None) or "openai"
    doc: Any = list(messages)
    if to is None and isinstance(source, Conversation):
        doc = source.with_messages(messages)  # keeps the envelope and records (`exit`)
    data = dump(doc, fmt)
    if isinstance(data, str):
        return data if data.endswith("\n") else data + "\n"
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def write_atomic(path: Path, text: str) -> None:
    """Write via a temporary file in the same folder and a rename: never half-written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
