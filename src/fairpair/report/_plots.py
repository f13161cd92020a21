"""The report's figures: matplotlib drawn to SVG, embedded as ``data:`` images.

No JavaScript and no fonts to fetch: text is drawn as paths
(``svg.fonttype: path``), and each SVG is embedded as a base64 ``data:`` URI
inside an ``<img>`` (so an SVG can never run a script: browsers do not run
scripts of images). Every figure carries a title and an alt text that lists
its numbers, for screen readers.

Colours are the Okabe & Ito (2008) colour-blind-safe palette ("Color
Universal Design", https://jfly.uni-koeln.de/color/), always doubled by a
marker shape or hatch so no information rests on colour alone (WCAG 2.1,
success criterion 1.4.1); heat maps use viridis (van der Walt & Smith 2015),
perceptually uniform and legible with colour-vision deficiencies.
"""

from __future__ import annotations

import base64
import io
import math
import textwrap
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fairpair.report._catalog import difference, fmt_num, fmt_pct, msg, verdict_word
from fairpair.report._text import terminal

if TYPE_CHECKING:
    from fairpair.analysis import CellMean, ComparisonResult, TwoPartyBlock

__all__ = ["Figure", "forest_plot", "scenario_plot", "group_plot", "discordant_plot", "heatmap_plots",
           "dispersion_plot", "OKABE_ITO", "VERDICT_STYLE"]

OKABE_ITO = {"orange": "#E69F00", "sky": "#56B4E9", "green": "#009E73", "yellow": "#F0E442",
             "blue": "#0072B2", "vermillion": "#D55E00", "purple": "#CC79A7", "black": "#000000"}
#: verdict -> (colour, marker)
VERDICT_STYLE = {"fail": (OKABE_ITO["vermillion"], "X"), "pass": (OKABE_ITO["green"], "o"),
                 "inconclusive": (OKABE_ITO["blue"], "s"), "insufficient design": (OKABE_ITO["purple"], "D"),
                 "insufficient labels": (OKABE_ITO["purple"], "d"),
                 "no verdict": (OKABE_ITO["black"], "x")}
_RC = {"svg.fonttype": "path", "svg.hashsalt": "fairpair", "font.family": "DejaVu Sans", "font.size": 10,
       "axes.spines.top": False, "axes.spines.right": False, "text.parse_math": False,
       "axes.titlesize": 11, "axes.titleweight": "bold"}


@dataclass(frozen=True)
class Figure:
    """One rendered figure: ``svg`` is the document, ``data_uri`` the same as ``data:image/svg+xml;base64,...``."""

    id: str
    title: str
    alt: str
    caption: str
    svg: str

    @property
    def data_uri(self) -> str:
        return "data:image/svg+xml;base64," + base64.b64encode(self.svg.encode("utf-8")).decode("ascii")


def _label(s: Any, limit: int | None = 60) -> str:
    return terminal(s, limit=limit)


def _wrapped(s: Any, width: int) -> str:
    """A row label on up to three lines of ``width`` characters (broken at spaces; cut with "…" only
    beyond that), so that a long comparison or scenario name is read whole beside its row."""
    return textwrap.fill(terminal(s), width=width, max_lines=3, placeholder=" …", break_on_hyphens=False)


def _row_height(labels: Sequence[str], per_row: float) -> float:
    """The figure's height in inches for rows labelled ``labels`` (wrapped): ``per_row`` a row, more for the
    lines of a wrapped label."""
    return per_row * len(labels) + 0.17 * sum(lab.count("\n") for lab in labels) + 1.6


def _render(fig: Any) -> str:
    import matplotlib.pyplot as plt

    buf = io.StringIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # missing glyphs (CJK, Arabic labels) are drawn as boxes
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": "fairpair"})
    plt.close(fig)
    return buf.getvalue()


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return matplotlib, plt


