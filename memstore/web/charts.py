"""Charts drawn on the server as inline SVG: no script, no outside file, nothing for the page's
Content-Security-Policy to allow. Every label goes through `escape`; numbers are formatted here.

Each chart says in words what it shows: a visible title, both axes labelled, the runs named on the
x axis (`#N`), and undone runs drawn faded with "undone" in their label, so a reader never takes a
run that was reversed for one that holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

WIDTH, HEIGHT = 560, 230
LEFT, RIGHT, TOP, BOTTOM = 56, 12, 30, 58  # room for the y labels, the title, the x labels and legend
# One colour per series, in order (readable on white, distinct in greyscale too).
COLOURS = ("#1f5f99", "#c0392b", "#7d8f2b", "#8e44ad", "#d68910", "#5d6d7e")
# At most this many x labels are written; the others are skipped evenly (each point keeps its <title>).
X_LABELS = 12


@dataclass
class Point:
    """One point of the x axis: a run, shown as `label` (e.g. "#12"), faded when `undone`."""

    label: str
    undone: bool = False


def _legend(legend: Sequence[str], top: int) -> tuple[str, int]:
    """The legend's keys from `top`, wrapped to the chart's width; and the height it takes."""
    keys, x, y = [], LEFT, top
    for i, name in enumerate(legend):
        width = 22 + 6 * len(name)  # about 6 px a character at 11 px
        if x + width > WIDTH and x > LEFT:
            x, y = LEFT, y + 15
        keys.append(f'<rect x="{x}" y="{y}" width="10" height="10" fill="{COLOURS[i % len(COLOURS)]}"/>'
                    f'<text x="{x + 14}" y="{y + 9}" font-size="11">{escape(name)}</text>')  # fmt: skip
        x += width
    return "".join(keys), (y - top + 15 if legend else 0)


def _frame(title: str, body: list[str], legend: Sequence[str], *, height: int = HEIGHT) -> Markup:
    keys, extra = _legend(legend, height - 13)
    height += max(extra - 15, 0)
    return Markup(
        f'<svg class="chart" role="img" aria-label="{escape(title)}" viewBox="0 0 {WIDTH} {height}" '
        f'width="{WIDTH}" height="{height}" xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>'
        f'<text x="{WIDTH / 2:.0f}" y="16" font-size="13" font-weight="bold" text-anchor="middle">{escape(title)}</text>'
        f'{"".join(body)}{keys}</svg>'
    )


def _axes(top: float, x_label: str, y_label: str) -> list[str]:
    bottom = HEIGHT - BOTTOM
    middle = (TOP + bottom) / 2
    return [
        f'<line x1="{LEFT}" y1="{bottom}" x2="{WIDTH - RIGHT}" y2="{bottom}" stroke="#999"/>',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{bottom}" stroke="#999"/>',
        f'<text x="{LEFT - 4}" y="{TOP + 4}" font-size="10" text-anchor="end">{top:,.0f}</text>',
        f'<text x="{LEFT - 4}" y="{bottom}" font-size="10" text-anchor="end">0</text>',
        f'<text x="12" y="{middle:.0f}" font-size="11" text-anchor="middle" transform="rotate(-90 12 {middle:.0f})">{escape(y_label)}</text>',
        f'<text x="{(LEFT + WIDTH - RIGHT) / 2:.0f}" y="{bottom + 30}" font-size="11" text-anchor="middle">{escape(x_label)}</text>',
    ]


def _x_labels(points: Sequence[Point], xs: Sequence[float]) -> list[str]:
    """The runs' names under the x axis, thinned to X_LABELS evenly (the last one always shown)."""
    if not points:
        return []
    every = max(1, -(-len(points) // X_LABELS))
    shown = {n for n in range(0, len(points), every)} | {len(points) - 1}
    y = HEIGHT - BOTTOM + 13
    faded = ' fill-opacity="0.5"'
    return [
        f'<text x="{xs[n]:.1f}" y="{y}" font-size="10" text-anchor="middle"{faded if points[n].undone else ""}>{escape(points[n].label)}</text>'
        for n in sorted(shown)
    ]


def _empty(body: list[str], what: str) -> None:
    body.append(f'<text x="{(LEFT + WIDTH - RIGHT) / 2:.0f}" y="{(TOP + HEIGHT - BOTTOM) / 2:.0f}" font-size="12" '
                f'text-anchor="middle" fill="#555">{escape(what)}</text>')  # fmt: skip


def line_chart(title: str, points: Sequence[Point], series: dict[str, Sequence[float | None]], *, x_label: str, y_label: str) -> Markup:
    """One line per series over the same points; a series' None is a point it does not have (its
    line joins the points it has), so a run of another kind never drags a line to zero. An undone
    run's markers are hollow."""
    top = max((value for values in series.values() for value in values if value is not None), default=0) or 1
    span_x, span_y = WIDTH - LEFT - RIGHT - 16, HEIGHT - TOP - BOTTOM
    step = span_x / max(len(points) - 1, 1)
    xs = [LEFT + 8 + step * n for n in range(len(points))]
    body = _axes(top, x_label, y_label)
    for i, (name, values) in enumerate(series.items()):
        colour = COLOURS[i % len(COLOURS)]
        placed = [(xs[n], TOP + span_y - span_y * value / top, n, value) for n, value in enumerate(values) if value is not None]
        if len(placed) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y, _, _ in placed)
            body.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{path}"/>')
        for x, y, n, value in placed:
            fill = "#fff" if points[n].undone else colour
            state = " (undone)" if points[n].undone else ""
            body.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{fill}" stroke="{colour}"><title>{escape(name)} at run '
                        f"{escape(points[n].label)}{state}: {value:,.0f}</title></circle>")  # fmt: skip
    if not any(value is not None for values in series.values() for value in values):
        _empty(body, "no runs to show yet")
    return _frame(title, body + _x_labels(points, xs), list(series))


