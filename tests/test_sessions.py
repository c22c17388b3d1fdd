"""Conversations of dated sessions: the facts a note keeps say when they were said."""

from __future__ import annotations

import pytest

from kompakt.messages import Message
from kompakt.notes import digest
from kompakt.notes.sessions import session_date, without_header


@pytest.mark.parametrize(
    ("text", "date"),
    [
        ("[Session 3 — 14 May 2023]", "14 May 2023"),
        ("Session date: 2023/05/20 (Sat) 02:21\nI moved to Oslo.", "2023/05/20 (Sat)"),
        ("DATE: 1:56 pm on 8 May, 2023", "8 May, 2023"),
        ("### 2023-05-20", "2023-05-20"),
        ("--- Tuesday, March 5th, 2024 ---\nhi", "Tuesday, March 5th, 2024"),
        ("Day 3: Lisbon — 8 May 2023", "8 May 2023"),
        ("2024年3月5日", "2024年3月5日"),
    ],
)
def test_a_dated_header_gives_its_date(text: str, date: str) -> None:
    assert session_date(text) == date


@pytest.mark.parametrize(
    "text",
    [
        "I moved to Oslo on 14 May 2023.",  # a date said in a sentence
        "The deadline is 2023-05-20, please remember it.",
        "Session three was fun",  # a header without a date
        "hello\n[Session 3 — 14 May 2023]",  # not on the first line
    ],
)
def test_a_date_in_a_sentence_is_no_header(text: str) -> None:
    assert session_date(text) == ""
    assert without_header(text) == text


def sessions() -> list[Message]:
    out: list[Message] = []
    said = [
        ("14 May 2023", "I adopted a greyhound called Biscuit.", "Lovely!"),
        ("2 June 2023", "My sister Aoife moved to Galway.", "Nice."),
        ("20 July 2023", "I signed up for the Cork half marathon.", "Good luck!"),
    ]
    for date, fact, reply in said:
        out.append(Message.user(f"[Session — {date}]\nHi again, how are you?"))
        out.append(Message.assistant("Good, thanks! What's new?"))
        out.append(Message.user(fact))
        out.append(Message.assistant(reply))
    return out


def test_kept_facts_carry_their_sessions_date() -> None:
    note = digest(sessions(), max_tokens=300)
    assert "- [2 June 2023] My sister Aoife moved to Galway." in note
    assert "- [20 July 2023] I signed up for the Cork half marathon." in note
    assert "[Session — 20 July 2023]" not in note  # the header dates facts, it is none


def test_dates_survive_the_note_being_compacted_again() -> None:
    first = digest(sessions(), max_tokens=300)
    # the session's first fact (which bore the date) goes; the next one is dated itself
    note = Message.user(first.replace("- [2 June 2023] My sister Aoife moved to Galway.\n", ""))
    later = [note, Message.user("I bought a bike today."), Message.assistant("Fun!")]
    again = digest(later, max_tokens=300)
    assert "[20 July 2023] I signed up for the Cork half marathon." in again
