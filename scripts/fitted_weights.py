"""Write `src/kompakt/notes/rule_weights.txt` and `fact_weights.txt`: the weights
`kompakt.notes.fitted` reads rules and facts by.

The hand-written conversations of `benchmarks/data/conversations` say which of their
sentences matter: each question has its answer, and the sentences that hold it told it.

* Rules: the user's sentences that hold the answer of a question about a standing
  instruction or a preference told one. Only what the cues of `kompakt.notes.salience`
  miss is fitted (the sentences they read as rules need no weights).
* Facts: the sentences (the user's and the replies') that hold the answer of a question
  about a fact, a date or an update.

An answer said in more than two messages ("UTC", a name) labels no sentence: it is said
in what matters and in much else. Each table is a logistic regression over `features`,
the classes balanced; weights too small to matter are left out.

Fitting needs scikit-learn (not a dependency of kompakt):

    pip install scikit-learn
    python scripts/fitted_weights.py

Held out by set (fitted on half the sets, measured on the other half, and back), the rule
weights kept 91% of the standing instructions at a 15% budget where the cues alone kept
86%; the fact weights then held 1 point more answers at 15% and 20%.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from scipy.sparse import csr_matrix
from sklearn.linear_model import LogisticRegression

from kompakt.messages import Message
from kompakt.notes.fitted import features
from kompakt.notes.salience import _read, _reads_as_instruction
from kompakt.notes.units import split_units

ROOT = Path(__file__).parent.parent
SETS = ROOT / "benchmarks" / "data" / "conversations"
OUT = ROOT / "src" / "kompakt" / "notes"
SAID_IN = 2  # an answer said in more messages than this labels no sentence
C = 0.3  # the inverse of the regularisation's strength
SMALLEST = {"rule_weights.txt": 0.1, "fact_weights.txt": 0.25}  # a weight below is left out
RULES = ("instruction", "preference")
FACTS = ("fact", "temporal", "update")

Row = tuple[frozenset[str], bool]
Doc = dict[str, Any]  # a conversation's file: messages and questions


def conversations() -> Iterator[Doc]:
    for path in sorted(SETS.glob("**/conv_*.json")):
        yield json.loads(path.read_text(encoding="utf-8"))


def rule_rows(doc: Doc) -> list[Row]:
    """The user's sentences no cue reads as a rule, each with whether it tells one."""
    rules = _answers(doc, RULES)
    common = _common(doc, _answers(doc, ("instruction",)), "user")  # a taste's answer is short
    out = []
    for pos, m in enumerate(doc["messages"]):
        if m["role"] != "user":
            continue
        for u in split_units(Message.user(m["content"]), pos):
            lower = u.text.lower()
            if _reads_as_instruction(_read(u.text)) or any(a in lower for a in common):
                continue
            out.append((features(u.text), any(a in lower for a in rules)))
    return out


def fact_rows(doc: Doc) -> list[Row]:
    """Every sentence, each with whether it holds a fact asked for later."""
    facts = _answers(doc, FACTS)
    common = _common(doc, facts, None)
    out = []
    for pos, m in enumerate(doc["messages"]):
        message = Message(role=m["role"], content=m["content"])
        for u in split_units(message, pos):
            lower = u.text.lower()
            held = [a for a in facts if a in lower]
            if any(a in common for a in held):
                continue
            out.append((features(u.text) | {"role=" + m["role"]}, bool(held)))
    return out


def _answers(doc: Doc, kinds: tuple[str, ...]) -> list[str]:
    return [q["answer"].lower() for q in doc["questions"] if q["kind"] in kinds]


def _common(doc: Doc, answers: list[str], role: str | None) -> set[str]:
    said = [m["content"].lower() for m in doc["messages"] if role in (None, m["role"])]
    return {a for a in answers if sum(a in text for text in said) > SAID_IN}


def fit(rows: list[Row]) -> tuple[dict[str, float], float]:
    """The weights and bias of a logistic regression of the rows' labels on their
    features."""
    vocabulary = {f: j for j, f in enumerate(sorted(set().union(*(said for said, _ in rows))))}
    cells = [(i, vocabulary[f]) for i, (said, _) in enumerate(rows) for f in said]
    x = csr_matrix(
        ([1.0] * len(cells), ([i for i, _ in cells], [j for _, j in cells])),
        shape=(len(rows), len(vocabulary)),
    )
    model = LogisticRegression(C=C, max_iter=5000, class_weight="balanced")
    model.fit(x, [label for _, label in rows])
    weights = dict(zip(sorted(vocabulary, key=vocabulary.__getitem__), model.coef_[0], strict=True))
    return weights, float(model.intercept_[0])


def write(table: str, rows: list[Row], what: str) -> None:
    weights, bias = fit(rows)
    kept = [f for f, w in weights.items() if abs(w) >= SMALLEST[table]]
    kept.sort(key=lambda f: (-abs(weights[f]), f))
    told = sum(label for _, label in rows)
    lines = [
        f"# written by scripts/fitted_weights.py from {len(rows)} sentences ({told} {what})",
        f"(bias)\t{bias:.4f}",
        *(f"{f}\t{weights[f]:.4f}" for f in kept),
    ]
    (OUT / table).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {OUT / table}")


if __name__ == "__main__":
    docs = list(conversations())
    write("rule_weights.txt", [r for doc in docs for r in rule_rows(doc)], "tell a rule")
    write("fact_weights.txt", [r for doc in docs for r in fact_rows(doc)], "hold a fact")
