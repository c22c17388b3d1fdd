"""The extractive digest on every transcript in tests/data.

For each transcript the span an agent would evict (everything but the system prompt
and the newest messages) is digested within 800 tokens. Printed: tokens before and
after, and the share of the span's file paths (those the agent's commands and words
touched), commands and error lines that survive verbatim into the note. The counts
use their own simple patterns, not the digest's. Then the run is digested again with
facts planted by the eval harness (`plant_needles`: values and constraints appended to
tool results, decisions to assistant texts): the share of planted facts in the note.

Run: ``PYTHONPATH=src python benchmarks/bench_digest.py [--task-kept]`` (``--task-kept``:
the span starts after the task, as a compaction's does)
"""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

from kompakt.eval.probes import plant_needles
from kompakt.formats import load
from kompakt.messages import Message
from kompakt.strategies.digest import digest
from kompakt.tokens import CharEstimator

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
LIMIT = 800
KEEP = 6
PATH = re.compile(
    r"(?<![\w/.])(?:[\w.-]+/)*[\w-]+\.(?:py|js|ts|json|txt|md|cfg|toml|yaml|yml|c|sh|enc)\b"
)
ERROR = re.compile(r"^\s*\w*(?:Error|Exception): |^FAILED|^ERROR:|^FAIL:|No such file or directory")
ACTION = re.compile(r"```[\w-]*\n(.*?)```|<command>\n?(.*?)</command>", re.DOTALL)


def commands(span: list[Message]) -> list[str]:
    out: list[str] = []
    for m in span:
        if m.role != "assistant":
            continue
        texts = []
        for c in m.tool_calls:
            args = c.parsed_arguments()
            texts.append(args.get("command", c.name) if isinstance(args, dict) else c.name)
        if not m.tool_calls:
            texts += [a or b for a, b in ACTION.findall(m.text)[-1:]]
        out += [str(t).strip().splitlines()[0][:60] for t in texts if str(t).strip()]
    return out


def paths(span: list[Message]) -> set[str]:
    found: set[str] = set()
    for m in span:
        if m.role == "assistant":
            found.update(PATH.findall(m.text))
            for c in m.tool_calls:
                found.update(PATH.findall(c.arguments.replace("\\n", "\n")))
    return found


def errors(span: list[Message]) -> list[str]:
    lines = []
    for m in span:
        if m.role in ("tool", "user") and m is not span[0]:
            lines += [ln.strip()[:50] for ln in m.text.splitlines() if ERROR.search(ln)]
    return lines


def share(items: list[str] | set[str], note: str) -> tuple[int, int]:
    unique = set(items)
    return sum(1 for i in unique if i in note), len(unique)


def main() -> None:
    # --task-kept: the span starts after the task, as in a real run (the task is the last
    # user message there, which a compaction never evicts); by default it is inside
    first = next((i for i, m in enumerate(sys.argv) if m == "--task-kept"), None)
    start = 2 if first is not None else 1
    tok = CharEstimator()
    files = sorted(DATA.glob("*/*.traj*"))
    print(
        f"{'transcript':<46} {'msgs':>5} {'before':>8} {'after':>6} {'ms':>5}  "
        f"{'paths':>9} {'commands':>9} {'errors':>9} {'facts':>9}"
    )
    totals = [0, 0, 0, 0, 0, 0, 0, 0]
    for f in files:
        msgs = list(load(f))
        span = msgs[start:-KEEP]
        if not span:
            continue
        t0 = time.perf_counter()
        note = digest(span, max_tokens=LIMIT, tokenizer=tok)
        ms = (time.perf_counter() - t0) * 1000
        before = sum(tok.count_message(m) for m in span)
        p, c, e = share(paths(span), note), share(commands(span), note), share(errors(span), note)
        planted, needles = plant_needles(msgs)
        planted_note = digest(planted[start:-KEEP], max_tokens=LIMIT, tokenizer=tok)
        inside = [n.value for n in needles if start <= n.position < len(msgs) - KEEP]
        k = share(inside, planted_note)
        for i, (a, b) in enumerate((p, c, e, k)):
            totals[2 * i] += a
            totals[2 * i + 1] += b
        print(
            f"{f.name[:46]:<46} {len(msgs):>5} {before:>8,} {tok.count_text(note):>6} {ms:>5.0f}  "
            + "  ".join(f"{a:>3}/{b:<4}" for a, b in (p, c, e, k))
        )
    ratios = [totals[i] / max(1, totals[i + 1]) for i in (0, 2, 4, 6)]
    print(
        f"survival overall: paths {ratios[0]:.0%}, commands {ratios[1]:.0%}, "
        f"error lines {ratios[2]:.0%}, planted facts {ratios[3]:.0%} (note limit {LIMIT} tokens)"
    )


if __name__ == "__main__":
    main()
