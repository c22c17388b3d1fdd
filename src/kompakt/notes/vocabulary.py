"""Everyday words: how common a word is in English at large, not in one conversation.

Rarity within a conversation tells which words are new *here*; in a long chat between
friends nearly every sentence has a word said only once, so it cannot tell "I can't
believe how expensive groceries have gotten" from "the pumpkin weighed 212 kilos". The
words of everyday talk name nothing in particular: a sentence said only in them, naming
nobody and no value, is small talk however rare its words are in the chat.

The word list is a tokenizer's (`scripts/common_words.py` writes it): a byte-pair
vocabulary merges the commonest words first. Words of other languages are not in it,
so it judges English alone and leaves the rest as they were.

>>> everyday(["believe", "expensive", "gotten"]), everyday(["pumpkin", "weighed", "kilos"])
(True, False)
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import cache
from importlib.resources import files

__all__ = ["everyday"]


def everyday(words: Iterable[str]) -> bool:
    """Whether every one of the lower-cased `words` is an everyday English word (and there
    is one at least).

    >>> everyday(["movie", "music"]), everyday(["tortoise"]), everyday([])
    (True, False, False)
    """
    common = _common_words()
    said = False
    for w in words:
        if w not in common:
            return False
        said = True
    return said


@cache
def _common_words() -> frozenset[str]:
    text = files("kompakt.notes").joinpath("common_words.txt").read_text(encoding="utf-8")
    return frozenset(text.split())
