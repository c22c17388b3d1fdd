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
        ("(1:56 pm on 8 May, 2023) Hi Jamal! Guess what happened.", "8 May, 2023"),
        ("### 2023-05-20", "2023-05-20"),
        ("--- Tuesday, March 5th, 2024 ---\nhi", "Tuesday, March 5th, 2024"),
        ("Day 3: Lisbon — 8 May 2023", "8 May 2023"),
        ("2024年3月5日", "2024年3月5日"),
        # a journal's dateline: a date alone opens the message, then what happened
        ("Jan 7. Short one. Back at work today.", "Jan 7"),
        ("Sunday 12.01. Went climbing with Otto.", "Sunday 12.01"),
        ("2025-01-19. Long run this morning.", "2025-01-19"),
        ("9/2. I got the flat!!!", "9/2"),
        ("1st March. MOVED. Everything hurts.", "1st March"),
        ("15.03.2025. I guessed right about the teapot.", "15.03.2025"),
        # no year, a weekday: a chat's day separator, heading what follows
        ("— Monday 3 March —\nDennis! It's Margaret.", "Monday 3 March"),
        ("Tue, March 4th\nhello again", "Tue, March 4th"),
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
        "22 February.",  # a date alone is an answer, not a dateline
        "May I ask you something?",
        "3 things to do today.",
        "2 May I think it was.",
        "(see the email of 8 May, 2023 about it) sorry for the delay",  # an aside
        "Tuesday 14 May",  # no year: alone, it answers when
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


def test_a_journals_datelines_date_its_facts_and_go() -> None:
    said = [
        Message.user("3 Jan 2025. I live with a cat called Pudding and work at Larkspur."),
        Message.assistant("Nice to meet you both."),
        Message.user("Mar 29. Bad week, the churn model results were off."),
        Message.assistant("That sounds stressful."),
        Message.user("When was it again?"),
        Message.assistant("22 February."),
    ]
    text = digest(said, max_tokens=200)
    assert "[Mar 29] Bad week" in text  # dated, the dateline gone from the line
    assert "Mar 29." not in text and "3 Jan 2025." not in text
    assert "22 February." in text  # an answer that is a date stays


def test_a_header_in_parentheses_dates_the_session_and_is_no_fact() -> None:
    """ "(1:56 pm on 8 May, 2023) Hi Jamal!": the greeting after the stamp is no dated
    fact, the facts of the session are dated by it."""
    said = [
        Message.user("(1:56 pm on 8 May, 2023) Hi Jamal!"),
        Message.assistant("Hey Rosa! How was the weekend?"),
        Message.user("I went to my first grief support group last Thursday."),
        Message.assistant("That's brave, I'm proud of you."),
    ]
    note = digest(said, max_tokens=300)
    assert "[8 May, 2023] I went to my first grief support group last Thursday." in note
    assert "1:56 pm" not in note  # the stamp dates, it is said nowhere as a fact


def test_a_day_separator_dates_the_session_and_is_no_line_of_its_own() -> None:
    said = [
        Message.user("— Monday 3 March —\nDennis! It's Margaret. Finally on here."),
        Message.assistant("Mags! Good to hear from you."),
        Message.user("— Thursday 6 March —\nI've got an allotment, plot 27 at Hollybank."),
        Message.assistant("— Friday 7 March —\nNo way. Send photos."),
    ]
    note = digest(said, max_tokens=300)
    assert "[Thursday 6 March] I've got an allotment, plot 27 at Hollybank." in note
    assert "— Thursday 6 March —" not in note and "— Friday 7 March —" not in note
