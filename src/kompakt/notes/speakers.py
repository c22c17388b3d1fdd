"""Speakers: who says each line of a transcript that arrives as the user's messages.

Some harnesses send a dialogue as user messages whose lines name their speaker
("Maya: ...", "Tom: ...", "User: ...", "Assistant: ..."), one turn a message or a whole
session in one. Read by role, every line would be the user's: the other speaker's
advice ("always back up first") would become a standing instruction and their chat
would be ranked as the user's. When most of the user's messages are labelled this
way, by two speakers or more, the labels say who speaks: a speaker named like an
assistant is the assistant; between people, the first to speak is the user and the
others are peers, whose words weigh like the user's but are never an instruction to
the assistant.

>>> from kompakt.messages import Message
>>> said = [Message.user(t) for t in ("Maya: I moved to Oslo.", "Tom: Nice!") * 3]
>>> transcript_speakers(said)
{'Maya': 'user', 'Tom': 'peer'}
>>> transcript_speakers([Message.user(t) for t in ("User: hi", "Assistant: Hello!") * 3])
{'User': 'user', 'Assistant': 'assistant'}
>>> transcript_speakers([Message.user("Note: the deadline is May 5."), Message.user("ok")])
{}
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence

from kompakt.messages import Message

__all__ = ["speaker_label", "transcript_speakers", "transcript_turns"]


def _names(words: str) -> frozenset[str]:
    return frozenset(re.findall(r"\S+", words))


# "Maya:", "Dr Lee:", "**User:**", "ASSISTANT:" at the start of a line
_LABEL = re.compile(r"^\s*\**([A-Z][\w.'’-]{0,24}(?: [A-Z][\w.'’-]{0,24})?)\**:\**\s")
_ASSISTANT = _names(
    """assistant ai bot chatbot gpt chatgpt claude gemini model agent system support helper
    tutor coach advisor a"""
)
_USER = _names("user human me customer client student patient q")
# Labels of a line that are not speakers: headings, notes and fields people write
_NOT_SPEAKERS = _names(
    """note notes update updates edit ps p.s fyi question questions answer rule rules
    preference preferences error warning example examples output input step tip todo re
    subject title summary context task goal goals problem solution result results code
    file path reminder important info tl;dr tldr pros cons date time
    location budget deadline status action next"""
)
_LABELLED_SHARE = 0.6  # of the user's messages: below it, labels are a writing habit
_MIN_TURNS = 3  # turns a speaker must take to count as one


def speaker_label(line: str) -> str:
    """The speaker a line names at its start ("" when it names none).

    >>> speaker_label("Maya: I moved to Oslo."), speaker_label("I moved: to Oslo.")
    ('Maya', '')
    """
    m = _LABEL.match(line)
    return m.group(1) if m else ""


def transcript_speakers(messages: Sequence[Message]) -> dict[str, str]:
    """Each speaker of a labelled transcript sent as user messages, as ``user``,
    ``assistant`` or ``peer``; empty when the messages are not such a transcript."""
    said = [m for m in messages if m.role == "user" and not m.synthetic]
    labelled = sum(1 for m in said if _opening_label(m.text))
    if not said or labelled < _LABELLED_SHARE * len(said):
        return {}
    turns: Counter[str] = Counter()  # a turn a message, or many turns in one message
    for m in said:
        turns.update(_line_labels(m.text))
    speakers = [s for s, n in turns.items() if n >= _MIN_TURNS]
    if len(speakers) < 2:
        return {}
    roles = {s: _role(s) for s in speakers}
    if "user" in roles.values():
        return {s: r or "assistant" for s, r in roles.items()}
    # between people: the first to speak who is not an assistant is the user, the
    # others are peers (ranked like the user, but giving the assistant no instruction)
    people = [s for m in said for s in _line_labels(m.text) if roles.get(s) == ""]
    if not people:
        return {}
    return {s: r or ("user" if s == people[0] else "peer") for s, r in roles.items()}


def transcript_turns(
    messages: Sequence[Message], speakers: Mapping[str, str]
) -> dict[str, list[int]]:
    """The length of each turn of a transcript (a line that names its speaker and the
    lines after it), by the role its speaker has in `speakers`.

    >>> said = [Message.user("User: hi\\nAssistant: Hello!\\nHow can I help?")]
    >>> transcript_turns(said, {"User": "user", "Assistant": "assistant"})
    {'user': [8], 'assistant': [33]}
    """
    out: dict[str, list[int]] = {}
    for m in messages:
        role = ""
        for line in m.text.splitlines():
            label = speaker_label(line) if ":" in line[:60] else ""
            if label in speakers:
                role = speakers[label]
                out.setdefault(role, []).append(len(line))
            elif role:
                out[role][-1] += 1 + len(line)
    return out


def _opening_label(text: str) -> str:
    """The speaker that opens a message: on its first line or, after a heading such as
    "[Session 3]", its second."""
    for line in text.lstrip().split("\n", 2)[:2]:
        label = speaker_label(line)
        if label:
            return "" if label.lower() in _NOT_SPEAKERS else label
    return ""


def _line_labels(text: str) -> list[str]:
    """The speakers the lines of `text` open with."""
    out = []
    for line in text.splitlines():
        if (
            ":" in line[:60]
            and (label := speaker_label(line))
            and label.lower() not in _NOT_SPEAKERS
        ):
            out.append(label)
    return out


def _role(label: str) -> str:
    name = label.lower()
    if name in _ASSISTANT:
        return "assistant"
    return "user" if name in _USER else ""
