"""Reading transcript content safely: a path is a path, text is text.

`read_file` opens regular files only (never a device, a FIFO, a socket or a folder),
reads at most `MAX_BYTES`, and names the caller's own path in every error.
`read_stream` reads a stream (stdin) under the same limit. `parse_json` refuses a
document nested deeper than `MAX_DEPTH` with a `FormatError`, instead of a
`RecursionError` from the parser or from whatever walks the document later.

>>> parse_json('{"a": [1, 2]}', "text")
{'a': [1, 2]}
>>> parse_json("[" * 1000 + "]" * 1000, "text")
Traceback (most recent call last):
...
kompakt.errors.FormatError: text is nested deeper than 100 levels: not a transcript kompakt reads
"""

from __future__ import annotations

import json
import os
import stat
from typing import Any, BinaryIO

from kompakt.errors import FormatError

__all__ = ["MAX_BYTES", "MAX_DEPTH", "check_depth", "decode", "parse_json", "read_file"]

MAX_BYTES = 512 * 1024 * 1024
"""The largest file or stream `load` reads (512 MiB); pass ``max_bytes=`` for more."""
MAX_DEPTH = 100
"""The deepest JSON nesting kompakt reads: transcripts nest a dozen levels at most."""

_CHUNK = 1 << 20


def read_file(path: str | os.PathLike[str], *, max_bytes: int = MAX_BYTES) -> str:
    """The UTF-8 text of the regular file at `path` (a byte-order mark is dropped).

    >>> try:
    ...     read_file("/dev/zero")
    ... except FormatError as e:
    ...     print(e)
    not a regular file: '/dev/zero' (devices, FIFOs and sockets are never read)
    """
    shown = os.fspath(path)
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused just below
        fd = os.open(
            shown, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
        )
    except OSError as exc:
        raise _os_error(exc, shown) from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise FormatError(f"expected a file, got a directory: {shown!r}")
        if not stat.S_ISREG(mode):
            raise FormatError(
                f"not a regular file: {shown!r} (devices, FIFOs and sockets are never read)"
            )
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = _read_limited(f, max_bytes, repr(shown))
    except OSError as exc:
        raise _os_error(exc, shown) from None
    finally:
        os.close(fd)
    return decode(data, repr(shown))


def read_stream(stream: BinaryIO, what: str, *, max_bytes: int = MAX_BYTES) -> str:
    """The UTF-8 text of a binary stream such as ``sys.stdin.buffer``, at most `max_bytes`."""
    return decode(_read_limited(stream, max_bytes, what), what)


def _read_limited(f: BinaryIO, max_bytes: int, what: str) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = f.read(min(_CHUNK, max_bytes + 1 - size))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > max_bytes:
            raise FormatError(
                f"{what} is larger than the {max_bytes:,}-byte limit: pass max_bytes= "
                "to read it, or split the transcript"
            )


def _os_error(exc: OSError, path: str) -> FormatError:
    shown = repr(_short(path))
    hint = ""
    if path.lstrip().startswith(("{", "[")) or "\n" in path:
        hint = " (this looks like JSON text: parse content with kompakt.loads)"
    if isinstance(exc, FileNotFoundError):
        return FormatError(f"file not found: {shown}{hint}")
    if isinstance(exc, IsADirectoryError):
        return FormatError(f"expected a file, got a directory: {shown}")
    if isinstance(exc, PermissionError):
        return FormatError(f"permission denied: {shown}")
    return FormatError(f"cannot read {shown}: {(exc.strerror or str(exc)).lower()}{hint}")


def decode(data: bytes, what: str) -> str:
    """`data` as UTF-8 text, without a leading byte-order mark."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise FormatError(f"{what} is not UTF-8 text: {exc}") from None


def parse_json(text: str, what: str) -> Any:
    """The JSON value of `text`, nested at most `MAX_DEPTH` levels.

    Raises `ValueError` (a `json.JSONDecodeError`) for text that is not JSON, and
    `FormatError` for a document nested too deep.
    """
    try:
        value = json.loads(text)
    except RecursionError:
        raise _too_deep(what) from None
    check_depth(value, what)
    return value


def check_depth(value: Any, what: str, limit: int = MAX_DEPTH) -> None:
    """Refuse a parsed document nested deeper than `limit` (one pass over its containers).

    >>> check_depth({"a": [{"b": 1}]}, "doc", limit=3)
    >>> check_depth({"a": [{"b": [1]}]}, "doc", limit=3)
    Traceback (most recent call last):
    ...
    kompakt.errors.FormatError: doc is nested deeper than 3 levels: not a transcript kompakt reads
    """
    if not isinstance(value, dict | list | tuple):
        return
    stack: list[tuple[Any, int]] = [(value, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        node, depth = pop()
        if depth > limit:
            raise _too_deep(what, limit)
        for child in node.values() if isinstance(node, dict) else node:
            if isinstance(child, dict | list | tuple):
                push((child, depth + 1))


def _too_deep(what: str, limit: int = MAX_DEPTH) -> FormatError:
    return FormatError(
        f"{what} is nested deeper than {limit} levels: not a transcript kompakt reads"
    )


def _short(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
