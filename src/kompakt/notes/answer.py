"""Answering a focused question from a span without a model: the digest's candidates
that best match the question's words and the kind of fact it asks for.

>>> from kompakt.messages import Message
>>> answer([Message.user("We deploy with Helm 3.14 on the blue cluster.")],
...        "Which dependencies and versions matter?")
['We deploy with Helm 3.14 on the blue cluster.']
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kompakt.messages import Message
from kompakt.notes.digest import digest_items
from kompakt.tokens import CharEstimator, Tokenizer

__all__ = ["answer"]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_SECTION_WORDS: dict[str, frozenset[str]] = {
    "requests": _words("goal task request requested asked user primary want aim"),
    "files": _words(
        "structure file files project directory directories module modules paths path "
        "layout code location locations"
    ),
    "identifiers": _words(
        "dependencies dependency version versions library libraries package packages "
        "identifiers names values environment"
    ),
    "decisions": _words(
        "achievements achieved findings finding decisions decided status found key cause "
        "plan pending remain remaining next done progress conclusion"
    ),
    "commands": _words("tool tools results result commands command ran run outcome tests test"),
    "errors": _words("errors error failures failure problems issues bugs findings status"),
    "quoted": _words(
        "facts fact constraints constraint values value settings configuration config versions "
        "version environment tool output"
    ),
    "facts": _words(
        "facts fact constraints constraint rules rule requirements must values value settings "
        "configuration config versions version dependencies environment key findings decisions"
    ),
    "instructions": _words(
        "instructions instruction rules rule preferences preference always never user style "
        "constraints constraint requirements"
    ),
    "earlier": frozenset(),
}
_STOP = _words(
    "the a an of to in on and or is are was were what which this that for with has have been "
    "be by it its so far during current agent"
)
_WORD = re.compile(r"[a-z][a-z0-9]+")


def answer(
    messages: Sequence[Message],
    question: str,
    *,
    max_facts: int = 6,
    max_tokens: int = 400,
    tokenizer: Tokenizer | None = None,
) -> list[str]:
    """At most `max_facts` lines of `messages` that answer `question`, best first."""
    items = digest_items(messages, max_tokens, tokenizer=tokenizer or CharEstimator())
    words = {w for w in _WORD.findall(question.lower().replace("-", " ")) if w not in _STOP}
    scored: list[tuple[float, int, str]] = []
    for rank, (section, text, score) in enumerate(items):
        affinity = len(words & _SECTION_WORDS.get(section, frozenset()))
        overlap = len(words & set(_WORD.findall(text.lower())))
        if affinity or overlap:
            scored.append((2.0 * affinity + overlap + score / 10, -rank, text))
    scored.sort(reverse=True)
    return [text for _, _, text in scored[:max_facts]]
