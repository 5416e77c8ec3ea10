"""Intervals of a mean over seeds: fixed-n t-intervals, and confidence sequences that stay valid
at every look, so that a run may stop a cell once its intervals say enough (a stop rule,
:mod:`mccard_dist.stopping`) and its report still shows honest intervals.

A confidence sequence is by default the anytime-valid t sequence (:func:`t_sequence`, the
guarantee :data:`NORMAL`): Lai's (1976) mixture over the mean, a Gaussian prior of variance ``g``
on the effect ``(mu - mu_0) / sigma`` and the right-Haar prior ``d sigma / sigma`` on the scale,
whose likelihood ratio for ``mu_0`` after ``n`` values with t-statistic ``t`` is

    B_n = (1 + n g)^(-1/2) * ((n - 1 + t^2) / (n - 1 + t^2 / (1 + n g)))^(n/2)

(Wang & Ramdas, "Anytime-valid t-tests and confidence sequences for Gaussian means with unknown
variance", Sequential Analysis 2025, arXiv 2310.03722, Section 3). It is a martingale for
normal values under the true mean, whatever the variance, so by Ville's inequality the values of
``mu_0`` with ``B_n < 1 / alpha`` cover the mean at every ``n`` at once with probability at least
``1 - alpha``: the interval ``mean_n +- t*_n s_n / sqrt(n)`` with ``t*_n = sqrt((n - 1) u / (1 -
u))``, ``u = (1 - (alpha^2 / (1 + n g))^(1/n)) (1 + n g) / (n g)``, intersected over the values
seen. It scales with the seed-to-seed spread, as the fixed-n t-interval does, and is exact for
normal values at every ``n``; for other distributions it holds as the t-interval does, better as
the values' mean becomes normal. With ``g = 1`` and ``alpha = 0.05`` it is finite from 5 values.

The guarantee :data:`BOUNDED` (``experiment.stop.guarantee: bounded``) gives values with known
bounds (a metric in ``[0, 1]`` such as F1, or ``[-1, 1]`` such as r, and the paired differences
of such a metric) the predictable plug-in empirical-Bernstein confidence sequence of
Waudby-Smith & Ramdas, "Estimating means of bounded random variables by betting" (J. R. Stat.
Soc. B 2024, Theorem 2 with eq. (13)-(15)), valid at every number of values for any
distribution within the bounds (:func:`bounded_sequence`). Its price is the range: its
half-width never falls below about ``log(2 / alpha) / (n / 2)`` times the range, however small
the spread (:func:`bounded_floor`). Values without bounds get the t sequence under either.
Sequences read the values in their order (the seeds'), as the run saw them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["BOUNDED", "GUARANTEES", "NORMAL", "SEQUENCE", "T", "T_MIXTURE", "Intervals",
           "bounded_floor", "bounded_sequence", "t_sequence", "t_sequence_factor"]

#: the kinds of interval: fixed-n t-intervals, confidence sequences
T, SEQUENCE = "t", "sequence"
#: a confidence sequence's guarantee: exact for normal seed-to-seed values (the anytime-valid t
#: sequence for every metric), or for any distribution within a metric's bounds (empirical
#: Bernstein for the metrics that have bounds)
NORMAL, BOUNDED = "normal", "bounded"
GUARANTEES = (NORMAL, BOUNDED)
#: ``g``, the variance of the t sequence's Gaussian prior on the effect ``(mu - mu_0) / sigma``
T_MIXTURE = 1.0


def t_sequence_factor(n, level: float = 0.95, g: float = T_MIXTURE):
    """``t*_n / sqrt(n)``: the anytime-valid t sequence's half-width over the standard deviation
    (ddof=1) of ``n`` values, before the intersection over the values seen; ``inf`` where the
    sequence is not yet finite, NaN below 2 values. Arrays work element by element."""
    n = np.asarray(n, dtype=float)
    alpha = 1.0 - level
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        ng = n * g
        one_minus_q = -np.expm1((2.0 * math.log(alpha) - np.log1p(ng)) / n)
        u = one_minus_q * (1.0 + ng) / ng
        factor = np.where(u < 1.0, np.sqrt((n - 1.0) * u / (1.0 - u) / n), np.inf)
        factor = np.where(n >= 2, factor, np.nan)
    return float(factor) if np.ndim(factor) == 0 else factor


def t_sequence(x, level: float = 0.95, g: float = T_MIXTURE, first: int = 2, every: int = 1):
    """The anytime-valid t confidence sequence of the mean of ``x`` (in the order seen, along
    the last axis; no NaN): ``(lower, upper)`` after each value, each the intersection of the
    sequence at that value with its values at the looks before it, ``first`` values and every
    ``every`` more (a stop rule's rounds; every value by default). ``-inf`` and ``inf`` until
    it is finite."""
    x = np.asarray(x, dtype=float)
    shifted = x - x[..., :1]  # running moments of values near 0: no cancellation
    n = np.arange(1, x.shape[-1] + 1, dtype=float)
    total = np.cumsum(shifted, axis=-1)
    mean = total / n + x[..., :1]
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.maximum(np.cumsum(shifted * shifted, axis=-1) - total * total / n, 0.0) \
            / (n - 1.0)
        factor = t_sequence_factor(n, level, g)
        half = np.where(np.isfinite(factor), factor * np.sqrt(var), np.inf)
    low, high = mean - half, mean + half
    look = (n >= first) & ((n - first) % every == 0)
    seen_low = np.maximum.accumulate(np.where(look, low, -np.inf), axis=-1)
    seen_high = np.minimum.accumulate(np.where(look, high, np.inf), axis=-1)
    return np.maximum(seen_low, low), np.minimum(seen_high, high)


def bounded_floor(width: float, n, level: float = 0.95):
    """About the least half-width the bounded sequence reaches after ``n`` values of range
    ``width``, at zero spread: ``log(2 / alpha) / (n / 2)`` times the range (its bet is at most
    1/2 a value), a price :data:`BOUNDED` pays however small the seed-to-seed spread."""
    return width * math.log(2.0 / (1.0 - level)) / (0.5 * np.asarray(n, dtype=float))


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
    :data:`SEQUENCE` (confidence sequences, valid at every ``n``, with ``guarantee``
    :data:`NORMAL` or :data:`BOUNDED`), at ``level``."""

    kind: str = T
    level: float = 0.95
    guarantee: str = NORMAL
    #: a sequence's looks: after ``first`` values and every ``every`` more (a rule's rounds)
    first: int = 2
    every: int = 1

    def __post_init__(self):
        if self.kind not in (T, SEQUENCE):
            raise ValueError(f"interval kind must be {T!r} or {SEQUENCE!r}, got {self.kind!r}")
        if self.guarantee not in GUARANTEES:
            raise ValueError(f"guarantee must be one of {GUARANTEES}, got {self.guarantee!r}")

    @property
    def name(self) -> str:
        """What the intervals are, in words (a report's caption)."""
        if self.kind == T:
            return f"{self.level:.0%} t-intervals"
        if self.guarantee == BOUNDED:
            return (f"{self.level:.0%} confidence sequences (valid at every number of seeds: "
                    "empirical Bernstein within a metric's bounds, for any distribution in them, "
                    "Waudby-Smith & Ramdas 2024; anytime-valid t for metrics without bounds)")
        return (f"{self.level:.0%} confidence sequences (anytime-valid t: valid at every number "
                "of seeds, exact for normal seed-to-seed values; Wang & Ramdas 2025)")

    def half_width(self, sd, n):
        """The half-width for ``n`` values of standard deviation ``sd`` (ddof=1); NaN with
        fewer than 2 values; for a sequence, its width at ``n`` before the intersection over
        the values before. Arrays work element by element."""
        n = np.asarray(n, dtype=float)
        with np.errstate(invalid="ignore", divide="ignore"):
            if self.kind == T:
                from scipy import stats

                factor = stats.t.ppf(0.5 + self.level / 2, n - 1) / np.sqrt(n)
                factor = np.where(n >= 2, factor, np.nan)
            else:
                factor = t_sequence_factor(n, self.level)
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
        ``(low, high)`` the values lie in, if known: a :data:`BOUNDED` sequence is then
        :func:`bounded_sequence`."""
        d = np.asarray(values, dtype=float).ravel()
        d = d[np.isfinite(d)]
        n = int(d.size)
        if n == 0:
            return math.nan, math.nan, math.nan, 0
        mean = float(d.mean())
        if n < 2:
            return mean, math.nan, math.nan, n
        if self.kind == SEQUENCE:
            if self.guarantee == BOUNDED and bounds is not None:
                lower, upper = bounded_sequence(np.clip(d, *bounds), *bounds, level=self.level)
            else:
                lower, upper = t_sequence(d, self.level, first=self.first, every=self.every)
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
        return {"kind": self.kind, "level": self.level, "guarantee": self.guarantee,
                "first": self.first, "every": self.every}
