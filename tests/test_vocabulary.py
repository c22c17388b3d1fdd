# mypy: disable-error-code="call-arg, unused-ignore"
# (this file calls the 0.1 spellings on purpose: each must still work, with a warning)
"""One name per idea: every option renamed for 0.2 still works under its 0.1 name (or position)
for one release, with exactly one DeprecationWarning that names the new one and points at the
caller's line; public callables take their options by keyword; docs and examples use only the
new names.

pyproject's filterwarnings ignores DeprecationWarning, so these tests record warnings explicitly.
"""

from __future__ import annotations

import importlib
import inspect
import json
import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import is_dataclass
from pathlib import Path
from typing import Any

import pytest

import kompakt
from kompakt import Message, ToolCall
from kompakt.models import ScriptedModel
from kompakt.strategies import Truncation

ROOT = Path(__file__).resolve().parents[1]
HERE = str(Path(__file__).resolve())


@contextmanager
def one_warning(new: str) -> Iterator[None]:
    """Exactly one DeprecationWarning inside, naming `new` and pointing at this file."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    found = [w for w in caught if issubclass(w.category, DeprecationWarning)]
    assert len(found) == 1, [str(w.message) for w in found]
    assert f"`{new}" in str(found[0].message), str(found[0].message)
    assert found[0].filename == HERE, (found[0].filename, str(found[0].message))


def _tool_run(n: int) -> list[Message]:
    msgs = [Message.system("s"), Message.user("go")]
    for i in range(n):
        call = ToolCall(id=f"c{i}", name="read_file", arguments=json.dumps({"path": "a.py"}))
        msgs += [
            Message.assistant(tool_calls=[call]),
            Message.tool("x" * 400, tool_call_id=f"c{i}"),
        ]
    return [*msgs, Message.assistant("done")]


# -- renamed keywords: (what, call with the old name, new name, what the new option reads) --

S = kompakt
MODEL = ScriptedModel("ok", name="small")
RENAMED_KEYWORDS: list[tuple[str, Callable[[], Any], str, Callable[[Any], object], object]] = [
    (
        "Summarize",
        lambda: S.Summarize(keep_last=3),
        "keep_last_groups",
        lambda s: s.keep_last_groups,
        3,
    ),
    (
        "Summarize",
        lambda: S.Summarize(max_summary_tokens=99),
        "max_note_tokens",
        lambda s: s.max_note_tokens,
        99,
    ),
    (
        "WholeHistory",
        lambda: S.WholeHistory(keep_last=1),
        "keep_last_groups",
        lambda s: s.keep_last_groups,
        1,
    ),
    ("FromLastN", lambda: S.FromLastN(n=5), "last_messages", lambda s: s.last_messages, 5),
    (
        "FromLastN",
        lambda: S.FromLastN(keep_last=1),
        "keep_last_groups",
        lambda s: s.keep_last_groups,
        1,
    ),
    (
        "Chunked",
        lambda: S.Chunked(keep_last=1),
        "keep_last_groups",
        lambda s: s.keep_last_groups,
        1,
    ),
    (
        "Chunked",
        lambda: S.Chunked(max_summary_tokens=50),
        "max_note_tokens",
        lambda s: s.max_note_tokens,
        50,
    ),
    (
        "ExtractiveDigest",
        lambda: S.ExtractiveDigest(keep_last=2),
        "keep_last_groups",
        lambda s: s.keep_last_groups,
        2,
    ),
    (
        "ExtractiveDigest",
        lambda: S.ExtractiveDigest(max_tokens=90),
        "max_note_tokens",
        lambda s: s.max_note_tokens,
        90,
    ),
    (
        "FactRetrieval",
        lambda: S.FactRetrieval(keep_last=2),
        "keep_last_groups",
        lambda s: s.keep_last_groups,
        2,
    ),
    (
        "FactRetrieval",
        lambda: S.FactRetrieval(max_fact_tokens=300),
        "max_note_tokens",
        lambda s: s.max_note_tokens,
        300,
    ),
    (
        "FactRetrieval",
        lambda: S.FactRetrieval(max_answer_tokens=64),
        "max_output_tokens",
        lambda s: s.max_output_tokens,
        64,
    ),
    (
        "FactRetrieval",
        lambda: S.FactRetrieval(model=MODEL),
        "summarizer",
        lambda s: s.summarizer,
        MODEL,
    ),
    (
        "CollapseToolResults",
        lambda: S.CollapseToolResults(keep_last=1),
        "keep_last_groups",
        lambda s: s.keep_last_groups,
        1,
    ),
    (
        "RemoveToolCalls",
        lambda: S.RemoveToolCalls(keep_last=1),
        "keep_last_groups",
        lambda s: s.keep_last_groups,
        1,
    ),
    (
        "KeepFirstAndLast",
        lambda: S.KeepFirstAndLast(keep_last=3),
        "keep_last_groups",
        lambda s: s.keep_last_groups,
        3,
    ),
    (
        "ClampOversized",
        lambda: S.ClampOversized(max_tokens=100),
        "max_message_tokens",
        lambda s: s.max_message_tokens,
        100,
    ),
    (
        "Rehydrate",
        lambda: S.Rehydrate(max_tokens=100),
        "max_message_tokens",
        lambda s: s.max_message_tokens,
        100,
    ),
    (
        "SupersedeReads",
        lambda: S.SupersedeReads(tools=["ls"]),
        "include_tools",
        lambda s: s.include_tools,
        frozenset({"ls"}),
    ),
    (
        "ContextFraction",
        lambda: S.ContextFraction(0.5, window=1000),
        "context_window",
        lambda t: t.limit,
        500,
    ),
    (
        "ExtractiveModel",
        lambda: S.ExtractiveModel(max_tokens=70),
        "max_output_tokens",
        lambda m: m.max_output_tokens,
        70,
    ),
    (
        "Agent",
        lambda: S.Agent(ScriptedModel("ok"), max_tokens=9),
        "max_output_tokens",
        lambda a: a.max_output_tokens,
        9,
    ),
]


@pytest.mark.parametrize(
    ("make", "new", "read", "expected"),
    [pytest.param(*case[1:], id=f"{case[0]}-{case[2]}") for case in RENAMED_KEYWORDS],
)
def test_an_old_keyword_warns_once_and_sets_the_new_option(
    make: Callable[[], Any], new: str, read: Callable[[Any], object], expected: object
) -> None:
    with one_warning(new):
        made = make()
    assert read(made) == expected


def test_old_and_new_name_together_is_an_error() -> None:
    with pytest.raises(TypeError, match="both `keep_last` and `keep_last_groups`"):
        kompakt.Summarize(keep_last=1, keep_last_groups=2)  # type: ignore[call-arg]


def test_renamed_options_keep_working_in_a_compaction() -> None:
    """The old name is not only accepted: the strategy behaves as the new one would."""
    msgs = _tool_run(6)
    new = kompakt.apply_compaction(
        msgs, strategy=kompakt.CollapseToolResults(keep_last_groups=1, min_preserved=0)
    )
    with one_warning("keep_last_groups"):
        old_strategy = kompakt.CollapseToolResults(keep_last=1, min_preserved=0)  # type: ignore[call-arg]
    old = kompakt.apply_compaction(msgs, strategy=old_strategy)
    assert [m.text for m in old] == [m.text for m in new]
    assert [m.synthetic for m in new].count("collapsed") == 5


def test_only_tool_groups_false_counts_every_kind_of_group() -> None:
    msgs = _tool_run(4)
    msgs[-1:-1] = [Message.user("q"), Message.assistant("a"), Message.user("q2")]
    kept_tools = kompakt.apply_compaction(
        msgs, strategy=kompakt.RemoveToolCalls(keep_last_groups=2, min_preserved=0)
    )
    any_groups = kompakt.apply_compaction(
        msgs,
        strategy=kompakt.RemoveToolCalls(
            keep_last_groups=2, only_tool_groups=False, min_preserved=0
        ),
    )
    assert sum(1 for m in kept_tools if m.role == "tool") == 2
    assert sum(1 for m in any_groups if m.role == "tool") == 0


def test_supersede_reads_exclude_tools_leaves_those_results() -> None:
    msgs = _tool_run(3)
    out = kompakt.apply_compaction(
        msgs, strategy=kompakt.SupersedeReads(exclude_tools="read_file", min_preserved=0)
    )
    assert out == msgs
    out = kompakt.apply_compaction(
        msgs, strategy=kompakt.SupersedeReads(include_tools="read_file", min_preserved=0)
    )
    assert sum(1 for m in out if m.synthetic == "superseded") == 2


def test_validate_with_dialect_warns_and_checks_that_format() -> None:
    msgs = [Message.assistant("hello")]
    with one_warning("format"), pytest.raises(kompakt.InvalidConversation) as raised:
        kompakt.validate(msgs, dialect="anthropic")  # type: ignore[call-arg]
    assert raised.value.format == "anthropic"
    with one_warning("format"):
        assert raised.value.dialect == "anthropic"
    with one_warning("format"):
        problems = kompakt.find_problems(msgs, dialect="anthropic")  # type: ignore[call-arg]
    assert problems == kompakt.find_problems(msgs, format="anthropic")


def test_renamed_attributes_warn_and_read_the_new_value() -> None:
    model = ScriptedModel("ok")
    with one_warning("max_output_tokens"):
        model.chat_sync([Message.user("hi")], max_tokens=12)  # type: ignore[call-arg]
    assert model.requests[0].max_output_tokens == 12
    with one_warning("max_output_tokens"):
        assert model.requests[0].max_tokens == 12
    with one_warning("context_window"):
        assert kompakt.ContextFraction(0.5, context_window=100).window == 100


# -- old positions -------------------------------------------------------------------------

POSITIONAL: list[tuple[str, Callable[[], Any], Sequence[str], Callable[[Any], object], object]] = [
    ("Summarize", lambda: S.Summarize(3), ["keep_last_groups"], lambda s: s.keep_last_groups, 3),
    (
        "ExtractiveDigest",
        lambda: S.ExtractiveDigest(2, 90),
        ["keep_last_groups", "max_note_tokens"],
        lambda s: (s.keep_last_groups, s.max_note_tokens),
        (2, 90),
    ),
    (
        "FactRetrieval",
        lambda: S.FactRetrieval(S.CODING_AGENT_CONCEPTS, MODEL),
        ["summarizer"],
        lambda s: s.summarizer,
        MODEL,
    ),
    ("FromLastN", lambda: S.FromLastN(5, MODEL), ["summarizer"], lambda s: s.summarizer, MODEL),
    ("Chunked", lambda: S.Chunked(4, MODEL), ["summarizer"], lambda s: s.summarizer, MODEL),
    (
        "Budgeted",
        lambda: S.Budgeted(100, [Truncation()]),
        ["strategies"],
        lambda s: [type(x).__name__ for x in s.strategies],
        ["Truncation"],
    ),
    (
        "Compactor",
        lambda: S.Compactor(S.TokensExceed(10), Truncation()),
        ["strategy"],
        lambda c: type(c.strategy).__name__,
        "Truncation",
    ),
    (
        "Agent",
        lambda: S.Agent(ScriptedModel("ok"), [len], recall=False),
        ["tools"],
        lambda a: list(a.tools),
        ["len"],
    ),
    (
        "dump",
        lambda: S.dump([Message.user("hi")], "openai"),
        ["format"],
        lambda d: d,
        [{"role": "user", "content": "hi"}],
    ),
    (
        "to_dicts",
        lambda: S.to_dicts([Message.user("hi")], "openai"),
        ["format"],
        lambda d: d,
        [{"role": "user", "content": "hi"}],
    ),
]


@pytest.mark.parametrize(
    ("make", "names", "read", "expected"),
    [pytest.param(*case[1:], id=case[0]) for case in POSITIONAL],
)
def test_an_option_passed_by_its_old_position_warns_once_per_value(
    make: Callable[[], Any], names: Sequence[str], read: Callable[[Any], object], expected: object
) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        made = make()
    found = [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]
    assert len(found) == len(names), found
    for message, name in zip(found, names, strict=True):
        assert f"pass `{name}=`" in message
    assert all(w.filename == HERE for w in caught)
    assert read(made) == expected


def test_apply_compaction_takes_its_strategy_by_position_without_a_warning() -> None:
    msgs = [Message.user("x" * 400) for _ in range(6)]
    new = kompakt.apply_compaction(msgs, strategy=kompakt.Budgeted(300))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        by_position = kompakt.apply_compaction(msgs, kompakt.Budgeted(300))
    assert by_position == new and len(new) < len(msgs)


def test_compact_for_retry_takes_the_overflow_by_keyword() -> None:
    msgs = [Message.user("x" * 400) for _ in range(6)]
    overflow = kompakt.Overflow("openai", "too long", limit=300, requested=620)
    with one_warning("overflow"):
        smaller, event = kompakt.compact_for_retry(msgs, overflow)  # type: ignore[misc]
    assert event.overflow is overflow and len(smaller) < len(msgs)


async def test_apply_compaction_async_takes_its_strategy_by_position_too() -> None:
    msgs = [Message.user("x" * 400) for _ in range(6)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = await kompakt.apply_compaction_async(msgs, kompakt.Budgeted(300))
    assert out == await kompakt.apply_compaction_async(msgs, strategy=kompakt.Budgeted(300))
    assert len(out) < len(msgs)
    assert inspect.iscoroutinefunction(kompakt.apply_compaction_async)


def test_compactor_requires_a_strategy() -> None:
    assert inspect.signature(kompakt.Compactor).parameters["strategy"].default is inspect._empty
    with pytest.raises(TypeError, match="strategy"):
        kompakt.Compactor()  # type: ignore[call-arg]


# -- renamed names -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("module", "old", "new"),
    [
        ("kompakt", "Any", "AnyOf"),
        ("kompakt", "All", "AllOf"),
        ("kompakt.triggers", "Any", "AnyOf"),
        ("kompakt.triggers", "All", "AllOf"),
        ("kompakt", "StoreBase", "BaseStore"),
        ("kompakt.store", "StoreBase", "BaseStore"),
        ("kompakt.store.base", "StoreBase", "BaseStore"),
    ],
)
def test_an_old_public_name_is_importable_with_a_warning(module: str, old: str, new: str) -> None:
    mod = importlib.import_module(module)
    with one_warning(new):
        value = getattr(mod, old)
    assert value is getattr(mod, new)
    assert old not in getattr(mod, "__all__", ())


def test_from_import_of_an_old_trigger_name_warns_at_the_import() -> None:
    with one_warning("AnyOf"):
        from kompakt.triggers import Any as OldAny  # type: ignore[attr-defined]
    idx = kompakt.MessageIndex([Message.user("x" * 400)])
    assert OldAny(kompakt.Never(), kompakt.TokensExceed(10))(idx)
    assert repr(kompakt.AllOf(kompakt.Never())) == "AllOf(Never(),)"


def test_store_classes_derive_from_the_exported_base() -> None:
    assert issubclass(kompakt.MemoryStore, kompakt.BaseStore)
    assert issubclass(kompakt.SQLiteStore, kompakt.BaseStore)


# -- one strategy-name registry -------------------------------------------------------------

OLD_EVAL_NAMES = {
    "digest": "extractive_digest",
    "window": "sliding_window",
    "first-last": "keep_first_and_last",
    "collapse": "collapse_tool_results",
    "remove-tools": "remove_tool_calls",
    "clamp": "clamp_oversized",
    "supersede": "supersede_reads",
}


def test_cli_and_eval_names_are_the_registry_names() -> None:
    from kompakt.config import STRATEGY_NAMES
    from kompakt.eval.compactors import STRATEGIES

    assert set(STRATEGIES) <= set(STRATEGY_NAMES)


@pytest.mark.parametrize(("old", "new"), sorted(OLD_EVAL_NAMES.items()))
def test_a_0_1_eval_name_warns_and_builds_the_registry_strategy(old: str, new: str) -> None:
    from kompakt.eval.compactors import make_strategy

    expected = make_strategy(new, 1_000)
    with one_warning(new):
        built = make_strategy(old, 1_000)
    assert repr(built) == repr(expected)


def test_a_config_table_with_old_option_names_still_loads() -> None:
    text = """
