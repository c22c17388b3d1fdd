"""Retention benchmark on the ten mini-swe-agent runs: which strategy keeps what, per budget.

Replays every run in ``tests/data/mini-swe-agent`` turn by turn under budgets of
50%, 20% and 10% of its tokens with truncation, tool-result collapse, the default
budgeted pipeline and the extractive digest, then prints the share of planted facts
(values, constraints, decisions) and of the run's own paths, commands, errors and
identifiers still visible at the end, the tokens kept and the compaction count.

    .venv/bin/python benchmarks/bench_eval.py [--report eval.html] [--strategies a,b,c]

The same as ``kompakt eval tests/data/mini-swe-agent/*.traj.json --budget 0.5,0.2,0.1``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import kompakt
from kompakt.cli.evaluate import DEFAULT_STRATEGIES, print_eval
from kompakt.eval.report import eval_report
from kompakt.eval.retention import evaluate, parse_budgets
from kompakt.presets import make_compactor
from kompakt.tokens import CharEstimator

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "mini-swe-agent"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budgets", default="0.5,0.2,0.1")
    parser.add_argument("--strategies", default=DEFAULT_STRATEGIES)
    parser.add_argument("--report", type=Path, default=None)
    args = parser.parse_args()
    files = sorted(DATA.glob("*.traj.json"))
    if not files:
        raise SystemExit(f"no transcripts in {DATA}")
    tok = CharEstimator()
    t0 = time.perf_counter()
    runs = [(f.name, list(kompakt.load(f))) for f in files]
    loaded = time.perf_counter() - t0
    result = evaluate(
        runs,
        [s.strip() for s in args.strategies.split(",")],
        parse_budgets(args.budgets),
        lambda s, b: make_compactor(s, b, tokenizer=tok),
        tokenizer=tok,
    )
    took = time.perf_counter() - t0 - loaded
    print(
        f"{len(runs)} runs, {sum(len(m) for _, m in runs)} messages, loaded in {loaded:.1f} s; "
        f"{len(result.cells)} replays in {took:.1f} s"
    )
    print_eval(result)
    if args.report:
        args.report.write_text(eval_report(result), encoding="utf-8")
        print(f"report: {args.report}")


if __name__ == "__main__":
    main()
