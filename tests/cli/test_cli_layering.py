"""What each command imports: compacting a transcript needs no evaluation code."""

from __future__ import annotations

import subprocess
import sys


def imported_after(statement: str) -> set[str]:
    """The kompakt modules a fresh interpreter holds after running `statement`."""
    listing = "print('\\n'.join(m for m in sys.modules if m.startswith('kompakt')))"
    code = f"import sys; {statement}; {listing}"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_the_compact_command_does_not_import_the_evaluation_package() -> None:
    modules = imported_after("import kompakt.cli.compact")
    assert "kompakt.cli.compact" in modules
    assert "kompakt.presets" in modules
    assert not {m for m in modules if m == "kompakt.eval" or m.startswith("kompakt.eval.")}


def test_the_old_eval_paths_still_import_what_moved() -> None:
    from kompakt.cli.fallbacks import fallback_warnings
    from kompakt.eval import compactors, documents, fallbacks
    from kompakt.formats.documents import write_atomic
    from kompakt.presets import make_compactor

    assert compactors.make_compactor is make_compactor
    assert documents.write_atomic is write_atomic
    assert fallbacks.fallback_warnings is fallback_warnings
