"""A LangChain v1 agent whose model sees a compacted history (runs offline).

    pip install "kompakt[langchain]"
    python examples/langchain_agent.py

The model here is LangChain's fake chat model, scripted to read twelve large files
before answering. Swap in any real chat model (``init_chat_model("openai:gpt-4.1-mini")``)
and nothing else changes. The view (kompakt's notes) is checkpointed with the thread, so a
second run, and a new agent on the same checkpointer, go on from it. The same compactor
also fits a LangGraph graph as a node: ``pre_model_hook(compactor)``.
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver

from kompakt import Budgeted, Compactor, TokensBelow, TokensExceed
from kompakt.integrations.langchain import KompaktMiddleware


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"{path}:\n" + "def handler(event):  # a long file the agent reads once\n" * 60


class ReadsTwelveFiles(FakeMessagesListChatModel):
    """LangChain's fake model: one read_file call per step, then an answer."""

    responses: list[Any] = [  # noqa: RUF012 (a pydantic field)
        *[
            AIMessage(
                "",
                tool_calls=[
                    {
                        "name": "read_file",
                        "args": {"path": f"f{i}.py"},
                        "id": f"call_{i}",
                        "type": "tool_call",
                    }
                ],
            )
            for i in range(12)
        ],
        AIMessage("The bug is in f7.py: handler() ignores the event type."),
        AIMessage("The fix: check event['type'] first."),
    ]

    def bind_tools(self, tools: Any, **kwargs: Any) -> ReadsTwelveFiles:
        return self


def main() -> None:
    # compact at 6k tokens down to 4k (hysteresis: fewer compactions, stable prompt prefix)
    compactor = Compactor(
        trigger=TokensExceed(6_000), strategy=Budgeted(4_000), target=TokensBelow(4_000)
    )
    middleware = KompaktMiddleware(compactor)  # mode="permanent" rewrites the state instead
    saver = InMemorySaver()  # a SqliteSaver / PostgresSaver in production
    config: Any = {"configurable": {"thread_id": "ticket-42"}}
    agent = create_agent(
        ReadsTwelveFiles(),
        [read_file],
        system_prompt="You debug Python.",
        middleware=[middleware],
        checkpointer=saver,
    )
    result = agent.invoke({"messages": [HumanMessage("Find the bug in f0.py .. f11.py")]}, config)

    print(result["messages"][-1].content)
    print(f"state: {len(result['messages'])} messages (every original kept)")
    for event in middleware.events:
        print(" ", event.summary())

    # a second run on the thread goes on from the checkpointed view
    again = agent.invoke({"messages": [HumanMessage("And the fix?")]}, config)
    print(again["messages"][-1].content)
    notes = agent.get_state(config).values["kompakt"]["KompaktMiddleware"]["synthetic"]
    print(f"checkpoint: {len(notes)} kompakt notes kept with the thread")


if __name__ == "__main__":
    main()
