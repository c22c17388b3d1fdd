"""Compaction strategies: each edits a `View` and says whether it changed anything.

Model-free, gentlest first: `SupersedeReads`, `ClampOversized`, `CollapseToolResults`,
`RemoveToolCalls`, `KeepFirstAndLast`, `SlidingWindow`, `Truncation`. Composition:
`Pipeline` (each with its own trigger) and `Budgeted` (a hard token budget).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kompakt import _lazy

# public name -> module that defines it (the one list: __all__ and the imports below follow it)
_EXPORTS: dict[str, str] = {
    "AsyncStrategy": "kompakt.strategies.base",
    "BaseStrategy": "kompakt.strategies.base",
    "CompactionContext": "kompakt.strategies.base",
    "Overrides": "kompakt.strategies.base",
    "Step": "kompakt.strategies.base",
    "Strategy": "kompakt.strategies.base",
    "StrategyLike": "kompakt.strategies.base",
    "as_strategy": "kompakt.strategies.base",
    "run_strategy": "kompakt.strategies.base",
    "Budgeted": "kompakt.strategies.budgeted",
    "ClampOversized": "kompakt.strategies.clamp",
    "CollapseToolResults": "kompakt.strategies.collapse",
    "ExtractiveDigest": "kompakt.strategies.digest",
    "ASSISTANT_CONCEPTS": "kompakt.strategies.facts",
    "CODING_AGENT_CONCEPTS": "kompakt.strategies.facts",
    "Concept": "kompakt.strategies.facts",
    "FactRetrieval": "kompakt.strategies.facts",
    "FactType": "kompakt.strategies.facts",
    "KeepFirstAndLast": "kompakt.strategies.first_last",
    "Pipeline": "kompakt.strategies.pipeline",
    "Rehydrate": "kompakt.strategies.rehydrate",
    "RemoveToolCalls": "kompakt.strategies.remove_tools",
    "Chunked": "kompakt.strategies.summarize",
    "FromLastN": "kompakt.strategies.summarize",
    "Summarize": "kompakt.strategies.summarize",
    "WholeHistory": "kompakt.strategies.summarize",
    "SupersedeReads": "kompakt.strategies.supersede",
    "Truncation": "kompakt.strategies.truncation",
    "SlidingWindow": "kompakt.strategies.window",
}

__all__ = list(_EXPORTS)

if TYPE_CHECKING:  # what type checkers and IDEs read; a test keeps it equal to _EXPORTS
    from kompakt.strategies.base import AsyncStrategy as AsyncStrategy
    from kompakt.strategies.base import BaseStrategy as BaseStrategy
    from kompakt.strategies.base import CompactionContext as CompactionContext
    from kompakt.strategies.base import Overrides as Overrides
    from kompakt.strategies.base import Step as Step
    from kompakt.strategies.base import Strategy as Strategy
    from kompakt.strategies.base import StrategyLike as StrategyLike
    from kompakt.strategies.base import as_strategy as as_strategy
    from kompakt.strategies.base import run_strategy as run_strategy
    from kompakt.strategies.budgeted import Budgeted as Budgeted
    from kompakt.strategies.clamp import ClampOversized as ClampOversized
    from kompakt.strategies.collapse import CollapseToolResults as CollapseToolResults
    from kompakt.strategies.digest import ExtractiveDigest as ExtractiveDigest
    from kompakt.strategies.facts import ASSISTANT_CONCEPTS as ASSISTANT_CONCEPTS
    from kompakt.strategies.facts import CODING_AGENT_CONCEPTS as CODING_AGENT_CONCEPTS
    from kompakt.strategies.facts import Concept as Concept
    from kompakt.strategies.facts import FactRetrieval as FactRetrieval
    from kompakt.strategies.facts import FactType as FactType
    from kompakt.strategies.first_last import KeepFirstAndLast as KeepFirstAndLast
    from kompakt.strategies.pipeline import Pipeline as Pipeline
    from kompakt.strategies.rehydrate import Rehydrate as Rehydrate
    from kompakt.strategies.remove_tools import RemoveToolCalls as RemoveToolCalls
    from kompakt.strategies.summarize import Chunked as Chunked
    from kompakt.strategies.summarize import FromLastN as FromLastN
    from kompakt.strategies.summarize import Summarize as Summarize
    from kompakt.strategies.summarize import WholeHistory as WholeHistory
    from kompakt.strategies.supersede import SupersedeReads as SupersedeReads
    from kompakt.strategies.truncation import Truncation as Truncation
    from kompakt.strategies.window import SlidingWindow as SlidingWindow
else:

    def __getattr__(name: str) -> Any:
        return _lazy.attribute(globals(), _EXPORTS, name)

    def __dir__() -> list[str]:
        return __all__
