"""Sessions: the dates a conversation of many sessions is headed with.

Long conversations often arrive as sessions, each opened by a line that dates it
("[Session 3 — 14 May 2023]", "Session date: 2023/05/20 (Sat) 02:21", "DATE: 1:56 pm on
8 May, 2023"). What a later session says is dated by its header alone, so a note that
keeps the facts and drops the headers loses when anything happened. The digest reads the
header once and dates the facts it keeps from that session instead.

>>> session_date("[Session 3 — 14 May 2023]")
'14 May 2023'
>>> session_date("Session date: 2023/05/20 (Sat) 02:21\\nI moved to Oslo.")
'2023/05/20 (Sat)'
>>> session_date("[Session 5 — 2 April 2023] I got the job!")
'2 April 2023'
>>> session_date("(1:56 pm on 8 May, 2023) Hi Jamal! Guess what.")
'8 May, 2023'
>>> session_date("I moved to Oslo on 14 May 2023.")
''
"""

from __future__ import annotations

import re
from functools import lru_cache

__all__ = ["session_date", "without_header"]

_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_WEEKDAY = r"(?:(?:mon|tues?|wed(?:nes)?|thu(?:rs)?|fri|sat(?:ur)?|sun)(?:day)?\.?,?\s+)"
_DATE = re.compile(
    r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}(?:\s*\(\w{2,9}\))?"  # 2023-05-20, 2023/05/20 (Sat)
    rf"|{_WEEKDAY}?\d{{1,2}}(?:st|nd|rd|th)?(?:\s+of)?\s+{_MONTH},?\s+\d{{4}}"  # 8 May, 2023
    rf"|{_WEEKDAY}?{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}"  # May 8th, 2023
    r"|\d{1,2}/\d{1,2}/\d{2,4}"  # 5/8/23
    r"|\d{4}年\d{1,2}月\d{1,2}日"
    # no year, a weekday instead: "— Monday 3 March —", "Tue, March 4th"
    rf"|{_WEEKDAY}\d{{1,2}}(?:st|nd|rd|th)?(?:\s+of)?\s+{_MONTH}"
    rf"|{_WEEKDAY}{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?",
    re.IGNORECASE,
)
# what a header says besides its date: a session's number, a time, a few labelling words
_HEADER_WORDS = re.compile(
    r"\b(?:session|sessions|date|day|time|timestamp|conversation|chat|part|week|on|at|am|pm"
    r"|a\.m|p\.m|utc|gmt)\b|\d+|[^\w\s]",
    re.IGNORECASE,
)
_MAX_HEADER = 100
_DIGIT = re.compile(r"\d")
_YEAR = re.compile(r"\d{4}")
# what every date _DATE finds has, found fast: a year with its separator, a slash, a month
_DATE_HINT = re.compile(r"\d(?:\d{3}[-/.年]|/\d)")  # led by the digit: found fast
# what a date with a month's name has besides the name: a day before it ("8 May"), or a
# day then a year after it ("May 8th, 2023"); searched only where a month may be named
_NAMED_DATE_HINT = re.compile(
    rf"\d(?:st|nd|rd|th)?(?:(?:\s+of)?\s+{_MONTH}|,?\s+\d{{4}})|{_WEEKDAY}{_MONTH}\s+\d",
    re.IGNORECASE,
)
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
# a header in brackets or parentheses, text may follow: "(1:56 pm on 8 May, 2023) Hi!"
_STAMP = re.compile(r"^\s*(?:\[([^\]\n]{4,80})\]|\(([^)\n]{4,80})\))")
_OTHER_WORDS = 1  # a header's words besides those: "Day 3: Lisbon — 8 May 2023"


# a journal's dateline: a date alone opens the message, as a sentence of its own ("Jan 7.
# Short one.", "15.03.2025. I guessed right", "2025-01-19. Long run")
_DAY = r"\d{1,2}(?:st|nd|rd|th)?"
_DATELINE = re.compile(
    rf"\s*((?:{_WEEKDAY})?(?:{_DAY}(?:\s+of)?\s+{_MONTH}(?:,?\s+\d{{4}})?"
    rf"|{_MONTH}\s+{_DAY}(?:,?\s+\d{{4}})?"
    r"|\d{4}-\d{1,2}-\d{1,2}|\d{1,2}\.\d{2}\.(?:\d{4})?|\d{1,2}/\d{1,2}(?:/\d{2,4})?))"
    r"[.:]?(?:\s+|$)",
    re.IGNORECASE,
)


def session_date(text: str) -> str:
    """The date a message's first line heads a session with, or "" when that line is
    not a dated header (a date said in a sentence is what it says, not a header).

    >>> session_date("Jan 7. Short one. Back at work today.")
    'Jan 7'
    """
    # remembered for messages up to a size: a proxy sends them all again every request
    return _remembered(text) if len(text) <= _REMEMBERED_CHARS else _session_date(text)


_REMEMBERED_CHARS = 2_000


def _session_date(text: str) -> str:
    if _DIGIT.search(text, 0, _MAX_HEADER + 20) is None:
        return ""  # every date has a digit: most messages are out at this test
    if (line := _dateline(text)) is not None and line.end() < len(text):
        return line.group(1).strip(" ,.")  # a date alone is an answer, not a dateline
    head = text.lstrip()[: _MAX_HEADER + 1].split("\n", 1)[0].strip()
    if stamp := _STAMP.match(head):  # "[Session 5 — 2 April 2023] I need to tell you..."
        head = stamp.group(1) or stamp.group(2)
    if len(head) > _MAX_HEADER or head.endswith((".", "!", "?")):
        return ""  # a sentence, not a header
    if not _DATE_HINT.search(head) and not (
        any(map(head.lower().__contains__, _MONTHS)) and _NAMED_DATE_HINT.search(head)
    ):
        return ""
    found = _DATE.search(head)
    if found is None or (head == text.strip() and not _YEAR.search(found.group())):
        return ""  # "Tuesday 14 May" alone answers when; a header heads what follows
    rest = _HEADER_WORDS.sub(" ", head[: found.start()] + " " + head[found.end() :])
    if len(rest.split()) > _OTHER_WORDS:
        return ""
    return found.group().strip(" ,")


_remembered = lru_cache(maxsize=1 << 12)(_session_date)


def without_header(line: str) -> str:
    """`line` without the dated session header it opens with ("" when it is one).

    >>> without_header("[Session 5 — 2 April 2023] I got the job!")
    'I got the job!'
    >>> without_header("Session date: 2023/05/20"), without_header("We met on 14 May 2023.")
    ('', 'We met on 14 May 2023.')
    >>> without_header("1st March. MOVED. Everything hurts.")
    'MOVED. Everything hurts.'
    """
    if (dateline := _dateline(line)) is not None and dateline.end() < len(line):
        return line[dateline.end() :].strip()
    if not session_date(line):
        return line
    stamp = _STAMP.match(line)
    return line[stamp.end() :].strip() if stamp else ""


def _dateline(text: str) -> re.Match[str] | None:
    """A date alone that opens `text` as a sentence of its own, followed by more (or
    by nothing: the dateline split off as a sentence)."""
    if not text[:1].isdigit() and text[:3].lower() not in _OPENINGS:
        return None  # most messages: no date first, and the search is dearer than this
    found = _DATELINE.match(text)
    if found is None or (
        not found.group(0).rstrip().endswith((".", ":")) and found.end() < len(text)
    ):
        return None  # "May I ask ...", "3 things: ..." need the date alone, then a stop
    return found


_OPENINGS = frozenset(_MONTHS) | {"mon", "tue", "wed", "thu", "fri", "sat", "sun"}
