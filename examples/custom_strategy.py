"""Write your own compaction strategy in a few lines and run it inside a `Budgeted` chain.

A strategy is one method: edit the `View` (drop a group, or put synthetic messages in
its place) and return whether anything changed. `view.candidates(...)` yields only
groups you may touch (never system, pinned or memory messages, the last user
message, a pending tool call, or the newest `min_preserved` groups), and
`context.done()` says when the budget already holds.

This one drops the output of failed `pytest` runs (keeping a one-line note),
which a coding agent rarely needs once it has moved on. Run it:

    python examples/custom_strategy.py
"""

from __future__ import annotations

import json

from kompakt import CharEstimator, Compactor, Message, ToolCall
from kompakt.strategies import (
    BaseStrategy,
    Budgeted,
    CollapseToolResults,
    CompactionContext,
    SupersedeReads,
)
from kompakt.view import View


class DropFailedTestRuns(BaseStrategy):
    """Replace old failed `pytest` runs with a one-line note (oldest first)."""

    def apply(self, view: View, context: CompactionContext) -> bool:
        changed = False
        for g in view.candidates(self.preserved(context), kinds=["tool_call"]):
            if context.done():
                break
            msgs = view.index.group_messages(g)
            if any("pytest" in c.arguments for m in msgs for c in m.tool_calls) and any(
                "FAILED" in m.text for m in msgs if m.role == "tool"
            ):
                note = Message.assistant(
                    "[A failing pytest run was removed here.]",
                    synthetic="collapsed",
                    covers=tuple(m.id for m in msgs),
                )
                view.replace(g, [note])
                changed = True
        return changed


def agent_history() -> list[Message]:
    """A coding-agent session: a task, then test runs and file reads."""
    msgs = [Message.system("You are a coding agent."), Message.user("Make the test suite pass.")]
    for i in range(12):
        test = json.dumps({"command": f"pytest -q -x --lf -p seed{i}"})
        read = json.dumps({"path": "src/app.py"})
        log = "\n".join([f"FAILED tests/test_app.py::test_{j} - AssertionError" for j in range(40)])
        msgs += [
            Message.assistant(tool_calls=[ToolCall(id=f"t{i}", name="bash", arguments=test)]),
            Message.tool(log + f"\n{40 - i} failed, {i} passed", tool_call_id=f"t{i}"),
            Message.assistant(tool_calls=[ToolCall(id=f"r{i}", name="read_file", arguments=read)]),
            Message.tool(
                f"# version {i}\n" + "def f(x):\n    return x\n" * 60, tool_call_id=f"r{i}"
            ),
        ]
    msgs.append(Message.assistant("All tests pass now."))
    return msgs


def main() -> None:
    history = agent_history()
    chain = [SupersedeReads(), DropFailedTestRuns(), CollapseToolResults(keep_last_groups=2)]
    compactor = Compactor(strategy=Budgeted(2_500, strategies=chain), tokenizer=CharEstimator())
    view, event = compactor.compact(history)
    print(event.summary())
    for step in event.steps:
        if step.changed and step.strategy != "Budgeted":
            print(f"  {step.strategy:<20} {step.tokens_before:>6,} -> {step.tokens_after:>6,}")
    out = view.render()
    kinds: dict[str, int] = {}
    for m in out:
        key = m.synthetic or "original"
        kinds[key] = kinds.get(key, 0) + 1
    print("sent:", ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())))
    print("within budget:", view.total_tokens <= 2_500, "| task kept:", out[1].text)


if __name__ == "__main__":
    main()
