"""Rehydration after a compaction: files, plan and pinned memory back after the note,
on the real mini-swe-agent transcripts and on small conversations built to show one rule."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pytest

import kompakt
from data_files import DATA_DIR
from kompakt import Compactor, Message, MessageIndex, TokensBelow, TokensExceed, ToolCall, View
from kompakt.agent import Agent
from kompakt.file_calls import file_key, touched_file
from kompakt.models import ScriptedModel
from kompakt.store import SQLiteStore
from kompakt.strategies import (
    Budgeted,
    CompactionContext,
    ExtractiveDigest,
    Rehydrate,
    SupersedeReads,
    Truncation,
)
from kompakt.strategies.rehydrate import COPIES, HEADER
from kompakt.validation import find_problems

MINI = sorted((DATA_DIR / "mini-swe-agent").glob("*.traj.json"))


def newest_contents(messages: list[Message]) -> dict[str, str]:
    """Path -> the newest content the transcript shows of it (reads and heredoc writes)."""
    calls: dict[str, str] = {}
    out: dict[str, str] = {}
    for m in messages:
        for c in m.tool_calls:
            touch = touched_file(c)
            if touch is None:
                continue
            if touch.kind == "write" and touch.content is not None:
                out[touch.path] = touch.content
            elif touch.kind == "read":
                calls[c.id] = touch.path
        if m.role == "tool" and m.tool_call_id in calls:
            text = m.text
            body = text.split("<output>", 1)[-1].rsplit("</output>", 1)[0]
            if text.startswith("<returncode>0</returncode>") and body.strip():
                out[calls[m.tool_call_id]] = body
    return out


def rehydrated(view: View) -> list[Message]:
    return [m for m in view.render() if m.synthetic == "rehydrated"]


@pytest.mark.parametrize("path", MINI, ids=[p.name.split(".")[0] for p in MINI])
def test_files_come_back_after_the_note_within_budget_on_real_transcripts(path: Any) -> None:
    messages = list(kompakt.load(path))
    index = MessageIndex(messages)
    budget = max(6_000, index.total_tokens // 4)
    compactor = Compactor(
        trigger=TokensExceed(budget),
        strategy=Budgeted(budget // 2, strategies=[ExtractiveDigest(keep_last_groups=4)]),
        target=TokensBelow(budget),
        rehydrate=Rehydrate(files=3, max_file_tokens=600),
    )
    view, event = compactor.compact(index)
    assert view.total_tokens <= budget
    rendered = view.render()
    for dialect in ("openai", "anthropic"):
        assert not find_problems(rendered, format=dialect)
    (message,) = rehydrated(view)
    at = rendered.index(message)
    assert rendered[at - 1].synthetic == "summary"  # right after the note
    assert "Rehydrate" in [s.strategy for s in event.steps]
    titles = [line[3:] for line in message.text.splitlines() if line.startswith("## ")]
    assert 1 <= len(titles) <= 3
    newest = newest_contents(messages)
    by_id = {m.id: m for m in messages}
    copies = message.metadata[COPIES]
    assert copies and set(copies) <= set(by_id) and not message.covers  # after a note
    for title in titles:
        file = title.split(" (", 1)[0]
        assert file in newest, title
        head = newest[file].strip().splitlines()[0]
        assert head[:60] in message.text  # the newest content, cut to its cap at most
    # a file whose newest content is still sent is not brought back twice
    sent = {m.id for m in rendered if m.synthetic is None}
    assert not set(copies) & sent


def test_compacting_again_replaces_the_rehydrated_message() -> None:
    messages = list(kompakt.load(MINI[1]))
    index = MessageIndex(messages[:150])
    compactor = Compactor(
        trigger=TokensExceed(8_000),
        strategy=ExtractiveDigest(keep_last_groups=4),
        target=TokensBelow(6_000),
        rehydrate=Rehydrate(files=2, max_file_tokens=400),
    )
    view, _ = compactor.compact(index)
    first = rehydrated(view)
    index.extend(messages[150:])
    view, _ = compactor.compact(index, force=True)
    second = rehydrated(view)
    assert len(first) == 1 and len(second) == 1
    assert not find_problems(view.render())


def read(cid: str, path: str, text: str) -> list[Message]:
    call = ToolCall(id=cid, name="read_file", arguments=json.dumps({"path": path}))
    return [Message.assistant(tool_calls=[call]), Message.tool(text, tool_call_id=cid)]


def shell(cid: str, command: str, output: str = "") -> list[Message]:
    call = ToolCall(id=cid, name="bash", arguments=json.dumps({"command": command}))
    result = f"<returncode>0</returncode>\n<output>\n{output}</output>"
    return [Message.assistant(tool_calls=[call]), Message.tool(result, tool_call_id=cid)]


def compacted(messages: list[Message], rehydrate: Rehydrate, budget: int | None = None) -> View:
    view = View(MessageIndex(messages))
    Truncation(min_preserved=1).apply(view, CompactionContext(view))
    rehydrate.apply(view, CompactionContext(view, budget=budget))
    return view


def filler(n: int) -> list[Message]:
    return [Message.assistant(f"thinking {i} " * 40) for i in range(n)]


def test_only_the_newest_files_come_back_newest_first() -> None:
    msgs = [Message.user("task")]
    for i in range(4):
        msgs += read(f"c{i}", f"f{i}.py", f"content of f{i}\n")
    msgs += [*read("c9", "f0.py", "f0 again\n"), *filler(2), Message.user("go on")]
    view = compacted(msgs, Rehydrate(files=2))
    (message,) = rehydrated(view)
    titles = [line for line in message.text.splitlines() if line.startswith("## ")]
    assert [t.split()[1] for t in titles] == ["f0.py", "f3.py"]
    assert "f0 again" in message.text and "content of f0" not in message.text


def test_an_edit_after_the_newest_read_is_flagged_and_read_brings_the_current_file() -> None:
    msgs = [
        Message.user("task"),
        *shell("c1", "cd /repo && cat src/a.py", "x = 1\n"),
        *shell("c2", "sed -i 's/1/2/' /repo/src/a.py"),
        *filler(2),
        Message.user("go on"),
    ]
    view = compacted(msgs, Rehydrate())
    (message,) = rehydrated(view)
    assert "/repo/src/a.py" in message.text and "edited since" in message.text
    fresh = compacted(msgs, Rehydrate(read=lambda p: "x = 2\n" if p == "/repo/src/a.py" else None))
    (message,) = rehydrated(fresh)
    assert "x = 2" in message.text and "current content" in message.text


def test_the_plan_and_pinned_memory_come_back() -> None:
    todo = ToolCall(
        id="t1", name="TodoWrite", arguments=json.dumps({"todos": [{"content": "fix parser"}]})
    )
    msgs = [
        Message.user("task"),
        Message.assistant(tool_calls=[todo]),
        Message.tool("ok", tool_call_id="t1"),
        Message.user("remember: never push to main", pinned=True),
        *filler(3),
        Message.user("go on"),
    ]
    view = View(MessageIndex(msgs))
    # a summary that (wrongly) swallows the pinned message: rehydration restores it
    view.summarize(list(range(0, 4)), Message.user("[Summary] earlier work", synthetic="summary"))
    Rehydrate().apply(view, CompactionContext(view))
    (message,) = rehydrated(view)
    assert "fix parser" in message.text and "never push to main" in message.text
    rendered = view.render()
    assert rendered[rendered.index(message) - 1].synthetic == "summary"


def test_the_budget_limits_what_comes_back() -> None:
    msgs = [Message.user("task")]
    for i in range(3):
        msgs += read(f"c{i}", f"f{i}.py", f"line {i}\n" * 400)
    msgs += [*filler(2), Message.user("go on")]
    view = View(MessageIndex(msgs))
    Truncation(min_preserved=1).apply(view, CompactionContext(view))
    budget = view.total_tokens + 700
    Rehydrate(max_file_tokens=500).apply(view, CompactionContext(view, budget=budget))
    assert view.total_tokens <= budget
    (message,) = rehydrated(view)
    assert "tokens elided" in message.text  # a file over its cap keeps head and tail
    none = compacted(msgs, Rehydrate(), budget=10)
    assert not rehydrated(none)


def test_a_tail_that_alone_passes_the_target_leaves_no_room_and_says_so() -> None:
    msgs = [Message.user("task"), *read("c1", "app.py", "def main():\n    return 42\n")]
    msgs += filler(6)
    msgs += [Message.assistant(f"long answer {i} " + "z" * 2_000) for i in range(3)]
    compactor = Compactor(
        trigger=TokensExceed(800),
        strategy=ExtractiveDigest(keep_last_groups=3),
        target=TokensBelow(800),
        rehydrate=Rehydrate(),
    )
    view, event = compactor.compact(MessageIndex(msgs))
    assert view.total_tokens > 800 and not rehydrated(view)  # no room: nothing came back
    assert event.shortfall is not None
    assert "keep_last_groups=3 keeps the newest 3 groups" in event.shortfall
    assert event.shortfall.endswith("nothing was rehydrated: no room was left under the target")
    (step,) = [s for s in event.steps if s.strategy == "Rehydrate"]
    assert step.detail is not None and "nothing rehydrated: 1 item(s)" in step.detail
    # with room under the target, the file comes back and nothing is said
    roomy = Compactor(
        trigger=TokensExceed(800),
        strategy=ExtractiveDigest(keep_last_groups=1),
        target=TokensBelow(1_400),
        rehydrate=Rehydrate(),
    )
    view, event = roomy.compact(MessageIndex(msgs))
    assert rehydrated(view) and event.shortfall is None


def test_nothing_comes_back_without_a_compaction() -> None:
    msgs = [Message.user("task"), *read("c1", "a.py", "a\n"), Message.user("go on")]
    view = View(MessageIndex(msgs))
    assert not Rehydrate().apply(view, CompactionContext(view))
    assert not rehydrated(view)


def agent_reading(reads: int, lines: int) -> tuple[Any, ScriptedModel]:
    """An agent that reads `reads` files of `lines` lines each and is done, under a
    compactor that truncates past 1,500 tokens and rehydrates one file."""

    def read_file(path: str) -> str:
        """Read a file.

        Args:
            path: the file.
        """
        return f"# {path}\n" + "code = 1\n" * lines

    script: list[Any] = [
        Message.assistant(
            tool_calls=[
                ToolCall(id=f"c{i}", name="read_file", arguments=json.dumps({"path": f"m{i}.py"}))
            ]
        )
        for i in range(reads)
    ] + ["done"]
    flat = kompakt.CharEstimator(chars_per_token=4)  # sizes for four characters a token
    model = ScriptedModel(script, tokenizer=flat)  # the usage it reports is calibrated to
    compactor = Compactor(
        trigger=TokensExceed(1_500),
        strategy=Truncation(min_preserved=2),
        target=TokensBelow(900),
        rehydrate=Rehydrate(files=1, max_file_tokens=200),
        tokenizer=flat,
    )
    agent = Agent(model, tools=[read_file], compactor=compactor, recall=False)
    return agent.run_sync("read the modules"), model


def test_the_agent_sends_the_rehydrated_files_after_a_compaction() -> None:
    result, model = agent_reading(6, 120)
    assert result.output == "done" and result.compactions
    sent = [m for r in model.requests for m in r if m.synthetic == "rehydrated"]
    assert sent and sent[-1].text.startswith(HEADER)
    assert all(not find_problems(list(r)) for r in model.requests)


def test_the_agent_says_when_its_rehydration_found_no_room() -> None:
    result, model = agent_reading(4, 400)  # about 900 tokens a file: two pass the target
    assert result.compactions
    shortfall = result.compactions[0].shortfall
    assert shortfall is not None and "min_preserved=2" in shortfall
    assert shortfall.endswith("nothing was rehydrated: no room was left under the target")
    assert not [m for r in model.requests for m in r if m.synthetic == "rehydrated"]


def test_supersede_reads_takes_the_same_file_recogniser() -> None:
    msgs = [
        Message.user("task"),
        *shell("c1", "cat a.py", "v1\n" * 100),
        *shell("c2", "cat ./a.py", "v2\n" * 100),
        Message.user("go on"),
    ]
    view = View(MessageIndex(msgs))
    assert SupersedeReads(key=file_key, min_preserved=0).apply(view, CompactionContext(view))
    assert "Superseded" in view.render()[2].text


def test_a_view_rebuilt_from_the_store_keeps_one_rehydrated_message() -> None:
    def read_file(path: str) -> str:
        """Read a file.

        Args:
            path: the file.
        """
        return f"# {path}\n" + "code = 2\n" * 300

    def script() -> list[Any]:
        calls = [
            Message.assistant(
                tool_calls=[
                    ToolCall(
                        id=f"r{i}_{j}", name="read_file", arguments=json.dumps({"path": f"m{j}.py"})
                    )
                ]
            )
            for i in range(2)
            for j in range(3)
        ]
        return [*calls[:3], "first done", *calls[3:], "second done"]

    flat = kompakt.CharEstimator(chars_per_token=4)  # sizes for four characters a token
    compactor = Compactor(
        trigger=TokensExceed(2_000),
        strategy=ExtractiveDigest(keep_last_groups=1),
        target=TokensBelow(1_500),
        rehydrate=Rehydrate(files=2, max_file_tokens=150),
        tokenizer=flat,
    )
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "agent.db"
        model = ScriptedModel(script(), tokenizer=flat)  # the usage it reports counts
        with SQLiteStore(db) as store:
            first = Agent(
                model,
                tools=[read_file],
                compactor=compactor,
                store=store,
                session="s",
                hook="both",
                recall=False,
            )
            assert first.run_sync("read the modules").output == "first done"
        with SQLiteStore(db) as store:
            again = Agent(
                model,
                tools=[read_file],
                compactor=compactor,
                store=store,
                session="s",
                hook="both",
                recall=False,
            )
            assert len(rehydrated(again.view)) == 1
            result = again.run_sync("read them again")
            assert result.output == "second done" and result.compactions
            view = again.view
            assert len(rehydrated(view)) == 1
            assert not find_problems(view.render())


def test_a_config_file_turns_rehydration_on() -> None:
    compactor = Compactor.from_config(
        "budget = 8000\n[rehydrate]\nfiles = 2\nmax_file_tokens = 300\nplan = false\n"
    )
    assert compactor.rehydrate is not None
    assert (compactor.rehydrate.files, compactor.rehydrate.max_file_tokens) == (2, 300)
    assert compactor.rehydrate.plan is False
    assert Compactor.from_config({"budget": 8000, "rehydrate": True}).rehydrate is not None
    with pytest.raises(kompakt.ConfigError, match="unknown key"):
        Compactor.from_config({"budget": 8000, "rehydrate": {"file": 2}})
    with pytest.raises(kompakt.ConfigError, match="files"):
        Compactor.from_config({"budget": 8000, "rehydrate": {"files": -1}})


def test_a_budgeted_compactor_leaves_room_for_the_rehydration() -> None:
    index = MessageIndex(list(kompakt.load(MINI[0])))
    compactor = Compactor(strategy=Budgeted(8_000), rehydrate=Rehydrate(max_message_tokens=2_000))
    view, event = compactor.compact(index)
    (message,) = rehydrated(view)
    assert view.total_tokens <= 8_000
    budgeted = next(s for s in event.steps if s.strategy == "Budgeted")
    assert budgeted.tokens_after <= 6_000  # the strategy stopped 2,000 lower
    assert message.text.count("\n## ") >= 1
