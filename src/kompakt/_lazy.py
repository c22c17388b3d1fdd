"""Names a package re-exports, imported on first use.

A package lists its public names once, as ``{name: module that defines it}``, and answers
attribute lookups through `attribute`: ``import kompakt.strategies.truncation`` then loads
no model adapter, and ``import kompakt`` no strategy. Type checkers read the package's
``if TYPE_CHECKING:`` imports instead, which a test keeps equal to the list.

>>> import types
>>> package = types.ModuleType("demo")
>>> attribute(vars(package), {"dedent": "textwrap"}, "dedent")("  x")
'x'
>>> "dedent" in vars(package)  # cached: the next lookup is a plain attribute
True
>>> attribute(vars(package), {}, "nothing")
Traceback (most recent call last):
...
AttributeError: module 'demo' has no attribute 'nothing'
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

__all__ = ["attribute"]


def attribute(namespace: dict[str, Any], exports: Mapping[str, str], name: str) -> Any:
    """`name` from the module `exports` maps it to, stored in the package's `namespace`."""
    module = exports.get(name)
    if module is None:
        raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    namespace[name] = value
    return value
