"""What the model gets to reach the archive: the `recall` and `compact_context` tools,
and the note on summaries that says the originals can be recalled.

>>> from kompakt.messages import Message
>>> from kompakt.store import MemoryStore
>>> store = MemoryStore()
>>> _ = store.append("s", [Message.tool("ERROR: disk full", tool_call_id="c1")])
>>> print(recall_text(store, "s", "disk full", []))  # doctest: +ELLIPSIS
Recalled 1 original message(s), verbatim:
--- id m_... · result of tool call c1 (tool) ---
ERROR: disk full
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from kompakt.agent.tools import Tool, as_tool
from kompakt.messages import Message
from kompakt.store.base import HistoryStore
from kompakt.tokens import Tokenizer
from kompakt.view import View

__all__ = [
    "RECALL_NOTE",
    "add_recall_notes",
    "compact_context_tool",
    "recall_text",
    "recall_tool",
]

RECALL_NOTE = "[Originals archived: call the recall tool with a query or these ids to read them"
"""Start of the note put on summaries so the model knows the originals can be recalled."""

_NOTED = ("summary", "facts")
_MAX_IDS = 12


def recall_tool(
    store: HistoryStore,
    session: str,
    *,
    max_tokens: int = 4000,
    tokenizer: Tokenizer | None = None,
) -> Tool:
    """The ``recall`` tool over `session` of `store`."""

    async def recall(query: str = "", ids: list[str] | None = None) -> str:
        """Read archived original messages verbatim (tool output, files, errors that
        were compacted away), by a search query or by the ids a summary lists.

        Args:
            query: words, an error message or a file path to search the archive for.
            ids: message ids named in a summary of earlier conversation.
        """
        return await asyncio.to_thread(
            recall_text, store, session, query, list(ids or ()), max_tokens, tokenizer
        )

    return as_tool(recall)


def recall_text(
    store: HistoryStore,
    session: str,
    query: str,
    ids: list[str],
    max_tokens: int = 4000,
    tokenizer: Tokenizer | None = None,
) -> str:
    """The recall tool's answer: the originals verbatim, or why there are none."""
    if not query.strip() and not ids:
        return "Error: give `query` (words, an error, a path) or `ids` from a summary."
    found = store.recall(
        session, query or None, ids=ids, max_tokens=max_tokens, tokenizer=tokenizer
    )
    if not found:
        some = bool(ids and any(store.get(session, i) for i in ids))
        some = some or bool(query.strip() and store.search(session, query, limit=1))
        if some:
            return (
                f"The matching messages are larger than the recall limit of "
                f"{max_tokens:,} tokens; ask for fewer ids or a narrower query."
            )
        return f"Nothing in the archive matches {query or ids!r}."
    parts = [f"Recalled {len(found)} original message(s), verbatim:"]
    parts.extend(f"--- {_label(m)} ---\n{_body(m)}" for m in found)
    return "\n".join(parts)


def compact_context_tool(request: Callable[[], None]) -> Tool:
    """The ``compact_context`` tool: calls `request` (the agent compacts at its next
    checkpoint)."""

    def compact_context(reason: str = "") -> str:
        """Compact the conversation now to free context space; compacted messages stay
        archived and can be read again with the recall tool.

        Args:
            reason: why, in a few words.
        """
        request()
        return (
            "OK: the conversation will be compacted before your next request; "
            "originals stay archived (use recall to read them)."
        )

    return as_tool(compact_context)


def add_recall_notes(view: View) -> None:
    """Summaries in `view` say that their originals can be recalled, and by which ids."""
    for g in view.index.groups:
        r = view.replacement(g.index)
        if not r or not any(m.synthetic in _NOTED and RECALL_NOTE not in m.text for m in r):
            continue
        view.replace(g.index, [with_note(m) if m.synthetic in _NOTED else m for m in r])


def with_note(m: Message) -> Message:
    """`m` with the recall note naming the ids it covers (at most 12 shown).

    >>> s = Message.assistant("- tests fail", synthetic="summary", covers=("m_a", "m_b"))
    >>> with_note(s).text.splitlines()[-1]
    '[Originals archived: call the recall tool with a query or these ids to read them \
verbatim (2 messages): m_a, m_b]'
    """
    if RECALL_NOTE in m.text or not m.covers:
        return m
    ids = list(m.covers)
    shown = ", ".join(ids if len(ids) <= _MAX_IDS else [*ids[:6], "…", *ids[-6:]])
    note = f"{RECALL_NOTE} verbatim ({len(ids)} messages): {shown}]"
    return m.evolve(content=f"{m.text}\n\n{note}" if m.text else note, covers=m.covers)


def _label(m: Message) -> str:
    if m.role == "tool":
        return f"id {m.id} · result of tool call {m.tool_call_id} ({m.name or 'tool'})"
    return f"id {m.id} · {m.role}"


def _body(m: Message) -> str:
    calls = "\n".join(f"[call {c.name}({c.arguments})]" for c in m.tool_calls)
    return "\n".join(x for x in (m.text, calls) if x)
