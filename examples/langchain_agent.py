"""A LangChain v1 agent whose model sees a compacted history (runs offline).

    pip install "kompakt[langchain]"
    python examples/langchain_agent.py

The model here is LangChain's fake chat model, scripted to read twelve large files
before answering. Swap in any real chat model (``init_chat_model("openai:gpt-4.1-mini")``)
and nothing else changes. The same compactor also fits LangGraph:
``create_react_agent(model, tools, pre_model_hook=pre_model_hook(compactor))``.
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool

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
    ]

    def bind_tools(self, tools: Any, **kwargs: Any) -> ReadsTwelveFiles:
        return self


def main() -> None:
    # compact at 6k tokens down to 4k (hysteresis: fewer compactions, stable prompt prefix)
    compactor = Compactor(
        trigger=TokensExceed(6_000), strategy=Budgeted(4_000), target=TokensBelow(4_000)
    )
    middleware = KompaktMiddleware(compactor)  # mode="permanent" rewrites the state instead
    agent = create_agent(
        ReadsTwelveFiles(), [read_file], system_prompt="You debug Python.", middleware=[middleware]
    )
    result = agent.invoke({"messages": [HumanMessage("Find the bug in f0.py .. f11.py")]})

    print(result["messages"][-1].content)
    print(f"state: {len(result['messages'])} messages (every original kept)")
    for event in middleware.events:
        print(" ", event.summary())


if __name__ == "__main__":
    main()
