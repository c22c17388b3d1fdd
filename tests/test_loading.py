"""A path is a path and text is text: `load` reads files, `loads` parses content.

Each test reproduces a defect of 0.1 first (a line of text read as a file path, a device
read until memory ran out, a deep document raising RecursionError), then checks the fix.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

import kompakt
from kompakt.errors import FormatError, InputError
from kompakt.eval.batch import BatchJob, plan, run_batch, transform
from kompakt.formats import detect_format, load, loads
from kompakt.formats.reading import MAX_DEPTH, read_file

SRC = Path(__file__).resolve().parents[1] / "src"
DOC = [{"role": "user", "content": "the secret of the other file"}]


@pytest.fixture
def other(tmp_path: Path) -> Path:
    path = tmp_path / "other.json"
    path.write_text(json.dumps(DOC))
    return path


def test_loads_never_reads_a_string_as_a_path(other: Path) -> None:
    assert load(other)[0].text == DOC[0]["content"]  # the file is there, and readable
    for text in (str(other), f"  {other}  ", json.dumps(str(other)), "/dev/zero"):
        with pytest.raises(FormatError, match=r"neither JSON nor JSONL|holds no transcript"):
            loads(text)
        with pytest.raises(FormatError):
            loads(text.encode())
        with pytest.raises(FormatError):
            detect_format(text)


def test_a_json_string_in_a_file_is_not_followed(tmp_path: Path, other: Path) -> None:
    pointer = tmp_path / "pointer.json"
    pointer.write_text(json.dumps(str(other)))
    with pytest.raises(FormatError, match=r"pointer.json' holds no transcript"):
        load(pointer)


def test_a_batch_input_holding_a_path_is_content_not_a_path(tmp_path: Path, other: Path) -> None:
    """Was: an input file whose content is a path compacted *that* file into the output."""
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "a.json").write_text(str(other))
    (runs / "b.json").write_text("/dev/zero")  # was: memory grew until MemoryError
    out = tmp_path / "out"
    job = BatchJob(budget="0.5")
    summary = run_batch(job, plan(runs, out, job))
    assert [r.status for r in summary.results] == ["failed", "failed"]
    assert all("neither JSON nor JSONL" in (r.error or "") for r in summary.results)
    assert not (out / "a.json").exists()
    # the function a Ray worker runs gets content too, and never opens what it names
    result = transform(job, "a.json", str(other))
    assert result.output is None and "neither JSON nor JSONL" in (result.error or "")


def test_load_reads_regular_files_only(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="not a regular file: '/dev/zero'"):
        load("/dev/zero")
    with pytest.raises(FormatError, match=f"expected a file, got a directory: '{tmp_path}'"):
        load(tmp_path)
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)  # opening it must not wait for a writer
    with pytest.raises(FormatError, match=r"not a regular file: .*fifo.json"):
        load(fifo)


def test_load_has_a_size_limit_that_names_the_file(tmp_path: Path, other: Path) -> None:
    with pytest.raises(FormatError, match=r"other.json' is larger than the 10-byte limit"):
        load(other, max_bytes=10)
    assert len(load(other, max_bytes=other.stat().st_size)) == 1


def test_load_takes_only_paths_and_names_them_as_given(other: Path) -> None:
    with pytest.raises(InputError, match=r"expected a path, got list .*kompakt.loads"):
        load(DOC)  # type: ignore[arg-type]
    with pytest.raises(FormatError, match=r"file not found: 'no/such.json'$"):
        load("no/such.json")
    with pytest.raises(FormatError, match=r"looks like JSON text: parse content"):
        load(json.dumps(DOC))
    with pytest.raises(InputError, match="loads\\(\\) parses content, got a path"):
        loads(other)  # type: ignore[arg-type]


def test_load_and_loads_give_the_same_conversation(other: Path) -> None:
    assert kompakt.load(other) == kompakt.loads(other.read_text())
    assert kompakt.loads(other.read_bytes()) == kompakt.loads(DOC) == kompakt.load(str(other))


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 5_000, 200_000])
def test_deep_nesting_is_a_format_error(tmp_path: Path, depth: int) -> None:
    """Was: RecursionError (the CLI exited 1 with a traceback hint, not 2)."""
    deep = "[" * depth + "]" * depth
    doc = '[{"role": "user", "content": "x", "extra": ' + deep + "}]"
    with pytest.raises(FormatError, match="nested deeper than 100 levels"):
        loads(doc)
    with pytest.raises(FormatError, match="nested deeper"):
        loads('{"role": "user", "content": "x", "x": ' + deep + "}\n" * 2, format="jsonl")
    path = tmp_path / "deep.json"
    path.write_text(doc)
    with pytest.raises(FormatError, match=r"deep.json' is nested deeper"):
        load(path)


def test_nesting_up_to_the_limit_loads() -> None:
    inner: object = "leaf"
    for _ in range(MAX_DEPTH - 3):  # the list, the message and its `extra` are 3 levels
        inner = [inner]
    msgs = loads([{"role": "user", "content": "x", "extra": inner}])
    assert msgs[0].text == "x"


def test_read_file_decodes_and_names_bad_bytes(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes(b'["caf\xe9"]')
    with pytest.raises(FormatError, match=r"latin1.json' is not UTF-8 text"):
        read_file(path)
    path.write_bytes(b'\xef\xbb\xbf[{"role": "user", "content": "hi"}]')
    assert load(path)[0].text == "hi"  # a byte-order mark is dropped


def _cli(*args: str, stdin: str, cwd: Path) -> tuple[int, str]:
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "160"}
    proc = subprocess.run(
        [sys.executable, "-m", "kompakt", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )
    return proc.returncode, proc.stdout + proc.stderr


def test_stdin_is_content_even_without_a_newline(tmp_path: Path, other: Path) -> None:
    """Was: stdin holding one line that is not JSON was read as a path (``/dev/zero`` hung)."""
    for text in (str(other), "/dev/zero"):
        code, out = _cli("inspect", "-", "--json", stdin=text, cwd=tmp_path)
        assert code == 2, out
        assert "neither JSON nor JSONL" in out and "secret" not in out
    code, out = _cli("inspect", "-", "--json", stdin=json.dumps(DOC), cwd=tmp_path)
    assert code == 0 and json.loads(out)["messages"] == 1


def test_deeply_nested_tool_arguments_stay_text() -> None:
    """Was: RecursionError from every strategy that reads a call's arguments."""
    from kompakt.compactor import apply_compaction
    from kompakt.messages import Message, ToolCall
    from kompakt.strategies import Budgeted, CollapseToolResults, SupersedeReads

    deep = "[" * 100_000 + "]" * 100_000
    call = ToolCall(id="c1", name="read_file", arguments=deep)
    assert call.parsed_arguments() == deep
    msgs = [Message.user("go"), Message.assistant(tool_calls=[call])]
    msgs += [Message.tool("x" * 5000, tool_call_id="c1"), Message.user("again")]
    for strategy in (Budgeted(300), CollapseToolResults(keep_last_groups=0), SupersedeReads()):
        apply_compaction(msgs, strategy=strategy)
