"""A Pydantic AI agent whose model sees a compacted history (runs offline).

    pip install "kompakt[pydantic-ai]"
    python examples/pydantic_ai_agent.py

The model is Pydantic AI's FunctionModel, scripted to read twelve large files before
answering. Swap in any model name (``Agent("openai:gpt-4.1-mini", ...)``) and nothing
else changes. The view (kompakt's notes) is kept in the history's metadata, so a second
run given the saved history goes on from it.
"""

from __future__ import annotations

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelResponse,
    TextPart,
    ToolCallPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from kompakt import Budgeted, Compactor, TokensBelow, TokensExceed
from kompakt.integrations.pydantic_ai import KompaktCapability, stored_view


def reads_twelve_files() -> FunctionModel:
    """Pydantic AI's FunctionModel: one read_file call per request, then an answer."""
    step = 0

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        nonlocal step
        step += 1
        if step == 13:
            return ModelResponse(
                parts=[TextPart("The bug is in f7.py: handler() ignores the event.")]
            )
        if step > 13:
            return ModelResponse(parts=[TextPart("The fix: check event['type'] first.")])
        call = ToolCallPart("read_file", {"path": f"f{step}.py"}, tool_call_id=f"call_{step}")
        return ModelResponse(parts=[call])

    return FunctionModel(respond)


def main() -> None:
    compactor = Compactor(
        trigger=TokensExceed(6_000), strategy=Budgeted(4_000), target=TokensBelow(4_000)
    )
    capability = KompaktCapability(compactor)  # mode="permanent" also rewrites the history
    agent = Agent(
        reads_twelve_files(),
        system_prompt="You debug Python.",
        capabilities=[capability],
    )

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file."""
        return f"{path}:\n" + "def handler(event):  # a long file the agent reads once\n" * 60

    result = agent.run_sync("Find the bug in f0.py .. f11.py")
    print(result.output)
    print(f"history: {len(result.all_messages())} messages (every original kept)")
    for event in capability.events:
        print(" ", event.summary())

    # saved as JSON and read back (another process): the next run goes on from the view
    saved = ModelMessagesTypeAdapter.dump_json(result.all_messages())
    history = ModelMessagesTypeAdapter.validate_json(saved)
    notes = (stored_view(history) or {}).get("synthetic", [])
    print(f"saved history: {len(history)} messages, {len(notes)} kompakt notes in its view")
    print(agent.run_sync("And the fix?", message_history=history).output)


if __name__ == "__main__":
    main()
