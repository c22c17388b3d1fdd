"""Bad input fails where it is written, with a kompakt error that says what to pass."""

from __future__ import annotations

import json

import pytest

import kompakt
from kompakt.messages import ToolCall


def test_unknown_role_is_an_input_error() -> None:
    with pytest.raises(kompakt.InputError, match="`role` must be one of"):
        kompakt.Message(role="bot")  # type: ignore[arg-type]


def test_tool_call_arguments_as_a_dict_become_json_text() -> None:
    call = ToolCall(id="c1", name="read", arguments={"path": "a.py"})  # type: ignore[arg-type]
    assert call.arguments == json.dumps({"path": "a.py"})
    assert call.parsed_arguments() == {"path": "a.py"}
    with pytest.raises(kompakt.InputError, match="`arguments` must be JSON text"):
        ToolCall(id="c1", name="read", arguments=42)  # type: ignore[arg-type]


def test_tool_calls_given_as_dicts_are_read() -> None:
    m = kompakt.Message.assistant(
        tool_calls=[{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]  # type: ignore[list-item]
    )
    assert m.tool_calls == (ToolCall(id="c1", name="ls", arguments="{}"),)
    with pytest.raises(kompakt.InputError, match="needs 'id'"):
        kompakt.Message.assistant(tool_calls=[{"function": {"name": "ls"}}])  # type: ignore[list-item]


def test_compactor_takes_lists_and_dicts() -> None:
    dicts = [{"role": "user", "content": "x" * 4000}, {"role": "user", "content": "now"}]
    compactor = kompakt.Compactor(trigger=kompakt.TokensExceed(100), strategy=kompakt.Budgeted(100))
    assert compactor.check(kompakt.loads(dicts)) is True
    view, event = compactor.compact(dicts)  # type: ignore[arg-type]
    assert event.tokens_after <= 100
    assert view.render()[-1].text == "now"


def test_output_to_a_device_writes_through_it(tmp_path: object) -> None:
    """`-o /dev/null` must not replace the device with a regular file."""
    import os
    import stat
    from pathlib import Path

    from kompakt.eval.documents import write_atomic

    fifo = Path(str(tmp_path)) / "pipe"
    os.mkfifo(fifo)
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader, so the writer does not block
    try:
        write_atomic(fifo, "hello")
        assert os.read(fd, 100) == b"hello"
    finally:
        os.close(fd)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    write_atomic(Path(os.devnull), "discarded")
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_exclude_tools_takes_one_name_as_a_string() -> None:
    assert kompakt.CollapseToolResults(exclude_tools="bash").exclude_tools == {"bash"}
    assert kompakt.RemoveToolCalls(exclude_tools="bash").exclude_tools == {"bash"}
    assert kompakt.CollapseToolResults(exclude_tools=["a", "b"]).exclude_tools == {"a", "b"}
