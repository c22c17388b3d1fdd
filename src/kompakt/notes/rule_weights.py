"""Rule weights: how much each word and word pair says a sentence is a standing rule.

The cues of `kompakt.notes.salience` read the usual ways of telling a rule ("always
...", "from now on ...", "please don't ..."); people tell rules in more ways than any
list holds ("bullet points not essays", "all timestamps in UTC when you give me
times"). These weights read the rest: a linear score over a sentence's words, word
pairs and first word (CJK text as characters and character pairs), fitted on the
hand-written conversations of `benchmarks/data/conversations` by
`scripts/rule_weights.py`, which writes `rule_weights.txt`. No model runs: a sentence
is scored by adding up to a few dozen numbers.

>>> told("and bullet points not essays.") > told("The bullet points are on page 3.")
True
"""

from __future__ import annotations

import itertools
import math
import re
from functools import cache
from importlib.resources import files

__all__ = ["features", "told"]

_WORD = re.compile(r"[^\W\d_][\w'-]*|\d+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def features(text: str) -> set[str]:
    """What the weights read in `text`: its lower-cased words (``w=``), neighbouring
    word pairs (``b=``), first word (``first=``), CJK characters and character pairs
    (``c=``, ``cb=``), and a closing question mark (``?``).

    >>> sorted(features("Use UTC?"))
    ['?', 'b=use_utc', 'first=use', 'w=use', 'w=utc']
    """
    words = _WORD.findall(text.lower().replace("’", "'"))
    out = {"w=" + w for w in words}
    out.update("b=" + a + "_" + b for a, b in itertools.pairwise(words))
    if words:
        out.add("first=" + words[0])
    if not text.isascii():
        chars = _CJK.findall(text)
        out.update("c=" + c for c in chars)
        out.update("cb=" + a + b for a, b in itertools.pairwise(chars))
    if text.rstrip().endswith(("?", "？")):
        out.add("?")
    return out


def told(text: str) -> float:
    """0..1: how likely `text` tells a standing rule, by the fitted weights.

    >>> told("I hate long answers, two paragraphs max.") > 0.8 > told("My sister lives in Oslo.")
    True
    """
    weights, bias = _weights()
    z = bias + sum(map(weights.get, features(text), itertools.repeat(0.0)))  # in C
    return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


@cache
def _weights() -> tuple[dict[str, float], float]:
    text = files("kompakt.notes").joinpath("rule_weights.txt").read_text(encoding="utf-8")
    weights: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            feature, weight = line.rsplit("\t", 1)
            weights[feature] = float(weight)
    return weights, weights.pop("(bias)", 0.0)
