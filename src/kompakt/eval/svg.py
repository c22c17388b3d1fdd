"""Line charts as inline SVG: no script, no network, renders anywhere.

>>> svg = line_chart([Series("tokens", [(0, 10), (1, 30), (2, 20)])], title="t")
>>> svg.startswith("<svg") and svg.count('class="pt"') == 3
True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape

__all__ = ["PALETTE", "Series", "line_chart"]

PALETTE = ("#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#be185d", "#4d7c0f")
_MAX_POINTS = 400


@dataclass
class Series:
    """One line: a name, (x, y) points, and how to draw it."""

    name: str
    points: Sequence[tuple[float, float]]
    color: str = ""
    dashed: bool = False
    markers: Sequence[tuple[float, float]] = field(default_factory=list)
    """Extra emphasized points (for example, where a compaction ran)."""


def _nice_max(value: float) -> float:
    if value <= 0:
        return 1.0
    magnitude = 10 ** (len(str(int(value))) - 1)
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * magnitude:
            return float(step * magnitude)
    return float(value)


def _thin(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    if len(points) <= _MAX_POINTS:
        return list(points)
    stride = len(points) / _MAX_POINTS
    out = [points[int(i * stride)] for i in range(_MAX_POINTS)]
    out[-1] = points[-1]
    return out


def _num(value: float) -> str:
    if abs(value) >= 1000:
        return f"{value / 1000:.0f}k" if value % 1000 == 0 else f"{value / 1000:.1f}k"
    return f"{value:g}"


def line_chart(
    series: Sequence[Series],
    *,
    title: str,
    x_label: str = "",
    y_label: str = "",
    hlines: Sequence[tuple[float, str]] = (),
    width: int = 900,
    height: int = 320,
    y_max: float | None = None,
    x_ticks: Sequence[float] | None = None,
    x_format: Callable[[float], str] = _num,
    y_format: Callable[[float], str] = _num,
) -> str:
    """An SVG line chart; every data point is a ``<circle class="pt">``."""
    left, right, top, bottom = 64, 170, 34, 44
    pw, ph = width - left - right, height - top - bottom
    xs = [x for s in series for x, _ in s.points] or [0.0, 1.0]
    ys = [y for s in series for _, y in s.points] + [v for v, _ in hlines]
    x0, x1 = min(xs), max(xs)
    if x1 == x0:
        x1 = x0 + 1
    top_y = y_max if y_max is not None else _nice_max(max(ys, default=1.0))

    def px(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * pw

    def py(y: float) -> float:
        return top + ph - (y / top_y) * ph if top_y else top + ph

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img">',
        f"<title>{escape(title)}</title>",
        f'<text x="{left}" y="20" class="ct">{escape(title)}</text>',
    ]
    for i in range(5):
        y = top_y * i / 4
        out.append(
            f'<line x1="{left}" x2="{left + pw}" y1="{py(y):.1f}" y2="{py(y):.1f}" class="grid"/>'
            f'<text x="{left - 6}" y="{py(y) + 4:.1f}" class="ax" text-anchor="end">'
            f"{escape(y_format(y))}</text>"
        )
    ticks = x_ticks if x_ticks is not None else [x0 + (x1 - x0) * i / 5 for i in range(6)]
    for x in ticks:
        out.append(
            f'<text x="{px(x):.1f}" y="{top + ph + 16}" class="ax" text-anchor="middle">'
            f"{escape(x_format(x))}</text>"
        )
    out.append(
        f'<text x="{left + pw / 2:.1f}" y="{height - 6}" class="ax" text-anchor="middle">'
        f"{escape(x_label)}</text>"
        f'<text x="14" y="{top + ph / 2:.1f}" class="ax" text-anchor="middle" '
        f'transform="rotate(-90 14 {top + ph / 2:.1f})">{escape(y_label)}</text>'
    )
    for value, label in hlines:
        out.append(
            f'<line x1="{left}" x2="{left + pw}" y1="{py(value):.1f}" y2="{py(value):.1f}" '
            f'class="hl"/><text x="{left + pw - 4}" y="{py(value) - 4:.1f}" class="ax" '
            f'text-anchor="end">{escape(label)}</text>'
        )
    for i, s in enumerate(series):
        color = s.color or PALETTE[i % len(PALETTE)]
        pts = _thin(s.points)
        path = " ".join(
            f"{'M' if j == 0 else 'L'}{px(x):.1f},{py(y):.1f}" for j, (x, y) in enumerate(pts)
        )
        dash = ' stroke-dasharray="6 4"' if s.dashed else ""
        out.append(
            f'<path d="{path}" fill="none" stroke="{color}" stroke-width="2"{dash} class="line">'
            f"<title>{escape(s.name)}</title></path>"
        )
        radius = 2.2 if len(pts) > 60 else 3.5
        out.extend(
            f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="{radius}" fill="{color}" class="pt">'
            f"<title>{escape(s.name)}: {escape(x_format(x))}, {escape(y_format(y))}</title>"
            "</circle>"
            for x, y in pts
        )
        out.extend(
            f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="6" fill="none" stroke="{color}" '
            f'stroke-width="2" class="mark"/>'
            for x, y in s.markers
        )
        ly = top + 14 + i * 18
        out.append(
            f'<line x1="{left + pw + 14}" x2="{left + pw + 34}" y1="{ly - 4}" y2="{ly - 4}" '
            f'stroke="{color}" stroke-width="3"{dash}/>'
            f'<text x="{left + pw + 40}" y="{ly}" class="lg">{escape(s.name[:22])}</text>'
        )
    out.append("</svg>")
    return "".join(out)
