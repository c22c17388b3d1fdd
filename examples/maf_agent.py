"""A Microsoft Agent Framework agent compacted by kompakt (runs offline).

    pip install "kompakt[maf]"
    python examples/maf_agent.py

The chat client is a small scripted MAF client (with MAF's own function-invocation
loop) that reads twelve large files before answering; swap in any MAF chat client
(``OpenAIChatClient()``, ``OllamaChatClient()``...) and nothing else changes.
``KompaktStrategy`` compacts before every model call (the agent's instructions and
tool schemas counted); its ``provider()`` keeps the view in the ``AgentSession``, so the
second task, and the session restored from its dict, continue from where the first left.
"""

from __future__ import annotations

import asyncio
from typing import Any

from agent_framework import (
    Agent,
    AgentSession,
    BaseChatClient,
    ChatResponse,
    Content,
    FunctionInvocationLayer,
    InMemoryHistoryProvider,
    Message,
    tool,
)

from kompakt import Budgeted, Compactor, TokensBelow, TokensExceed
from kompakt.integrations.maf import KompaktStrategy


class ReadsTwelveFiles(FunctionInvocationLayer[Any], BaseChatClient[Any]):
    def __init__(self) -> None:
        super().__init__()
        self.step = 0

    async def _respond(self) -> ChatResponse:
        self.step += 1
        if self.step % 13 == 0:
            return ChatResponse(messages=[Message("assistant", ["The bug is in f7.py."])])
        call = Content.from_function_call(
            call_id=f"call_{self.step}", name="read_file", arguments={"path": f"f{self.step}.py"}
        )
        return ChatResponse(messages=[Message("assistant", [call])])

    def _inner_get_response(self, *, messages: Any, stream: bool, options: Any, **kw: Any) -> Any:
        return self._respond()


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"{path}:\n" + "def handler(event):  # a long file the agent reads once\n" * 60


INSTRUCTIONS = "You debug Python."


async def main() -> None:
    compactor = Compactor(
        trigger=TokensExceed(6_000), strategy=Budgeted(4_000), target=TokensBelow(4_000)
    )
    strategy = KompaktStrategy(compactor, instructions=INSTRUCTIONS, tools=[read_file])
    agent = Agent(
        client=ReadsTwelveFiles(),
        instructions=INSTRUCTIONS,
        tools=[read_file],
        compaction_strategy=strategy,
        context_providers=[InMemoryHistoryProvider(), strategy.provider()],
    )
    session = agent.create_session()
    result = await agent.run("Find the bug in f1.py .. f12.py", session=session)
    print(result.messages[-1].text)
    # the session, saved and restored (another process could do this), goes on
    restored = AgentSession.from_dict(session.to_dict())
    result = await agent.run("And in f13.py .. f24.py?", session=restored)
    print(result.messages[-1].text)
    for event in strategy.events:
        print(" ", event.summary())


if __name__ == "__main__":
    asyncio.run(main())
