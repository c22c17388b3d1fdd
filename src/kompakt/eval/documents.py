"""Moved to `kompakt.formats.documents` (the command line writes them too); kept for imports."""

from kompakt.formats.documents import render_document, write_atomic

__all__ = ["render_document", "write_atomic"]
