"""Replay reads each compaction's edits from the view's journal: the events say the same as a
diff of every group would, and the work is the groups that changed, not the history."""

from __future__ import annotations

from typing import Any

import pytest

import kompakt
from data_files import TRANSCRIPTS
from kompakt.eval.compactors import make_compactor
from kompakt.eval.replay import _changes, _state, replay
from kompakt.index import MessageIndex
from kompakt.messages import Message
from kompakt.tokens import CharEstimator
from kompakt.view import View


class Diffing:
    """A compactor that also diffs every group of the view, before and after."""

    def __init__(self, inner: kompakt.Compactor) -> None:
        self.inner = inner
        self.diffs: list[tuple[int, int, int]] = []

    def check(self, source: Any) -> bool:
        return self.inner.check(source)

    def compact(self, index: MessageIndex) -> tuple[View, Any]:
        before = self.inner.view.copy() if self.inner.view is not None else None
        view, event = self.inner.compact(index)
        dropped = collapsed = summarized = 0
        covered = {
            i for m in view.synthetic() if m.synthetic in ("summary", "facts") for i in m.covers
        }
        for g in range(index.group_count):
            old = before.replacement(g) if before is not None else None
            a, b = _state(old), _state(view.replacement(g))
            if a == b:
                continue
            if b == "dropped" and any(m.id in covered for m in index.group_messages(g)):
                b = "summary"
            dropped += b == "dropped"
            collapsed += b == "note"
            summarized += b == "summary"
        if dropped or collapsed or summarized or event.tokens_after != event.tokens_before:
            self.diffs.append((dropped, collapsed, summarized))
        return view, event


@pytest.mark.parametrize(
    "strategy", ["budgeted", "extractive_digest", "collapse_tool_results", "truncation"]
)
def test_replay_events_match_a_diff_of_every_group(strategy: str) -> None:
    path = next(p for p in TRANSCRIPTS if "django__django-11797" in p.name)
    messages = list(kompakt.load(path))
    tok = CharEstimator()
    budget = MessageIndex(messages, tokenizer=tok).total_tokens // 5
    diffing = Diffing(make_compactor(strategy, budget, tokenizer=tok))
    result = replay(messages, diffing, tokenizer=tok)
    assert len(result.events) >= 3
    got = [(e.groups_dropped, e.groups_collapsed, e.groups_summarized) for e in result.events]
    assert got == diffing.diffs


def test_the_changes_of_a_compaction_are_the_groups_it_edited() -> None:
    steps = [Message.assistant(f"step {i} " + "x" * 200) for i in range(400)]
    msgs = [Message.user("task"), *steps]
    index = MessageIndex(msgs)
    view = View(index)
    view.journal()
    view.drop(1)
    view.drop(2)
    view.replace(3, (Message.assistant("[note]", synthetic="collapsed", covers=(msgs[3].id,)),))
    work = view.copy()  # what a compactor edits
    work.drop(4)
    work.drop(3)
    changed = _changes(view, len(view.journal()), work)
    assert sorted(changed) == [3, 4]  # two of 401 groups looked at
    assert changed[4] is None and changed[3] is not None and changed[3][0].text == "[note]"
    assert work.journal() == []  # read once: the next compaction starts afresh