def forest_plot(fid: str, comps: Sequence[ComparisonResult], *, measure: str, lang: str,
                labels: dict[str, str]) -> Figure:
    """Each comparison's difference (A − B) with its CI, the margin shaded, the verdict as colour + shape.

    ``comps``: :class:`~fairpair.analysis.ComparisonResult` records; ``labels`` maps a comparison key
    (:func:`~fairpair.report._data.comparison_key`) to its row label. Binary differences are shown in
    percentage points.
    """
    matplotlib, plt = _plt()
    binary = all(c.scale == "binary" for c in comps)
    f = 100.0 if binary else 1.0
    rows = []
    for c in comps:
        d, ci = difference(c)
        rows.append((labels.get(_key(c), _key(c)), d, ci, c.margin, c.verdict))
    with matplotlib.rc_context(_RC):
        fig, ax = plt.subplots(figsize=(7.5, _row_height([_wrapped(r[0], 34) for r in rows], 0.55)))
        margins = [m for *_, m, _ in rows if isinstance(m, (int, float)) and m > 0]
        if margins:
            m = max(margins) * f
            ax.axvspan(-m, m, color="#dddddd", zorder=0, label=msg(lang, "forest.margin"))
        ax.axvline(0, color="#555555", lw=0.8, zorder=1)
        _forest_rows(ax, [(lab, d, ci, v) for lab, d, ci, _m, v in rows], f, binary, lang, lw=2.2, markersize=9,
                     label_len=34)
        title = msg(lang, "forest.title", measure=_label(measure))
        ax.set_title(title, loc="left")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False, fontsize=9)
        svg = _render(fig)
    described = "; ".join(
        f"{_label(lab, None)}: {fmt_num(d * f if d is not None else None, lang)} "
        f"[{fmt_num(ci[0] * f if ci else None, lang)}, {fmt_num(ci[1] * f if ci else None, lang)}] "
        f"{verdict_word(v, lang)}" for lab, d, ci, _m, v in rows)
    return Figure(fid, title, msg(lang, "forest.alt", measure=_label(measure), rows=described), "", svg)


def _forest_rows(ax: Any, rows: list[tuple], f: float, binary: bool, lang: str, *, lw: float, markersize: float,
                 label_len: int) -> None:
    """Draw forest-plot rows ``(label, difference, ci, verdict)`` top to bottom on ``ax`` (values times ``f``):
    the interval as a line and the difference as the verdict's colour and marker, each verdict once in the
    legend; then the row labels (wrapped at ``label_len`` characters, :func:`_wrapped`) and the x label."""
    seen = set()
    for y, (_lab, d, ci, v) in enumerate(reversed(rows)):
        colour, marker = VERDICT_STYLE.get(v, ("#777777", "D"))
        if ci is not None and None not in ci:
            ax.hlines(y, ci[0] * f, ci[1] * f, color=colour, lw=lw, zorder=2)
        if d is not None:
            ax.plot([d * f], [y], marker=marker, color=colour, markersize=markersize, zorder=3, ls="none",
                    label=verdict_word(v, lang) if v not in seen else None)
            seen.add(v)
    ax.set_yticks(range(len(rows)), [_wrapped(r[0], label_len) for r in reversed(rows)])
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_xlabel(msg(lang, "forest.x.binary" if binary else "forest.x.continuous"))


def scenario_plot(fid: str, comp: ComparisonResult, *, title: str, lang: str) -> Figure | None:
    """Forest plot of one comparison by scenario: each template's difference (A − B) with its interval, the
    verdict of its scenario-level test as colour + shape, the margin shaded and the average dashed.

    ``None`` when the comparison has no scenario breakdown. Binary differences in percentage points.
    """
    sc = comp.scenarios
    if sc is None or not sc.rows:
        return None
    matplotlib, plt = _plt()
    binary = comp.scale == "binary" or comp.value_kind == "rate"
    f = 100.0 if binary else 1.0
    rows = [(r.template + (" *" if r.outlier else ""), r.estimate, r.ci, r.verdict) for r in sc.rows]
    with matplotlib.rc_context(_RC):
        fig, ax = plt.subplots(figsize=(7.5, _row_height([_wrapped(r[0], 30) for r in rows], 0.32)))
        if isinstance(comp.margin, (int, float)) and comp.margin > 0:
            ax.axvspan(-comp.margin * f, comp.margin * f, color="#dddddd", zorder=0, label=msg(lang, "forest.margin"))
        ax.axvline(0, color="#555555", lw=0.8, zorder=1)
        if sc.average is not None:
            ax.axvline(sc.average * f, color=OKABE_ITO["black"], lw=1.0, ls="--", zorder=1,
                       label=msg(lang, "scenarios.average"))
        _forest_rows(ax, rows, f, binary, lang, lw=1.8, markersize=7, label_len=30)
        ax.set_title(_label(title, 90), loc="left")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False, fontsize=9)
        svg = _render(fig)
    described = "; ".join(
        f"{_label(lab, None)}: {fmt_num(d * f if d is not None else None, lang)} "
        f"[{fmt_num(ci[0] * f if ci and ci[0] is not None else None, lang)}, "
        f"{fmt_num(ci[1] * f if ci and ci[1] is not None else None, lang)}] {verdict_word(v, lang)}"
        for lab, d, ci, v in rows)
    return Figure(fid, title, msg(lang, "scenarios.alt", title=_label(title), rows=described), "", svg)


