"""The HTML reports render in headless Chromium: a non-blank screenshot and charts with data.

Needs Debian's ``chromium`` (``.ci/run`` installs it). Outside CI the test skips with
the reason when Chromium is missing; in CI (``CI`` set) it fails instead.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

import kompakt
from kompakt.eval.compactors import make_compactor
from kompakt.eval.replay import replay
from kompakt.eval.report import eval_report, replay_report
from kompakt.eval.retention import evaluate, parse_budgets
from kompakt.tokens import CharEstimator

pytestmark = pytest.mark.browser

DATA = Path(__file__).resolve().parent / "data" / "mini-swe-agent"
RUN = DATA / "django__django-13658.traj.json"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _chromium() -> str:
    found = shutil.which("chromium") or (
        "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None
    )
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed; .ci/run must install Debian's chromium")
        print("SKIP: chromium not installed (apt-get install -y chromium)")
        pytest.skip("chromium not installed (apt-get install -y chromium)")
    return found


def _browser(args: list[str], tmp: Path) -> subprocess.CompletedProcess[str]:
    profile = tmp / "profile"
    profile.mkdir(exist_ok=True)
    return subprocess.run(
        [_chromium(), *FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def _png_pixels(data: bytes) -> tuple[int, int, int, list[bytes]]:
    """Decode an 8-bit RGB/RGBA PNG: width, height, bytes per pixel, unfiltered rows."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width, height, bpp = 8, b"", 0, 0, 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6), (depth, color)
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows: list[bytes] = []
    prev = bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 0xFF
            elif f == 2:
                line[i] = (line[i] + b) & 0xFF
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 0xFF
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 0xFF
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def _colored_pixels(png: Path) -> tuple[int, int]:
    """(non-white pixels, strongly blue pixels: the 'with compaction' line and points)."""
    width, _height, bpp, rows = _png_pixels(png.read_bytes())
    ink = blue = 0
    for row in rows:
        for x in range(0, width * bpp, bpp):
            r, g, b = row[x], row[x + 1], row[x + 2]
            if r < 235 or g < 235 or b < 235:
                ink += 1
            if b > 180 and r < 80 and g < 140:
                blue += 1
    return ink, blue


def _check_page(html: Path, tmp: Path, min_points: int) -> None:
    shot = tmp / (html.stem + ".png")
    r = _browser([f"--screenshot={shot}", "--window-size=1280,2000", html.as_uri()], tmp)
    assert shot.is_file() and shot.stat().st_size > 1000, r.stderr[-2000:]
    ink, blue = _colored_pixels(shot)
    assert ink > 20_000, f"screenshot looks blank: {ink} non-white pixels"
    assert blue > 300, f"no chart line drawn: {blue} blue pixels"
    dom = _browser(["--dump-dom", html.as_uri()], tmp).stdout
    svgs = re.findall(r"<svg\b.*?</svg>", dom, flags=re.S)
    assert svgs, "no SVG chart in the rendered DOM"
    points = sum(len(re.findall(r'<circle[^>]*class="pt"', s)) for s in svgs)
    paths = sum(len(re.findall(r'<path[^>]*\bd="M[\d.]+,[\d.]+ L', s)) for s in svgs)
    assert points >= min_points, f"only {points} data points rendered"
    assert paths >= 2, f"only {paths} chart lines rendered"


def test_replay_report_renders_in_chromium(tmp_path: Path) -> None:
    tok = CharEstimator()
    messages = list(kompakt.load(RUN))
    result = replay(
        messages,
        make_compactor("budgeted", 4000, tokenizer=tok),
        tokenizer=tok,
        budget=4000,
        strategy="budgeted",
    )
    html = tmp_path / "replay.html"
    html.write_text(replay_report(result))
    _check_page(html, tmp_path, min_points=2 * len(result.steps))


def test_eval_report_renders_in_chromium(tmp_path: Path) -> None:
    tok = CharEstimator()
    result = evaluate(
        [(RUN.name, list(kompakt.load(RUN)))],
        ["truncation", "budgeted"],
        parse_budgets("0.5,0.2"),
        lambda s, b: make_compactor(s, b, tokenizer=tok),
        tokenizer=tok,
    )
    html = tmp_path / "eval.html"
    html.write_text(eval_report(result))
    _check_page(html, tmp_path, min_points=12)
