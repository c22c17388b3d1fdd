"""Is appending flat? The cost of one append + one trigger check at 1k, 10k and 100k messages.

For each size a history of that many messages (user turns, assistant tool calls with
results of a few hundred characters, assistant answers) is indexed, then new messages
are appended one at a time; each append is followed by a trigger-style lookup
(``TokensExceed(...)(index)`` and the message/group/turn totals). The median cost per
append is printed for each size, with the ratio 100k/1k (flat means <= 2).

It also loads the largest transcript in ``tests/data`` and prints the load time
and messages per second.

    python benchmarks/bench_index.py
    python benchmarks/bench_index.py --sizes 1000,10000,100000 --check   # exit 1 if not flat
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from kompakt.formats import load  # noqa: E402
from kompakt.index import MessageIndex  # noqa: E402
from kompakt.messages import Message, ToolCall  # noqa: E402
from kompakt.tokens import CharEstimator  # noqa: E402
from kompakt.triggers import TokensExceed  # noqa: E402

DATA_DIR = ROOT / "tests" / "data"
BATCH = 100
"""Appends timed together (one timer read per batch keeps timer overhead out)."""


def messages(start: int) -> Iterator[Message]:
    """An endless agent conversation; every message is distinct (nothing is cached)."""
    n = start
    while True:
        yield Message.user(f"turn {n}: please fix the failing test in module_{n}.py")
        for k in range(3):
            call = ToolCall(id=f"call_{n}_{k}", name="bash", arguments=f'{{"cmd": "cat f{n}"}}')
            yield Message.assistant(f"step {k} of turn {n}", tool_calls=[call])
            yield Message.tool(f"output {n}.{k}\n" + "line of file content\n" * 15,
                               tool_call_id=call.id)  # fmt: skip
        yield Message.assistant(f"done with turn {n}: the test passes now")
        n += 1


def take(it: Iterator[Message], count: int) -> list[Message]:
    return [next(it) for _ in range(count)]


def append_cost(size: int, batches: int) -> float:
    """Median seconds of one append + one trigger check on a `size`-message history."""
    source = messages(0)
    index = MessageIndex(take(source, size), tokenizer=CharEstimator())
    trigger = TokensExceed(10**12)  # never fires: the check itself is what is measured
    fresh = take(source, batches * BATCH)
    samples = []
    for b in range(batches):
        chunk = fresh[b * BATCH : (b + 1) * BATCH]
        t0 = time.perf_counter()
        for m in chunk:
            index.append(m)
            if trigger(index) or index.message_count < 0 or index.group_count < 0:
                raise AssertionError("unreachable")
        samples.append((time.perf_counter() - t0) / BATCH)
    return statistics.median(samples)


def load_largest(repeat: int) -> None:
    files = [p for p in DATA_DIR.glob("*/*") if p.name.endswith((".traj", ".traj.json"))]
    if not files:
        print(f"no transcripts in {DATA_DIR}: load benchmark skipped")
        return
    path = max(files, key=lambda p: p.stat().st_size)
    times, count = [], 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        count = len(load(path))
        times.append(time.perf_counter() - t0)
    t = statistics.median(times)
    mb = path.stat().st_size / 1e6
    print(f"\nload {path.name} ({mb:.1f} MB, {count} messages): median {t * 1e3:.1f} ms, "
          f"{count / t:,.0f} messages/s, {mb / t:.1f} MB/s")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=5, help="loads of the largest transcript")
    parser.add_argument("--check", action="store_true", help="exit 1 when largest/smallest > 2")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"{'history':>10}  {'append + trigger check (median)':>32}")
    costs = {}
    for size in sizes:
        costs[size] = append_cost(size, args.batches)
        print(f"{size:>10,}  {costs[size] * 1e6:>29.2f} µs")
    ratio = costs[sizes[-1]] / costs[sizes[0]]
    verdict = "flat" if ratio <= 2 else "NOT flat"
    print(f"ratio {sizes[-1]:,}/{sizes[0]:,}: {ratio:.2f} ({verdict}; expected <= 2)")
    load_largest(args.repeat)
    return 1 if args.check and ratio > 2 else 0


if __name__ == "__main__":
    sys.exit(main())
