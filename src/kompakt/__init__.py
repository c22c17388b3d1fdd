"""kompakt keeps an LLM agent's conversation inside its context budget.

>>> import kompakt
>>> msgs = [kompakt.Message.system("be brief"), kompakt.Message.user("hello")]
>>> kompakt.MessageIndex(msgs).group_count
2

Public names are imported on first use (as pydantic does), so ``import kompakt``
stays fast and pulls in no model SDK, database driver or framework.
"""

from __future__ import annotations

import importlib
import typing

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    # messages and errors
    "Message": "kompakt.messages",
    "Part": "kompakt.messages",
    "ToolCall": "kompakt.messages",
    "Role": "kompakt.messages",
    "KompaktError": "kompakt.errors",
    "InputError": "kompakt.errors",
    "FormatError": "kompakt.errors",
    "MessageError": "kompakt.errors",
    "InvalidConversation": "kompakt.errors",
    "ConfigError": "kompakt.errors",
    "BudgetImpossible": "kompakt.errors",
    "MissingDependency": "kompakt.errors",
    "ModelError": "kompakt.errors",
    "StoreError": "kompakt.errors",
    "SessionConflict": "kompakt.errors",
    "RuntimeFailure": "kompakt.errors",
    "Problem": "kompakt.errors",
    # formats and validation
    "load": "kompakt.formats",
    "loads": "kompakt.formats",
    "dump": "kompakt.formats",
    "detect_format": "kompakt.formats",
    "Conversation": "kompakt.formats",
    "validate": "kompakt.validation",
    "find_problems": "kompakt.validation",
    "repair": "kompakt.repair",
    "Repair": "kompakt.repair",
    # tokens, index, view
    "Tokenizer": "kompakt.tokens",
    "CharEstimator": "kompakt.tokens",
    "TiktokenTokenizer": "kompakt.tokens",
    "HFTokenizer": "kompakt.tokens",
    "MessageIndex": "kompakt.index",
    "Group": "kompakt.index",
    "View": "kompakt.view",
    # triggers
    "Trigger": "kompakt.triggers",
    "TokensExceed": "kompakt.triggers",
    "TokensBelow": "kompakt.triggers",
    "MessagesExceed": "kompakt.triggers",
    "TurnsExceed": "kompakt.triggers",
    "GroupsExceed": "kompakt.triggers",
    "CharsExceed": "kompakt.triggers",
    "ContextFraction": "kompakt.triggers",
    "HasToolCalls": "kompakt.triggers",
    "Always": "kompakt.triggers",
    "Never": "kompakt.triggers",
    "AllOf": "kompakt.triggers",
    "AnyOf": "kompakt.triggers",
    "Not": "kompakt.triggers",
    # strategies
    "Strategy": "kompakt.strategies",
    "AsyncStrategy": "kompakt.strategies",
    "BaseStrategy": "kompakt.strategies",
    "CompactionContext": "kompakt.strategies",
    "Step": "kompakt.strategies",
    "Truncation": "kompakt.strategies",
    "SlidingWindow": "kompakt.strategies",
    "KeepFirstAndLast": "kompakt.strategies",
    "CollapseToolResults": "kompakt.strategies",
    "RemoveToolCalls": "kompakt.strategies",
    "ClampOversized": "kompakt.strategies",
    "SupersedeReads": "kompakt.strategies",
    "Pipeline": "kompakt.strategies",
    "Budgeted": "kompakt.strategies",
    "Rehydrate": "kompakt.strategies",
    # summaries and facts
    "Summarize": "kompakt.strategies",
    "WholeHistory": "kompakt.strategies",
    "FromLastN": "kompakt.strategies",
    "Chunked": "kompakt.strategies",
    "ExtractiveDigest": "kompakt.strategies",
    "FactRetrieval": "kompakt.strategies",
    "Concept": "kompakt.strategies",
    "FactType": "kompakt.strategies",
    "Summarizer": "kompakt.summarizers",
    "DigestSummarizer": "kompakt.summarizers",
    "ASSISTANT_CONCEPTS": "kompakt.strategies",
    "CODING_AGENT_CONCEPTS": "kompakt.strategies",
    # compactor
    "Compactor": "kompakt.compactor",
    "CompactionEvent": "kompakt.compactor",
    "HistoryProcessor": "kompakt.compactor",
    "apply_compaction": "kompakt.compactor",
    "apply_compaction_async": "kompakt.compactor",
    # models
    "ChatModel": "kompakt.models",
    "ChatResponse": "kompakt.models",
    "Usage": "kompakt.models",
    "ToolSpec": "kompakt.models",
    "OpenAIModel": "kompakt.models",
    "AnthropicModel": "kompakt.models",
    "LocalModel": "kompakt.models",
    "ExtractiveModel": "kompakt.models",
    "ScriptedModel": "kompakt.models",
    "model_from_string": "kompakt.models",
    # store and agent
    "HistoryStore": "kompakt.store",
    "BaseStore": "kompakt.store",
    "MemoryStore": "kompakt.store",
    "SQLiteStore": "kompakt.store",
    "PostgresStore": "kompakt.store",
    "Agent": "kompakt.agent",
    "RunResult": "kompakt.agent",
    "Tool": "kompakt.agent",
    "tool": "kompakt.agent",
    "BackgroundCompactor": "kompakt.agent",
    "BackgroundCompaction": "kompakt.agent",
    "CompactionRecord": "kompakt.store",
    "as_history_processor": "kompakt.compactor",
    "strategy_from_name": "kompakt.config",
    "to_dicts": "kompakt.formats",
    "Overflow": "kompakt.overflow",
    "parse_overflow": "kompakt.overflow",
    "compact_for_retry": "kompakt.recovery",
    "compact_for_retry_async": "kompakt.recovery",
}

