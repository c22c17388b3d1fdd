"""Renamed options: an old name keeps working for one release, with one
`DeprecationWarning` that names the new one and points at the caller's line.

>>> import warnings
>>> @renamed_options(size="max_note_tokens")
... def note(text: str, *, max_note_tokens: int = 10) -> str:
...     return text[:max_note_tokens]
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     note("abcdef", size=3)
'abc'
>>> str(caught[0].message)
'note(): `size` is deprecated, use `max_note_tokens` (the old name goes in 0.3)'
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

REMOVED_IN = "0.3"
"""The release that drops the old names."""


def deprecated(message: str, *, stacklevel: int = 2) -> None:
    """Warn once with `DeprecationWarning`, pointing at the frame `stacklevel` up: 1 is the
    function calling this one, 2 (the default) its caller, the user's code."""
    warnings.warn(message, DeprecationWarning, stacklevel=stacklevel + 1)


def renamed(old: str, new: str, *, owner: str, stacklevel: int = 2) -> None:
    """Warn that `old` is now called `new` (in `owner`); `stacklevel` as for `deprecated`."""
    deprecated(
        f"{owner}: `{old}` is deprecated, use `{new}` (the old name goes in {REMOVED_IN})",
        stacklevel=stacklevel + 1,
    )


def renamed_options(*, positional: Sequence[str] = (), **names: str) -> Callable[[F], F]:
    """Decorate a function (or ``__init__``) whose options were renamed.

    Args:
        positional: the old names, in the old order, of the parameters that could once be
            passed by position past the ones still positional; such a call keeps working
            with one warning per value to pass it by (new) name.
        **names: old name -> new name. An old keyword is passed on under its new name,
            with one warning; giving both is a `TypeError`.
    """

    def decorate(fn: F) -> F:
        params = inspect.signature(fn).parameters.values()
        still = sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
        owner = _owner(fn)

        def upgrade(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
            """The call in today's terms; warns (pointing at the caller) for each old use."""
            if len(args) > still and positional:
                extra, args = args[still:], args[:still]
                if len(extra) > len(positional):
                    raise TypeError(
                        f"{owner} takes at most {still + len(positional)} positional "
                        f"arguments, got {still + len(extra)}"
                    )
                for old, value in zip(positional, extra, strict=False):
                    new = names.get(old, old)
                    if new in kwargs or old in kwargs:
                        raise TypeError(f"{owner} got `{new}` twice (by position and by name)")
                    deprecated(
                        f"{owner}: passing `{old}` by position is deprecated, pass `{new}=` "
                        f"(positions go in {REMOVED_IN})",
                        stacklevel=3,  # upgrade -> wrapper -> the caller
                    )
                    kwargs[new] = value
            if names and any(old in kwargs for old in names):
                _rename(kwargs, names, owner)
            return args

        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                args = upgrade(args, kwargs)
                return await fn(*args, **kwargs)

            return async_wrapper  # type: ignore[return-value]

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            args = upgrade(args, kwargs)
            return fn(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


def _rename(kwargs: dict[str, Any], names: Mapping[str, str], owner: str) -> None:
    """Move each old keyword of `kwargs` (a call's own dict) to its new name."""
    for old, new in names.items():
        if old not in kwargs:
            continue
        if new in kwargs:
            raise TypeError(f"{owner} got both `{old}` and `{new}`: pass only `{new}`")
        renamed(old, new, owner=owner, stacklevel=4)  # _rename -> upgrade -> wrapper -> caller
        kwargs[new] = kwargs.pop(old)


def _owner(fn: Callable[..., Any]) -> str:
    """``Summarize()`` for an ``__init__``, ``validate()`` for a function."""
    qual = fn.__qualname__
    if qual.endswith(".__init__"):
        qual = qual[: -len(".__init__")]
    return f"{qual}()"