[trigger]
fraction = 0.5
window = 10000
[[strategy]]
name = "collapse"
keep_last = 3
"""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compactor = kompakt.Compactor.from_config(text)
    messages = sorted(str(w.message) for w in caught if issubclass(w.category, DeprecationWarning))
    assert len(messages) == 3, messages
    assert any("`context_window`" in m for m in messages)
    assert any("`collapse_tool_results`" in m for m in messages)
    assert any("`keep_last_groups`" in m for m in messages)
    assert repr(compactor.strategy) == "CollapseToolResults(keep_last_groups=3)"
    assert compactor.trigger.limit == 5_000  # type: ignore[attr-defined]


# -- a 0.1 ChatModel (chat takes max_tokens) still works -------------------------------------


class OldStyleModel:
    """A ChatModel written against 0.1: its `chat` names the answer limit ``max_tokens``."""

    name = "old-style"

    def __init__(self) -> None:
        self.limits: list[int | None] = []

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        tools: Any = None,
        response_format: Any = None,
        max_tokens: int | None = None,
    ) -> kompakt.ChatResponse:
        self.limits.append(max_tokens)
        return kompakt.ChatResponse(Message.assistant("## Goal\n- keep going"))

    def chat_sync(self, messages: Sequence[Message], **options: Any) -> kompakt.ChatResponse:
        raise NotImplementedError


def test_a_0_1_chat_model_is_asked_with_max_tokens_and_warned() -> None:
    model = OldStyleModel()
    msgs = [Message.user(f"question {i} " * 30) for i in range(8)]
    strategy = kompakt.Summarize(keep_last_groups=2, summarizer=model)  # type: ignore[arg-type]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = kompakt.apply_compaction(msgs, strategy=strategy)
    found = [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]
    assert found and all("max_output_tokens" in m for m in found)
    assert model.limits and all(isinstance(n, int) and n > 0 for n in model.limits)
    assert "keep going" in out[0].text


# -- keyword-only options on the public surface ----------------------------------------------

PUBLIC_MODULES = [
    "kompakt",
    "kompakt.strategies",
    "kompakt.triggers",
    "kompakt.models",
    "kompakt.store",
    "kompakt.agent",
    "kompakt.formats",
    "kompakt.summarizers",
    "kompakt.compactor",
    "kompakt.recovery",
    "kompakt.validation",
    "kompakt.config",
]
"""The modules whose `__all__` is the library's public surface (the CLI, eval, serve and the
framework adapters have their own entry points; `kompakt.notes` is the digest engine's)."""