__all__ = [
    "ASSISTANT_CONCEPTS",
    "CODING_AGENT_CONCEPTS",
    "Agent",
    "AllOf",
    "Always",
    "AnthropicModel",
    "AnyOf",
    "AsyncStrategy",
    "BackgroundCompaction",
    "BackgroundCompactor",
    "BaseStore",
    "BaseStrategy",
    "BudgetImpossible",
    "Budgeted",
    "CharEstimator",
    "CharsExceed",
    "ChatModel",
    "ChatResponse",
    "Chunked",
    "ClampOversized",
    "CollapseToolResults",
    "CompactionContext",
    "CompactionEvent",
    "CompactionRecord",
    "Compactor",
    "Concept",
    "ConfigError",
    "ContextFraction",
    "Conversation",
    "DigestSummarizer",
    "ExtractiveDigest",
    "ExtractiveModel",
    "FactRetrieval",
    "FactType",
    "FormatError",
    "FromLastN",
    "Group",
    "GroupsExceed",
    "HFTokenizer",
    "HasToolCalls",
    "HistoryProcessor",
    "HistoryStore",
    "InputError",
    "InvalidConversation",
    "KeepFirstAndLast",
    "KompaktError",
    "LocalModel",
    "MemoryStore",
    "Message",
    "MessageError",
    "MessageIndex",
    "MessagesExceed",
    "MissingDependency",
    "ModelError",
    "Never",
    "Not",
    "OpenAIModel",
    "Overflow",
    "Part",
    "Pipeline",
    "PostgresStore",
    "Problem",
    "Rehydrate",
    "RemoveToolCalls",
    "Repair",
    "Role",
    "RunResult",
    "RuntimeFailure",
    "SQLiteStore",
    "ScriptedModel",
    "SessionConflict",
    "SlidingWindow",
    "Step",
    "StoreError",
    "Strategy",
    "Summarize",
    "Summarizer",
    "SupersedeReads",
    "TiktokenTokenizer",
    "Tokenizer",
    "TokensBelow",
    "TokensExceed",
    "Tool",
    "ToolCall",
    "ToolSpec",
    "Trigger",
    "Truncation",
    "TurnsExceed",
    "Usage",
    "View",
    "WholeHistory",
    "__version__",
    "apply_compaction",
    "apply_compaction_async",
    "as_history_processor",
    "compact_for_retry",
    "compact_for_retry_async",
    "detect_format",
    "dump",
    "find_problems",
    "load",
    "loads",
    "model_from_string",
    "parse_overflow",
    "repair",
    "strategy_from_name",
    "to_dicts",
    "tool",
    "validate",
]


