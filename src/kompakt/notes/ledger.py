"""The ledger of standing instructions, and updates that supersede stale facts.

Standing instructions and preferences are kept verbatim, deduplicated, and carried
forward by every later note; a newer instruction on the same subject replaces the
older one. A fact whose value a later statement changes ("the deadline moved to
April 5") gives way to the newer statement, so a note never shows a stale value as
current.

>>> ledger = Ledger()
>>> ledger.add("Always answer in English.", order=1)
>>> ledger.add("Keep answers under 100 words.", order=2)
>>> ledger.add("Actually, answer in French from now on instead of English.", order=3)
>>> [e.text for e in ledger.entries()]
['Keep answers under 100 words.', 'Actually, answer in French from now on instead of English.']
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from kompakt.notes.salience import (
    content_words,
    entity_signal,
    is_question,
    value_signal,
    word_atoms,
)

__all__ = ["Entry", "Ledger", "same_subject", "superseded", "update_cue"]

_UPDATE_CUE = re.compile(
    r"\b(?:now|no longer|any ?more|instead|actually|changed?|changing|moved?|moving|switch(?:ed)?"
    r"|updated?|replaced?|dropped|cancel(?:l?ed)?|postponed|rescheduled|pushed|new|revised?"
    r"|correction|corrected|scratch that|forget|not .{1,30} but|rather than|from now on"
    r"|going forward|changed my mind|raised|lowered|increased|decreased|extended|shortened"
    r"|upgraded|downgraded|migrated|became|becomes|turned)\b"
    r"|改成|改为|换成|现在|不再|取消|推迟|更新|其实",
    re.IGNORECASE,
)
# Words that say how or when, not what: two units sharing only these share no subject.
_GENERIC = frozenset(
    [
        "always",
        "never",
        "now",
        "from",
        "going",
        "forward",
        "future",
        "whenever",
        "every",
        "time",
        "each",
        "use",
        "using",
        "used",
        "make",
        "sure",
        "remember",
        "keep",
        "please",
        "answer",
        "answers",
        "reply",
        "replies",
        "respond",
        "response",
        "responses",
        "write",
        "want",
        "like",
        "prefer",
        "would",
        "rather",
        "instead",
        "actually",
        "changed",
        "change",
        "moved",
        "move",
        "new",
        "updated",
        "update",
        "switch",
        "switched",
        "also",
        "still",
        "just",
        "really",
        "thing",
        "things",
        "something",
        "anything",
        "everything",
        "stuff",
        "way",
        "ways",
        "lot",
        "bit",
        "good",
        "great",
        "well",
        # what labels an instruction, not what it is about ("rule for vendor emails: ...")
        "rule",
        "rules",
        "preference",
        "preferences",
        "pls",
        "btw",
        "oh",
        "thing",
    ]
)


def update_cue(text: str) -> bool:
    """Whether `text` says that something changed.

    >>> update_cue("The meeting is now on Friday"), update_cue("The meeting is on Friday")
    (True, False)
    """
    return _statement(text).cue


class _Statement(NamedTuple):
    """What supersession reads of a statement, read once per text."""

    subject: frozenset[str]  # content words that name what it speaks of
    words: frozenset[str]  # all its content words
    cue: bool  # it says something changed
    stateful: bool  # it states a value or names a thing: it can go stale


# The words one of _UPDATE_CUE's alternatives needs: the pattern is searched only when
# the text holds one (or is CJK), which most statements do not.
_UPDATE_GATE = frozenset(
    re.findall(
        r"\S+",
        """now longer any anymore more instead actually change changed changing move moved moving
    switch switched update updated replace replaced dropped cancel canceled cancelled
    postponed rescheduled pushed new revise revised correction corrected scratch forget not
    rather going forward raised lowered increased decreased extended shortened upgraded
    downgraded migrated became becomes turned""",
    )
)


def _update_cue(text: str) -> bool:
    words = word_atoms(text)
    if words.isdisjoint(_UPDATE_GATE) and not _CJK_UPDATE.search(text):
        return False
    return _UPDATE_CUE.search(text) is not None


_CJK_UPDATE = re.compile(r"[改换现不取推更其]")


@lru_cache(maxsize=1 << 14)
def _statement(text: str) -> _Statement:
    words = content_words(text)
    subject = frozenset(w for w in words if w not in _GENERIC and not w[0].isdigit())
    # a question states nothing that could go stale
    stateful = not is_question(text) and bool(value_signal(text) or entity_signal(text))
    return _Statement(subject, frozenset(words), _update_cue(text), stateful)


def _subject_words(text: str) -> frozenset[str]:
    return _statement(text).subject


def same_subject(older: str, newer: str) -> bool:
    """Whether two statements speak of the same thing: most of their subject words are
    shared, or the newer one says it changes something the older one names.

    >>> same_subject("The deadline is March 1.", "The deadline moved to April 5.")
    True
    >>> same_subject("My cat is named Tom.", "The deadline moved to April 5.")
    False
    """
    return _same_subject(_statement(older), _statement(newer))


def _same_subject(a: _Statement, b: _Statement) -> bool:
    if not a.subject or not b.subject:
        return False
    shared = len(a.subject & b.subject)
    if shared >= 2 and shared >= 0.6 * min(len(a.subject), len(b.subject)):
        return True
    # a change said in passing ("it's now basically a donation") shares a word with many
    # a statement: it names the older one's subject when it shares a fair part of it
    if not b.cue or shared < _CHANGED_SHARE * len(a.subject):
        return False
    # one word in common outdates only with a value or a name to replace it: "she is due
    # any day now" leaves "the due date is 30 August" standing
    return shared > 1 or b.stateful


_CHANGED_SHARE = 0.3


def superseded(older: str, newer: str) -> bool:
    """Whether `newer` replaces `older`: the same subject, and the newer says it changed
    (or they are near the same statement with different values).

    >>> superseded("Response time is 400 ms.", "Response time is now 250 ms.")
    True
    >>> superseded("We use Redis for caching.", "We dropped Redis.")
    True
    >>> superseded("I live in Oslo.", "I love Oslo in winter.")
    False
    """
    return _superseded(_statement(older), _statement(newer))


def _superseded(a: _Statement, b: _Statement) -> bool:
    if not a.stateful or not _same_subject(a, b):
        return False  # only a statement of a value or a named thing can go stale
    if b.cue:
        return True
    return len(a.words & b.words) >= 0.75 * max(len(a.words), len(b.words)) and a.words != b.words


@dataclass
class Entry:
    """One standing instruction: its verbatim text, when it was said (later is larger)
    and how salient it is."""

    text: str
    order: float
    salience: float = 0.0
    shown: bool = True
    """False for an instruction still sent after the note: it only replaces older ones."""


class Ledger:
    """Standing instructions, deduplicated; a newer one on the same subject replaces
    the older."""

    def __init__(self) -> None:
        self._entries: list[Entry] = []

    def add(self, text: str, *, order: float, salience: float = 0.0, shown: bool = True) -> None:
        text = text.strip()
        if not text:
            return
        key = _norm(text)
        for e in list(self._entries):
            if _norm(e.text) == key or key in _norm(e.text):
                e.order = max(e.order, order) if _norm(e.text) == key else e.order
                return  # said again (or contained in what is kept): nothing new
            if _norm(e.text) in key or (e.order <= order and _replaces(e.text, text)):
                self._entries.remove(e)
        self._entries.append(Entry(text, order, salience, shown))

    def entries(self) -> list[Entry]:
        """The instructions in force that the note shows, oldest first."""
        return sorted((e for e in self._entries if e.shown), key=lambda e: e.order)

    def __len__(self) -> int:
        return len(self._entries)


def _replaces(older: str, newer: str) -> bool:
    a, b = _subject_words(older), _subject_words(newer)
    if not a or not b:
        return False
    shared = a & b
    if update_cue(newer) and (shared or _negates(older, newer)):
        return True
    return len(shared) >= 0.6 * min(len(a), len(b)) and len(shared) >= 2


def _negates(older: str, newer: str) -> bool:
    """`always X` then `never X` (or the reverse) on the same words."""
    pol_a = bool(re.search(r"\b(?:never|don't|do not|no)\b|不要|别", older, re.I))
    pol_b = bool(re.search(r"\b(?:never|don't|do not|no)\b|不要|别", newer, re.I))
    return pol_a != pol_b and bool(_subject_words(older) & _subject_words(newer))


def _norm(text: str) -> str:
    return re.sub(r"[\s\W_]+", " ", text.lower()).strip()


def drop_superseded(texts: Sequence[tuple[str, float]]) -> dict[int, int]:
    """Which statements a later one supersedes: ``{older index: newer index}`` (`texts`
    are ``(text, order)``).

    Only statements that share a subject word are compared, and a word said in very
    many statements names no subject: near-linear in practice.

    >>> drop_superseded([("The deadline is May 1.", 1), ("I like tea.", 2),
    ...                  ("The deadline moved to June 3.", 3)])
    {0: 2}
    """
    statements = [_statement(t) for t, _ in texts]
    said: Counter[str] = Counter()  # how many statements name each word
    by_word: dict[str, list[int]] = {}  # the statements that could go stale, by word
    for i, st in enumerate(statements):
        said.update(st.subject)
        if st.stateful:  # only a statement of a value or a named thing can go stale
            for w in st.subject:
                by_word.setdefault(w, []).append(i)
    common = max(8, min(64, len(texts) // 20))
    gone: dict[int, int] = {}
    for j, (_, when) in enumerate(texts):
        newer = statements[j]
        rivals: set[int] = set()
        for w in newer.subject:
            if said[w] <= common and w in by_word:  # a word said everywhere names no subject
                rivals.update(by_word[w])
        for i in sorted(rivals):
            if i != j and texts[i][1] < when and _superseded(statements[i], newer):
                gone[i] = j  # the newest statement that supersedes it wins
    return gone


_CLAUSE = re.compile(r",?\s+(?:and|but|while|whereas)\s+|;\s*|,\s+|，|；")


def surviving_clauses(older: str, newer: str) -> str:
    """What of `older` a superseding `newer` leaves standing: its clauses that speak of
    something else ("" when none do).

    >>> surviving_clauses("My budget is $1200 and I must be back by May 5.",
    ...                   "Actually the budget is now $1500.")
    'I must be back by May 5.'
    """
    parts = [p.strip() for p in _CLAUSE.split(older) if p and p.strip()]
    if len(parts) < 2:
        return ""
    kept = [p for p in parts if not superseded(p, newer)]
    if len(kept) == len(parts) or not kept:
        return ""
    return "; ".join(kept)
