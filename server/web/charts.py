"""Bar charts as inline SVG, drawn on the server: no script, nothing fetched, so they work
under the pages' ``default-src 'none'`` policy.

Readable without colour: every bar carries its value as text and its label in words, bars
are filled with a hatch pattern as well as a colour, and each chart comes with the same
numbers as a table (in a ``<details>``) for screen readers and copying. Every bar is a
``<g class="bar">`` with ``data-label`` and ``data-value``, so tests read exactly what is drawn.
All text passes through ``e()``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from server.web.html import e

WIDTH = 880
_PATTERN = (
    '<defs><pattern id="{id}" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
    '<rect width="6" height="6" fill="#c7d7fe"/><line x1="0" y1="0" x2="0" y2="6" stroke="#1d4ed8" stroke-width="2"/>'
    "</pattern></defs>"
)


@dataclass(frozen=True)
class Bar:
    """One bar: what it is, its value, how the value is written, and where it links (if anywhere)."""

    label: str
    value: float
    text: str
    href: str | None = None
    note: str = ""  # extra words for the tooltip and the table, e.g. "12 of 40 runs"


def _bar_group(bar: Bar, shapes: str) -> str:
    title = f"{bar.label}: {bar.text}" + (f" ({bar.note})" if bar.note else "")
    inner = f"<title>{e(title)}</title>{shapes}"
    if bar.href:
        inner = f'<a href="{e(bar.href)}" aria-label="{e(title)}">{inner}</a>'
    return f'<g class="bar" data-label="{e(bar.label)}" data-value="{e(_plain(bar.value))}">{inner}</g>'


def horizontal_bars(
    chart_id: str, caption: str, bars: Sequence[Bar], *, max_value: float | None = None, value_head: str = "Value"
) -> str:
    """One row per bar: the label in words above, the bar below with its value at its end.
    Suits long labels (check names, mistake titles)."""
    if not bars:
        return _empty(chart_id, caption)
    top = max_value if max_value is not None else max((b.value for b in bars), default=0) or 1
    row, bar_h, track = 46, 18, WIDTH - 120
    height = row * len(bars) + 8
    parts = []
    for i, bar in enumerate(bars):
        y = 4 + i * row
        length = 0 if top <= 0 else max(0.0, min(1.0, bar.value / top)) * track
        label = bar.label if len(bar.label) <= 120 else bar.label[:119] + "…"
        shapes = (
            f'<text x="0" y="{y + 14}" class="label">{e(label)}</text>'
            f'<rect x="0" y="{y + 20}" width="{track}" height="{bar_h}" fill="#f3f5f9"/>'
            f'<rect x="0" y="{y + 20}" width="{length:.1f}" height="{bar_h}" fill="url(#{chart_id}-hatch)" stroke="#1d4ed8"/>'
            f'<text x="{length + 6:.1f}" y="{y + 34}" class="value">{e(bar.text)}</text>'
        )
        parts.append(_bar_group(bar, shapes))
    svg = (
        f'<svg id="{e(chart_id)}" class="chart" role="img" aria-labelledby="{e(chart_id)}-title" '
        f'viewBox="0 0 {WIDTH} {height}" width="100%" preserveAspectRatio="xMinYMin meet">'
        f'<title id="{e(chart_id)}-title">{e(caption)}</title>{_PATTERN.format(id=e(chart_id) + "-hatch")}'
        f"{''.join(parts)}</svg>"
    )
    return _figure(chart_id, caption, svg, bars, value_head)


def columns(
    chart_id: str, caption: str, bars: Sequence[Bar], *, value_head: str = "Value", label_every: int = 1
) -> str:
    """Vertical columns with their value above and their label below (histograms, days).
    With many columns, ``label_every`` writes every n-th label under the axis (all are in
    each column's tooltip and in the table)."""
    if not bars:
        return _empty(chart_id, caption)
    top = max((b.value for b in bars), default=0) or 1
    plot_h, base = 180, 210
    slot = WIDTH / len(bars)
    width = max(2.0, min(slot * 0.72, 64.0))  # a lone day stays a column, not a wall
    parts = []
    for i, bar in enumerate(bars):
        x = i * slot + (slot - width) / 2
        h = max(0.0, bar.value / top) * plot_h
        cx = x + width / 2
        label = (
            f'<text x="{cx:.1f}" y="{base + 18}" text-anchor="middle" class="label">{e(bar.label)}</text>'
            if i % label_every == 0
            else ""
        )
        value = (
            f'<text x="{cx:.1f}" y="{base - h - 5:.1f}" text-anchor="middle" class="value">{e(bar.text)}</text>'
            if len(bars) <= 31 or bar.value == top
            else ""
        )
        shapes = (
            f'<rect x="{x:.1f}" y="{base - h:.1f}" width="{width:.1f}" height="{h:.1f}" '
            f'fill="url(#{chart_id}-hatch)" stroke="#1d4ed8"/>{value}{label}'
        )
        parts.append(_bar_group(bar, shapes))
    svg = (
        f'<svg id="{e(chart_id)}" class="chart" role="img" aria-labelledby="{e(chart_id)}-title" '
        f'viewBox="0 0 {WIDTH} {base + 28}" width="100%" preserveAspectRatio="xMinYMin meet">'
        f'<title id="{e(chart_id)}-title">{e(caption)}</title>{_PATTERN.format(id=e(chart_id) + "-hatch")}'
        f'<line x1="0" y1="{base}" x2="{WIDTH}" y2="{base}" stroke="#667085"/>{"".join(parts)}</svg>'
    )
    return _figure(chart_id, caption, svg, bars, value_head)


def _figure(chart_id: str, caption: str, svg: str, bars: Sequence[Bar], value_head: str) -> str:
    rows = "".join(
        f'<tr><td>{_linked(b)}</td><td class="num">{e(b.text)}</td><td class="muted">{e(b.note)}</td></tr>'
        for b in bars
    )
    table = (
        f'<details><summary>The numbers as a table</summary><table class="data" id="{e(chart_id)}-data">'
        f'<thead><tr><th scope="col">Label</th><th scope="col" class="num">{e(value_head)}</th><th scope="col">Detail</th></tr></thead>'
        f"<tbody>{rows}</tbody></table></details>"
    )
    return f'<figure class="chart-box"><figcaption>{e(caption)}</figcaption>{svg}{table}</figure>'


def _linked(bar: Bar) -> str:
    return f'<a href="{e(bar.href)}">{e(bar.label)}</a>' if bar.href else e(bar.label)


def _empty(chart_id: str, caption: str) -> str:
    return (
        f'<figure class="chart-box" id="{e(chart_id)}"><figcaption>{e(caption)}</figcaption>'
        '<p class="muted">Nothing to draw yet.</p></figure>'
    )


def _plain(value: float) -> str:
    """1.0 -> "1", 0.25 -> "0.25": the same spelling tests compare against."""
    return f"{value:.6f}".rstrip("0").rstrip(".")