def stacked_bars(title: str, points: Sequence[Point], series: dict[str, Sequence[float]], *, x_label: str, y_label: str) -> Markup:
    """One bar per point, its series stacked (e.g. what each run archived, by reason); an undone
    run's bar is faded."""
    totals = [sum(values[n] for values in series.values()) for n in range(len(points))]
    top = max(totals, default=0) or 1
    span_y = HEIGHT - TOP - BOTTOM
    width = (WIDTH - LEFT - RIGHT - 8) / max(len(points), 1)
    xs = [LEFT + 4 + width * n + width / 2 for n in range(len(points))]
    body = _axes(top, x_label, y_label)
    for n, point in enumerate(points):
        base = HEIGHT - BOTTOM
        opacity = ' fill-opacity="0.3"' if point.undone else ""
        for i, (name, values) in enumerate(series.items()):
            height = span_y * values[n] / top
            if height:
                state = " (undone)" if point.undone else ""
                body.append(
                    f'<rect x="{xs[n] - width / 2 + 1:.1f}" y="{base - height:.1f}" width="{max(width - 2, 1):.1f}" height="{height:.1f}" '
                    f'fill="{COLOURS[i % len(COLOURS)]}"{opacity}><title>run {escape(point.label)}{state}: {values[n]:,.0f} {escape(name)}</title></rect>'
                )  # fmt: skip
                base -= height
    if not any(totals):
        _empty(body, "no run archived anything yet")
    return _frame(title, body + _x_labels(points, xs), list(series))


def bars(title: str, labels: Sequence[str], values: Sequence[float], *, x_label: str) -> Markup:
    """One horizontal bar per labelled value (e.g. what a report finds), the label on its left and
    the number at its end, so no two labels ever overlap."""
    row, label_width = 22, 190
    height = TOP + row * len(values) + 34
    top = max(values, default=0) or 1
    span = WIDTH - label_width - RIGHT - 60
    body = []
    for n, (label, value) in enumerate(zip(labels, values, strict=True)):
        y = TOP + row * n
        length = span * value / top
        body.append(f'<text x="{label_width - 6}" y="{y + 14}" font-size="11" text-anchor="end">{escape(label)}</text>')
        body.append(f'<rect x="{label_width}" y="{y + 3}" width="{length:.1f}" height="{row - 6}" fill="{COLOURS[0]}"/>')
        body.append(f'<text x="{label_width + length + 4:.1f}" y="{y + 14}" font-size="11">{value:,.0f}</text>')
    bottom = TOP + row * len(values)
    body.append(f'<line x1="{label_width}" y1="{TOP}" x2="{label_width}" y2="{bottom}" stroke="#999"/>')
    body.append(f'<text x="{label_width + span / 2:.0f}" y="{bottom + 18}" font-size="11" text-anchor="middle">{escape(x_label)}</text>')
    return _frame(title, body, [], height=height)


__all__ = ["Point", "bars", "line_chart", "stacked_bars"]