def _key(c: ComparisonResult) -> str:
    from fairpair.report._data import comparison_key

    return comparison_key(c)


def group_plot(fid: str, rows: Sequence[Any], *, measure: str, attribute: str, lang: str) -> Figure:
    """Share (binary, %) or mean of a measure per group, with the descriptive interval of each."""
    matplotlib, plt = _plt()
    binary = rows[0].scale == "binary"
    f = 100.0 if binary else 1.0
    with matplotlib.rc_context(_RC):
        fig, ax = plt.subplots(figsize=(7.5, 0.5 * len(rows) + 1.5))
        ys = list(range(len(rows)))[::-1]
        vals = [r.value * f for r in rows]
        ax.barh(ys, vals, color=OKABE_ITO["sky"], edgecolor=OKABE_ITO["blue"], height=0.6)
        for y, r in zip(ys, rows, strict=True):
            lo, hi = r.ci
            if not (math.isnan(lo) or math.isnan(hi)):
                ax.hlines(y, lo * f, hi * f, color="#222222", lw=1.5)
            ax.text(r.value * f, y + 0.33, f" {fmt_pct(r.value, lang) if binary else fmt_num(r.value, lang)}",
                    va="center", fontsize=8, color="#222222")
        names = [_label(r.label, 40) + (f" · {_label(r.target, 20)}" if len({x.target for x in rows}) > 1 else "")
                 for r in rows]
        ax.set_yticks(ys, names)
        ax.set_xlabel(msg(lang, "rates.y.binary" if binary else "rates.y.continuous"))
        if binary:
            ax.set_xlim(0, 100)
        title = msg(lang, "rates.title", measure=_label(measure), attribute=_label(attribute))
        ax.set_title(title, loc="left")
        svg = _render(fig)
    described = ", ".join(f"{_label(r.label)} {fmt_pct(r.value, lang) if binary else fmt_num(r.value, lang)} "
                          f"(n = {r.n})" for r in rows)
    return Figure(fid, title, msg(lang, "rates.alt", measure=_label(measure), attribute=_label(attribute),
                                  rows=described), msg(lang, "rates.note"), svg)


