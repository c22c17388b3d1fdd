"""Writing transcripts back: the source's own format and envelope, atomically."""

from __future__ import annotations

import errno
import json
import os
import re
import secrets
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kompakt.errors import InputError, KompaktError, RuntimeFailure
from kompakt.messages import Message

__all__ = ["render_document", "write_atomic"]


def render_document(messages: Sequence[Message], source: Any, to: str | None = None) -> str:
    """Text of the output document: format `to`, or the source's own format and envelope."""
    from kompakt.formats import Conversation, dump

    fmt = to or getattr(source, "format", None) or "openai"
    doc: Any = list(messages)
    if to is None and isinstance(source, Conversation):
        doc = source.with_messages(messages)  # keeps the envelope and records (`exit`)
    data = dump(doc, format=fmt)
    if isinstance(data, str):
        text = data if data.endswith("\n") else data + "\n"
    else:
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    return _escape_unsafe(text)


def _escape_unsafe(text: str) -> str:
    """JSON text with each lone surrogate (read from a ``\\ud800`` escape), C1 control
    and bidi control escaped again: UTF-8 cannot encode a lone surrogate raw, and the
    others would act on a terminal the document is printed to. They only occur inside
    JSON strings, where the escape means the same character."""
    if _UNSAFE.search(text) is None:
        return text
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


_UNSAFE = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")


def write_atomic(path: Path, text: str) -> None:
    """Write via a temporary file in the same folder and a rename: never half-written.

    The file gets the mode a plain ``open()`` gives (``0o666`` less the umask), not
    the private ``0o600`` of `tempfile.mkstemp`. A target that exists and is not a
    regular file (``/dev/null``, a FIFO, a terminal) is written to directly: renaming
    over it would replace the device with a file. A failure names `path`, never the
    temporary file: `InputError` when the path cannot be written (missing permission,
    a folder, a read-only or virtual filesystem), `RuntimeFailure` otherwise.
    """
    try:
        _write(path, text)
    except OSError as exc:
        raise _write_error(exc, path) from None


def _write(path: Path, text: str) -> None:
    if path.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a directory")
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


_USER_ERRNOS = frozenset(
    {
        errno.EACCES,
        errno.EPERM,
        errno.ENOENT,
        errno.EISDIR,
        errno.ENOTDIR,
        errno.EEXIST,
        errno.EROFS,
        errno.EINVAL,
        errno.EXDEV,
    }
)


def _write_error(exc: OSError, path: Path) -> KompaktError:
    reason = (exc.strerror or type(exc).__name__).lower()
    if isinstance(exc, NotADirectoryError | FileExistsError):
        reason = "a parent of it is a file, not a folder"
    elif isinstance(exc, FileNotFoundError) and path.parent.is_dir():
        reason = "its folder takes no new files (the output is written next to it, then renamed)"
    message = f"cannot write {str(path)!r}: {reason}"
    if exc.errno in _USER_ERRNOS:
        return InputError(message)
    return RuntimeFailure(message)


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