TWO_INPUTS = {
    "kompakt.errors.Problem",  # (index, rule, message): a record, like the dataclasses
    "kompakt.strategies.base.run_strategy",  # (strategy, view, context): a strategy's inputs
    "kompakt.store.records.apply_record",  # (view, record): the record replayed onto the view
    "kompakt.formats.native.message_from_dict",  # (data, index): where the data came from
    "kompakt.models.base.assistant_response",  # (text, usage): the two halves of a response
    "kompakt.models.base.estimate_usage",  # (messages, answer): what was asked, what came back
    "kompakt.agent.tools.execute_calls",  # (calls, tools): the calls and what answers them
    "kompakt.recovery.send_recovering",  # (send, tighten): the call and how to shrink it
    "kompakt.recovery.send_recovering_sync",
    "kompakt.compactor.apply_compaction",  # (messages, strategy): the list and what to do to it
    "kompakt.compactor.apply_compaction_async",
}
"""Functions whose second parameter is an input as essential as the first, not an option."""


def _public_callables() -> Iterator[tuple[str, Callable[..., Any]]]:
    seen: set[int] = set()
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if id(obj) in seen or not callable(obj):
                continue
            seen.add(id(obj))
            if inspect.isclass(obj):
                # records (dataclasses) and errors take their fields; protocols are not called
                if is_dataclass(obj) or issubclass(obj, BaseException):
                    continue
                if getattr(obj, "_is_protocol", False) or "__init__" not in obj.__dict__:
                    continue
                yield f"{obj.__module__}.{obj.__qualname__}", obj.__init__
            elif inspect.isfunction(obj):
                yield f"{obj.__module__}.{obj.__qualname__}", obj


