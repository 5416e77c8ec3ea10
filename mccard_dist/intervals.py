"""Intervals of a mean over seeds: fixed-n t-intervals, and confidence sequences that stay valid
at every look, so that a run may stop a cell once its intervals say enough (a stop rule,
:mod:`mccard_dist.stopping`) and its report still shows honest intervals.

Values with known bounds (a metric in ``[0, 1]`` such as F1, or ``[-1, 1]`` such as r, and the
paired differences of such a metric) get the predictable plug-in empirical-Bernstein confidence
sequence of Waudby-Smith & Ramdas, "Estimating means of bounded random variables by betting"
(J. R. Stat. Soc. B 2024, Theorem 2 with eq. (13)-(15)), valid at every number of values for any
distribution within the bounds (:func:`bounded_sequence`). It reads the values in their order
(the seeds'), as the run saw them.

Values without bounds (RMSE, the features kept) get the asymptotic confidence sequence of
Waudby-Smith, Arbour, Sinha, Kennedy & Ramdas, "Time-uniform central limit theory and asymptotic
confidence sequences" (Ann. Statist. 2024, Theorem 2.2): with the running mean ``m_n`` and
standard deviation ``s_n`` of ``n`` values,

    m_n ± s_n * sqrt( 2 (n rho² + 1) / (n² rho²) * log( sqrt(n rho² + 1) / alpha ) ),

Robbins' two-sided normal-mixture boundary with the sample standard deviation in place of the
known one; ``alpha = 1 - level``. Its coverage holds uniformly over ``n`` (so at a stopping time
the data chose) as ``n`` grows, for any distribution with a finite variance: bounded (F1, r) and
unbounded (RMSE) metrics alike. ``rho`` sets where the boundary is tightest; it is chosen for
``tuned_for`` values (the paper's eq. (2.6)): ``rho² = (-2 log alpha + log(1 - 2 log alpha)) /
tuned_for``. At the same ``n`` it is wider than the t-interval (about 1.5x at n = 100, 95%):
the price of looking at every round. Its validity is asymptotic: for strongly skewed values it
can exclude the mean at an early look more often than ``1 - level`` (no interval can be valid
for every distribution with a finite variance at a fixed ``n``: Bahadur & Savage, Ann. Math.
Statist. 1956), which bounds are there to prevent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["SEQUENCE", "T", "Intervals", "bounded_sequence", "mixture_rho2"]

#: the kinds of interval: fixed-n t-intervals, confidence sequences
T, SEQUENCE = "t", "sequence"


def mixture_rho2(tuned_for: float, level: float) -> float:
    """The mixture's ``rho²`` that makes the confidence sequence tightest at ``tuned_for``
    values (Waudby-Smith et al. 2024, eq. (2.6))."""
    a = -2.0 * math.log(1.0 - level)
    return (a + math.log(1.0 + a)) / tuned_for


def bounded_sequence(x, low: float, high: float, level: float = 0.95):
    """The empirical-Bernstein confidence sequence of the mean of ``x`` (values in ``[low,
    high]``, in the order seen, along the last axis; no NaN): ``(lower, upper)`` after each
    value, the running intersection of Waudby-Smith & Ramdas (2024), Theorem 2, with their
    predictable plug-in ``lambda_t = min(sqrt(2 log(2/alpha) / (sigma²_{t-1} t log(1 + t))),
    1/2)`` (eq. (13)) and ``psi_E(lambda) = (-log(1 - lambda) - lambda) / 4``, on ``x`` scaled
    to ``[0, 1]``."""
    width = high - low
    y = (np.asarray(x, dtype=float) - low) / width
    alpha = 1.0 - level
    t = np.arange(1, y.shape[-1] + 1, dtype=float)
    mu = (0.5 + np.cumsum(y, axis=-1)) / (t + 1)  # mu_hat_t
    mu_before = np.concatenate([np.full(y.shape[:-1] + (1,), 0.5), mu[..., :-1]], axis=-1)
    sigma2 = (0.25 + np.cumsum((y - mu) ** 2, axis=-1)) / (t + 1)  # sigma²_hat_t
    sigma2_before = np.concatenate([np.full(y.shape[:-1] + (1,), 0.25), sigma2[..., :-1]],
                                   axis=-1)
    lam = np.minimum(np.sqrt(2.0 * math.log(2.0 / alpha)
                             / (sigma2_before * t * np.log1p(t))), 0.5)
    v = 4.0 * (y - mu_before) ** 2
    psi = (-np.log1p(-lam) - lam) / 4.0
    weight = np.cumsum(lam, axis=-1)
    centre = np.cumsum(lam * y, axis=-1) / weight
    half = (math.log(2.0 / alpha) + np.cumsum(v * psi, axis=-1)) / weight
    lower = np.maximum.accumulate(np.maximum(centre - half, 0.0), axis=-1)
    upper = np.minimum.accumulate(np.minimum(centre + half, 1.0), axis=-1)
    return low + width * lower, low + width * upper


@dataclass(frozen=True)
class Intervals:
    """How intervals of a mean over seeds are made: ``kind`` :data:`T` (fixed-n t-intervals) or
    :data:`SEQUENCE` (confidence sequences, valid at every ``n``, tightest at ``tuned_for``
    values), at ``level``."""

    kind: str = T
    level: float = 0.95
    tuned_for: int = 100

    def __post_init__(self):
        if self.kind not in (T, SEQUENCE):
            raise ValueError(f"interval kind must be {T!r} or {SEQUENCE!r}, got {self.kind!r}")

    @property
    def name(self) -> str:
        """What the intervals are, in words (a report's caption)."""
        if self.kind == T:
            return f"{self.level:.0%} t-intervals"
        return (f"{self.level:.0%} confidence sequences (valid at every number of seeds, "
                f"tightest at {self.tuned_for}; Waudby-Smith et al., Ann. Statist. 2024)")

    def half_width(self, sd, n):
        """The half-width for ``n`` values of standard deviation ``sd`` (ddof=1); NaN with
        fewer than 2 values. Arrays work element by element."""
        n = np.asarray(n, dtype=float)
        with np.errstate(invalid="ignore", divide="ignore"):
            if self.kind == T:
                from scipy import stats

                factor = stats.t.ppf(0.5 + self.level / 2, n - 1) / np.sqrt(n)
            else:
                rho2 = mixture_rho2(self.tuned_for, self.level)
                grown = n * rho2 + 1.0
                factor = np.sqrt(2.0 * grown / (n * n * rho2)
                                 * np.log(np.sqrt(grown) / (1.0 - self.level)))
            factor = np.where(n >= 2, factor, np.nan)
        half = factor * sd
        return float(half) if np.ndim(half) == 0 else half

    def interval(self, mean, sd, n):
        """``(low, high)`` of the mean of ``n`` values with mean ``mean`` and standard deviation
        ``sd``."""
        half = self.half_width(sd, n)
        return mean - half, mean + half

    def of(self, values, bounds=None) -> tuple[float, float, float, int]:
        """Mean and interval of ``values`` in their order (NaN entries left out): ``(mean, low,
        high, n)``; ``low`` and ``high`` are NaN with fewer than 2 values. ``bounds``: the
        ``(low, high)`` the values lie in, if known: a confidence sequence is then
        :func:`bounded_sequence`."""
        d = np.asarray(values, dtype=float).ravel()
        d = d[np.isfinite(d)]
        n = int(d.size)
        if n == 0:
            return math.nan, math.nan, math.nan, 0
        mean = float(d.mean())
        if n < 2:
            return mean, math.nan, math.nan, n
        if self.kind == SEQUENCE and bounds is not None:
            lower, upper = bounded_sequence(np.clip(d, *bounds), *bounds, level=self.level)
            return mean, float(lower[-1]), float(upper[-1]), n
        low, high = self.interval(mean, float(d.std(ddof=1)), n)
        return mean, float(low), float(high), n

    def along(self, values, bounds=None):
        """``(mean, low, high, n)`` arrays of :meth:`of` along the last axis of ``values``."""
        values = np.asarray(values, dtype=float)
        out = np.full((4,) + values.shape[:-1], np.nan)
        for index in np.ndindex(values.shape[:-1]):
            out[(slice(None),) + index] = self.of(values[index], bounds)
        return out[0], out[1], out[2], out[3].astype(int)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "level": self.level, "tuned_for": self.tuned_for}
