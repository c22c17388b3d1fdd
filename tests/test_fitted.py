"""The fitted weights that read a standing rule no cue reads, and a fact asked for later."""

from __future__ import annotations

from importlib.resources import files

import pytest

from kompakt.messages import Message
from kompakt.notes import Ledger, is_instruction, standing_instructions
from kompakt.notes.fitted import factual, features, told
from kompakt.notes.salience import (
    _RULE_LIKELY,
    _RULE_LIKELY_IN_CHAT,
    _read,
    _reads_as_instruction,
)


@pytest.mark.parametrize(
    "text",
    [  # said nowhere in the conversations the weights were fitted on
        "I hate long answers, two paragraphs max.",
        "one thing: bullet points, not essays, I read on my phone",
        "I really hate emoji in emails",
    ],
)
def test_a_rule_no_cue_reads_is_read_by_the_weights(text: str) -> None:
    assert not _reads_as_instruction(_read(text))  # else the weights are not what reads it
    assert told(text) > 0.8
    assert is_instruction(text)


@pytest.mark.parametrize(
    "text",
    [
        "The bullet points are on page 3.",
        "We had olives at dinner.",
        "My sister lives in Oslo.",
        "The meeting moved to Friday.",
        "no idea what time it is",
        "I only have two hours today.",
    ],
)
def test_what_tells_no_rule_is_not_read_as_one(text: str) -> None:
    assert told(text) < _RULE_LIKELY  # what the weights must be sure of to read a rule
    assert not is_instruction(text)


@pytest.mark.parametrize(
    "text",
    ["bullet points are easier for me to read on the bus", "sources at the end suit me best"],
)
def test_in_a_chat_the_ledger_takes_a_rule_the_weights_read_less_surely(text: str) -> None:
    """Told to an assistant in conversation, where the weights were learnt, a sentence
    past 0.4 is a standing instruction; alone (and in an agent's task) it takes 0.8."""
    assert _RULE_LIKELY_IN_CHAT < told(text) < _RULE_LIKELY
    assert is_instruction(text, chat=True) and not is_instruction(text)
    said = [
        Message.user("Which dish is best for a slow cooker?"),
        Message.assistant("A beef stew, a chili or pulled pork all work well in a slow cooker."),
        Message.user(text),
        Message.assistant("Sure."),
    ]
    assert standing_instructions(said) == [text]


def test_a_rule_read_less_surely_replaces_no_rule_in_the_ledger() -> None:
    rule = "when i log food, tell me the protein first, then calories."
    asked = "are protein bars actually any good or just chocolate bars with a halo"
    assert is_instruction(asked, chat=True) and not is_instruction(asked)
    said = [
        Message.user(rule),
        Message.assistant("Will do: protein first, then calories, every time you log food."),
        Message.user(asked),
        Message.assistant("Some are fine; check the sugar and fibre before the protein."),
    ]
    assert standing_instructions(said) == [rule, asked]
    changed = "from now on when i log food, give me the calories first."
    for replaces, kept in ((True, [changed]), (False, [rule, changed])):
        ledger = Ledger()  # read surely, the newer would replace the rule
        ledger.add(rule, order=0.0)
        ledger.add(changed, order=2.0, replaces=replaces)
        assert [e.text for e in ledger.entries()] == kept


def test_features_are_words_pairs_stems_the_length_the_first_word_and_cjk_characters() -> None:
    assert features("Bullet points, NOT essays.") == {
        "w=bullet",
        "w=points",
        "w=not",
        "w=essays",
        "b=bullet_points",
        "b=points_not",
        "b=not_essays",
        "first=bullet",
        "n=0",  # under six words
    }
    # a long word's stem: its inflections alike
    assert "s=stich" in features("Stichpunkte") & features("höchstens fünf Stichpunkten")
    assert {"c=用", "c=中", "cb=用中"} <= features("请用中文回答？")
    assert "?" in features("请用中文回答？")


@pytest.mark.parametrize(
    ("fact", "chatter"),
    [
        ("The gate code for the allotment is 5531.", "Haha yes, totally, same here."),
        ("We booked the Hotel Miramar for 12 to 15 June.", "Let me know if that helps at all!"),
        ("Her vet is Dr Okonjo at the Westgate practice.", "That sounds like a lovely day out."),
    ],
)
def test_a_fact_asked_for_later_reads_as_more_likely_than_chatter(fact: str, chatter: str) -> None:
    for source in ("user", "assistant"):
        # (the margins move a little each time the tables are refitted on more sets)
        assert factual(fact, source) > 0.25 > 0.15 > factual(chatter, source)
        assert factual(fact, source) > 5 * factual(chatter, source)


@pytest.mark.parametrize(
    ("table", "what"), [("rule_weights.txt", "rule"), ("fact_weights.txt", "fact")]
)
def test_the_weights_files_are_what_the_script_writes(table: str, what: str) -> None:
    """One bias, then one weight a feature, largest first: what the scores read."""
    lines = files("kompakt.notes").joinpath(table).read_text("utf-8").splitlines()
    assert lines[0].startswith("# written by scripts/fitted_weights.py")
    assert what in lines[0]
    assert lines[1].startswith("(bias)\t")
    weights = [float(line.rsplit("\t", 1)[1]) for line in lines[2:]]
    assert weights and all(abs(w) >= 0.1 for w in weights)
    assert [abs(w) for w in weights] == sorted((abs(w) for w in weights), reverse=True)
    named = [line.split("\t")[0] for line in lines[2:]]
    kinds = {"w", "b", "s", "n", "first", "c", "cb", "role"}
    assert all(f == "?" or f.split("=", 1)[0] in kinds for f in named)
    assert len(set(named)) == len(named)