# Imported now, not on first use: the module `kompakt.repair` shares its function's name,
# and importing the module later would bind `kompakt.repair` to the module.
from kompakt.repair import Repair, repair  # noqa: E402

_RENAMED: dict[str, str] = {"All": "AllOf", "Any": "AnyOf", "StoreBase": "BaseStore"}
"""0.1 names, still importable for one release (with a DeprecationWarning)."""


def __getattr__(name: str) -> typing.Any:
    if name in _RENAMED:
        from kompakt._deprecation import renamed

        renamed(name, _RENAMED[name], owner="kompakt")
        return __getattr__(_RENAMED[name])
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kompakt' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if typing.TYPE_CHECKING:  # real imports for type checkers and IDEs
    from kompakt.agent import (
        Agent,
        BackgroundCompaction,
        BackgroundCompactor,
        RunResult,
        Tool,
        tool,
    )
    from kompakt.compactor import (
        CompactionEvent,
        Compactor,
        HistoryProcessor,
        apply_compaction,
        apply_compaction_async,
        as_history_processor,
    )
    from kompakt.config import (
        strategy_from_name,
    )
    from kompakt.errors import (
        BudgetImpossible,
        ConfigError,
        FormatError,
        InputError,
        InvalidConversation,
        KompaktError,
        MessageError,
        MissingDependency,
        ModelError,
        Problem,
        RuntimeFailure,
        SessionConflict,
        StoreError,
    )
    from kompakt.formats import (
        Conversation,
        detect_format,
        dump,
        load,
        loads,
        to_dicts,
    )
    from kompakt.index import (
        Group,
        MessageIndex,
    )
    from kompakt.messages import (
        Message,
        Part,
        Role,
        ToolCall,
    )
    from kompakt.models import (
        AnthropicModel,
        ChatModel,
        ChatResponse,
        ExtractiveModel,
        LocalModel,
        OpenAIModel,
        ScriptedModel,
        ToolSpec,
        Usage,
        model_from_string,
    )
    from kompakt.overflow import (
        Overflow,
        parse_overflow,
    )
    from kompakt.recovery import (
        compact_for_retry,
        compact_for_retry_async,
    )
    from kompakt.store import (
        BaseStore,
        CompactionRecord,
        HistoryStore,
        MemoryStore,
        PostgresStore,
        SQLiteStore,
    )
    from kompakt.strategies import (
        ASSISTANT_CONCEPTS,
        CODING_AGENT_CONCEPTS,
        AsyncStrategy,
        BaseStrategy,
        Budgeted,
        Chunked,
        ClampOversized,
        CollapseToolResults,
        CompactionContext,
        Concept,
        ExtractiveDigest,
        FactRetrieval,
        FactType,
        FromLastN,
        KeepFirstAndLast,
        Pipeline,
        Rehydrate,
        RemoveToolCalls,
        SlidingWindow,
        Step,
        Strategy,
        Summarize,
        SupersedeReads,
        Truncation,
        WholeHistory,
    )
    from kompakt.summarizers import DigestSummarizer, Summarizer
    from kompakt.tokens import (
        CharEstimator,
        HFTokenizer,
        TiktokenTokenizer,
        Tokenizer,
    )
    from kompakt.triggers import (
        AllOf,
        Always,
        AnyOf,
        CharsExceed,
        ContextFraction,
        GroupsExceed,
        HasToolCalls,
        MessagesExceed,
        Never,
        Not,
        TokensBelow,
        TokensExceed,
        Trigger,
        TurnsExceed,
    )
    from kompakt.validation import (
        find_problems,
        validate,
    )
    from kompakt.view import (
        View,
    )
