"""Figures: the non-interactive backend, seed bands on log-log axes, the shared axes tail,
saving PNGs, and the readability check every experiment's figures pass (:func:`check_figure`)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "assert_figures_readable",
    "band_plot",
    "check_figure",
    "check_figures",
    "check_quick_figures",
    "finish_axes",
    "save_figures",
    "use_agg",
]


def use_agg() -> None:
    """Selects matplotlib's non-interactive Agg backend (for writing PNGs from the CLI)."""
    import matplotlib

    matplotlib.use("Agg")


def band_plot(ax, ks, values, label: str | None = None, *, color=None, lower: float = 10.0,
              upper: float = 90.0, alpha: float = 0.25, **line_kwargs):
    """Draws the median over seeds and a ``lower``-``upper`` percentile band, on log-log axes.

    The band carries its own legend label, ``"<label> (median, <lower>-<upper>% of <n> seeds)"``,
    so a legend says what the shading is; :func:`finish_axes` merges the median line and its
    band into that one legend entry.

    Args:
      ax: a matplotlib ``Axes``.
      ks: x values (iterations), shape ``(n,)``; must be positive for the log scale.
      values: shape ``(seeds, n)`` (or ``(n,)`` for one seed, drawn without a band).
      label: legend label of the median line.
      color: line and band colour (default: the axes' next colour).
      lower, upper: percentiles of the band (default 10 and 90).
      alpha: band opacity.
      **line_kwargs: passed to ``ax.plot`` for the median.

    Returns:
      The median ``Line2D`` (the band, when drawn, is ``line.band``).
    """
    ks = np.asarray(ks)
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[None]
    if values.ndim != 2 or values.shape[1] != ks.shape[0]:
        raise ValueError(
            f"values must have shape (seeds, {ks.shape[0]}) to match ks, got {values.shape}"
        )
    median = np.nanmedian(values, axis=0)
    (line,) = ax.plot(ks, median, label=label, color=color, **line_kwargs)
    if values.shape[0] > 1:
        lo, hi = np.nanpercentile(values, [lower, upper], axis=0)
        what = f"median, {lower:g}-{upper:g}% of {values.shape[0]} seeds"
        band = ax.fill_between(ks, lo, hi, color=line.get_color(), alpha=alpha, linewidth=0,
                               label=f"{label} ({what})" if label else f"band: {what}")
        band.median_line = line
        line.band = band
    ax.set_xscale("log")
    ax.set_yscale("log")
    return line


