"""Writing transcripts back: the source's own format and envelope, atomically."""

from __future__ import annotations

import json
import os
import re
import secrets
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
        text = data if data.endswith("\n") else data + "\n"
    else:
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    return _escape_surrogates(text)


def _escape_surrogates(text: str) -> str:
    """JSON text with each lone surrogate (read from a ``\\ud800`` escape) escaped again:
    UTF-8 cannot encode it raw, and it only occurs inside JSON strings."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text


_SURROGATE = re.compile("[\ud800-\udfff]")


def write_atomic(path: Path, text: str) -> None:
    """Write via a temporary file in the same folder and a rename: never half-written.

    The file gets the mode a plain ``open()`` gives (``0o666`` less the umask), not
    the private ``0o600`` of `tempfile.mkstemp`. A target that exists and is not a
    regular file (``/dev/null``, a FIFO, a terminal) is written to directly: renaming
    over it would replace the device with a file.
    """
    if path.exists() and not path.is_file():
        with path.open("w", encoding="utf-8") as f:
            f.write(text)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _create_temp(path)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _create_temp(path: Path) -> tuple[int, Path]:
    """A new, unique temporary file next to `path`, opened for writing (mode 0o666 less
    the umask: the kernel applies the umask, so it is never read or changed here)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    while True:
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:  # pragma: no cover - 48 random bits
            continue
