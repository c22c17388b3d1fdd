"""`ExtractiveDigest`: `Summarize` with the digest summarizer, the model-free note.

There is one summarizing strategy, `Summarize`; this name is its shortcut with
`DigestSummarizer` (no model, no cost) and the note sharing a budget with the tail
(`note_share=0.7`, 0.85 in a chat). The note itself is written by `kompakt.notes` (the
digest engine, a leaf module); its names are re-exported here for code written against 0.1.
"""

from __future__ import annotations

from kompakt._deprecation import renamed_options
from kompakt.notes import (
    SECTIONS,
    build_note,
    clamp_tokens,
    digest,
    digest_items,
)
from kompakt.strategies.summarize import Summarize
from kompakt.summarizers.digest import DigestSummarizer

__all__ = ["SECTIONS", "ExtractiveDigest", "build_note", "clamp_tokens", "digest", "digest_items"]


class ExtractiveDigest(Summarize):
    """Replace the older span with the extractive digest: no model, no cost.

    The shortcut for ``Summarize(summarizer=DigestSummarizer(), note_share=0.7,
    chat_note_share=0.85)``: it
    writes the digest whatever summarizer the compaction has. It keeps the newest groups
    (and everything protected) and stands one ``synthetic="summary"`` note in for the
    rest; a previous note is merged in, its standing instructions carried forward
    verbatim. Under a budget the note and the recent tail share it (see `Summarize`'s
    `note_share`); without one, the newest `keep_last_groups` groups stay and the note
    is at most `max_note_tokens`.

    Args:
        keep_last_groups: newest groups always left as they are.
        max_note_tokens: the note's size limit (under a budget: at least this).
        note_share: share of a budget the note may take (None: `max_note_tokens` only).
        chat_note_share: the same in a conversation without tool calls, where what is
            asked later lives in the note more than in the newest turns.
        recall_tool: name of a tool that fetches originals, mentioned in the note.

    >>> from kompakt.messages import Message
    >>> from kompakt.index import MessageIndex
    >>> from kompakt.view import View
    >>> from kompakt.strategies.base import CompactionContext
    >>> msgs = [Message.user(f"step {i}: edit src/mod{i}.py " + "and more " * 30)
    ...         for i in range(6)]
    >>> view = View(MessageIndex(msgs))
    >>> ExtractiveDigest(keep_last_groups=2).apply(view, CompactionContext(view))
    True
    >>> [m.synthetic for m in view.render()]
    ['summary', None, None]
    >>> from kompakt.strategies.summarize import Summarize
    >>> isinstance(ExtractiveDigest(), Summarize), ExtractiveDigest().summarizer
    (True, DigestSummarizer())
    """

    @renamed_options(
        positional=("keep_last", "max_tokens"),
        keep_last="keep_last_groups",
        max_tokens="max_note_tokens",
    )
    def __init__(
        self,
        *,
        keep_last_groups: int = 4,
        max_note_tokens: int = 800,
        note_share: float | None = 0.7,
        chat_note_share: float | None = 0.85,
        recall_tool: str | None = None,
    ) -> None:
        super().__init__(
            keep_last_groups=keep_last_groups,
            summarizer=DigestSummarizer(),
            max_note_tokens=max_note_tokens,
            recall_tool=recall_tool,
            note_share=note_share,
            chat_note_share=chat_note_share,
        )