def save_figures(figures: Mapping[str, Any], out_dir, *, dpi: int = 120,
                 close: bool = True) -> list[Path]:
    """Saves each figure as ``out_dir/<name>.png``; returns the paths."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, fig in figures.items():
        path = out_dir / f"{name}.png"
        fig.savefig(path, dpi=dpi, bbox_inches="tight")
        paths.append(path)
        if close:
            import matplotlib.pyplot as plt

            plt.close(fig)
    return paths


def finish_axes(ax, *, xlabel: str | None = None, ylabel: str | None = None,
                title: str | None = None, legend: float | bool | None = 8,
                xscale: str | None = None, yscale: str | None = None):
    """Labels an experiment's axes and lays out its figure: the tail every ``plot`` shares.

    Sets the scales (``"log"``, ``"linear"`` ...), labels and title that are given, draws the
    legend with that font size (``True``: matplotlib's default size; ``None``: no legend) and
    calls the figure's ``tight_layout``. A median line and its seed band drawn by
    :func:`band_plot` share one legend entry (the line over the shading) with the band's label.
    Returns ``ax.figure``.
    """
    if xscale is not None:
        ax.set_xscale(xscale)
    if yscale is not None:
        ax.set_yscale(yscale)
    if xlabel is not None:
        ax.set_xlabel(xlabel)
    if ylabel is not None:
        ax.set_ylabel(ylabel)
    if title is not None:
        ax.set_title(title)
    if legend is not None and legend is not False:
        handles, labels = _merged_band_handles(ax)
        kwargs = {} if legend is True else {"fontsize": legend}
        ax.legend(handles, labels, **kwargs)
    ax.figure.tight_layout()
    return ax.figure


def _merged_band_handles(ax):
    """The axes' legend handles and labels, with each :func:`band_plot` median line folded into
    its band's entry as a ``(band, line)`` tuple (drawn as the line over the shading)."""
    handles, labels = ax.get_legend_handles_labels()
    folded = {id(getattr(h, "median_line", None)) for h in handles}
    out_h, out_l = [], []
    for h, lab in zip(handles, labels, strict=True):
        if id(h) in folded:
            continue
        line = getattr(h, "median_line", None)
        out_h.append((h, line) if line is not None else h)
        out_l.append(lab)
    return out_h, out_l


# ------------------------------------------------------------------------------ readability

#: how far (a factor) a log y-axis may reach beyond the smallest / largest positive value drawn
LOG_Y_SLACK = 100.0
#: the least fraction of a linear y-axis that the drawn data must span
LINEAR_Y_FILL = 0.25


def _has_data(artist) -> bool:
    from matplotlib.collections import Collection
    from matplotlib.lines import Line2D

    if not artist.get_visible():
        return False
    if isinstance(artist, Line2D):
        y = np.asarray(artist.get_ydata(), dtype=float)
        return bool(np.isfinite(y).any())
    if isinstance(artist, Collection):
        return any(len(p.vertices) for p in artist.get_paths()) or len(artist.get_offsets()) > 0
    return False


def _data_y(ax) -> np.ndarray:
    """Every finite y value drawn in data coordinates (lines, bands, scatter points); lines in
    axes coordinates along y (``axvline``) are left out."""
    from matplotlib.collections import Collection
    from matplotlib.lines import Line2D

    ys = []
    for artist in [*ax.lines, *ax.collections]:
        if not artist.get_visible():
            continue
        _, y_is_data = artist.get_transform().contains_branch_seperately(ax.transData)
        if not y_is_data:
            continue
        if isinstance(artist, Line2D):
            ys.append(np.asarray(artist.get_ydata(), dtype=float).ravel())
        elif isinstance(artist, Collection):
            for path in artist.get_paths():
                ys.append(np.asarray(path.vertices, dtype=float)[:, 1])
            offsets = np.asarray(artist.get_offsets(), dtype=float)
            if offsets.size:
                ys.append(offsets.reshape(-1, 2)[:, 1])
    y = np.concatenate(ys) if ys else np.zeros(0)
    return y[np.isfinite(y)]


def _overlapping_ticks(axis, renderer) -> list[str]:
    """Labels of ticks inside the view whose text boxes overlap a neighbour's (major and minor
    labels together, as drawn)."""
    lo, hi = sorted(axis.get_view_interval())
    boxes = []
    for tick in [*axis.get_major_ticks(), *axis.get_minor_ticks()]:
        label = tick.label1
        loc = tick.get_loc()
        if loc is None or not (label.get_visible() and label.get_text().strip()):
            continue
        if not lo - 1e-9 * abs(hi - lo) <= loc <= hi + 1e-9 * abs(hi - lo):
            continue
        boxes.append((label.get_text(), label.get_window_extent(renderer)))
    bad = []
    for i, (ti, bi) in enumerate(boxes):
        for tj, bj in boxes[i + 1:]:
            dx = min(bi.x1, bj.x1) - max(bi.x0, bj.x0)
            dy = min(bi.y1, bj.y1) - max(bi.y0, bj.y0)
            if dx > 1.0 and dy > 1.0:  # more than a pixel of shared area
                bad.append(f"{ti!r}/{tj!r}")
    return bad


def check_figure(fig) -> list[str]:
    """The readability problems of a matplotlib figure (an empty list when there are none).

    For every axes that draws data (a line or a collection with a finite point):

    * a title (``ax.set_title``, or the figure's ``suptitle``) and non-empty x and y labels;
    * a legend (on the axes or the figure) once more than one line or collection is drawn;
    * every shaded band (a ``PolyCollection``, as ``fill_between`` makes) has a label that does
      not start with ``"_"``, shown in the legend, so the legend says what the band is;
    * the y-range fits the data: on a log axis the lower limit is at most
      :data:`LOG_Y_SLACK` times below the smallest positive value drawn and the upper limit at
      most that factor above the largest; on a linear axis the drawn values (clipped to the
      limits) span at least :data:`LINEAR_Y_FILL` of the range;
    * no two tick labels of an axis overlap (their text boxes as rendered, major and minor);
    * two lines one of which lies on the other (every point within 3 pixels) differ in marker
      or line style, not only in colour, so a series drawn over another stays visible.

    Units in labels cannot be checked mechanically; the axes label is required. Colorbar axes
    and axes without data are skipped. The figure is drawn once (Agg) to measure tick labels.
    """
    from matplotlib.collections import PolyCollection

    problems = []
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    suptitle = fig._suptitle.get_text().strip() if fig._suptitle is not None else ""
    fig_legend_texts = {t.get_text() for leg in fig.legends for t in leg.get_texts()}
    for n, ax in enumerate(fig.axes):
        if not ax.get_visible() or hasattr(ax, "_colorbar"):
            continue
        artists = [a for a in [*ax.lines, *ax.collections] if _has_data(a)]
        if not artists:
            continue
        title = next((ax.get_title(loc).strip() for loc in ("center", "left", "right")
                      if ax.get_title(loc).strip()), "")
        where = f"axes {n} ({title or 'untitled'!r})"
        if not (title or suptitle):
            problems.append(f"{where}: no title (and no figure suptitle)")
        if not ax.get_xlabel().strip():
            problems.append(f"{where}: no x label")
        if not ax.get_ylabel().strip():
            problems.append(f"{where}: no y label")
        legend = ax.get_legend()
        legend_texts = fig_legend_texts | (
            {t.get_text() for t in legend.get_texts()} if legend is not None else set())
        if len(artists) > 1 and legend is None and not fig.legends:
            problems.append(f"{where}: {len(artists)} lines/collections but no legend")
        for band in (a for a in artists if isinstance(a, PolyCollection)):
            label = str(band.get_label())
            if label.startswith("_") or not label.strip():
                problems.append(f"{where}: a shaded band has no label saying what it is")
            elif legend_texts and label not in legend_texts:
                problems.append(f"{where}: the band {label!r} is not in the legend")
        problems += [f"{where}: {p}" for p in _y_range_problems(ax)]
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            bad = _overlapping_ticks(axis, renderer)
            if bad:
                problems.append(f"{where}: overlapping {name} tick labels {', '.join(bad[:4])}")
        problems += [f"{where}: {p}" for p in _hidden_series(ax)]
    return problems


def _y_range_problems(ax) -> list[str]:
    y = _data_y(ax)
    lo, hi = sorted(ax.get_ylim())
    if ax.get_yscale() == "log":
        y = y[y > 0]
        if not y.size:
            return []
        out = []
        if lo < y.min() / LOG_Y_SLACK:
            out.append(f"y-axis reaches down to {lo:.3g}, far below the data (min {y.min():.3g})")
        if hi > y.max() * LOG_Y_SLACK:
            out.append(f"y-axis reaches up to {hi:.3g}, far above the data (max {y.max():.3g})")
        return out
    if ax.get_yscale() != "linear" or not y.size or hi <= lo:
        return []
    span = min(y.max(), hi) - max(y.min(), lo)
    if y.max() > y.min() and span < LINEAR_Y_FILL * (hi - lo):
        return [f"the data span [{y.min():.3g}, {y.max():.3g}] fills under "
                f"{LINEAR_Y_FILL:.0%} of the y-range [{lo:.3g}, {hi:.3g}]"]
    return []


def _hidden_series(ax, pixels: float = 3.0) -> list[str]:
    """Pairs of lines drawn with the same marker and line style where every point of one lies
    within ``pixels`` of a point of the other (the later one hides the earlier, whatever the
    colours). Lines of the same length are compared point by point, short ones (up to 64
    points, marker series) against every point of the other line."""
    lines = [ln for ln in ax.lines if _has_data(ln)]
    pts = []
    for ln in lines:
        xy = np.column_stack([np.asarray(v, dtype=float) for v in ln.get_data()])
        with np.errstate(all="ignore"):
            xy = xy[np.isfinite(ln.get_transform().transform(xy)).all(axis=1)]
            pts.append(ln.get_transform().transform(xy) if xy.size else xy.reshape(0, 2))
    out = []
    for i, a in enumerate(lines):
        for j in range(i + 1, len(lines)):
            b = lines[j]
            if (a.get_marker(), a.get_linestyle()) != (b.get_marker(), b.get_linestyle()):
                continue
            pa, pb = pts[i], pts[j]
            if not (len(pa) and len(pb)):
                continue
            if len(pa) == len(pb):
                covered = np.all(np.hypot(*(pa - pb).T) <= pixels)
            elif min(len(pa), len(pb)) <= 64:
                small, big = (pa, pb) if len(pa) < len(pb) else (pb, pa)
                dist = np.hypot(small[:, None, 0] - big[None, :, 0],
                                small[:, None, 1] - big[None, :, 1])
                covered = np.all(dist.min(axis=1) <= pixels)
            else:
                covered = False
            if covered:
                na, nb = (repr(ln.get_label()) if not str(ln.get_label()).startswith("_")
                          else f"unlabelled line {ax.lines.index(ln)}" for ln in (a, b))
                out.append(f"lines {na} and {nb} lie on top of each other with the same marker "
                           "and line style")
    return out


def assert_figures_readable(figures: Mapping[str, Any]) -> None:
    """Raises ``AssertionError`` listing every :func:`check_figure` problem of every figure
    (``{name: figure}``, as an experiment's ``plot`` returns), each line naming the figure and
    the axes."""
    problems = [f"{name}: {p}" for name, fig in figures.items() for p in check_figure(fig)]
    if problems:
        raise AssertionError("unreadable figures:\n  " + "\n  ".join(problems))


def check_figures(exp, results, cfg, *, names=None) -> None:
    """``exp.plot(results, cfg)`` on the Agg backend returns the figures ``names`` (a set,
    when given) and they pass :func:`assert_figures_readable`; the figures are closed
    afterwards."""
    import matplotlib.pyplot as plt

    use_agg()
    figures = exp.plot(results, cfg)
    try:
        if names is not None:
            assert set(figures) == set(names), (f"figures {sorted(figures)}, expected "
                                                f"{sorted(names)}")
        assert_figures_readable(figures)
    finally:
        for fig in figures.values():
            plt.close(fig)


def check_quick_figures(exp, results, *, names=None) -> None:
    """The per-paper figures test: :func:`check_figures` at ``exp.QUICK``."""
    check_figures(exp, results, exp.QUICK, names=names)
