"""Hostile inputs found by an adversarial bug hunt: each test is a bug that was fixed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kompakt.compactor import Compactor, apply_compaction
from kompakt.errors import ConfigError, FormatError, MessageError
from kompakt.eval.batch import BatchJob, plan
from kompakt.eval.retention import parse_budgets
from kompakt.formats import dump, loads, message_from_dict
from kompakt.index import MessageIndex
from kompakt.messages import Message
from kompakt.store import SQLiteStore
from kompakt.strategies import Budgeted, ClampOversized, KeepFirstAndLast
from kompakt.tokens import CharEstimator, tokenizer_from_string
from kompakt.triggers import ContextFraction

SRC = Path(__file__).resolve().parents[1] / "src"


def kompakt(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m kompakt`` in a real process (real stdout encoding, no test runner)."""
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "160"}
    cmd = [sys.executable, "-m", "kompakt", *args]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("raw", ["nan", "inf", "-inf", "1e999", "nan%"])
def test_a_non_finite_budget_is_a_usage_error(raw: str) -> None:
    with pytest.raises(ConfigError, match="finite number > 0"):
        parse_budgets(raw)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"strategy": 7}, "`strategy` must be a strategy name, a table or a list, got 7"),
        ({"strategy": "truncation", "trigger": 5}, "`trigger` must be a table"),
        ({"strategy": "truncation", "trigger": "x"}, "`trigger` must be a table"),
        ({"strategy": "truncation", "target": [1]}, "`target` must be a table"),
        ({"strategy": "truncation", "trigger": {"fraction": "x"}}, "`trigger.fraction` must be"),
        ({"strategy": [{"name": "pipeline", "strategies": 5}]}, "`pipeline.strategies` must"),
        ({"strategy": "truncation", "min_preserved": "a"}, "`min_preserved` must be an int"),
        ({"strategy": "truncation", "min_preserved": -1}, "`min_preserved` must be an int"),
        ({"budget": 100, "early_stop": "no"}, "`early_stop` must be true or false"),
    ],
)
def test_a_config_of_the_wrong_type_is_a_config_error(config: dict[str, Any], message: str) -> None:
    """Was a TypeError/ValueError traceback, or silently accepted ("no" as early_stop=True)."""
    with pytest.raises(ConfigError, match=re.escape(message)):
        Compactor.from_config(config)


LONE_SURROGATES = (
    '[{"role": "user", "content": "bad \\ud800 x"}, {"role": "user", "content": "\\udfff"}]'
)
"""Valid JSON (escapes), but the strings hold lone surrogates that UTF-8 cannot encode."""


@pytest.mark.parametrize("to", ["openai", "jsonl", "anthropic"])
def test_lone_surrogates_are_written_back_escaped(tmp_path: Path, to: str) -> None:
    """Was: UnicodeEncodeError (exit 1) while writing the output."""
    src = tmp_path / "in.json"
    src.write_text(LONE_SURROGATES)
    r = kompakt("compact", "in.json", "--budget", "8000", "--to", to, "-o", "out", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "out").read_text(encoding="utf-8")
    if to == "openai":
        assert json.loads(text) == json.loads(LONE_SURROGATES)  # lossless
    assert "\\ud800" in text and "\\udfff" in text


def test_inspect_prints_a_lone_surrogate(tmp_path: Path) -> None:
    """Was: UnicodeEncodeError from the terminal while printing the largest messages."""
    (tmp_path / "in.json").write_text(LONE_SURROGATES)
    r = kompakt("inspect", "in.json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "bad \\ud800 x" in r.stdout  # shown as its escape, never sent raw


@pytest.mark.parametrize("out", [".", ".."])
def test_batch_refuses_an_output_folder_holding_its_inputs(tmp_path: Path, out: str) -> None:
    """Was: every input skipped as an output, "0 done" and exit 0."""
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "a.json").write_text('[{"role": "user", "content": "hi"}]')
    r = kompakt("batch", str(runs), "-o", str(runs / out), cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert "holds the input folder" in r.stderr
    assert plan(runs, runs / "out", BatchJob())[0].relative == "a.json"


@pytest.mark.parametrize("system", [[], None])
def test_an_anthropic_system_that_makes_no_message_round_trips(system: Any) -> None:
    """Was: ``"system": []`` (or null) silently dropped, so dump(load(x)) != x."""
    doc = {"system": system, "messages": [{"role": "user", "content": "hi"}]}
    assert dump(loads(doc)) == doc
    added = dump(loads(doc).with_messages([Message.system("new"), Message.user("hi")]))
    assert added["system"] == "new"


@pytest.mark.parametrize(
    ("source", "field"),
    [
        ([{"role": [], "content": "x"}], "'role'"),
        ([{"role": {}, "content": "x"}], "'role'"),
        ({"messages": [{"role": [], "content": "x"}]}, "'role'"),
        ([{"role": "system", "content": [{"type": []}]}], "'content[0].type'"),
        ([{"role": "user", "content": "x", "kompakt": {"synthetic": []}}], "synthetic"),
    ],
)
def test_an_unhashable_role_or_type_is_a_message_error(source: Any, field: str) -> None:
    """Was: TypeError: unhashable type, from a set look-up before the type check."""
    with pytest.raises(MessageError, match=re.escape(field)):
        loads(source)


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"role": []}, "'role'"),
        ({"role": "user", "content": [{"kind": []}]}, "'content[0].kind'"),
        ({"role": "user", "synthetic": {}}, "'synthetic'"),
    ],
)
def test_native_dicts_with_unhashable_fields_are_message_errors(data: Any, field: str) -> None:
    with pytest.raises(MessageError, match=re.escape(field)):
        message_from_dict(data)


