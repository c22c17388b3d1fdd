"""Every command through typer's runner and through a real ``python -m kompakt``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from clihelp import (
    EXPECTED,
    MINI,
    SMALL,
    SWE,
    assert_one_line_error,
    bad_inputs,
    invoke,
    run,
)

import kompakt
from data_files import TRANSCRIPTS
from kompakt.index import MessageIndex
from kompakt.tokens import CharEstimator
from kompakt.validation import find_problems

SWE_FC = SWE / "function_calling_simple.traj"


# -- replay -------------------------------------------------------------------------


def test_replay_json_on_a_real_run(tmp_path: Path) -> None:
    report = tmp_path / "r.html"
    r = invoke("replay", str(SMALL), "--budget", "4000", "--json", "--report", str(report))
    assert r.code == 0, r.stderr
    data = r.json()
    steps = data["steps"]
    assistants = sum(1 for m in kompakt.load(SMALL) if m.role == "assistant")
    assert len(steps) == assistants + 1  # one per recorded model call, and the end
    assert [s["tokens_full"] for s in steps] == sorted(s["tokens_full"] for s in steps)
    assert data["summary"]["peak_tokens_full"] > 4000
    assert all(s["tokens_sent"] <= 4000 for s in steps)  # the default pipeline holds it
    assert data["events"], "a 17k-token run under 4k must compact"
    for e in data["events"]:
        assert e["tokens_after"] < e["tokens_before"]
        assert e["groups_dropped"] + e["groups_collapsed"] + e["groups_summarized"] > 0
        counts = {k: e[f"groups_{k}"] for k in ("dropped", "collapsed", "summarized")}
        verbs = {c.split()[0] for c in e["changes"]}  # "dropped messages 4-11", ...
        assert verbs == {k for k, n in counts.items() if n}
        for change in e["changes"]:
            first, _, last = change.split()[-1].partition("-")
            assert 0 <= int(first) <= int(last or first) < e["position"]
    kinds = {a["kind"]: a for a in data["artifacts"]}
    assert set(kinds) == {"path", "command", "error", "identifier"}
    assert kinds["command"]["total"] == 37
    for a in kinds.values():  # nothing is lost for good: what is not visible, recall has
        assert a["visible"] + a["recoverable"] == a["total"]
    assert data["report"] == str(report) and "<svg" in report.read_text()


def test_replay_rich_output_and_config(tmp_path: Path) -> None:
    config = tmp_path / "setup.toml"
    config.write_text(
        '[trigger]\ntokens = 6000\n[target]\ntokens = 3000\n[[strategy]]\nname = "truncation"\n'
    )
    r = invoke("replay", str(SMALL), "--config", str(config))
    assert r.code == 0, r.stderr
    assert "Compaction events" in r.stdout and "Still visible at the end" in r.stdout
    assert "peak context with" in r.stdout


def test_replay_with_the_digest_and_a_fraction_budget() -> None:
    r = invoke("replay", str(SMALL), "--budget", "0.3", "--strategy", "extractive_digest", "--json")
    assert r.code == 0, r.stderr
    data = r.json()
    assert data["budget"] == int(MessageIndex(kompakt.load(SMALL)).total_tokens * 0.3)
    assert any(e["groups_summarized"] for e in data["events"])


def test_replay_on_swe_agent_trajectory() -> None:
    r = invoke("replay", str(SWE_FC), "--budget", "0.8", "--json")
    assert r.code == 0, r.stderr
    assert r.json()["messages"] > 5


def test_replay_subprocess(tmp_path: Path) -> None:
    r = run("replay", str(SMALL), "--budget", "0.25", "--report", "out.html", cwd=tmp_path)
    assert r.code == 0, r.stderr
    assert "Still visible at the end" in r.stdout
    assert (tmp_path / "out.html").is_file()


def test_replay_prints_a_summary_and_each_compaction_only_with_verbose() -> None:
    events = len(invoke("replay", str(SMALL), "--budget", "0.2", "--json").json()["events"])
    assert events > 3
    quiet = invoke("replay", str(SMALL), "--budget", "0.2")
    assert quiet.code == 0, quiet.stderr
    assert "compaction at message" not in quiet.stderr + quiet.stdout
    assert "Compaction events" in quiet.stdout and "compactions" in quiet.stdout
    loud = invoke("replay", str(SMALL), "--budget", "0.2", "-v")
    assert loud.code == 0, loud.stderr
    assert loud.stderr.count("compaction at message") == events
    assert "Compaction events" in loud.stdout


# -- demo ---------------------------------------------------------------------------


def test_demo_runner_writes_the_report(tmp_path: Path) -> None:
    out = tmp_path / "demo.html"
    r = invoke("demo", "--output", str(out))
    assert r.code == 0, r.stderr
    html = out.read_text()
    assert html.count('class="pt"') > 40 and "kompakt demo" in html
    assert str(out) in r.stdout.replace("\n", "")


def test_demo_subprocess_offline_and_fast(tmp_path: Path) -> None:
    import time

    t0 = time.perf_counter()
    r = run("demo", cwd=tmp_path, timeout=60, offline=tmp_path / "site")
    took = time.perf_counter() - t0
    assert r.code == 0, r.stderr
    assert (tmp_path / "kompakt-demo.html").stat().st_size > 5_000
    assert "kompakt-demo.html" in r.stdout
    assert took < 30, f"demo took {took:.1f} s"


# -- inspect ------------------------------------------------------------------------


def test_inspect_json_adds_up() -> None:
    r = invoke("inspect", str(SMALL), "--json")
    assert r.code == 0, r.stderr
    data = r.json()
    assert data["format"] == "mini-swe-agent"
    assert sum(k["tokens"] for k in data["by_kind"].values()) == data["tokens"]
    assert (
        data["tokens"] == MessageIndex(kompakt.load(SMALL), tokenizer=CharEstimator()).total_tokens
    )
    assert data["tools"][0]["name"] == "bash" and data["tools"][0]["calls"] == 38
    sizes = [m["tokens"] for m in data["largest"]]
    assert sizes == sorted(sizes, reverse=True) and len(sizes) == 10
    assert data["problems"] == {"openai": [], "anthropic": []}


def test_inspect_tables_and_subprocess() -> None:
    r = run("inspect", str(SWE_FC))
    assert r.code == 0, r.stderr
    for title in ("Tokens by group kind", "Largest messages", "Tool calls", "Validation"):
        assert title in r.stdout


def test_inspect_reports_validation_problems(tmp_path: Path) -> None:
    orphan = tmp_path / "orphan.json"
    orphan.write_text(
        json.dumps(
            [
                {"role": "user", "content": "hi"},
                {"role": "tool", "tool_call_id": "x", "content": "1"},
            ]
        )
    )
    data = invoke("inspect", str(orphan), "--json").json()
    assert data["problems"]["openai"] and "message 1" in data["problems"]["openai"][0]


# -- compact ------------------------------------------------------------------------


def test_compact_keeps_the_format_and_the_budget(tmp_path: Path) -> None:
    out = tmp_path / "small.traj.json"
    r = invoke("compact", str(SMALL), "--budget", "3000", "-o", str(out))
    assert r.code == 0, r.stderr
    conv = kompakt.load(out)
    assert conv.format == "mini-swe-agent"
    assert json.loads(out.read_text())["info"] == json.loads(SMALL.read_text())["info"]
    assert MessageIndex(conv).total_tokens <= 3000
    kompakt.validate(conv, format="openai")


def test_compact_keeps_the_exit_record_and_every_envelope_field(tmp_path: Path) -> None:
    out = tmp_path / "small.traj.json"
    r = invoke("compact", str(SMALL), "--budget", "0.2", "-o", str(out))
    assert r.code == 0, r.stderr
    source, written = json.loads(SMALL.read_text()), json.loads(out.read_text())
    assert set(written) == set(source)
    for key in source.keys() - {"messages"}:
        assert written[key] == source[key], key
    assert len(written["messages"]) < len(source["messages"])
    assert written["messages"][-1] == source["messages"][-1]  # the final {"role": "exit"}
    assert written["messages"][-1]["role"] == "exit"
    assert sum(m.get("role") == "exit" for m in written["messages"]) == 1


def test_compact_stdin_to_stdout_and_to_another_format() -> None:
    doc = kompakt.dump(kompakt.load(SMALL), format="openai")
    text = json.dumps(doc["messages"] if isinstance(doc, dict) else doc)
    r = run("compact", "-", "--budget", "0.3", "--to", "anthropic", stdin=text)
    assert r.code == 0, r.stderr
    out = json.loads(r.stdout)
    assert "messages" in out and out["messages"][0]["role"] == "user"
    assert "compacted" in r.stderr
    assert kompakt.detect_format(out) == "anthropic"


def test_compact_with_config(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text("budget = 5000\n")
    out = tmp_path / "o.json"
    r = invoke("compact", str(SMALL), "--config", str(config), "-o", str(out))
    assert r.code == 0, r.stderr
    assert MessageIndex(kompakt.load(out)).total_tokens <= 5000


# -- eval ---------------------------------------------------------------------------


def test_eval_compares_the_four_strategies_at_three_budgets(tmp_path: Path) -> None:
    files = [
        str(MINI / n) for n in ("django__django-13658.traj.json", "django__django-12497.traj.json")
    ]
    report = tmp_path / "eval.html"
    r = run("eval", *files, "--budget", "0.5,0.2,0.1", "--report", str(report))
    assert r.code == 0, r.stderr
    for name in ("truncation", "collapse_tool_results", "budgeted", "extractive_digest", "50%"):
        assert name in r.stdout
    assert "value" in r.stdout and "command" in r.stdout
    html = report.read_text()
    assert html.count("<svg") >= 4  # three survival charts + context over the run


def test_eval_on_the_ten_mini_swe_agent_runs(tmp_path: Path) -> None:
    files = sorted(str(p) for p in MINI.glob("*.traj.json"))
    assert len(files) == 10
    table = run("eval", *files, "--budget", "0.5,0.2,0.1")
    assert table.code == 0, table.stderr
    lines = table.stdout.splitlines()
    for name in ("truncation", "collapse_tool_results", "budgeted", "extractive_digest"):
        for budget in ("50%", "20%", "10%"):
            assert any(name in line and f" {budget} " in line for line in lines), (name, budget)
    data = invoke("eval", *files, "--budget", "0.5,0.2,0.1", "--json").json()
    assert len(data["cells"]) == 10 * 4 * 3 and len(data["rows"]) == 4 * 3
    rows = {(x["strategy"], x["budget"]): x for x in data["rows"]}
    for budget in ("50%", "20%"):  # what the digest is for: planted facts outlive truncation
        digest, cut = rows[("extractive_digest", budget)], rows[("truncation", budget)]
        assert digest["needle_rate"] > cut["needle_rate"], budget


def test_eval_json_numbers_are_consistent() -> None:
    r = invoke(
        "eval", str(SMALL), "--budget", "0.5,0.2", "--strategies", "truncation,budgeted", "--json"
    )
    assert r.code == 0, r.stderr
    data = r.json()
    assert len(data["rows"]) == 4 and len(data["cells"]) == 4
    for cell in data["cells"]:
        assert cell["final_tokens"] <= cell["budget_tokens"]
        for visible, total in cell["counts"].values():
            assert 0 <= visible <= total
        assert sum(cell["counts"][k][1] for k in ("value", "constraint", "decision")) == 6
    rows = {(x["strategy"], x["budget"]): x for x in data["rows"]}
    assert rows[("budgeted", "50%")]["tokens_kept"] > rows[("budgeted", "20%")]["tokens_kept"]


def test_eval_unknown_strategy_is_a_usage_error() -> None:
    r = invoke("eval", str(SMALL), "--strategies", "truncation,nonsense")
    assert_one_line_error(r, "nonsense")


# -- bad input: one line, exit 2, no traceback, on every command ------------------

COMMANDS = {
    "replay": ["--budget", "1000"],
    "inspect": [],
    "compact": ["--budget", "1000"],
    "eval": ["--budget", "0.5"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("kind", ["missing", "unknown", "malformed"])
def test_bad_input_runner(tmp_path: Path, command: str, kind: str) -> None:
    path = bad_inputs(tmp_path)[kind]
    r = invoke(command, str(path), *COMMANDS[command])
    assert_one_line_error(r, *EXPECTED[kind])


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_bad_input_subprocess(tmp_path: Path, command: str) -> None:
    for kind, path in bad_inputs(tmp_path).items():
        r = run(command, str(path), *COMMANDS[command], cwd=tmp_path)
        assert_one_line_error(r, *EXPECTED[kind])


def test_bad_input_batch_and_usage_errors(tmp_path: Path) -> None:
    assert_one_line_error(run("batch", str(tmp_path / "nope"), "-o", str(tmp_path / "o")), "nope")
    assert_one_line_error(run("replay", str(SMALL), "--budget", "lots"), "--budget")
    assert_one_line_error(run("replay", str(SMALL), "--bogus"), "--bogus")
    assert_one_line_error(run("compact", str(SMALL)), "--budget is required")
    assert_one_line_error(run("replay", str(SMALL), "--budget", "100", "--strategy", "zzz"), "zzz")
    assert_one_line_error(
        run("replay", str(SMALL), "--budget", "10"), "cannot hold", " at message "
    )


def test_an_empty_transcript_is_inspected_and_compacted_but_not_replayed(tmp_path: Path) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    assert invoke("inspect", str(empty), "--json").json()["tokens"] == 0
    assert invoke("compact", str(empty), "--budget", "100").stdout.strip() == "[]"
    assert_one_line_error(invoke("replay", str(empty), "--budget", "100"), "no messages")


def test_debug_shows_the_traceback(tmp_path: Path) -> None:
    r = run("--debug", "inspect", str(bad_inputs(tmp_path)["malformed"]))
    assert r.code != 0 and "Traceback" in r.stderr and "MessageError" in r.stderr


def test_help_on_every_command_has_an_example() -> None:
    for command in ("replay", "demo", "inspect", "compact", "eval", "batch"):
        r = invoke(command, "--help")
        assert r.code == 0
        assert "Example: kompakt " + command in " ".join(r.stdout.split()), command
    r = run("--help")
    assert r.code == 0 and "Exit codes" in r.stdout


def test_exit_codes_documented_in_docs_cli_md_are_the_ones_used() -> None:
    import re

    from kompakt.cli.errors import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, handled

    docs = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()
    table = docs.split("## Errors and exit codes", 1)[1]
    documented = {int(c) for c in re.findall(r"^\| (\d+) \|", table, flags=re.M)}
    assert documented == {EXIT_OK, EXIT_FAILURE, EXIT_USAGE, 130}
    assert invoke("inspect", str(SMALL), "--json").code == EXIT_OK
    assert invoke("inspect", "nope.json").code == EXIT_USAGE
    with pytest.raises(typer.Exit) as info, handled():
        raise KeyboardInterrupt
    assert info.value.exit_code == 130
    with pytest.raises(typer.Exit) as info, handled():
        raise RuntimeError("a bug")
    assert info.value.exit_code == EXIT_FAILURE  # batch failures: test_cli_batch.py


def test_eval_counts_runs_a_budget_cannot_hold_as_errors_not_as_kept_zero() -> None:
    eps = str(SWE / "ctf__crypto__eps.traj")  # a 1,545-token system prompt: 20% cannot hold it
    args = ("eval", eps, str(SMALL), "--budget", "0.2", "--strategies", "budgeted")
    data = invoke(*args, "--json").json()
    (row,) = data["rows"]
    assert (row["errors"], row["runs"]) == (1, 2)
    assert 0 < row["tokens_kept"] <= 0.2  # pooled over the run that did not fail
    only_eps = invoke("eval", eps, "--budget", "0.2", "--strategies", "budgeted", "--json")
    assert only_eps.json()["rows"][0]["tokens_kept"] is None
    r = invoke(*args)
    assert r.code == 0 and "1/2" in r.stdout and "cannot hold what must be kept" in r.stdout


# -- every real transcript: no crash, one-line errors only for impossible budgets ------


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: p.name[:40])
def test_every_transcript_through_inspect_replay_and_compact(path: Path, tmp_path: Path) -> None:
    info = invoke("inspect", str(path), "--json")
    assert info.code == 0, info.stderr
    total = info.json()["tokens"]
    for budget in ("0.5", "0.2", "0.05"):
        replayed = invoke("replay", str(path), "--budget", budget, "--json")
        out = tmp_path / f"{budget}{''.join(path.suffixes)}"
        compacted = invoke("compact", str(path), "--budget", budget, "-o", str(out))
        for r in (replayed, compacted):
            if r.code != 0:  # only a budget below what must be kept may refuse
                # a recorded quirk (reused call ids) is warned about first
                quirk = "warning: the input breaks provider rules"
                r.stderr = "".join(x for x in r.stderr.splitlines(True) if not x.startswith(quirk))
                assert_one_line_error(r, "cannot hold what must be kept")
        if compacted.code == 0:
            conv = kompakt.load(out)
            assert conv.format == kompakt.load(path).format
            assert MessageIndex(conv).total_tokens <= int(total * float(budget))
            had = {p.rule for p in find_problems(kompakt.load(path))}  # recorded quirks stay
            assert {p.rule for p in find_problems(conv)} <= had
        if replayed.code == 0:
            data = replayed.json()
            assert all(s["tokens_sent"] <= data["budget"] for s in data["steps"])


def test_from_and_format_name_the_input_format_on_every_reading_command(tmp_path: Path) -> None:
    chat = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    text = json.dumps(chat)
    path = tmp_path / "chat.json"
    path.write_text(text)
    for flag in ("--from", "--format", "-f"):
        assert invoke("inspect", str(path), flag, "openai", "--json").json()["format"] == "openai"
        r = invoke("compact", str(path), "--budget", "1000", flag, "openai", "--to", "anthropic")
        assert r.code == 0 and json.loads(r.stdout)["system"] == "be brief"  # anthropic
    assert_one_line_error(invoke("inspect", str(path), "--from", "nonsense"), "nonsense")
