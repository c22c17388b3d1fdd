"""What a summarizing model is sent: moved to `kompakt.summarizers.prompt` (the model
summarizer builds the request now); the names stay importable from here."""

from __future__ import annotations

from kompakt.summarizers.prompt import (
    DEFAULT_TEMPLATE,
    SYSTEM_PROMPT,
    Rejected,
    bounded_chunks,
    clamp_message,
    fence,
    render_transcript,
    strip_header,
    summary_request,
)

__all__ = [
    "DEFAULT_TEMPLATE",
    "SYSTEM_PROMPT",
    "Rejected",
    "bounded_chunks",
    "clamp_message",
    "fence",
    "render_transcript",
    "strip_header",
    "summary_request",
]