def test_public_callables_take_options_by_keyword_past_the_first_argument() -> None:
    offenders = []
    for qualname, fn in _public_callables():
        if qualname in TWO_INPUTS:
            continue
        params = [p for p in inspect.signature(fn).parameters.values() if p.name != "self"]
        positional = [
            p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        if len(positional) > 1:
            offenders.append(f"{qualname}{positional}")
    assert not offenders, offenders


# -- docs and examples use only the new names -----------------------------------------------

OLD_NAMES = [
    r"\bkeep_last\b(?!_)",
    r"\bmax_summary_tokens\b",
    r"\bmax_fact_tokens\b",
    r"\bmax_answer_tokens\b",
    r"\bdefault_max_tokens\b",
    r"\bdialect=",
    r"\bStoreBase\b",
    r"\bkompakt\.(Any|All)\(",
    r"from kompakt(\.triggers)? import[^\n]*\b(Any|All)\b(?!Of)",
    r"\b(ContextFraction|fraction)\b[^\n]*\bwindow\s*=",
    r"\bSupersedeReads\([^)]*\btools=",
    r"\bFactRetrieval\([^)]*\bmodel=",
    r"\bFromLastN\([^)]*\bn=",
    r"\b(ExtractiveDigest|ClampOversized|Rehydrate|ExtractiveModel)\([^)]*\bmax_tokens=",
    r"\bkompakt\.Agent\([^)]*\bmax_tokens=",
    r"\.chat(_sync)?\([^)]*\bmax_tokens=",
    r"--strateg(y|ies)[ =]+[a-z_,-]*"
    r"\b(digest|window|first-last|collapse|remove-tools|clamp|supersede)\b(?!_)",
    r"\bBudgeted\(\s*[\w.]+\s*,\s*\[",
    r"\bAgent\(\s*\w+\s*,(?!\s*\w+\s*=)",
    r"\bCompactor\((?:[^()=\n]|\([^()\n]*\))+,(?!\s*\w+\s*=)",
    r"\b(Summarize|ExtractiveDigest)\(\s*\d",
    r"\b(FactRetrieval|FromLastN|Chunked)\((?:[^()=\n]|\([^()\n]*\))+,(?!\s*(\w+\s*=|\*))",
    r"\b(dump|to_dicts|validate|find_problems)\((?:[^()=\n]|\([^()\n]*\))+,\s*\"",
]
"""0.1 spellings that 0.2 renamed: keywords, positions and names."""

DEPRECATION_PAGE = ROOT / "docs" / "renamed.md"
"""The one page allowed to name the old spellings: the table of what was renamed."""


def _documents() -> list[Path]:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    pages += sorted((ROOT / "examples").rglob("*.py"))
    return [p for p in pages if p != DEPRECATION_PAGE]


def test_docs_and_examples_use_only_the_new_names() -> None:
    found = []
    for path in _documents():
        text = path.read_text(encoding="utf-8")
        for pattern in OLD_NAMES:
            for match in re.finditer(pattern, text):
                line = text.count("\n", 0, match.start()) + 1
                found.append(f"{path.relative_to(ROOT)}:{line}: {match.group(0)!r}")
    assert not found, "\n".join(found)


def test_the_renamed_page_lists_every_renamed_option() -> None:
    text = DEPRECATION_PAGE.read_text(encoding="utf-8")
    for _, _, new, _, _ in RENAMED_KEYWORDS:
        assert f"`{new}" in text, new
    for old, new in OLD_EVAL_NAMES.items():
        assert f"`{old}`" in text and f"`{new}`" in text, old
