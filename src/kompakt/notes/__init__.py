"""Notes without a model: what a conversation says that is worth keeping.

A leaf of the package: it depends on messages and tokens only. `digest` turns a span
of messages (and any note written before) into one note within a token limit; the
salience model, the units it ranks and the ledger of standing instructions are its
parts, each usable alone.

>>> from kompakt.messages import Message
>>> print(digest([Message.user("From now on, answer in French."), Message.user("ok")], 60))
## Standing instructions (the user's words)
- From now on, answer in French.
"""

from kompakt.notes.digest import (
    NOTE_HEADER,
    SECTIONS,
    Note,
    build_note,
    clamp_tokens,
    digest,
    digest_items,
    is_note,
    key_lines,
    rolled_note,
    split_ledger,
    standing_instructions,
    with_ledger,
)
from kompakt.notes.ledger import Ledger, drop_superseded, superseded, supersessions
from kompakt.notes.salience import Salience, is_filler, is_instruction
from kompakt.notes.units import Unit, split_units

__all__ = [
    "NOTE_HEADER",
    "SECTIONS",
    "Ledger",
    "Note",
    "Salience",
    "Unit",
    "build_note",
    "clamp_tokens",
    "digest",
    "digest_items",
    "drop_superseded",
    "is_filler",
    "is_instruction",
    "is_note",
    "key_lines",
    "rolled_note",
    "split_ledger",
    "split_units",
    "standing_instructions",
    "superseded",
    "supersessions",
    "with_ledger",
]
