"""Moved to `kompakt.cli.fallbacks` (warnings are the command line's); kept for imports."""

from kompakt.cli.fallbacks import ROUTINE, fallback_warnings, model_failure_warning

__all__ = ["ROUTINE", "fallback_warnings", "model_failure_warning"]
