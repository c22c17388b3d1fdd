"""Random agent conversations and the invariant checks every compaction must pass.

Used by the engine tests (strategies, compactor, invariants). The generator builds
what real agents produce: several system messages, pinned and memory messages,
user turns, parallel tool calls, repeated reads of the same file, huge outputs,
CJK text, and sometimes a trailing call still waiting for its results.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from kompakt.index import MessageIndex
from kompakt.messages import Message, ToolCall
from kompakt.validation import find_problems
from kompakt.view import View

TOOLS = ("read_file", "bash", "grep", "plan")
PATHS = ("a.py", "b.py", "README.md")


def _text(seed: int, size: int, cjk: bool = False) -> str:
    if cjk:
        return ("日本語のテキスト" * (size // 8 + 1))[:size]
    lines = []
    n = 0
    i = 0
    while n < size:
        line = f"line {seed}.{i}: value {seed * 31 + i}"
        lines.append(line)
        n += len(line) + 1
        i += 1
    return "\n".join(lines)[:size]


@st.composite
def conversations(draw: Any, *, max_turns: int = 6) -> list[Message]:
    """A random, provider-valid agent conversation (OpenAI and Anthropic rules)."""
    out: list[Message] = []
    for s in range(draw(st.integers(0, 2))):
        out.append(Message.system(f"system prompt {s}: " + _text(s, draw(st.integers(5, 300)))))
    counter = 0
    seed = 0
    turns = draw(st.integers(1, max_turns))
    for t in range(turns):
        seed += 1
        size = draw(st.sampled_from([10, 80, 400, 3000]))
        pinned = draw(st.integers(0, 9)) == 0
        out.append(Message.user(f"turn {t}: " + _text(seed, size), pinned=pinned))
        for _ in range(draw(st.integers(0, 5))):
            kind = draw(st.sampled_from(["text", "tools", "tools", "memory"]))
            seed += 1
            if kind == "text":
                out.append(
                    Message.assistant(
                        f"answer {seed}: " + _text(seed, draw(st.sampled_from([5, 200, 1500])))
                    )
                )
            elif kind == "memory":
                out.append(Message.assistant(f"remember {seed}", memory=True))
            else:
                calls, results = _tool_group(draw, counter, seed)
                counter += len(calls)
                out.append(
                    Message.assistant(
                        draw(st.sampled_from(["", "Let me check."])), tool_calls=calls
                    )
                )
                out.extend(results)
    ending = draw(st.sampled_from(["none", "answer", "pending", "partial"]))
    if ending == "answer":
        out.append(Message.assistant("final answer"))
    elif ending in ("pending", "partial"):
        calls, results = _tool_group(draw, counter, seed + 1, parallel=2)
        out.append(Message.assistant(tool_calls=calls))
        if ending == "partial":
            out.extend(results[:1])
    return out


def _tool_group(
    draw: Any, counter: int, seed: int, parallel: int | None = None
) -> tuple[list[ToolCall], list[Message]]:
    n = parallel or draw(st.integers(1, 3))
    calls, results = [], []
    for j in range(n):
        name = draw(st.sampled_from(TOOLS))
        if name == "read_file":
            args = {"path": draw(st.sampled_from(PATHS))}
        elif name == "bash":
            args = {"command": draw(st.sampled_from(["ls", "pytest -q", "git status"]))}
        else:
            args = {"pattern": draw(st.sampled_from(["TODO", "def "]))}
        cid = f"call_{counter + j}"
        calls.append(ToolCall(id=cid, name=name, arguments=json.dumps(args)))
        size = draw(st.sampled_from([0, 20, 500, 4000, 40_000]))
        cjk = draw(st.integers(0, 7)) == 0
        results.append(Message.tool(_text(seed * 10 + j, size, cjk), tool_call_id=cid))
    return calls, results


def sig(messages: Sequence[Message]) -> list[tuple[Any, ...]]:
    """What a provider sees of each message (for comparing outputs)."""
    return [(m.role, m.text, m.tool_calls, m.tool_call_id) for m in messages]


def must_survive(index: MessageIndex) -> set[str]:
    """Ids that every strategy must send verbatim (a provider compaction drops what
    came before it, as the provider does)."""
    keep: set[str] = set()
    superseded = index.compaction_group or 0
    for g in index.groups:
        msgs = index.group_messages(g)
        if g.index < superseded and g.kind != "system":
            continue
        if g.kind == "system" or g.index == index.last_user_group:
            keep.update(m.id for m in msgs)
        elif g.pending:  # the call stays verbatim; the results that arrived may be clamped
            keep.update(m.id for m in msgs if m.role != "tool")
        keep.update(m.id for m in msgs if m.pinned or m.memory)
    return keep


def check_view(view: View, valid_in: dict[str, bool], budget: int | None = None) -> list[Message]:
    """Assert every invariant of a compacted view; returns its rendering."""
    index = view.index
    out = view.render()
    # 1. valid for each provider the input was valid for
    for dialect, was_valid in valid_in.items():
        if was_valid:
            problems = find_problems(out, format=dialect)  # type: ignore[arg-type]
            assert problems == [], (dialect, problems[:3])
    # 2. totals are what the rendering costs
    count = index.tokenizer.count_message
    assert view.total_tokens == sum(count(m) for m in out)
    assert view.message_count == len(out)
    # 3. budget
    if budget is not None:
        assert view.total_tokens <= budget
    # 4. what must survive, survives verbatim
    sent = {m.id: m for m in out if m.synthetic is None}
    for mid in must_survive(index):
        assert mid in sent, f"{mid} was removed"
        assert sent[mid] is index.messages[index.position(mid)]  # type: ignore[index]
    # 4b. a batch still waiting for results keeps every result that arrived (maybe clamped)
    clamped = {c for m in out if m.synthetic == "clamped" for c in m.covers}
    for g in index.groups:
        if g.pending:
            for m in index.group_messages(g):
                assert m.id in sent or m.id in clamped, f"pending result {m.id} was removed"
    # 5. nothing lost: each excluded original covered once, or explicitly dropped
    originals = {m.id for m in index.messages}
    covered: dict[str, int] = {}
    for m in out:
        for c in m.covers:
            covered[c] = covered.get(c, 0) + 1
    dropped = view.dropped_ids()
    for mid in originals:
        if mid in sent:
            assert mid not in covered and mid not in dropped, mid
        else:
            assert covered.get(mid, 0) + (mid in dropped) == 1, (
                mid,
                covered.get(mid),
                mid in dropped,
            )
    return out


def validity(messages: Sequence[Message]) -> dict[str, bool]:
    """Which dialects the input is valid for."""
    return {d: not find_problems(messages, format=d) for d in ("openai", "anthropic")}
