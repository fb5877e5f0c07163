"""Figures: the non-interactive backend, seed bands on log-log axes, the shared axes tail,
saving PNGs."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["band_plot", "finish_axes", "save_figures", "use_agg"]


def use_agg() -> None:
    """Selects matplotlib's non-interactive Agg backend (for writing PNGs from the CLI)."""
    import matplotlib

    matplotlib.use("Agg")


def band_plot(ax, ks, values, label: str | None = None, *, color=None, lower: float = 10.0,
              upper: float = 90.0, alpha: float = 0.25, **line_kwargs):
    """Draws the median over seeds and a ``lower``-``upper`` percentile band, on log-log axes.

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
      The median ``Line2D``.
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
        ax.fill_between(ks, lo, hi, color=line.get_color(), alpha=alpha, linewidth=0)
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
    calls the figure's ``tight_layout``. Returns ``ax.figure``.
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
    if legend is True:
        ax.legend()
    elif legend is not None and legend is not False:
        ax.legend(fontsize=legend)
    ax.figure.tight_layout()
    return ax.figure
