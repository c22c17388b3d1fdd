"""Compaction strategies: each edits a `View` and says whether it changed anything.

Model-free, gentlest first: `SupersedeReads`, `ClampOversized`, `CollapseToolResults`,
`RemoveToolCalls`, `KeepFirstAndLast`, `SlidingWindow`, `Truncation`. Composition:
`Pipeline` (each with its own trigger) and `Budgeted` (a hard token budget).
"""

from kompakt.strategies.base import (
    AsyncStrategy,
    BaseStrategy,
    CompactionContext,
    Overrides,
    Step,
    Strategy,
    StrategyLike,
    as_strategy,
    run_strategy,
)
from kompakt.strategies.budgeted import Budgeted
from kompakt.strategies.clamp import ClampOversized
from kompakt.strategies.collapse import CollapseToolResults
from kompakt.strategies.digest import ExtractiveDigest
from kompakt.strategies.facts import (
    ASSISTANT_CONCEPTS,
    CODING_AGENT_CONCEPTS,
    Concept,
    FactRetrieval,
    FactType,
)
from kompakt.strategies.first_last import KeepFirstAndLast
from kompakt.strategies.pipeline import Pipeline
from kompakt.strategies.rehydrate import Rehydrate
from kompakt.strategies.remove_tools import RemoveToolCalls
from kompakt.strategies.summarize import Chunked, FromLastN, Summarize, WholeHistory
from kompakt.strategies.supersede import SupersedeReads
from kompakt.strategies.truncation import Truncation
from kompakt.strategies.window import SlidingWindow

__all__ = [
    "ASSISTANT_CONCEPTS",
    "CODING_AGENT_CONCEPTS",
    "AsyncStrategy",
    "BaseStrategy",
    "Budgeted",
    "Chunked",
    "ClampOversized",
    "CollapseToolResults",
    "CompactionContext",
    "Concept",
    "ExtractiveDigest",
    "FactRetrieval",
    "FactType",
    "FromLastN",
    "KeepFirstAndLast",
    "Overrides",
    "Pipeline",
    "Rehydrate",
    "RemoveToolCalls",
    "SlidingWindow",
    "Step",
    "Strategy",
    "StrategyLike",
    "Summarize",
    "SupersedeReads",
    "Truncation",
    "WholeHistory",
    "as_strategy",
    "run_strategy",
]