@pytest.mark.parametrize("field", [{"tool_call_id": "a"}, {"tool_calls": []}, {"tool_calls": None}])
def test_a_legacy_function_result_keeps_fields_it_does_not_use(field: dict[str, Any]) -> None:
    """Was: ``tool_call_id``/``tool_calls`` on a ``function`` message silently dropped."""
    doc = [{"role": "function", "name": "f", "content": "x", **field}]
    assert dump(loads(doc)) == doc


def test_keep_first_and_last_is_idempotent_after_an_omitted_note() -> None:
    """Was: on a second pass the "[Earlier conversation omitted]" note counted as the first
    user message, so the user's real first message was dropped."""
    conv = [
        Message.assistant("a"),
        Message.assistant("remember this", memory=True),
        Message.user("the task"),
        Message.user("q2"),
        Message.user("q3"),
    ]
    out = apply_compaction(
        conv, strategy=KeepFirstAndLast(keep_last_groups=2), tokenizer=CharEstimator()
    )
    assert [m.text for m in out][1:] == ["remember this", "the task", "q2", "q3"]
    again = apply_compaction(
        out, strategy=KeepFirstAndLast(keep_last_groups=2), tokenizer=CharEstimator()
    )
    assert [m.text for m in again] == [m.text for m in out]
    assert MessageIndex(out).first_user_group == 2


@pytest.mark.parametrize("spec", ["chars:nan", "chars:inf", "chars:-inf"])
def test_a_non_finite_chars_per_token_is_a_config_error(spec: str) -> None:
    """Was: ValueError: cannot convert float NaN to integer, on the first count."""
    with pytest.raises(ConfigError, match="`chars_per_token` must be > 0"):
        tokenizer_from_string(spec)


def test_a_clamped_anthropic_error_result_stays_an_error() -> None:
    """Was: ClampOversized dropped ``is_error``, so the model read a failure as output."""
    call = {"type": "tool_use", "id": "t1", "name": "sh", "input": {}}
    result = {"type": "tool_result", "tool_use_id": "t1", "content": "E" * 8000, "is_error": True}
    doc = {
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [call]},
            {"role": "user", "content": [result]},
            {"role": "user", "content": "again"},
        ]
    }
    out = apply_compaction(doc, strategy=ClampOversized(max_message_tokens=50, min_preserved=0))
    block = out["messages"][2]["content"][0]
    assert len(block["content"]) < 1000 and block["is_error"] is True
    request = dump(loads(out), provider=True)
    assert request["messages"][2]["content"][0]["is_error"] is True


@pytest.mark.parametrize("tokenizer", ["cl100k_base", 5])
def test_a_tokenizer_that_is_not_one_is_a_config_error(tokenizer: Any) -> None:
    """Was: AttributeError: 'str' object has no attribute 'count_message'."""
    with pytest.raises(ConfigError, match="`tokenizer` must be a Tokenizer"):
        apply_compaction([Message.user("hi")], strategy=Budgeted(100), tokenizer=tokenizer)


def test_budgeted_without_a_budget_is_a_config_error() -> None:
    """Was: TypeError (None // int) on the first apply."""
    with pytest.raises(ConfigError, match="`token_budget` must be an int >= 0, got None"):
        Budgeted(None)  # type: ignore[arg-type]


