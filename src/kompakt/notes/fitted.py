"""Fitted weights: what a sentence's words say of it, learnt from conversations.

The cues of `kompakt.notes.salience` read the usual ways of telling a rule ("always
...", "from now on ...", "please don't ...") and the usual marks of a fact (a value, a
name, a date); people say both in more ways than any list holds ("bullet points not
essays", "the lock code's the year grandad was born"). Two tables of weights read the
rest, each a linear score over a sentence's words, word pairs, long words' stems, length
and first word (CJK text as characters and character pairs):

* `told`: how likely a sentence tells a standing rule or a taste (`rule_weights.txt`);
* `factual`: how likely it holds a fact a question will later ask for (`fact_weights.txt`).

Both are fitted on the hand-written conversations of `benchmarks/data/conversations` by
`scripts/fitted_weights.py`. No model runs: a sentence is scored by adding up a few dozen
numbers.

>>> told("and bullet points not essays.") > told("The bullet points are on page 3.")
True
"""

from __future__ import annotations

import itertools
import math
import re
from functools import cache, lru_cache
from importlib.resources import files

__all__ = ["factual", "features", "told"]

_WORD = re.compile(r"[^\W\d_][\w'-]*|\d+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


@lru_cache(maxsize=1 << 16)  # a user's sentence is read for a rule and for a fact
def features(text: str) -> frozenset[str]:
    """What the weights read in `text`: its lower-cased words (``w=``), neighbouring
    word pairs (``b=``), the stems of its long words (``s=``, their first five letters:
    "Stichpunkte" and "Stichpunkten" alike), how many words it has (``n=``, in sixes),
    its first word (``first=``), CJK characters and character pairs (``c=``, ``cb=``),
    and a closing question mark (``?``).

    >>> sorted(features("Use UTC?"))
    ['?', 'b=use_utc', 'first=use', 'n=0', 'w=use', 'w=utc']
    """
    words = _WORD.findall(text.lower().replace("’", "'"))
    out = {"w=" + w for w in words}
    out.update("b=" + a + "_" + b for a, b in itertools.pairwise(words))
    out.update(["s=" + w[:5] for w in words if len(w) > 6])
    out.add("n=" + str(min(len(words) // 6, 5)))
    if words:
        out.add("first=" + words[0])
    if not text.isascii():
        chars = _CJK.findall(text)
        out.update("c=" + c for c in chars)
        out.update("cb=" + a + b for a, b in itertools.pairwise(chars))
    if text.rstrip().endswith(("?", "？")):
        out.add("?")
    return frozenset(out)


def told(text: str) -> float:
    """0..1: how likely `text` tells a standing rule or a taste, by the fitted weights.

    >>> told("I hate long answers, two paragraphs max.") > 0.8 > told("My sister lives in Oslo.")
    True
    """
    return _likelihood("rule_weights.txt", text)


def factual(text: str, source: str) -> float:
    """0..1: how likely `text`, said by `source` (``user``, ``assistant`` ...), holds a
    fact a question will later ask for, by the fitted weights.

    >>> factual("The lock code is 4471.", "user") > factual("Haha yes, totally.", "user")
    True
    """
    return _likelihood("fact_weights.txt", text, "role=" + source)


def _likelihood(table: str, text: str, said_by: str = "") -> float:
    """The logistic of `table`'s bias and weights of what `text` says (and who said it)."""
    weights, bias = _weights(table)
    said = sum(map(weights.get, features(text), itertools.repeat(0.0)))  # summed in C
    z = bias + weights.get(said_by, 0.0) + said
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


@cache
def _weights(table: str) -> tuple[dict[str, float], float]:
    text = files("kompakt.notes").joinpath(table).read_text(encoding="utf-8")
    weights: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            feature, weight = line.rsplit("\t", 1)
            weights[feature] = float(weight)
    return weights, weights.pop("(bias)", 0.0)
