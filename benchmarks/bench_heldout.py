"""Held out by set: the hand-written sets split in two halves, the fitted tables
(`kompakt.notes.fitted`) fitted on one half and the answers measured on the other, and
back. The tables shipped are fitted on every set, so `bench_memory.py` says what the
digest does on conversations it has learnt from; this says what it does on the others,
and is how a change to what the tables read, or to what reads them, is judged.

Printed for each budget and number of rounds: answers held, standing instructions held,
and stale values shown without the current one, summed over both halves.

Fitting needs scikit-learn (not a dependency of kompakt), as `scripts/fitted_weights.py`:

    pip install scikit-learn
    PYTHONPATH=src python benchmarks/bench_heldout.py [--configs 0.15x1,0.2x1,0.2x5]

Each half runs in a process of its own (two at once): the tables are read once per process.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path

ROOT = Path(__file__).parent.parent
WRITTEN = Path(__file__).parent / "data" / "conversations"


def sets() -> list[Path]:
    """The first author's folder, then every `setN` in order."""
    numbered = sorted(
        (p for p in WRITTEN.glob("set*") if p.name[3:].isdigit()), key=lambda p: int(p.name[3:])
    )
    return [WRITTEN, *numbered]


def half(k: int, configs: list[str]) -> dict[str, list[int]]:
    """Fit the tables on the sets of the other half, measure the sets of half `k`."""
    sys.path[:0] = [str(ROOT / "scripts"), str(Path(__file__).parent)]
    import bench_memory
    import fitted_weights

    from kompakt.messages import Message
    from kompakt.notes import fitted

    ordered = sets()
    train = [s for i, s in enumerate(ordered) if i % 2 != k]
    test = [s for i, s in enumerate(ordered) if i % 2 == k]
    docs = [json.loads(p.read_text("utf-8")) for s in train for p in sorted(s.glob("conv_*.json"))]
    tables = Path(tempfile.mkdtemp())
    fitted_weights.OUT = tables
    with contextlib.redirect_stdout(io.StringIO()):
        rules = [r for d in docs for r in fitted_weights.rule_rows(d)]
        facts = [r for d in docs for r in fitted_weights.fact_rows(d)]
        fitted_weights.write("rule_weights.txt", rules, "tell a rule")
        fitted_weights.write("fact_weights.txt", facts, "hold a fact")

    @cache
    def weights(table: str) -> tuple[dict[str, float], float]:
        read: dict[str, float] = {}
        for line in (tables / table).read_text("utf-8").splitlines():
            if line and not line.startswith("#"):
                feature, weight = line.rsplit("\t", 1)
                read[feature] = float(weight)
        return read, read.pop("(bias)", 0.0)

    fitted._weights = weights  # the tables of this half, in this process only
    totals = {c: [0, 0, 0, 0, 0] for c in configs}  # asked, held, rules, kept, stale
    for folder in test:
        for path in sorted(folder.glob("conv_*.json")):
            doc = json.loads(path.read_text("utf-8"))
            said = [Message(role=m["role"], content=m["content"]) for m in doc["messages"]]
            for c in configs:
                share, rounds = c.split("x")
                sent = bench_memory._sent_after(
                    said, bench_memory.kompakt_default, float(share), int(rounds)
                ).lower()
                t = totals[c]
                for q in doc["questions"]:
                    answer, old = q["answer"].lower(), str(q.get("stale", "")).lower()
                    kept = answer in sent
                    t[0] += 1
                    t[1] += kept
                    if q["kind"] == "instruction":
                        t[2] += 1
                        t[3] += kept
                    t[4] += bool(old) and old in sent and not kept
    return totals


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", default="0.15x1,0.2x1,0.2x5", help="share x rounds, ...")
    parser.add_argument("--half", type=int, help=argparse.SUPPRESS)  # one half's process
    args = parser.parse_args()
    configs = args.configs.split(",")
    if args.half is not None:
        print(json.dumps(half(args.half, configs)))
        return
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    command = [sys.executable, __file__, "--configs", args.configs, "--half"]
    runs = [
        subprocess.Popen([*command, str(k)], stdout=subprocess.PIPE, text=True, env=env)
        for k in (0, 1)
    ]
    halves = [json.loads(run.communicate()[0].strip().splitlines()[-1]) for run in runs]
    print(f"{len(sets())} sets, held out by set (two halves)")
    for c in configs:
        first, second = (h[c] for h in halves)
        asked, held, rules, kept, stale = (a + b for a, b in zip(first, second, strict=True))
        share, rounds = c.split("x")
        print(
            f"{float(share):.0%} budget, {rounds} round(s): answers {held}/{asked} "
            f"({held / asked:.1%}), instructions {kept}/{rules} ({kept / rules:.1%}), "
            f"stale {stale}"
        )


if __name__ == "__main__":
    main()
