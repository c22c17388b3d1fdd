"""Transcripts sent as the user's messages: the labels of their lines say who speaks."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kompakt.messages import Message
from kompakt.notes import digest, split_ledger, standing_instructions
from kompakt.notes.speakers import speaker_label, transcript_speakers

CHAT = [
    ("Ann", "I just got back from Lisbon, the trams are wonderful."),
    ("Ben", "Lisbon! Did you try the custard tarts?"),
    ("Ann", "Every single day. My dentist will hear about it."),
    ("Ben", "Ha. We're off to Galway in May, the kids are excited."),
    ("Ann", "Send photos. How is the new job going?"),
    ("Ben", "Good, long commute though. Forty minutes each way."),
]


ASSISTED = [("User" if who == "Ann" else "Assistant", text) for who, text in CHAT]


def labelled(pairs: list[tuple[str, str]]) -> list[Message]:
    return [Message.user(f"{who}: {text}") for who, text in pairs]


def test_two_people_are_the_user_and_a_peer() -> None:
    assert transcript_speakers(labelled(CHAT)) == {"Ann": "user", "Ben": "peer"}


def test_a_speaker_named_like_an_assistant_is_the_assistant() -> None:
    said = labelled([("User", "hi there"), ("Assistant", "Hello! How can I help?")] * 3)
    assert transcript_speakers(said) == {"User": "user", "Assistant": "assistant"}
    # the first to speak is the user even when the assistant opens the transcript
    said = labelled([("Assistant", "Hello!"), ("Maya", "hi"), ("Assistant", "Hi Maya")] * 3)
    assert transcript_speakers(said) == {"Assistant": "assistant", "Maya": "user"}


def test_sessions_pasted_whole_are_read_turn_by_turn() -> None:
    session = "[Session 2 - 3 May]\nUser: I'm vegan.\nAssistant: Noted!\nUser: And Tom?"
    assert transcript_speakers([Message.user(session)] * 3) == {
        "User": "user",
        "Assistant": "assistant",
    }


def test_labels_people_write_in_a_chat_are_not_speakers() -> None:
    said = [
        Message.user("Note: the deadline is May 5."),
        Message.user("Update: the budget is now 4200."),
        Message.user("Note: Priya owns the vendor emails."),
        Message.user("Update: the venue moved to Hollins Barn."),
        Message.user("Note: we fly on the 12th."),
        Message.user("Update: Tom is in."),
    ]
    assert transcript_speakers(said) == {}
    # labels on a few messages of a long chat are a habit of writing, not a transcript
    chat = [Message.user(f"Question {k}: what next?") for k in range(3)]
    chat += [Message.user(f"Maya: thought {k}") for k in range(3)]
    chat += [Message.user("just chatting about the weather today") for _ in range(8)]
    assert transcript_speakers(chat) == {}
    assert speaker_label("I moved: to Oslo") == ""


def test_people_talking_instruct_no_assistant() -> None:
    said = labelled(
        [
            *CHAT,
            ("Ann", "From now on, please answer me in French."),
            ("Ben", "Always back up your photos before you travel, trust me."),
            *CHAT,
        ]
    )
    assert standing_instructions(said) == []
    note = digest(said, max_tokens=400)
    assert split_ledger(note)[0] == []
    assert "back up your photos" in note  # what they ask of each other is still said


def test_the_assistants_advice_is_no_standing_instruction() -> None:
    said = [
        Message.user(f"{'User' if k % 2 == 0 else 'Assistant'}: {text}")
        for k, (_, text) in enumerate(CHAT)
    ]
    said += [
        Message.user("User: From now on, please answer me in French."),
        Message.user("Assistant: Always back up your photos before you travel."),
        *said,
    ]
    rules = standing_instructions(said)
    assert rules == ["From now on, please answer me in French."]  # without its label
    assert split_ledger(digest(said, max_tokens=400))[0] == rules


def test_a_speakers_rules_do_not_replace_each_other_for_sharing_a_label() -> None:
    said = labelled(
        [
            ("User", "From now on, please answer with type hints in all code."),
            ("Assistant", "Will do."),
            *ASSISTED,
            ("User", "Small preference: please use pathlib everywhere instead of os.path."),
            ("Assistant", "Noted."),
            *ASSISTED,
        ]
    )
    assert standing_instructions(said) == [
        "From now on, please answer with type hints in all code.",
        "Small preference: please use pathlib everywhere instead of os.path.",
    ]


def test_a_session_pasted_whole_is_no_request_kept_whole() -> None:
    turns = "\n".join(
        f"{'User' if k % 2 == 0 else 'Assistant'}: line {k} about the garden and the shed"
        for k in range(40)
    )
    said = [
        Message.user(turns),
        Message.user("User: My sister Aoife lives in Galway.\nAssistant: Nice."),
    ]
    said += [Message.user(f"User: chat {k}\nAssistant: reply {k}") for k in range(4)]
    note = digest(said, max_tokens=200)
    assert "## User requests" not in note
    assert "Aoife lives in Galway" in note


PIECES = [
    "Maya: ", "Tom: ", "User: ", "Assistant: ", "[Session 1 — 3 May 2023]", "\n", "hi",
    "Session date: 2023/05/20 (Sat)", "I moved to Oslo.", "Mrs. Okafor", "1:58:40.", "?",
    "Got it instead.", "like two.", "From now on use metric.", "我最喜欢", "**Bob**: yo", ":",
]  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["user", "assistant"]), st.lists(st.sampled_from(PIECES))),
        min_size=1,
        max_size=10,
    ),
    st.sampled_from([20, 80, 400]),
)
def test_labels_headers_and_fragments_never_break_a_note(
    said: list[tuple[str, list[str]]], limit: int
) -> None:
    msgs = [Message(role=role, content="".join(parts) or "x") for role, parts in said]  # type: ignore[arg-type]
    note = digest(msgs[:-1], max_tokens=limit, later=msgs[-1:])
    speakers = transcript_speakers(msgs[:-1])
    for rule in split_ledger(note)[0]:  # a transcript's rules are said without their label
        assert speaker_label(rule) not in speakers
    assert "peer" not in speakers.values() or standing_instructions(msgs[:-1]) == []
