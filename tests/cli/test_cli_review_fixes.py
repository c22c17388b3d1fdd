"""Review findings: budgets held by every strategy, summarizer fallbacks said out loud,
output file modes, user text printed verbatim (never as rich markup)."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import pytest
from clihelp import SMALL, invoke, run

import kompakt
from kompakt.cli import batch as batch_cli
from kompakt.eval.batch import BatchSummary, ItemResult
from kompakt.eval.documents import write_atomic
from kompakt.eval.fallbacks import fallback_warnings
from kompakt.index import MessageIndex
from kompakt.tokens import CharEstimator

MODEL = "openai:gpt-4o"


def _tokens(path: Path) -> int:
    return MessageIndex(kompakt.load(path), tokenizer=CharEstimator()).total_tokens


# -- 1. every strategy stops at the budget, or says it could not ---------------------


@pytest.mark.parametrize(
    "strategy", ["truncation", "collapse_tool_results", "clamp_oversized", "sliding_window"]
)
def test_compact_holds_the_budget_or_warns(strategy: str, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    r = invoke("compact", str(SMALL), "--strategy", strategy, "--budget", "0.5", "-o", str(out))
    assert r.code == 0, r.stderr
    budget = _tokens(SMALL) // 2
    after = _tokens(out)
    warnings = [line for line in r.stderr.splitlines() if line.startswith("warning:")]
    if after <= budget:
        assert not warnings, r.stderr
    else:
        assert len(warnings) == 1, r.stderr
        assert f"{after:,}" in warnings[0] and f"{budget:,}" in warnings[0]
        assert "--strategy budgeted" in warnings[0]
    if strategy in ("truncation", "sliding_window"):  # removes only what the budget needs
        tok = CharEstimator()
        sizes = [tok.count_message(m) for m in kompakt.load(SMALL)]
        group = max(a + b for a, b in itertools.pairwise(sizes))  # a call and its result
        assert budget - group < after <= budget, (after, budget, group)


def test_compact_clamp_alone_cannot_reach_half_and_says_so(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    r = invoke("compact", str(SMALL), "-s", "clamp_oversized", "-b", "0.5", "-o", str(out))
    assert r.code == 0
    assert _tokens(out) > _tokens(SMALL) // 2  # clamping alone cannot halve this run
    assert "warning: clamp_oversized reached" in r.stderr


def test_compact_within_budget_leaves_the_run_alone(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    r = invoke("compact", str(SMALL), "-s", "truncation", "-b", "1000000", "-o", str(out))
    assert r.code == 0, r.stderr
    assert _tokens(out) == _tokens(SMALL)
    assert "warning" not in r.stderr


# -- 2. summarizer failures are said on stderr; --strict makes them fatal -------------


@pytest.fixture
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_ADMIN_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("warning:")]


def test_compact_says_the_summarizer_failed(no_key: None, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    args = ("compact", str(SMALL), "-s", "summarize", "-m", MODEL, "-b", "0.3", "-o", str(out))
    r = invoke(*args)
    assert r.code == 0, r.stderr
    assert out.is_file()
    lines = _warnings(r.stderr)
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"warning: summarizer {MODEL} failed (Missing credentials")
    assert lines[0].endswith("; used the extractive digest")
    assert f"{MODEL}: {MODEL}" not in r.stderr


def test_compact_strict_exits_1_and_writes_nothing(no_key: None, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    r = invoke(
        "compact", str(SMALL), "-s", "summarize", "-m", MODEL, "-b", "0.3", "-o", str(out),
        "--strict",
    )  # fmt: skip
    assert r.code == 1, r.stderr
    assert not out.exists()
    assert len(_warnings(r.stderr)) == 1
    assert "kompakt: error:" in r.stderr and "--strict" in r.stderr


def test_replay_warns_once_per_distinct_fallback(no_key: None) -> None:
    r = invoke("replay", str(SMALL), "-s", "summarize", "-m", MODEL, "-b", "0.3", "--json")
    assert r.code == 0, r.stderr
    events = r.json()["events"]
    assert sum(bool(e["fallbacks"]) for e in events) >= 2  # the same failure, many times
    lines = _warnings(r.stderr)
    failed = [x for x in lines if "failed" in x]
    assert failed == [
        f"warning: summarizer {MODEL} failed (Missing credentials. Please pass an `api_key`, "
        "`workload_identity`, `admin_api_key`, or set the `OPENAI_API_KEY` or "
        "`OPENAI_ADMIN_KEY` environment variable.); used the extractive digest"
    ], r.stderr
    assert len(lines) == len(set(lines))
    strict = invoke("replay", str(SMALL), "-s", "summarize", "-m", MODEL, "-b", "0.3", "--strict")
    assert strict.code == 1
    assert _warnings(strict.stderr) == lines


def test_unreachable_server_in_a_real_process(tmp_path: Path) -> None:
    spec = "openai:gpt-4o@http://127.0.0.1:9/v1"  # sockets refused by `offline`
    args = ("compact", str(SMALL), "-s", "summarize", "-m", spec, "-b", "0.3", "-o", "-")
    r = run(*args, "--strict", offline=tmp_path / "site")
    assert r.code == 1, r.stderr
    lines = _warnings(r.stderr)
    assert any(x.startswith("warning: summarizer openai:gpt-4o failed (") for x in lines), lines
    assert r.stdout == ""  # --strict: nothing written
    assert r.stderr.splitlines()[-1].startswith("kompakt: error: ")


def test_eval_strict_exits_1_on_a_failed_model(no_key: None) -> None:
    args = ("eval", str(SMALL), "-s", "summarize", "-b", "0.3", "-m", MODEL, "--json")
    r = invoke(*args)
    assert r.code == 0, r.stderr
    lines = _warnings(r.stderr)
    assert any(f"summarizer {MODEL} failed (Missing credentials" in x for x in lines), r.stderr
    assert len(lines) == len(set(lines))
    assert invoke(*args, "--strict").code == 1


def test_no_warning_without_a_failure() -> None:
    r = invoke("replay", str(SMALL), "-b", "0.2", "--strict", "--json")
    assert r.code == 0, r.stderr
    assert not _warnings(r.stderr)


def test_fallback_warnings_dedupe_and_keep_other_fallbacks() -> None:
    doubled = f"Summarize: {MODEL}: {MODEL}: timed out; used the extractive digest"
    once = f"{MODEL}: boom; used the extractive digest"
    two = f"Summarize: {once}; {once}"
    semi = f"Summarize: {MODEL}: a; b; used the extractive digest; room for 5 tokens"
    lines = fallback_warnings(
        [doubled, doubled, two, "Truncation: chain did not reach the budget", "X: odd [/b]", semi],
        [MODEL],
    )
    assert lines == [
        f"warning: summarizer {MODEL} failed (timed out); used the extractive digest",
        f"warning: summarizer {MODEL} failed (boom); used the extractive digest",
        "warning: X: odd [/b]",
        f"warning: summarizer {MODEL} failed (a; b); used the extractive digest",
        "warning: Summarize: room for 5 tokens",
    ]


# -- 3. outputs get the usual file mode, not mkstemp's 0600 ---------------------------


def test_write_atomic_honours_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        write_atomic(tmp_path / "a.json", "{}\n")
        os.umask(0o027)
        write_atomic(tmp_path / "b.json", "{}\n")
    finally:
        os.umask(old)
    assert (tmp_path / "a.json").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "b.json").stat().st_mode & 0o777 == 0o640
    assert (tmp_path / "a.json").read_text() == "{}\n"


def test_compact_output_is_readable_by_others(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        r = invoke("compact", str(SMALL), "-b", "0.5", "-o", str(tmp_path / "o.json"))
    finally:
        os.umask(old)
    assert r.code == 0, r.stderr
    assert (tmp_path / "o.json").stat().st_mode & 0o777 == 0o644


# -- 4. text from files and errors is printed verbatim, never as markup ---------------

TRICKY = "boom [/bold] at [ray] and [local] [bold]x"


def test_batch_prints_errors_verbatim(capsys: pytest.CaptureFixture[str]) -> None:
    summary = BatchSummary([ItemResult("a[/x].json", "failed", error=TRICKY)], 0.1)
    batch_cli._print_summary(summary, Path("out[/i]"))
    out = capsys.readouterr().out
    flat = " ".join(out.split())
    for piece in ("[/bold]", "[ray]", "[local]", "[bold]x", "a[/x].json", "out[/i]"):
        assert piece in flat, (piece, out)


def test_inspect_and_replay_print_file_text_verbatim(tmp_path: Path) -> None:
    path = tmp_path / "t[ray].json"
    msgs = [{"role": "user", "content": f"run `{TRICKY}` " + "y" * 400}]
    msgs += [{"role": "assistant", "content": f"cat /srv/[/bold]/x.py {i} " + "z" * 400}
             for i in range(6)]  # fmt: skip
    path.write_text(json.dumps(msgs))
    r = invoke("inspect", str(path))
    assert r.code == 0, r.stderr
    assert "[/bold]" in r.stdout and "[ray]" in r.stdout
    r = invoke("replay", str(path), "-b", "0.3", "-s", "truncation")
    assert r.code == 0, r.stderr
    assert "t[ray].json" in r.stdout
