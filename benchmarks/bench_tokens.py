"""How close is `CharEstimator` to cl100k, per category, and how fast is it?

Prints, for each category of the hand-written corpus in ``tests/test_tokens.py``
(17 languages, code, JSON, logs, numbers, UUIDs, hex, base64, emoji, combining marks,
math symbols): the real ``cl100k_base`` tokens and the ratio estimate / cl100k of the
current estimator and of the 0.1 one (Latin at 4 characters a token, CJK one a
character, other letters two characters a token). The goal is 0.9 <= ratio <= 1.2 in
every row. Then the same for the messages of the transcripts in ``tests/data``
(percentiles of the per-message ratio), the median time to count each category
repeated to about 100 kB, against the 0.1 estimator and tiktoken, and the median time
per message of the transcripts' ASCII messages (what appending one costs), against the
0.1 estimator (which priced ASCII by its length alone).

    python benchmarks/bench_tokens.py
"""

from __future__ import annotations

import re
import statistics
import sys
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

from kompakt.formats import load  # noqa: E402
from kompakt.tokens import CharEstimator, TiktokenTokenizer  # noqa: E402
from test_tokens import CORPUS  # noqa: E402

_NOT_LATIN = re.compile("[^\u0000-\u024f]")


def old_estimate(text: str) -> int:
    """The 0.1 `CharEstimator.count_text`, kept here to compare against."""
    if text.isascii():
        return -(-len(text) // 4)
    rare = _NOT_LATIN.findall(text)
    latin, wide, other = len(text) - len(rare), 0, 0
    for ch in rare:
        o = ord(ch)
        if (
            0x3040 <= o <= 0x30FF
            or 0x3400 <= o <= 0x4DBF
            or 0x4E00 <= o <= 0x9FFF
            or 0xAC00 <= o <= 0xD7AF
            or 0xF900 <= o <= 0xFAFF
            or 0x20000 <= o <= 0x2FFFF
            or 0x1F000 <= o <= 0x1FAFF
        ):
            wide += 1
        elif unicodedata.category(ch)[0] == "L":
            other += 1
        else:
            latin += 1
    x = latin / 4 + other / 2
    return int(x) + (int(x) < x) + wide


def median_ms(fn: Callable[[str], int], text: str, repeat: int = 7) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(text)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def main() -> int:
    exact = TiktokenTokenizer("cl100k_base")
    new = CharEstimator()
    print(f"{'category':<12}{'cl100k':>8}{'estimate':>10}{'ratio':>8}{'0.1 ratio':>11}")
    worst = (1.0, "")
    for name, text in CORPUS.items():
        real = exact.count_text(text)
        est = new.count_text(text)
        ratio = est / real
        if abs(ratio - 1.05) > abs(worst[0] - 1.05):
            worst = (ratio, name)
        flag = "" if 0.9 <= ratio <= 1.2 else "  <- out of range"
        print(f"{name:<12}{real:>8}{est:>10}{ratio:>8.2f}{old_estimate(text) / real:>11.2f}{flag}")
    print(f"furthest from 1.05: {worst[1]} at {worst[0]:.2f}")

    ratios, old_ratios = [], []
    paths = sorted((ROOT / "tests" / "data").rglob("*.traj*"))
    for path in paths:
        for m in load(path):
            if len(m.text) >= 200:
                real = exact.count_text(m.text)
                ratios.append(new.count_text(m.text) / real)
                old_ratios.append(old_estimate(m.text) / real)
    for label, values in (("estimate", ratios), ("0.1", old_ratios)):
        q = statistics.quantiles(values, n=20)
        print(
            f"\ntranscript messages ({len(values)}), {label} / cl100k: p5 {q[0]:.2f}, "
            f"median {statistics.median(values):.2f}, p95 {q[-1]:.2f}, "
            f"under by >10%: {sum(r < 0.9 for r in values) / len(values):.1%}",
            end="",
        )
    print("\n")

    print(f"{'~100 kB of':<12}{'estimate ms':>13}{'0.1 ms':>9}{'tiktoken ms':>13}{'vs 0.1':>9}")
    for name in ("english", "code", "json", "uuid", "russian", "hindi", "chinese", "emoji"):
        text = (CORPUS[name] + "\n") * (100_000 // len(CORPUS[name]))
        t_new = median_ms(new.count_text, text)
        t_old = median_ms(old_estimate, text)
        t_tik = median_ms(exact.count_text, text, repeat=3)
        print(f"{name:<12}{t_new:>13.2f}{t_old:>9.2f}{t_tik:>13.2f}{t_new / t_old:>8.1f}x")

    texts = [m.text for p in paths for m in load(p) if m.text and m.text.isascii()]
    median = statistics.median(map(len, texts))
    print(f"\nASCII transcript messages ({len(texts)}, median {median:.0f} chars), per message:")
    print(f"{'length':<12}{'estimate ns':>13}{'0.1 ns':>9}{'vs 0.1':>9}")
    for label, limit in (("<= 200", 200), ("<= 2000", 2000), ("all", None)):
        chosen = [t for t in texts if limit is None or len(t) <= limit]
        t_new = per_message_ns(new.count_text, chosen)
        t_old = per_message_ns(old_estimate, chosen)
        print(f"{label:<12}{t_new:>13.0f}{t_old:>9.0f}{t_new / t_old:>8.2f}x")
    return 0


def per_message_ns(fn: Callable[[str], int], texts: list[str], repeat: int = 15) -> float:
    """Median over `repeat` runs of the mean time to count one of `texts`."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for text in texts:
            fn(text)
        times.append((time.perf_counter() - t0) / len(texts))
    return statistics.median(times) * 1e9


if __name__ == "__main__":
    sys.exit(main())
