"""An OpenAI Agents SDK session that keeps every original and returns a compacted history.

    pip install "kompakt[openai-agents]"
    python examples/openai_agents_session.py

The model is the SDK's own ScriptedModel (no network, no API key); replace
``model=...`` with a model name such as ``"gpt-4.1-mini"`` for a real run. The session
lives in SQLite; each run starts from what the one before would have sent next.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from agents import Agent, Runner, function_tool
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

from kompakt import Budgeted, Compactor, SQLiteStore, TokensBelow, TokensExceed
from kompakt.integrations.openai_agents import KompaktSession


@function_tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"{path}:\n" + "def handler(event):  # a long file the agent reads once\n" * 60


def script(task: int) -> ScriptedModel:
    steps = [
        ModelStep(
            output=[function_call("read_file", {"path": f"t{task}f{i}.py"}, call_id=f"c{task}_{i}")]
        )
        for i in range(4)
    ]
    return ScriptedModel([*steps, ModelStep(output=[assistant_message(f"task {task} done")])])


async def main(db: Path) -> None:
    compactor = Compactor(
        trigger=TokensExceed(6_000), strategy=Budgeted(4_000), target=TokensBelow(4_000)
    )
    store = SQLiteStore(db)
    session = KompaktSession("user-42", store=store, compactor=compactor)
    # compacts before every model call of a run too (instructions and tool schemas counted)
    config = session.run_config(tracing_disabled=True)
    for task in range(4):
        agent = Agent(
            name="debugger", instructions="You debug Python.", model=script(task), tools=[read_file]
        )
        result = await Runner.run(
            agent, f"task {task}: read four files", session=session, run_config=config
        )
        print(result.final_output)
    items = await session.get_items()
    print(f"store: {store.count('user-42')} original messages; the runner gets {len(items)} items")
    for event in session.events:
        print(" ", event.summary())
    hits = [m for m in store.search("user-42", "t0f0.py") if m.role == "tool"]
    print(f"the first file's full output is still in the store: {len(hits[0].text)} chars")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(Path(tmp) / "agents.db"))
