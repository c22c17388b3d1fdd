"""Summarizers: what turns a span of messages (and the note written before) into a note.

A summarizing strategy chooses the span, fits the note to the budget and places it; a
`Summarizer` only writes the text. Two kinds ship with kompakt: `ModelSummarizer`, over
any `ChatModel` (it frames the request, asks with a timeout, checks the answer and falls
back to the digest), and `DigestSummarizer`, the model-free digest of `kompakt.notes`.
Anything with the same `summarize` method works too.

>>> import asyncio
>>> from kompakt.messages import Message
>>> from kompakt.summarizers import DigestSummarizer
>>> from kompakt.tokens import CharEstimator
>>> text = asyncio.run(DigestSummarizer().summarize(
...     [Message.user("From now on, answer in French.")], limit=60, tokenizer=CharEstimator()))
>>> print(text)
## Standing instructions (the user's words)
- From now on, answer in French.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kompakt import _lazy

# public name -> module that defines it (the one list: __all__ and the imports below follow it)
_EXPORTS: dict[str, str] = {
    "Summarizer": "kompakt.summarizers.base",
    "Written": "kompakt.summarizers.base",
    "DigestSummarizer": "kompakt.summarizers.digest",
    "ModelSummarizer": "kompakt.summarizers.model",
}

__all__ = list(_EXPORTS)

if TYPE_CHECKING:  # what type checkers and IDEs read; a test keeps it equal to _EXPORTS
    from kompakt.summarizers.base import Summarizer as Summarizer
    from kompakt.summarizers.base import Written as Written
    from kompakt.summarizers.digest import DigestSummarizer as DigestSummarizer
    from kompakt.summarizers.model import ModelSummarizer as ModelSummarizer
else:

    def __getattr__(name: str) -> Any:
        return _lazy.attribute(globals(), _EXPORTS, name)

    def __dir__() -> list[str]:
        return __all__
