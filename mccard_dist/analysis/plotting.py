"""Shared pieces of the figures: a pyplot-free figure, log-axis ticks, the psi dodge."""

from __future__ import annotations

import math

import numpy as np


class FigureUnavailable(ValueError):
    """The store lacks what a figure needs (the message says what)."""


def _figure(nrows: int, ncols: int, width: float, height: float):
    """A pyplot-free Figure (no global state; PNG through the Agg canvas) and its axes grid."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    return fig, fig.subplots(nrows, ncols, squeeze=False)


def _plain_log_ticks(axis, ticks=None) -> None:
    """Plain numbers (``30``, not ``3 x 10^1``) on a log axis; ticks at ``ticks`` if given,
    else at 1, 2, 5 x 10^k."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter

    axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)) if ticks is None
                           else FixedLocator(ticks))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def _thin_log(ticks, keep=(), min_decades: float = 0.15) -> list[float]:
    """Ticks of a log axis with no two closer than ``min_decades`` (their labels would overlap);
    the values in ``keep`` (e.g. the true count, the CV pick) always stay."""
    kept = sorted({float(t) for t in keep if t > 0})
    for t in sorted({float(t) for t in ticks if t > 0}):
        if all(abs(math.log10(t) - math.log10(k)) >= min_decades for k in kept):
            kept.append(t)
    return sorted(kept)


def _log_ticks_125(low: float, high: float) -> list[float]:
    """1, 2, 5 x 10^k between ``low`` and ``high``."""
    if not (low > 0 and high > low):
        return []
    out = []
    for e in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1):
        out += [m * 10.0 ** e for m in (1, 2, 5) if low <= m * 10.0 ** e <= high]
    return out


def _dodge(psi: np.ndarray, n: int) -> np.ndarray:
    """Small horizontal offsets so that error bars of n methods at the same psi do not overlap."""
    if n <= 1 or psi.size < 2:
        return np.zeros(max(n, 1))
    step = float(np.min(np.diff(np.sort(psi))))
    # the whole spread stays within a sixth of the psi step: the points still read as one psi
    return (np.arange(n) - (n - 1) / 2) * (step / 6 / max(n - 1, 1))


_PSI_LABEL = "outlier proportion ψ"
