"""Small static SVG charts for the HTML verdict report: legible at a laptop's width and on paper, a few kilobytes
each, and readable without any script (the report once carried 4.6 MB of plotly.js for three charts).

Every tick label is the number it marks, written out in full ("0.60", "1,250"), right-aligned in a margin wide
enough for it, and the axis titles sit outside the tick labels.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

WIDTH, HEIGHT = 720, 300
LEFT, RIGHT, TOP, BOTTOM = 78, 20, 36, 52  # margins: the left one holds tick labels and the axis title
GRID, AXIS, TEXT = "#e5e7eb", "#6b7280", "#111827"


@dataclass(frozen=True)
class Series:
    """One line of a line chart: its name, colour, values (None: no point), and optional interval per point."""

    name: str
    colour: str
    values: Sequence[float | None]
    intervals: Sequence[tuple[float, float] | None] = ()
    dashed: bool = False


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high]: steps of 1, 2 or 5 times a power of ten."""
    if math.isclose(low, high):
        low, high = low - 0.5 if low else -1.0, high + 0.5 if high else 1.0
    raw = (high - low) / max(count - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    ticks = [round(math.floor(low / step + 1e-9) * step, 12)]
    while ticks[-1] < high - step * 1e-9 or len(ticks) < 2:
        ticks.append(round(ticks[-1] + step, 12))
    return ticks


def tick_label(value: float, ticks: Sequence[float]) -> str:
    """A tick's number in full, with as many decimals as the step between ticks needs."""
    step = abs(ticks[1] - ticks[0]) if len(ticks) > 1 else 1.0
    decimals = max(0, -math.floor(math.log10(step))) if step < 1 else 0
    return f"{value:,.{decimals}f}".replace("-", "−")


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


class _Frame:
    """The plotting area and its scales, and the SVG written into it."""

    def __init__(self, title: str, x_title: str, y_title: str, y_ticks: list[float]) -> None:
        self.y_ticks = y_ticks
        self.x0, self.x1, self.y0, self.y1 = LEFT, WIDTH - RIGHT, HEIGHT - BOTTOM, TOP
        self.parts = [
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
            f'aria-label="{_e(title)}" style="width:100%;max-width:{WIDTH}px;height:auto" '
            f'font-family="system-ui, sans-serif" font-size="12">',
            f'<text x="{LEFT}" y="20" font-size="14" font-weight="600" fill="{TEXT}">{_e(title)}</text>',
            f'<text class="axis-title" x="{(self.x0 + self.x1) / 2}" y="{HEIGHT - 10}" text-anchor="middle" '
            f'fill="{AXIS}">{_e(x_title)}</text>',
            f'<text class="axis-title" transform="translate(16 {(self.y0 + self.y1) / 2}) rotate(-90)" '
            f'text-anchor="middle" fill="{AXIS}">{_e(y_title)}</text>',
        ]
        for tick in y_ticks:
            y = self.y(tick)
            self.parts.append(f'<line x1="{self.x0}" x2="{self.x1}" y1="{y:.1f}" y2="{y:.1f}" stroke="{GRID}"/>')
            self.parts.append(
                f'<text class="tick y" x="{self.x0 - 8}" y="{y + 4:.1f}" text-anchor="end" fill="{AXIS}">'
                f"{tick_label(tick, y_ticks)}</text>"
            )

    def y(self, value: float) -> float:
        low, high = self.y_ticks[0], self.y_ticks[-1]
        return self.y0 - (value - low) / (high - low) * (self.y0 - self.y1)

    def x_band(self, index: int, count: int) -> tuple[float, float]:
        width = (self.x1 - self.x0) / max(count, 1)
        return self.x0 + index * width, width

    def x_label(self, x: float, text: str) -> None:
        self.parts.append(
            f'<text class="tick x" x="{x:.1f}" y="{self.y0 + 18}" text-anchor="middle" fill="{AXIS}">{_e(text)}</text>'
        )

    def legend(self, entries: Sequence[tuple[str, str]]) -> None:
        x = self.x1
        for name, colour in reversed(entries):
            x -= 12 + 7 * len(name) + 18
            self.parts.append(f'<rect x="{x}" y="11" width="12" height="12" fill="{colour}"/>')
            self.parts.append(f'<text x="{x + 16}" y="21" fill="{TEXT}">{_e(name)}</text>')

    def svg(self) -> str:
        axis = f'<line x1="{self.x0}" x2="{self.x0}" y1="{self.y1}" y2="{self.y0}" stroke="{AXIS}"/>'
        return "".join([*self.parts, axis, "</svg>"])


def _span(values: Sequence[float], *, include_zero: bool = False) -> list[float]:
    low, high = min(values), max(values)
    if include_zero:
        low, high = min(low, 0.0), max(high, 0.0)
    return nice_ticks(low, high)


def bar_chart(values: Sequence[float], colours: Sequence[str], *, title: str, x_title: str, y_title: str) -> str:
    """One bar per value, from zero, in the order given (no x tick labels: the bars are queries)."""
    frame = _Frame(title, x_title, y_title, _span(list(values) or [0.0], include_zero=True))
    zero = frame.y(0.0)
    for index, (value, colour) in enumerate(zip(values, colours, strict=True)):
        left, width = frame.x_band(index, len(values))
        top, bottom = sorted((frame.y(value), zero))
        frame.parts.append(
            f'<rect x="{left + width * 0.1:.1f}" y="{top:.1f}" width="{max(width * 0.8, 0.5):.1f}" '
            f'height="{max(bottom - top, 0.5):.1f}" fill="{colour}"/>'
        )
    frame.parts.append(f'<line x1="{frame.x0}" x2="{frame.x1}" y1="{zero:.1f}" y2="{zero:.1f}" stroke="{AXIS}"/>')
    return frame.svg()


def line_chart(xs: Sequence[object], series: Sequence[Series], *, title: str, x_title: str, y_title: str) -> str:
    """Lines over categorical x values (k = 10, 20, ...), each point with its interval as a whisker."""
    values = [v for s in series for v in s.values if v is not None]
    values += [bound for s in series for i in s.intervals if i is not None for bound in i]
    frame = _Frame(title, x_title, y_title, _span(values or [0.0]))
    centres = []
    for index, x in enumerate(xs):
        left, width = frame.x_band(index, len(xs))
        centres.append(left + width / 2)
        frame.x_label(left + width / 2, str(x))
    for s in series:
        points = [(cx, frame.y(v)) for cx, v in zip(centres, s.values, strict=True) if v is not None]
        dash = ' stroke-dasharray="5 4"' if s.dashed else ""
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        frame.parts.append(f'<polyline points="{path}" fill="none" stroke="{s.colour}" stroke-width="2.5"{dash}/>')
        for (x, y), interval in zip(points, s.intervals or [None] * len(points), strict=False):
            frame.parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{s.colour}"/>')
            if interval is not None:
                low, high = frame.y(interval[0]), frame.y(interval[1])
                frame.parts.append(
                    f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{low:.1f}" y2="{high:.1f}" stroke="{s.colour}"/>'
                )
    frame.legend([(s.name, s.colour) for s in series])
    return frame.svg()


def grouped_bars(
    categories: Sequence[str], groups: Sequence[tuple[str, str, Sequence[float]]], *, title: str, y_title: str
) -> str:
    """Bars per category, one per group (name, colour, a value per category), side by side."""
    frame = _Frame(title, "", y_title, _span([v for _, _, vs in groups for v in vs] or [0.0], include_zero=True))
    zero = frame.y(0.0)
    for index, category in enumerate(categories):
        left, width = frame.x_band(index, len(categories))
        frame.x_label(left + width / 2, category)
        bar = width * 0.7 / max(len(groups), 1)
        for g, (_, colour, values) in enumerate(groups):
            top = frame.y(values[index])
            frame.parts.append(
                f'<rect x="{left + width * 0.15 + g * bar:.1f}" y="{top:.1f}" width="{bar:.1f}" '
                f'height="{max(zero - top, 0.5):.1f}" fill="{colour}"/>'
            )
    frame.legend([(name, colour) for name, colour, _ in groups])
    return frame.svg()
