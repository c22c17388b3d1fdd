"""Units: the pieces of a conversation a note chooses from, smaller than a message.

A message's text is split into lines and each line into sentences (Latin and CJK
punctuation alike); list items and ``key: value`` lines stay whole. Each unit knows who
said it and where, so that what a note quotes from a tool can be attributed.

>>> from kompakt.messages import Message
>>> [u.text for u in split_units(Message.user("Hi! I moved to Lyon. 我喜欢茶。谢谢"), 0)]
['Hi!', 'I moved to Lyon.', '我喜欢茶。', '谢谢']
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import NamedTuple

from kompakt.messages import Message
from kompakt.notes.salience import date_word
from kompakt.notes.speakers import speaker_label

__all__ = ["Unit", "split_sentences", "split_units"]

# A sentence ends at . ! ? followed by space and a capital, quote or digit, or at CJK
# end punctuation (no space needed). Abbreviations ("e.g. the") stay joined: a lower-case
# word follows them. Who types in lower case ends sentences too, unless the word before
# is an abbreviation: a mark after a word and before a lower-case one is a candidate
# (group 2 holds its space), which `_ends_here` decides. One pass finds both, led by the
# end mark itself (group 1), which the engine skips to fast.
_ORDINAL_NOUNS = (
    r"(?:Januar|Jänner|Februar|März|April|Mai|Juni|Juli|August|September|Oktober|November"
    r"|Dezember|Stock|Stockwerk|Etage|OG|Mal|Klasse|Platz|Liga|Jahrhundert|Woche|Quartal)"
)
_END = re.compile(
    r"([.!?。！？；])(?:(?<=[。！？；])"  # CJK: the mark alone
    # "Mrs. Okafor" is one name (the titles of one length in one look behind)
    r"|(?<!\b(?:Mr|Ms|Dr|St|Mt|Sr|Jr|vs)\.)(?<!\b(?:Mrs|ref|Ref)\.)(?<!\bProf\.)"
    r"(?<!\b[A-Z]\.)"  # "Hannah J. Okoye": an initial
    # "am Samstag, 1. März", "im 3. Stock": a German or Nordic ordinal, not an end
    r"(?!(?:(?<=\b\d\.)|(?<=\b\d\d\.))\s+" + _ORDINAL_NOUNS + r"\b)"
    r"\s+(?=[A-Z0-9\"'“(\[\u3040-\u30ff\u4e00-\u9fff\uac00-\ud7af])"
    r"|(?<=\w[.!?])(\s+)(?=[a-z]))"
)
_ABBREVIATIONS = frozenset(
    re.findall(
        r"\S+",
        """etc vs approx incl esp cf ca al fig no nos st ave dept est min max ft oz lb lbs pp pg
    vol ch sec mr mrs ms dr prof sr jr ref jan feb mar apr jun jul aug sep sept oct nov dec
    mon tue tues wed thu thur thurs fri sat sun""",
    )
)
_ENDS = frozenset(".!?。！？；")
# an emoji (with its variation selector) before a capital, where a stop was not typed
_EMOJI_END = re.compile(r"([\U0001F300-\U0001FAFF\u2600-\u27BF]\ufe0f?)\s+(?=[A-Z])")
_BULLET = re.compile(r"^\s*(?:[-*•·]|\d{1,2}[.)])\s+")
_MIN_CHARS = 2
_MAX_CHARS = 600


_new_unit = tuple.__new__


class Unit(NamedTuple):  # a tuple: a span holds thousands, made four times faster
    """One sentence, line or list item of a message.

    `position` is the message's place in the span, `order` the unit's place in the
    whole span (later is newer), `source` who said it (``user``, ``assistant``,
    ``tool``, ``system``), `tool` the tool's name for a tool result.
    """

    text: str
    source: str
    position: int
    order: int = 0
    tool: str = ""
    call_id: str = ""


def split_sentences(line: str) -> list[str]:
    """`line` cut into sentences (a list item or a short line stays whole).

    >>> split_sentences("The deadline is May 5. We use Postgres 16! Ok")
    ['The deadline is May 5.', 'We use Postgres 16!', 'Ok']
    >>> split_sentences("I hope so. Is it legal? (asking for a friend)")
    ['I hope so.', 'Is it legal? (asking for a friend)']
    >>> split_sentences("1:58:40. Under two hours! Mrs. Okafor and Hannah J. Okoye were there.")
    ['1:58:40. Under two hours!', 'Mrs. Okafor and Hannah J. Okoye were there.']
    >>> split_sentences("I sold the Civic. Got a cargo e-bike instead.")
    ['I sold the Civic. Got a cargo e-bike instead.']
    >>> split_sentences("oven moved AGAIN. 2 April now. I could cry")
    ['oven moved AGAIN. 2 April now.', 'I could cry']
    >>> split_sentences("Maybe even under 1:55. That's my new goal.")
    ["Maybe even under 1:55. That's my new goal."]
    >>> split_sentences("my cat Mochi hates it. anyway, any tips? e.g. the blinds")
    ['my cat Mochi hates it.', 'anyway, any tips?', 'e.g. the blinds']
    """
    line = line.strip()
    if not line:
        return []
    if not line.isascii() and (emoji := _EMOJI_END.search(line)):
        # "We're now at 110 guests 🙃 Does that change anything?": the emoji ends one
        cut = emoji.end(1)
        return split_sentences(line[:cut]) + split_sentences(line[cut:])
    if _BULLET.match(line) and len(line) <= _MAX_CHARS:
        return [_BULLET.sub("", line, count=1).strip()]
    if _ENDS.isdisjoint(line):
        return [line]
    out: list[str] = []
    start = 0
    for m in _END.finditer(line):  # the end mark stays with its sentence, the space goes
        cut = m.start() + 1
        if cut > start and (m.group(2) is None or _ends_here(line, m)):
            out.append(line[start:cut].strip())
            start = m.end()
    out.append(line[start:].strip())
    # what joins a sentence to the one before, looked for only where the line says it
    lower = line.lower()
    instead = "instead" in lower
    new = "new" in lower or "updated" in lower or "final" in lower or "actual" in lower
    now = "now" in lower
    digits = _DIGIT.search(line) is not None
    joined: list[str] = []
    for s in out:
        if not joined:
            if s:
                joined.append(s)
        elif s[:1] == "(" and s.rstrip(".!?").endswith(")"):
            joined[-1] += " " + s  # "Is it legal? (asking for a friend)": an aside, not a sentence
        elif not joined[-1][:1].isalpha() and not _has_letters(joined[-1]):
            joined[-1] += " " + s  # "1:58:40. Under two hours!": a bare value goes with its gloss
        elif (
            (instead and s[-1:] in _INSTEAD_LAST and _instead(s))
            or (new and s[:1] in _THAT_FIRST and _THAT_IS_NEW.match(s))
            or (now and _now_is(s) and not _DIGIT.search(joined[-1]))
            # (what the two below need of the sentence before first: it is short)
            or (
                len(joined[-1]) <= _ANNOUNCE_CHARS
                and (_DIGIT.search(s) or s[:4].lower() == "now ")
                and _announces(joined[-1])
            )
            or (digits and len(joined[-1]) <= _ANNOUNCE_CHARS and s and _gives_value(joined[-1], s))
        ):
            joined[-1] += " " + s  # "I sold the Civic. Got an e-bike instead.": one change
        elif s:
            joined.append(s)
    if len(joined) > 1 and not _has_letters(joined[-1]):
        value = joined.pop()
        joined[-1] += " " + value
    return joined


@lru_cache(maxsize=1 << 12)
def _sentences(line: str) -> tuple[str, ...]:
    """`split_sentences`, remembered: a proxy sends the whole conversation again with every
    request, and the messages after a span (read for updates) are read again at the next
    compaction. Only lines up to `_CACHED_CHARS` are kept (4,096 of them at most, a few MB)."""
    return tuple(split_sentences(line))


_CACHED_CHARS = 2_000


def _instead(sentence: str) -> bool:
    """A short sentence ending in "instead": it says what replaced the one before."""
    bare = sentence.rstrip(" .!?…").lower()
    return bare.endswith(" instead") and bare.count(" ") < _INSTEAD_WORDS


_INSTEAD_WORDS = 6
# what `_instead` and `_THAT_IS_NEW` need, tested first: most sentences are out at once
_INSTEAD_LAST = frozenset("dD .!?…")
_THAT_FIRST = frozenset("tTiIİı")
# "... under 1:55 if the day is good. That's my new goal.": what "that" is goes with it
_THAT_IS_NEW = re.compile(
    r"(?:that|this|it)(?:'s|’s| is) (?:my|our|the) (?:new|updated|final|actual) [\w-]+"
    r"(?: now)?[.!]*$",
    re.IGNORECASE,
)


def _announces(sentence: str) -> bool:
    """A short change said with no value ("IND emailed, they moved us."): the sentence
    after it that holds one ("new appointment is Thursday 23 May") is what changed."""
    if len(sentence) > _ANNOUNCE_CHARS or _DIGIT.search(sentence):
        return False
    return not _CHANGED.isdisjoint(sentence.lower().replace("!", " ").replace(".", " ").split())


_ANNOUNCE_CHARS = 60
_DIGIT = re.compile(r"\d")
_CHANGED = frozenset(
    re.findall(r"\S+", "moved changed postponed rescheduled delayed extended pushed bumped")
)


def _gives_value(before: str, sentence: str) -> bool:
    """A value alone, after a short sentence that says what it is ("IND confirmed the
    appointment! Tuesday 14 May, 10.30, Rotterdam desk."): one statement."""
    if len(sentence) > _VALUE_CHARS or len(before) > _ANNOUNCE_CHARS:
        return False  # the lengths first: most sentences are out at once
    first = sentence.split(None, 1)[0].strip(",.").lower()
    dated = first[:1].isdigit() or first in _DAY_SHORT or date_word(first)
    if not dated or not _DIGIT.search(sentence):
        return False
    return not _DIGIT.search(before)


_VALUE_CHARS = 60
_DAY_SHORT = frozenset(re.findall(r"\S+", "mon tue tues wed thu thur thurs fri sat sun"))


def _now_is(sentence: str) -> bool:
    """A short value said to be current now ("2 April now.", "it's now Saturday 25 May."):
    the change the sentence before announced ("oven moved AGAIN."), meaningless alone."""
    if len(sentence) > _NOW_CHARS or "now" not in sentence.lower():
        return False
    words = sentence.rstrip(".!…").split()
    bare = [w for w in words if w.lower() not in _NOW_WORDS]
    if "now" not in (words[0].lower(), words[-1].lower()) and words[:2] != ["it's", "now"]:
        return False
    if not 0 < len(bare) <= _NOW_VALUE_WORDS:
        return False
    if any(c.isdigit() for c in sentence) or bare == words[:1]:
        return True  # "Thursday now."
    # a name: a capital inside the sentence, not a sentence's first word nor "I"
    return any(w[:1].isupper() and w is not words[0] and w[:2] not in _I for w in bare)


_NOW_CHARS = 48
_NOW_VALUE_WORDS = 4
_NOW_WORDS = frozenset({"now", "it's", "it’s", "it", "is"})
_I = frozenset({"I", "I'", "I’"})


def _ends_here(line: str, mark: re.Match[str]) -> bool:
    """Whether the mark before a lower-case word ends a sentence: "? " and "! " do, a dot
    does after a word that is no abbreviation ("e.g. the", "etc. and", "approx. five")."""
    if mark.group(1) != ".":
        return True
    word = line[: mark.start()].rsplit(None, 1)[-1] if line[: mark.start()].strip() else ""
    return "." not in word and word.lower().strip("([\"'") not in _ABBREVIATIONS and len(word) > 1


def _has_letters(text: str) -> bool:
    return text[:1].isalpha() or _LETTER.search(text) is not None  # a letter opens most


_LETTER = re.compile(r"[^\W\d_]")


def split_units(
    message: Message,
    position: int,
    *,
    first_order: int = 0,
    speakers: Mapping[str, str] | None = None,
) -> list[Unit]:
    """The units of one message, in reading order.

    `speakers` maps the speakers a transcript's lines name ("Maya: ...") to the source
    their lines are said by (see `kompakt.notes.speakers`); a line that names none is
    said by the speaker before it.

    >>> from kompakt.messages import Message
    >>> m = Message.user("User: I'm vegan.\\nAssistant: Noted.\\nThe recipe follows.")
    >>> who = {"User": "user", "Assistant": "assistant"}
    >>> [u.source for u in split_units(m, 0, speakers=who)]
    ['user', 'assistant', 'assistant']
    """
    source: str = message.role if message.role != "developer" else "system"
    tool = message.name or ""
    call = message.tool_call_id or ""
    out: list[Unit] = []
    for line in message.text.splitlines():
        if speakers and ":" in line:
            source = speakers.get(speaker_label(line), source)
        for s in _sentences(line) if len(line) <= _CACHED_CHARS else split_sentences(line):
            if len(s) < _MIN_CHARS:
                continue
            if len(s) > _MAX_CHARS:
                s = s[: _MAX_CHARS - 1].rstrip() + "…"
            # the tuple made directly: a unit's constructor is a call of Python's, per unit
            out.append(_new_unit(Unit, (s, source, position, first_order + len(out), tool, call)))
    return out
