"""Transcript text made safe for a terminal: every control character shown, never obeyed.

A transcript can hold anything a tool printed or a model wrote, including terminal
escape sequences: an ANSI CSI that recolours or clears the screen, an OSC 52 that
writes the clipboard, a carriage return that overwrites a line, bidirectional
overrides that reorder what is shown. Everything the CLI prints from a transcript
goes through `printable`, which replaces each such character with a visible escape
(``\\x1b``, ``\\u202e``), so the text reads as it is and the terminal does nothing.

>>> printable("ok\\x1b]52;c;ZXZpbA==\\x07 done")
'ok\\\\x1b]52;c;ZXZpbA==\\\\x07 done'
>>> printable("two\\nlines", newlines=False)
'two\\\\nlines'
"""

from __future__ import annotations

import re

__all__ = ["printable"]


def _escape(cp: int) -> str:
    return f"\\x{cp:02x}" if cp < 0x100 else f"\\u{cp:04x}"


_UNSAFE_RANGES = (
    (0x00, 0x08),
    (0x0B, 0x1F),  # C0 controls but tab and newline: ESC, BEL, CR, backspace, ...
    (0x7F, 0x9F),  # DEL and the C1 controls (0x9b is an 8-bit CSI)
    (0x061C, 0x061C),  # Arabic letter mark
    (0x200E, 0x200F),  # left-to-right / right-to-left marks
    (0x2028, 0x202E),  # line and paragraph separators, bidi embeddings and overrides
    (0x2066, 0x2069),  # bidi isolates
    (0xD800, 0xDFFF),  # lone surrogates: a UTF-8 terminal cannot even receive them
)
_UNSAFE = re.compile("[" + "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in _UNSAFE_RANGES) + "]")
_UNSAFE_OR_NEWLINE = re.compile(_UNSAFE.pattern[:-1] + "\\t\\n]")
_TABLE = {chr(cp): _escape(cp) for a, b in _UNSAFE_RANGES for cp in range(a, b + 1)}
_TABLE["\t"] = "\\t"
_TABLE["\n"] = "\\n"


def printable(text: str, *, newlines: bool = True) -> str:
    """`text` with every control character, escape sequence introducer, bidi control
    and lone surrogate replaced by a visible escape; tabs and newlines are kept unless
    `newlines` is False (one-line cells)."""
    pattern = _UNSAFE if newlines else _UNSAFE_OR_NEWLINE
    if pattern.search(text) is None:  # the common case: nothing to escape, no copy
        return text
    return pattern.sub(lambda m: _TABLE[m.group()], text)
