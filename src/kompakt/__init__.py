"""kompakt keeps an LLM agent's conversation inside its context budget.

>>> import kompakt
>>> msgs = [kompakt.Message.system("be brief"), kompakt.Message.user("hello")]
>>> kompakt.MessageIndex(msgs).group_count
2

Public names are imported on first use (as pydantic does), so ``import kompakt``
stays fast and pulls in no model SDK, database driver or framework.
"""

from __future__ import annotations

import typing

from kompakt import _lazy

__version__ = "0.1.0"

# public name -> module that defines it (the one list: __all__ and the imports below follow it)
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
    "ModelSummarizer": "kompakt.summarizers",
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

__all__ = ["__version__", *_EXPORTS]


# Imported now, not on first use: the module `kompakt.repair` shares its function's name,
# and importing the module later would bind `kompakt.repair` to the module.
from kompakt.repair import Repair as Repair  # noqa: E402
from kompakt.repair import repair as repair  # noqa: E402

_RENAMED: dict[str, str] = {"All": "AllOf", "Any": "AnyOf", "StoreBase": "BaseStore"}
"""0.1 names, still importable for one release (with a DeprecationWarning)."""

if typing.TYPE_CHECKING:  # what type checkers and IDEs read; a test keeps it equal to _EXPORTS
    from kompakt.agent import Agent as Agent
    from kompakt.agent import BackgroundCompaction as BackgroundCompaction
    from kompakt.agent import BackgroundCompactor as BackgroundCompactor
    from kompakt.agent import RunResult as RunResult
    from kompakt.agent import Tool as Tool
    from kompakt.agent import tool as tool
    from kompakt.compactor import CompactionEvent as CompactionEvent
    from kompakt.compactor import Compactor as Compactor
    from kompakt.compactor import HistoryProcessor as HistoryProcessor
    from kompakt.compactor import apply_compaction as apply_compaction
    from kompakt.compactor import apply_compaction_async as apply_compaction_async
    from kompakt.compactor import as_history_processor as as_history_processor
    from kompakt.config import strategy_from_name as strategy_from_name
    from kompakt.errors import BudgetImpossible as BudgetImpossible
    from kompakt.errors import ConfigError as ConfigError
    from kompakt.errors import FormatError as FormatError
    from kompakt.errors import InputError as InputError
    from kompakt.errors import InvalidConversation as InvalidConversation
    from kompakt.errors import KompaktError as KompaktError
    from kompakt.errors import MessageError as MessageError
    from kompakt.errors import MissingDependency as MissingDependency
    from kompakt.errors import ModelError as ModelError
    from kompakt.errors import Problem as Problem
    from kompakt.errors import RuntimeFailure as RuntimeFailure
    from kompakt.errors import SessionConflict as SessionConflict
    from kompakt.errors import StoreError as StoreError
    from kompakt.formats import Conversation as Conversation
    from kompakt.formats import detect_format as detect_format
    from kompakt.formats import dump as dump
    from kompakt.formats import load as load
    from kompakt.formats import loads as loads
    from kompakt.formats import to_dicts as to_dicts
    from kompakt.index import Group as Group
    from kompakt.index import MessageIndex as MessageIndex
    from kompakt.messages import Message as Message
    from kompakt.messages import Part as Part
    from kompakt.messages import Role as Role
    from kompakt.messages import ToolCall as ToolCall
    from kompakt.models import AnthropicModel as AnthropicModel
    from kompakt.models import ChatModel as ChatModel
    from kompakt.models import ChatResponse as ChatResponse
    from kompakt.models import ExtractiveModel as ExtractiveModel
    from kompakt.models import LocalModel as LocalModel
    from kompakt.models import OpenAIModel as OpenAIModel
    from kompakt.models import ScriptedModel as ScriptedModel
    from kompakt.models import ToolSpec as ToolSpec
    from kompakt.models import Usage as Usage
    from kompakt.models import model_from_string as model_from_string
    from kompakt.overflow import Overflow as Overflow
    from kompakt.overflow import parse_overflow as parse_overflow
    from kompakt.recovery import compact_for_retry as compact_for_retry
    from kompakt.recovery import compact_for_retry_async as compact_for_retry_async
    from kompakt.repair import Repair as Repair
    from kompakt.repair import repair as repair
    from kompakt.store import BaseStore as BaseStore
    from kompakt.store import CompactionRecord as CompactionRecord
    from kompakt.store import HistoryStore as HistoryStore
    from kompakt.store import MemoryStore as MemoryStore
    from kompakt.store import PostgresStore as PostgresStore
    from kompakt.store import SQLiteStore as SQLiteStore
    from kompakt.strategies import ASSISTANT_CONCEPTS as ASSISTANT_CONCEPTS
    from kompakt.strategies import CODING_AGENT_CONCEPTS as CODING_AGENT_CONCEPTS
    from kompakt.strategies import AsyncStrategy as AsyncStrategy
    from kompakt.strategies import BaseStrategy as BaseStrategy
    from kompakt.strategies import Budgeted as Budgeted
    from kompakt.strategies import Chunked as Chunked
    from kompakt.strategies import ClampOversized as ClampOversized
    from kompakt.strategies import CollapseToolResults as CollapseToolResults
    from kompakt.strategies import CompactionContext as CompactionContext
    from kompakt.strategies import Concept as Concept
    from kompakt.strategies import ExtractiveDigest as ExtractiveDigest
    from kompakt.strategies import FactRetrieval as FactRetrieval
    from kompakt.strategies import FactType as FactType
    from kompakt.strategies import FromLastN as FromLastN
    from kompakt.strategies import KeepFirstAndLast as KeepFirstAndLast
    from kompakt.strategies import Pipeline as Pipeline
    from kompakt.strategies import Rehydrate as Rehydrate
    from kompakt.strategies import RemoveToolCalls as RemoveToolCalls
    from kompakt.strategies import SlidingWindow as SlidingWindow
    from kompakt.strategies import Step as Step
    from kompakt.strategies import Strategy as Strategy
    from kompakt.strategies import Summarize as Summarize
    from kompakt.strategies import SupersedeReads as SupersedeReads
    from kompakt.strategies import Truncation as Truncation
    from kompakt.strategies import WholeHistory as WholeHistory
    from kompakt.summarizers import DigestSummarizer as DigestSummarizer
    from kompakt.summarizers import ModelSummarizer as ModelSummarizer
    from kompakt.summarizers import Summarizer as Summarizer
    from kompakt.tokens import CharEstimator as CharEstimator
    from kompakt.tokens import HFTokenizer as HFTokenizer
    from kompakt.tokens import TiktokenTokenizer as TiktokenTokenizer
    from kompakt.tokens import Tokenizer as Tokenizer
    from kompakt.triggers import AllOf as AllOf
    from kompakt.triggers import Always as Always
    from kompakt.triggers import AnyOf as AnyOf
    from kompakt.triggers import CharsExceed as CharsExceed
    from kompakt.triggers import ContextFraction as ContextFraction
    from kompakt.triggers import GroupsExceed as GroupsExceed
    from kompakt.triggers import HasToolCalls as HasToolCalls
    from kompakt.triggers import MessagesExceed as MessagesExceed
    from kompakt.triggers import Never as Never
    from kompakt.triggers import Not as Not
    from kompakt.triggers import TokensBelow as TokensBelow
    from kompakt.triggers import TokensExceed as TokensExceed
    from kompakt.triggers import Trigger as Trigger
    from kompakt.triggers import TurnsExceed as TurnsExceed
    from kompakt.validation import find_problems as find_problems
    from kompakt.validation import validate as validate
    from kompakt.view import View as View
else:

    def __getattr__(name: str) -> typing.Any:
        if name in _RENAMED:
            from kompakt._deprecation import renamed

            renamed(name, _RENAMED[name], owner="kompakt")
            return __getattr__(_RENAMED[name])
        return _lazy.attribute(globals(), _EXPORTS, name)

    def __dir__() -> list[str]:
        return __all__