def discordant_plot(fid: str, comps: Sequence[ComparisonResult], *, measure: str, lang: str,
                    labels: dict[str, str], group_labels: dict[str, tuple[str, str]]) -> Figure:
    """b (yes only for A) against c (yes only for B) for each binary comparison (its ``binary`` detail)."""
    matplotlib, plt = _plt()
    rows = []
    for c in comps:
        b, cc = (c.binary.b, c.binary.c) if c.binary is not None else (None, None)
        if isinstance(b, int) and isinstance(cc, int):
            la, lb = group_labels.get(_key(c), (c.group_a, c.group_b))
            rows.append((labels.get(_key(c), _key(c)), b, cc, la, lb))
    with matplotlib.rc_context(_RC):
        fig, ax = plt.subplots(figsize=(7.5, 0.8 * len(rows) + 1.5))
        h = 0.36
        for i, (_lab, b, cc, la, lb) in enumerate(reversed(rows)):
            ax.barh(i + h / 2, b, height=h, color=OKABE_ITO["orange"], edgecolor="#222222", hatch="//",
                    label="b: " + msg(lang, "discordant.only", label="A") if i == 0 else None)
            ax.barh(i - h / 2, cc, height=h, color=OKABE_ITO["sky"], edgecolor="#222222",
                    label="c: " + msg(lang, "discordant.only", label="B") if i == 0 else None)
            ax.text(b, i + h / 2, f" b = {b} ({_label(la, 25)})", va="center", fontsize=8)
            ax.text(cc, i - h / 2, f" c = {cc} ({_label(lb, 25)})", va="center", fontsize=8)
        ax.set_yticks(range(len(rows)), [_label(r[0], 50) for r in reversed(rows)])
        ax.set_xlabel(msg(lang, "discordant.x"))
        xmax = max([1, *(max(r[1], r[2]) for r in rows)])
        ax.set_xlim(0, xmax * 1.45)
        title = msg(lang, "discordant.title", measure=_label(measure))
        ax.set_title(title, loc="left")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False, fontsize=9)
        svg = _render(fig)
    described = "; ".join(f"{_label(lab)}: b = {b}, c = {cc}" for lab, b, cc, *_ in rows)
    return Figure(fid, title, msg(lang, "discordant.alt", measure=_label(measure), rows=described),
                  msg(lang, "discordant.note"), svg)


def heatmap_plots(fid: str, block: TwoPartyBlock, *, lang: str, show_target: bool = False,
                  level: float | None = None) -> list[Figure]:
    """One SUB × RES heat map per axis (and power condition) of a two-party block, on one colour scale.

    Each cell shows its mean and, below it, its interval over scenes (``ci``) when there is one;
    ``show_target`` adds the block's target to the titles (several models in one report).
    """
    matplotlib, plt = _plt()
    import numpy as np

    measure = block.measure
    by: dict[tuple[str, Any], list[CellMean]] = {}
    for cell in block.cells:
        by.setdefault((cell.axis, cell.condition), []).append(cell)
    means = [c.mean for c in block.cells if isinstance(c.mean, (int, float))]
    vmin, vmax = (min(means), max(means)) if means else (0.0, 1.0)  # one colour scale for the whole block
    figs = []
    for k, ((axis, cond), cells) in enumerate(sorted(by.items(), key=lambda kv: (kv[0][0], str(kv[0][1])))):
        subs = list(dict.fromkeys(c.sub for c in cells))
        ress = list(dict.fromkeys(c.res for c in cells))
        grid = np.full((len(subs), len(ress)), np.nan)
        cis: dict[tuple[int, int], list[float]] = {}
        for c in cells:
            m = c.mean
            ij = subs.index(c.sub), ress.index(c.res)
            if isinstance(m, (int, float)):
                grid[ij] = m
            ci = c.ci
            if isinstance(ci, (list, tuple)) and len(ci) == 2:
                lo, hi = ci
                if isinstance(lo, (int, float)) and isinstance(hi, (int, float)):
                    cis[ij] = [lo, hi]
        with matplotlib.rc_context(_RC):
            cw, ch = (1.25, 0.7) if cis else (0.9, 0.5)
            fig, ax = plt.subplots(figsize=(max(4.5, cw * len(ress) + 2.5), max(3.0, ch * len(subs) + 1.8)))
            im = ax.imshow(grid, cmap="viridis", aspect="auto", vmin=vmin, vmax=vmax)
            ax.set_xticks(range(len(ress)), [_label(r, 18) for r in ress], rotation=35, ha="right")
            ax.set_yticks(range(len(subs)), [_label(s, 24) for s in subs])
            mid = (vmin + vmax) / 2
            for i in range(len(subs)):
                for j in range(len(ress)):
                    if np.isfinite(grid[i, j]):
                        text = fmt_num(grid[i, j], lang, 2)
                        if (i, j) in cis:
                            lo, hi = cis[i, j]
                            text += f"\n[{fmt_num(lo, lang, 2)}, {fmt_num(hi, lang, 2)}]"
                        ax.text(j, i, text, ha="center", va="center", fontsize=7 if (i, j) not in cis else 6,
                                color="white" if grid[i, j] < mid else "black")
            ax.set_xlabel(msg(lang, "heatmap.x"))
            ax.set_ylabel(msg(lang, "heatmap.y"))
            title = msg(lang, "heatmap.title", measure=_label(measure), axis=_label(axis))
            if cond is not None:
                title += f" · {_label(cond, 30)}"
            if show_target:
                title += f" · {_label(block.target, 30)}"
            ax.set_title(title, loc="left")
            fig.colorbar(im, ax=ax, shrink=0.8)
            svg = _render(fig)
        def _cell(c: CellMean) -> str:
            ci = c.ci
            tail = (f" [{fmt_num(ci[0], lang, 2)}, {fmt_num(ci[1], lang, 2)}]"
                    if isinstance(ci, (list, tuple)) and len(ci) == 2 and None not in ci else "")
            return f"{_label(c.sub)} × {_label(c.res)} = {fmt_num(c.mean, lang, 2)}{tail}"

        described = "; ".join(_cell(c) for c in cells)
        note = msg(lang, "two_party.heat_note", level=fmt_pct(level if level is not None else 0.95, lang, 0))
        figs.append(Figure(f"{fid}-{k}", title, msg(lang, "heatmap.alt", measure=_label(measure),
                                                     axis=_label(axis), rows=described), note, svg))
    return figs


