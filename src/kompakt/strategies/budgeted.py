"""A chain of strategies held to a hard token budget."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from kompakt._deprecation import renamed_options
from kompakt.errors import BudgetImpossible, ConfigError
from kompakt.messages import Message
from kompakt.strategies._common import COMPOSITE, check_count, rendered_tokens, run_strategy_sync
from kompakt.strategies.base import (
    DEFAULT_MIN_PRESERVED,
    BaseStrategy,
    CompactionContext,
    Overrides,
    Step,
    StrategyLike,
    run_strategy,
)
from kompakt.strategies.clamp import ClampOversized
from kompakt.strategies.collapse import CollapseToolResults
from kompakt.strategies.supersede import SupersedeReads
from kompakt.strategies.truncation import Truncation
from kompakt.triggers import Never, TokensBelow, TokensExceed, Trigger
from kompakt.view import View

__all__ = ["Budgeted", "ClampToBudget", "core_breakdown", "default_chain"]


class Budgeted(BaseStrategy):
    """Run `strategies` in order until the view fits `token_budget`; always end within it.

    Use it whenever a hard limit must hold (the model's context window minus room
    for the answer). It does nothing while the view fits. Otherwise it runs the
    chain gentlest first, each strategy stopping as soon as the budget holds, and
    the chain stopping there too (`early_stop`). If the chain does not get there:

    1. `Truncation` drops the oldest groups (keeping the newest `min_preserved`),
       but not a summary or facts message the chain wrote;
    2. then, down to the protected core: the newest groups' oversized text is
       clamped and the remaining unprotected groups dropped, oldest first, a
       summary only when nothing else is left;
    3. if system, pinned and memory messages, the last user message and a pending
       call alone exceed the budget, `BudgetImpossible` names each one's tokens
       (with ``strict=False`` the view is left at that core instead).

    The default chain (``strategies=None``), what loses least first, the steps that
    touch no request before any user message goes: `SupersedeReads` (stale re-reads
    become one line), `ClampOversized` (text parts over a tenth of the budget, at most
    4 000 tokens, keep head and tail), `ClampToBudget` (the biggest tool results and
    answers, the newest included, cut just enough to fit), `ExtractiveDigest` (the
    older span becomes one model-free note that keeps standing instructions, current
    facts, commands, errors and what tools printed; note and recent tail share the
    budget), `CollapseToolResults(keep_last_groups=2)` (tool groups of the tail become short
    notes, when the tail alone is too big), and only then truncation. The digest comes
    before the collapse because it keeps more in the same tokens: on the recorded runs
    of the tests (`kompakt eval`) collapsing first kept half the values the tools
    printed at a 50% budget, the digest first nineteen in twenty.

    The budget is its target: a compactor's `target` does not change where it stops.
    For hysteresis, trigger above the budget:
    ``Compactor(trigger=TokensExceed(100_000), strategy=Budgeted(60_000))``.

    Strategies that call a model work too: use the async API
    (``await compactor.compact_async(index)``), or the sync one outside an event loop.

    Args:
        token_budget: tokens the rendered view must fit in.
        strategies: the chain (default: the one above).
        early_stop: stop the chain as soon as the budget holds; with False every
            strategy of the chain runs fully (subject to its own trigger).
        min_preserved: newest groups the default chain and first fallback keep.
        strict: raise `BudgetImpossible` when the protected core exceeds the budget.

    >>> from kompakt import MessageIndex, Message, View
    >>> from kompakt.strategies import CompactionContext
    >>> idx = MessageIndex([Message.system("be brief")]
    ...     + [Message.user(f"question {i} " + "x" * 400) for i in range(20)])
    >>> view = View(idx)
    >>> Budgeted(500).apply(view, CompactionContext(view))
    True
    >>> view.total_tokens <= 500
    True
    """

    token_budget: int

    @renamed_options(positional=("strategies",))
    def __init__(
        self,
        token_budget: int,
        *,
        strategies: Iterable[StrategyLike] | None = None,
        early_stop: bool = True,
        min_preserved: int = DEFAULT_MIN_PRESERVED,
        strict: bool = True,
    ) -> None:
        if token_budget is None:  # check_count lets None through: it means "no limit" elsewhere
            raise ConfigError("`token_budget` must be an int >= 0, got None")
        check_count("token_budget", token_budget)
        check_count("min_preserved", min_preserved)
        self.token_budget = token_budget
        self.min_preserved = min_preserved
        self.strategies: list[StrategyLike] = (
            default_chain(token_budget, min_preserved=min_preserved)
            if strategies is None
            else list(strategies)
        )
        self.early_stop = early_stop
        self.strict = strict
        self.trigger = TokensExceed(token_budget)

    def _stages(self, budget: int, preserved: int) -> list[tuple[StrategyLike, str | None]]:
        return [
            *((s, None) for s in self.strategies),
            (
                Truncation(min_preserved=preserved, drop_summaries=False),
                "chain did not reach the budget",
            ),
            (
                ClampOversized(max_message_tokens=max(16, budget // 4), min_preserved=0),
                "clamping the newest groups",
            ),
            (Truncation(min_preserved=0), "dropping down to the protected core"),
        ]

    def _contexts(
        self, context: CompactionContext, budget: int
    ) -> tuple[CompactionContext, CompactionContext]:
        """The chain's context (the run's overrides carried over) and the fallbacks'
        (their options are set here, from this run's)."""

        def under(target: Trigger, overrides: Overrides) -> CompactionContext:
            return CompactionContext(
                context.view,
                target=target,
                budget=budget,
                summarizer=context.summarizer,
                steps=context.steps,
                overrides=overrides,
            )

        chain = under(TokensBelow(budget) if self.early_stop else Never(), context.overrides)
        return chain, under(TokensBelow(budget), Overrides())

    def _skip(self, view: View, budget: int, fallback: str | None) -> bool:
        fits = view.total_tokens <= budget
        return fits and (fallback is not None or self.early_stop)

    def apply(self, view: View, context: CompactionContext) -> bool:
        changed = False
        for s, ctx, fallback in self._plan(view, context):
            changed |= _record(run_strategy_sync(s, view, ctx), fallback)
        return changed

    async def apply_async(self, view: View, context: CompactionContext) -> bool:
        changed = False
        for s, ctx, fallback in self._plan(view, context):
            changed |= _record(await run_strategy(s, view, ctx), fallback)
        return changed

    def _plan(
        self, view: View, context: CompactionContext
    ) -> Iterator[tuple[StrategyLike, CompactionContext, str | None]]:
        """Each stage to run now, with its context and why it is a fallback (lazily: a
        stage is skipped once the budget holds); at the end, the budget check."""
        budget = context.overrides.budget(self.token_budget)
        if view.total_tokens <= budget:
            return
        context.note(detail=COMPOSITE)
        chain, held = self._contexts(context, budget)
        for s, fallback in self._stages(budget, self.preserved(context)):
            if not self._skip(view, budget, fallback):
                yield s, (chain if fallback is None else held), fallback
        self._finish(view, context, budget)

    def _finish(self, view: View, context: CompactionContext, budget: int) -> None:
        if view.total_tokens <= budget:
            return
        breakdown = core_breakdown(view)
        strict = self.strict if context.overrides.strict is None else context.overrides.strict
        if strict:
            raise BudgetImpossible(budget, view.total_tokens, breakdown)
        context.note(fallback=f"budget impossible: the protected core needs {view.total_tokens}")

    def __repr__(self) -> str:
        return f"Budgeted({self.token_budget}, strategies={self.strategies!r})"


def _record(step: Step, fallback: str | None) -> bool:
    if fallback is not None:  # a chain step keeps the fallback it recorded itself
        step.fallback = fallback if step.changed else None
    return step.changed


def default_chain(
    token_budget: int, *, min_preserved: int = DEFAULT_MIN_PRESERVED
) -> list[StrategyLike]:
    """The chain `Budgeted` uses when given no strategies: what loses least first."""
    from kompakt.strategies.digest import ExtractiveDigest  # it imports the summarizer base

    clamp_at = max(64, min(4_000, token_budget // 10))
    return [
        SupersedeReads(min_preserved=min_preserved),
        ClampOversized(max_message_tokens=clamp_at, min_preserved=min_preserved),
        # before any user message goes: a huge fresh result is cut, not the request
        ClampToBudget(token_budget, floor=clamp_at, newest=min_preserved),
        # the note keeps what tools printed (it reads collapsed and clamped originals);
        # collapsing first would throw most of it away
        ExtractiveDigest(keep_last_groups=min_preserved),
        CollapseToolResults(keep_last_groups=2, min_preserved=min_preserved),
    ]


class ClampToBudget(BaseStrategy):
    """Cut the biggest tool results and assistant texts of the newest groups just enough
    for the view to fit `token_budget`: every one over a common level keeps its head and
    tail within that level, the rest stays as it is.

    The step of `Budgeted`'s default chain that comes before any user message goes: the
    gentler steps before it leave the newest `newest` groups alone, so a 15 000-token
    fresh result under a 2 000-token budget is cut to what fits beside the request,
    instead of the request and its turn being dropped. It does nothing when that level
    would be under `floor` tokens (clamping alone is no gentle way there). It looks at
    the newest groups only, so it costs the same at any length of history.

    >>> from kompakt import MessageIndex, Message, ToolCall, View
    >>> from kompakt.strategies import CompactionContext
    >>> call = Message.assistant(tool_calls=[ToolCall(id="c1", name="bash", arguments="{}")])
    >>> log = Message.tool("\\n".join(f"test {i} FAILED" for i in range(3000)), tool_call_id="c1")
    >>> view = View(MessageIndex([Message.user("why does CI fail?"), call, log]))
    >>> ClampToBudget(2000).apply(view, CompactionContext(view))
    True
    >>> 1000 < view.total_tokens <= 2000
    True
    """

    def __init__(
        self, token_budget: int, *, floor: int = 64, newest: int = DEFAULT_MIN_PRESERVED
    ) -> None:
        check_count("token_budget", token_budget)
        check_count("floor", floor, minimum=16)
        check_count("newest", newest)
        self.token_budget: int = token_budget
        self.floor = floor
        self.newest = newest

    def apply(self, view: View, context: CompactionContext) -> bool:
        budget = context.overrides.budget(self.token_budget)
        if view.total_tokens <= budget:
            return False
        index = view.index
        first = max(0, index.group_count - max(1, self.newest))
        groups = [g for g in range(first, index.group_count) if _clampable(view, g)]
        count = index.tokenizer.count_message
        sizes = [count(m) for g in groups for m in view.rendered(g) if _big_text(m)]
        level = _water_level(sizes, budget, view.total_tokens)
        if level is None or level < self.floor:
            return False
        # head and tail fill the level (ClampOversized's defaults leave 15% of it unused)
        clamp = ClampOversized(
            max_message_tokens=level,
            head=level * 68 // 100,
            tail=level * 28 // 100,
            min_preserved=0,
        )
        changed = 0
        for g in groups:
            pending = bool(index.groups[g].open_calls)
            current = tuple(view.rendered(g))
            new = tuple(
                clamp.clamp_message(m, index.tokenizer)
                if _big_text(m) and not (pending and m.role != "tool")
                else m
                for m in current
            )
            if any(a is not b for a, b in zip(new, current, strict=True)):
                view.replace(g, new)
                changed += 1
        if changed:
            context.note(groups_replaced=changed)
        return changed > 0

    def __repr__(self) -> str:
        return f"ClampToBudget({self.token_budget})"


_CLAMP_SLACK = 8
"""Tokens a clamped message may cost over its text's limit (the message's own overhead)."""


def _clampable(view: View, g: int) -> bool:
    group = view.index.groups[g]
    return not (view.is_dropped(g) or group.kind in ("system", "user", "summary") or group.pinned)


def _big_text(m: Message) -> bool:
    return m.role in ("tool", "assistant") and m.synthetic is None and bool(m.text)


def _water_level(sizes: list[int], budget: int, total: int) -> int | None:
    """The largest per-message limit at which clamping every one of `sizes` over it
    brings `total` within `budget` (None when no limit does)."""
    if not sizes:
        return None
    sizes = sorted(sizes, reverse=True)
    room = budget - (total - sum(sizes)) - budget // 50  # a margin for estimates
    rest = sum(sizes)
    for k, size in enumerate(sizes, start=1):
        rest -= size  # the k biggest clamped to the level, the others as they are
        level = (room - rest) // k - _CLAMP_SLACK
        if level >= (sizes[k] if k < len(sizes) else 0):
            return level if level > 0 else None
    return None


def core_breakdown(view: View) -> dict[str, int]:
    """Tokens the view sends, by why they are there (system, pinned, last user message...)."""
    out = {"system": 0, "pinned": 0, "last user message": 0, "pending call": 0, "other": 0}
    idx = view.index
    for g in idx.groups:
        if view.is_dropped(g.index):
            continue
        tokens = rendered_tokens(view, g.index)
        if g.kind == "system":
            key = "system"
        elif g.pinned:
            key = "pinned"
        elif g.index == idx.last_user_group:
            key = "last user message"
        elif g.pending:
            key = "pending call"
        else:
            key = "other"
        out[key] += tokens
    note = view.total_tokens - sum(out.values())
    if note > 0:
        out["omission note"] = note
    return out