@pytest.mark.parametrize("window", [0, -5, 1.5, "100"])
def test_a_context_fraction_window_must_be_a_positive_int(window: Any) -> None:
    """Was: accepted; window=0 or -5 fired on every check, "100" a TypeError."""
    with pytest.raises(ConfigError, match="`context_window` must be an int"):
        ContextFraction(0.5, context_window=window)


def test_sqlite_store_keeps_a_lone_surrogate(tmp_path: Path) -> None:
    """Was: UnicodeEncodeError from sqlite3 on append (JSON "\\ud800" escapes load fine)."""
    store = SQLiteStore(tmp_path / "h.db")
    msgs = [Message.user("bad \ud800 x"), Message.assistant("nul \x00 ok")]
    store.append("s", msgs)
    assert [m.text for m in store.messages("s")] == ["bad \ud800 x", "nul \x00 ok"]
    assert [m.text for m in store.search("s", "bad")] == ["bad \ud800 x"]
    store.close()


def test_replay_report_with_lone_surrogates(tmp_path: Path) -> None:
    """Was: UnicodeEncodeError while writing the HTML report (exit 1)."""
    msgs: list[dict[str, str]] = [{"role": "system", "content": "s"}]
    for i in range(6):
        msgs += [
            {"role": "user", "content": "q\ud800 " * 200 + str(i)},
            {"role": "assistant", "content": "a\udfff " * 200},
        ]
    (tmp_path / "in.json").write_text(json.dumps(msgs))
    r = kompakt("replay", "in.json", "--budget", "0.3", "--report", "r.html", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "q? " in (tmp_path / "r.html").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "text", ['\ufeff[{"role": "user", "content": "hi"}]', '\ufeff{"role": "user", "content": "hi"}']
)
def test_text_with_a_byte_order_mark_loads_like_a_file_with_one(text: str) -> None:
    """Was: a BOM on stdin (or in JSON text) read as a path: "file not found: '\\ufeff[...'"."""
    assert [m.text for m in loads(text)] == ["hi"]
    assert [m.text for m in loads(text.encode("utf-8"))] == ["hi"]


def test_compact_reads_a_byte_order_mark_on_stdin(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    cmd = [sys.executable, "-m", "kompakt", "compact", "-", "--budget", "100"]
    doc = '\ufeff[{"role": "user", "content": "hi"}]'
    r = subprocess.run(cmd, input=doc, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize("command", ["compact", "replay"])
@pytest.mark.parametrize("extra", [["--budget", "100"], ["--strategy", "clamp_oversized"]])
def test_config_refuses_options_it_would_ignore(
    tmp_path: Path, command: str, extra: list[str]
) -> None:
    """Was: `compact --config c.toml --budget 100` ignored the budget (500k tokens out, exit 0,
    no warning); `--strategy` was ignored the same way."""
    (tmp_path / "c.toml").write_text('[strategy]\nname = "truncation"\n')
    (tmp_path / "in.json").write_text(
        json.dumps([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}])
    )
    r = kompakt(command, "in.json", "--config", "c.toml", *extra, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert "--config, not both" in r.stderr


def test_batch_with_a_bad_config_fails_once_before_any_file(tmp_path: Path) -> None:
    """Was: the same error once per file in a failure table (and a TypeError before that)."""
    runs = tmp_path / "runs"
    runs.mkdir()
    for name in ("a.json", "b.json"):
        (runs / name).write_text('[{"role": "user", "content": "hi"}]')
    (tmp_path / "c.toml").write_text("strategy = 7\n")
    r = kompakt("batch", "runs", "-o", "out", "--config", "c.toml", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines() == [
        "kompakt: error: `strategy` must be a strategy name, a table or a list, got 7"
    ]
    assert not (tmp_path / "out").exists()


def test_a_report_path_that_is_a_directory_is_named(tmp_path: Path) -> None:
    """Was: "expected a file, got a directory: .../.d.tmp" (the temporary file's name)."""
    (tmp_path / "d").mkdir()
    (tmp_path / "in.json").write_text('[{"role": "user", "content": "hi"}]')
    r = kompakt("replay", "in.json", "--budget", "100", "--report", "d", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().endswith(f"got a directory: {str(tmp_path / 'd')!r}")


def test_bytes_that_are_not_utf8_are_a_format_error() -> None:
    """Was: UnicodeDecodeError out of kompakt.load."""
    with pytest.raises(FormatError, match="bytes is not UTF-8 text"):
        loads(b"\xff\xfe[\x00]\x00")
