"""Shared fixtures: where the real transcripts are, and the list of them."""

from __future__ import annotations

from pathlib import Path

import pytest

DATA_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data"
"""Real agent transcripts (``../shared/data`` from the repository root)."""

TRANSCRIPTS: list[Path] = sorted(
    p for p in DATA_DIR.glob("*/*") if p.name.endswith((".traj", ".traj.json"))
)
"""Every transcript file, sorted (empty when the data directory is missing)."""


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The transcripts directory (skips the test when it is missing)."""
    if not DATA_DIR.is_dir():
        pytest.skip(f"transcripts not found at {DATA_DIR}")
    return DATA_DIR


@pytest.fixture(scope="session")
def transcripts(data_dir: Path) -> list[Path]:
    """Every transcript file in the data directory."""
    return TRANSCRIPTS
