"""Adapters for agent frameworks, one module each, every one an optional extra.

* `kompakt.integrations.langchain` (``[langchain]``): LangChain v1 middleware, LangGraph hook.
* `kompakt.integrations.pydantic_ai` (``[pydantic-ai]``): a capability and a history processor.
* `kompakt.integrations.openai_agents` (``[openai-agents]``): a `Session` on a kompakt store
  and a model input filter that compacts during a run.
* `kompakt.integrations.maf` (``[maf]``): a Microsoft Agent Framework compaction strategy
  and the context provider that keeps its view in the `AgentSession`.

Each converts the framework's messages to kompakt's and back and drives a kompakt
`Compactor`; none re-implements a strategy. Importing this package imports no framework.
"""
