"""The public surface: every name in `kompakt.__all__` resolves, and nothing public is missing."""

from __future__ import annotations

import kompakt


def test_all_names_resolve() -> None:
    for name in kompakt.__all__:
        assert getattr(kompakt, name) is not None, name


def test_exports_point_to_defining_module() -> None:
    for name, module in kompakt._EXPORTS.items():
        value = getattr(kompakt, name)
        defined_in = getattr(value, "__module__", module)
        if not defined_in.startswith("kompakt"):  # type aliases report typing or collections.abc
            continue
        # re-exports through a package's __init__ are fine; the name must live under it
        assert defined_in.startswith(module) or module.startswith(defined_in.rsplit(".", 1)[0]), (
            name,
            defined_in,
            module,
        )


def test_unknown_attribute_raises() -> None:
    try:
        kompakt.NoSuchThing  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:  # pragma: no cover
        raise AssertionError("expected AttributeError")