def dispersion_plot(fid: str, block: TwoPartyBlock, *, lang: str, show_target: bool = False) -> Figure | None:
    """Dispersion (SD of cell means) by power condition with its interval: the noise-corrected one when recorded."""
    kept = [r for r in block.dispersion if isinstance(r.statistic, (int, float))]
    if not kept:
        return None
    # (condition, statistic, ci): lead with the noise-corrected figure when every condition has one
    corrected = all(isinstance(r.corrected, (int, float)) for r in kept)
    rows = [(r.condition, r.corrected, r.corrected_ci) if corrected else (r.condition, r.statistic, r.ci)
            for r in kept]
    matplotlib, plt = _plt()
    measure = block.measure
    with matplotlib.rc_context(_RC):
        fig, ax = plt.subplots(figsize=(7.5, 0.6 * len(rows) + 1.5))
        colours = [OKABE_ITO["vermillion"], OKABE_ITO["blue"], OKABE_ITO["green"], OKABE_ITO["purple"]]
        markers = ["o", "s", "D", "^"]
        for y, (_cond, stat, ci) in enumerate(reversed(rows)):
            ci = ci or [None, None]
            colour, marker = colours[y % 4], markers[y % 4]
            if all(isinstance(v, (int, float)) for v in ci):
                ax.hlines(y, ci[0], ci[1], color=colour, lw=2.2)
            ax.plot([stat], [y], marker=marker, color=colour, markersize=9, ls="none")
        ax.set_yticks(range(len(rows)), [_label(r[0] or "—", 30) for r in reversed(rows)])
        ax.set_ylim(-0.7, len(rows) - 0.3)
        ax.set_xlabel(msg(lang, "dispersion.x"))
        title = msg(lang, "dispersion.title", measure=_label(measure))
        if show_target:
            title += f" · {_label(block.target, 30)}"
        ax.set_title(title, loc="left")
        svg = _render(fig)
    described = "; ".join(
        f"{_label(cond or '—')}: {fmt_num(stat, lang, 3)} "
        f"[{fmt_num((ci or [None, None])[0], lang, 3)}, {fmt_num((ci or [None, None])[1], lang, 3)}]"
        for cond, stat, ci in rows)
    return Figure(fid, title, msg(lang, "dispersion.alt", measure=_label(measure), rows=described), "", svg)


def group_figures(rows: Iterable[Any], lang: str, start: int = 0) -> list[Figure]:
    """One :func:`group_plot` per (measure, attribute) present in ``rows``."""
    by: dict[tuple[str, str], list[Any]] = {}
    for r in rows:
        by.setdefault((r.measure, r.attribute), []).append(r)
    return [group_plot(f"groups-{start + i}", rs, measure=m, attribute=a, lang=lang)
            for i, ((m, a), rs) in enumerate(by.items())]
