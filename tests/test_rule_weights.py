"""The fitted weights that read a standing rule no cue reads."""

from __future__ import annotations

from importlib.resources import files

import pytest

from kompakt.notes import is_instruction
from kompakt.notes.rule_weights import features, told
from kompakt.notes.salience import _read, _reads_as_instruction


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
    assert told(text) < 0.5
    assert not is_instruction(text)


def test_features_are_words_pairs_the_first_word_and_cjk_characters() -> None:
    assert features("Bullet points, NOT essays.") == {
        "w=bullet",
        "w=points",
        "w=not",
        "w=essays",
        "b=bullet_points",
        "b=points_not",
        "b=not_essays",
        "first=bullet",
    }
    assert {"c=用", "c=中", "cb=用中"} <= features("请用中文回答？")
    assert "?" in features("请用中文回答？")


def test_the_weights_file_is_what_the_script_writes() -> None:
    """One bias, then one weight a feature, largest first: what `told` reads."""
    lines = files("kompakt.notes").joinpath("rule_weights.txt").read_text("utf-8").splitlines()
    assert lines[0].startswith("# written by scripts/rule_weights.py")
    assert lines[1].startswith("(bias)\t")
    weights = [float(line.rsplit("\t", 1)[1]) for line in lines[2:]]
    assert weights and all(abs(w) >= 0.1 for w in weights)
    assert [abs(w) for w in weights] == sorted((abs(w) for w in weights), reverse=True)
    named = [line.split("\t")[0] for line in lines[2:]]
    assert all(f == "?" or f.split("=", 1)[0] in {"w", "b", "first", "c", "cb"} for f in named)
    assert len(set(named)) == len(named)
