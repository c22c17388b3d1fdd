"""What a provider's reported usage says a compaction it made costs.

A provider's compaction item is opaque (OpenAI's is encrypted) or its summary was written
by the provider's tokenizer (Anthropic's), so kompakt's estimate of it can be far off.
When the response that made it reports usage, that count is taken instead: the message
gets ``metadata["tokens"]``, which `MessageIndex` counts in place of its estimate.

* Anthropic: ``usage.iterations`` lists each sampling step of the request; a
  ``compaction`` step's ``output_tokens`` is the summary. The assistant message holding
  the ``compaction`` block (and the reply written after it) costs every step's output.
* OpenAI ``/responses/compact``: the answer's whole output is the ``compaction`` item
  (beside the input messages it keeps), so it costs ``output_tokens`` less the
  reasoning tokens.

>>> usage = {"input_tokens": 23000, "output_tokens": 1000, "iterations": [
...     {"type": "compaction", "input_tokens": 180000, "output_tokens": 3500},
...     {"type": "message", "input_tokens": 23000, "output_tokens": 1000}]}
>>> compaction_tokens(usage), reply_tokens(usage)
(3500, 4500)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kompakt.messages import Message

__all__ = ["compact_output_tokens", "compaction_tokens", "reply_tokens", "with_tokens"]


def compaction_tokens(usage: Any) -> int | None:
    """Tokens of the compaction summaries an Anthropic response made (its ``compaction``
    iterations' output), or None when its usage names none."""
    steps = _iterations(usage)
    counts = [_int(s.get("output_tokens")) for s in steps if s.get("type") == "compaction"]
    if not counts or any(c is None for c in counts):
        return None
    return sum(c for c in counts if c is not None)


def reply_tokens(usage: Any) -> int | None:
    """Tokens of an Anthropic reply that compacted: the output of every iteration (the
    summary and what was written after it), or None without a compaction iteration."""
    if compaction_tokens(usage) is None:
        return None
    counts = [_int(s.get("output_tokens")) for s in _iterations(usage)]
    return None if any(c is None for c in counts) else sum(c for c in counts if c is not None)


def compact_output_tokens(usage: Any) -> int | None:
    """Tokens of the ``compaction`` item an OpenAI ``/responses/compact`` answer made:
    its ``output_tokens`` less the reasoning tokens (None when usage does not say).

    >>> compact_output_tokens({"input_tokens": 139, "output_tokens": 438,
    ...                        "output_tokens_details": {"reasoning_tokens": 64}})
    374
    """
    if not isinstance(usage, Mapping):
        return None
    out = _int(usage.get("output_tokens"))
    if out is None:
        return None
    details = usage.get("output_tokens_details")
    reasoning = _int(details.get("reasoning_tokens")) if isinstance(details, Mapping) else None
    return max(out - (reasoning or 0), 0)


def with_tokens(message: Message, tokens: int | None) -> Message:
    """`message` counted at `tokens` (``metadata["tokens"]``), or as it is for None.

    >>> with_tokens(Message.assistant("summary"), 812).metadata
    {'tokens': 812}
    """
    if tokens is None:
        return message
    return message.evolve(metadata={**message.metadata, "tokens": tokens})


def _iterations(usage: Any) -> list[Mapping[str, Any]]:
    steps = usage.get("iterations") if isinstance(usage, Mapping) else None
    return [s for s in steps if isinstance(s, Mapping)] if isinstance(steps, list) else []


def _int(value: Any) -> int | None:
    return value if type(value) is int and value >= 0 else None
