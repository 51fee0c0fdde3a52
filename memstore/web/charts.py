"""Charts drawn on the server as inline SVG: no script, no outside file, nothing for the page's
Content-Security-Policy to allow. Every label goes through `escape`; numbers are formatted here.
"""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup, escape

WIDTH, HEIGHT, MARGIN = 560, 180, 32
# One colour per series, in order (readable on white, distinct in greyscale too).
COLOURS = ("#1f5f99", "#c0392b", "#7d8f2b", "#8e44ad", "#d68910", "#5d6d7e")


def _frame(title: str, body: list[str], legend: Sequence[str]) -> Markup:
    keys = "".join(
        f'<rect x="{MARGIN + 110 * i}" y="{HEIGHT - 12}" width="10" height="10" fill="{COLOURS[i % len(COLOURS)]}"/>'
        f'<text x="{MARGIN + 14 + 110 * i}" y="{HEIGHT - 3}" font-size="11">{escape(name)}</text>'
        for i, name in enumerate(legend)
    )
    return Markup(
        f'<svg class="chart" role="img" aria-label="{escape(title)}" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="{WIDTH}" height="{HEIGHT}" xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>'
        f'{"".join(body)}{keys}</svg>'
    )


def _axis(top: float) -> list[str]:
    bottom = HEIGHT - MARGIN
    return [
        f'<line x1="{MARGIN}" y1="{bottom}" x2="{WIDTH - 8}" y2="{bottom}" stroke="#999"/>',
        f'<line x1="{MARGIN}" y1="8" x2="{MARGIN}" y2="{bottom}" stroke="#999"/>',
        f'<text x="2" y="16" font-size="10">{top:,.0f}</text>',
        f'<text x="2" y="{bottom}" font-size="10">0</text>',
    ]


def line_chart(title: str, series: dict[str, Sequence[float]]) -> Markup:
    """One line per series over the same points (e.g. runs, oldest first)."""
    points = max((len(values) for values in series.values()), default=0)
    top = max((max(values, default=0) for values in series.values()), default=0) or 1
    span_x, span_y = WIDTH - MARGIN - 16, HEIGHT - MARGIN - 16
    body = _axis(top)
    for i, values in enumerate(series.values()):
        step = span_x / max(points - 1, 1)
        path = " ".join(f"{MARGIN + 4 + step * n:.1f},{HEIGHT - MARGIN - span_y * value / top:.1f}" for n, value in enumerate(values))
        body.append(f'<polyline fill="none" stroke="{COLOURS[i % len(COLOURS)]}" stroke-width="2" points="{path}"/>')
    return _frame(title, body, list(series))


def stacked_bars(title: str, series: dict[str, Sequence[float]]) -> Markup:
    """One bar per point, its series stacked (e.g. what each run archived, by reason)."""
    points = max((len(values) for values in series.values()), default=0)
    totals = [sum(values[n] for values in series.values() if n < len(values)) for n in range(points)]
    top = max(totals, default=0) or 1
    span_y = HEIGHT - MARGIN - 16
    width = (WIDTH - MARGIN - 16) / max(points, 1)
    body = _axis(top)
    for n in range(points):
        base = HEIGHT - MARGIN
        for i, values in enumerate(series.values()):
            height = span_y * (values[n] if n < len(values) else 0) / top
            if height:
                x = MARGIN + 4 + width * n
                body.append(f'<rect x="{x:.1f}" y="{base - height:.1f}" width="{max(width - 2, 1):.1f}" height="{height:.1f}" fill="{COLOURS[i % len(COLOURS)]}"/>')
                base -= height
    return _frame(title, body, list(series))


def bars(title: str, labels: Sequence[str], values: Sequence[float]) -> Markup:
    """One labelled bar per value (e.g. the staleness histogram)."""
    top = max(values, default=0) or 1
    span_y = HEIGHT - MARGIN - 16
    width = (WIDTH - MARGIN - 16) / max(len(values), 1)
    body = _axis(top)
    for n, (label, value) in enumerate(zip(labels, values, strict=True)):
        height = span_y * value / top
        x = MARGIN + 4 + width * n
        body.append(f'<rect x="{x:.1f}" y="{HEIGHT - MARGIN - height:.1f}" width="{width - 6:.1f}" height="{height:.1f}" fill="{COLOURS[0]}"/>')
        body.append(f'<text x="{x:.1f}" y="{HEIGHT - MARGIN + 12}" font-size="10">{escape(label)} ({value:,.0f})</text>')
    return _frame(title, body, [])


__all__ = ["bars", "line_chart", "stacked_bars"]
