"""Where the real agent transcripts are (importable from any test module).

`conftest.py` re-exports these and wraps them in fixtures; import from here in a
test module (``from data_files import TRANSCRIPTS``) to parametrize over them.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["DATA_DIR", "TRANSCRIPTS"]

DATA_DIR = Path(__file__).resolve().parent / "data"
"""Real agent transcripts (``tests/data`` from the repository root)."""

TRANSCRIPTS: list[Path] = sorted(
    p for p in DATA_DIR.glob("*/*") if p.name.endswith((".traj", ".traj.json"))
)
"""Every transcript file, sorted."""

if not TRANSCRIPTS:  # a test parametrized over none would pass silently
    raise RuntimeError(f"the transcripts under {DATA_DIR} are missing: restore tests/data")
