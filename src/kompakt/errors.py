"""Every error kompakt raises.

```
KompaktError
├── InputError                 the caller's mistake: fix the input or the argument
│   ├── FormatError            a document kompakt cannot read (unknown format, bad JSON)
│   │   └── MessageError       one message is malformed: names its index and field
│   ├── InvalidConversation    validate() found rules a provider would reject
│   └── ConfigError            a bad option, strategy name or config file
├── BudgetImpossible           what must survive alone exceeds the token budget
├── MissingDependency          an optional extra is not installed
└── RuntimeFailure             something failed while running
    ├── ModelError             a model call failed (after retries)
    └── StoreError             the history store failed
        └── SessionConflict    another writer appended to the session first
```

>>> try:
...     raise MessageError(3, "tool_calls[0].function.arguments", "a JSON string", 42)
... except InputError as e:
...     print(e)
message 3: field 'tool_calls[0].function.arguments': expected a JSON string, got 42
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = [
    "BudgetImpossible",
    "ConfigError",
    "FormatError",
    "InputError",
    "InvalidConversation",
    "KompaktError",
    "MessageError",
    "MissingDependency",
    "ModelError",
    "Problem",
    "RuntimeFailure",
    "SessionConflict",
    "StoreError",
]


class KompaktError(Exception):
    """Base of every kompakt error."""


class InputError(KompaktError):
    """The caller gave something kompakt cannot use."""


class FormatError(InputError):
    """A document kompakt cannot read."""


class MessageError(FormatError):
    """One malformed message: the message's index, the field, what was expected."""

    def __init__(self, index: int, field: str, expected: str, got: Any = ...) -> None:
        self.index = index
        self.field = field
        self.expected = expected
        got_text = "" if got is ... else f", got {_short(got)}"
        super().__init__(f"message {index}: field {field!r}: expected {expected}{got_text}")


class Problem:
    """One rule a conversation breaks, at a message index."""

    __slots__ = ("index", "message", "rule")

    def __init__(self, index: int, rule: str, message: str) -> None:
        self.index = index
        self.rule = rule
        self.message = message

    def __str__(self) -> str:
        return f"message {self.index}: {self.rule}: {self.message}"

    def __repr__(self) -> str:
        return f"Problem({self.index}, {self.rule!r}, {self.message!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Problem) and (self.index, self.rule) == (other.index, other.rule)

    def __hash__(self) -> int:
        return hash((self.index, self.rule))


class InvalidConversation(InputError):
    """A conversation a provider would reject; `problems` lists every rule broken."""

    def __init__(self, problems: Sequence[Problem], *, format: str = "openai") -> None:
        self.problems = list(problems)
        self.format = format
        """The provider format checked (``openai``, ``anthropic``, ``responses``, ``gemini``)."""
        first = str(self.problems[0]) if self.problems else "no problems"
        more = f" (and {len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
        super().__init__(f"invalid for {format}: {first}{more}")

    @property
    def dialect(self) -> str:
        """The 0.1 name of `format` (deprecated)."""
        from kompakt._deprecation import renamed

        renamed("dialect", "format", owner="InvalidConversation")
        return self.format


class ConfigError(InputError):
    """A bad option, strategy name or configuration file."""


class BudgetImpossible(KompaktError):
    """What must survive (system, pinned, last user message, pending call) exceeds the budget."""

    def __init__(self, budget: int, required: int, breakdown: dict[str, int]) -> None:
        self.budget = budget
        self.required = required
        self.breakdown = breakdown
        parts = ", ".join(f"{k} {v}" for k, v in breakdown.items() if v)
        super().__init__(
            f"token budget {budget} cannot hold what must be kept: {required} tokens ({parts})"
        )


class MissingDependency(KompaktError):
    """An optional extra is needed: the message says which `pip install` brings it."""

    def __init__(self, what: str, extra: str) -> None:
        self.extra = extra
        super().__init__(f'{what} needs the [{extra}] extra: pip install "kompakt[{extra}]"')


class RuntimeFailure(KompaktError):
    """Something failed while running."""


class ModelError(RuntimeFailure):
    """A model call failed after its retries."""


class StoreError(RuntimeFailure):
    """The history store failed."""


class SessionConflict(StoreError):
    """Another writer appended to the session since this one last read it.

    Raised by `append(..., expected_count=n)` when the session no longer holds `n`
    originals: nothing was written, and the caller reloads the session (or writes to
    its own session id) rather than interleave its messages with the other writer's.

    >>> e = SessionConflict("s1", expected=4, found=6)
    >>> print(str(e)[:62])
    session 's1' holds 6 messages, not the 4 this writer last read
    """

    def __init__(self, session: str, *, expected: int, found: int) -> None:
        self.session = session
        self.expected = expected
        self.found = found
        super().__init__(
            f"session {session!r} holds {found} messages, not the {expected} this writer "
            "last read: another writer appended to it; reload the session, or give each "
            "writer its own session id"
        )


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
