"""The kernel width chosen inside the fit (``kernel_width="auto"``).

The kernel ``exp(-e^2 / 2h)`` is Welsch's loss with ``c^2 = 2h``. For Gaussian inlier noise of
variance ``sigma^2``, Welsch's M-estimator reaches 95% efficiency at ``c = 2.9846 sigma``, i.e.
``h = (2.9846^2 / 2) sigma^2`` (:data:`WELSCH_95`). The rule therefore reduces to an estimate of
the inlier residual variance, made from the fit itself:

1. the approximate leave-one-out residuals ``r_n = e_n / (1 - H_nn)`` of the current weighted fit
   (training residuals of a fit with D > N are far too small; the held-out ones are not);
2. a kernel-weighted variance at width ``s^2``, ``v = sum p r^2 / sum p`` with
   ``p = exp(-r^2 / 2 s^2)``, which ignores gross outliers. For Gaussian residuals of variance
   ``sigma^2`` the weighting shrinks it to ``v = sigma^2 s^2 / (sigma^2 + s^2)``; solving for
   ``sigma^2`` removes that truncation bias: ``sigma^2 = v s^2 / (s^2 - v)``
   (:func:`inlier_variance`).

:class:`WidthSchedule` anneals ``h`` from ``var(y)`` (every sample an inlier) towards
``WELSCH_95 * sigma^2``, falling by at most a factor ``max_fall`` per update, and reports when it
has settled.

The rule has a fixed point wherever the fit it makes leaves residuals that give back the same width,
and there can be several: under heavy contamination the first one reached from ``var(y)`` can be a
wide width whose fit still follows part of the outliers, so its inliers' residuals are large and
keep the width wide (a fit annealed further down would leave them small). The schedule therefore
probes below the first fixed point ``h1``: it lowers the width by ``max_fall`` per update to
``h1 / probe`` and runs the rule again from there, free to rise. Where ``h1`` was the only fixed
point the rule climbs back to it; where a lower one exists the fit ends there.
"""

from __future__ import annotations

import math

import numpy as np

from ._base import weighted_var

__all__ = ["WELSCH_95", "AUTO", "inlier_variance", "WidthSchedule", "is_auto"]

#: ``h / sigma^2`` of Welsch's loss tuned for 95% Gaussian efficiency (``c = 2.9846 sigma``).
WELSCH_95 = 2.9846**2 / 2.0

#: The value of ``kernel_width`` that selects the in-fit rule.
AUTO = "auto"


def is_auto(kernel_width) -> bool:
    """Whether ``kernel_width`` asks for the in-fit rule (exactly the string ``"auto"``)."""
    return isinstance(kernel_width, str) and kernel_width == AUTO


def inlier_variance(residuals: np.ndarray, width: float, weights=None) -> float:
    """Variance of the inlier part of ``residuals``, kernel-weighted at ``width`` (a variance),
    with the truncation bias of the weighting removed.

    Returns ``2 * width`` when the weighted variance is at least ``0.9 * width`` (the residuals are
    too wide for this width to tell inliers from outliers, and the correction would blow up), or
    when no residual carries weight. Non-finite residuals (samples the fit interpolates) are
    ignored. ``weights``: the samples' weights (``sample_weight``), multiplying the kernel's.
    """
    r2 = np.square(np.asarray(residuals, dtype=float))
    finite = np.isfinite(r2)
    r2 = r2[finite]
    p = np.exp(-r2 / (2.0 * width))
    if weights is not None:
        p = p * np.asarray(weights, dtype=float)[finite]
    total = p.sum()
    if not total > 0.0:
        return 2.0 * width
    v = float(p @ r2) / total
    if v >= 0.9 * width:
        return 2.0 * width
    return v * width / (width - v)


class WidthSchedule:
    """The annealed kernel width of one fit.

    Parameters
    ----------
    y : ndarray
        Training targets; ``var(y)`` is the starting width and sets the floor.
    factor : float
        ``h / sigma^2`` (default :data:`WELSCH_95`).
    max_fall : float
        Largest factor by which one update may lower ``h``.
    settle : float
        ``h`` has settled once an update changes ``log h`` by at most this.
    floor : float
        Smallest ``h``, as a fraction of ``var(y)``.
    probe : float
        After the rule first settles at ``h1``, lower the width to ``h1 / probe`` and run the rule
        again from there (see the module notes); ``1`` settles at ``h1``.
    weights : ndarray, optional
        The samples' weights (``sample_weight``): ``var(y)`` and the inlier variance are weighted.

    Attributes
    ----------
    h : float
        The current width.
    path : list of float
        Every width used, the start first.
    settled : bool
        Whether the last update moved ``h`` by at most ``settle`` (then ``update`` no longer
        changes it).
    """

    def __init__(self, y, *, factor: float = WELSCH_95, max_fall: float = 2.0,
                 settle: float = 0.02, floor: float = 1e-3, probe: float = 9.0, weights=None):
        scale = weighted_var(y, weights)
        self.weights = weights
        if not (np.isfinite(scale) and scale > 0.0):
            scale = 1.0  # constant targets: any width fits them exactly
        self.factor = factor
        self.max_fall = max_fall
        self.settle = settle
        self.floor = floor * scale
        self.probe = probe
        self._target = None  # while probing: the width the schedule descends to
        self._probed = probe <= 1.0
        self.h = scale
        self.path = [scale]
        self.settled = False

    def widen(self, ratio: float) -> float:
        """Multiply the (settled) width by ``ratio`` for the rest of the fit; returns ``h``."""
        self.h *= ratio
        self.path.append(self.h)
        return self.h

    def update(self, loo_residuals: np.ndarray) -> float:
        """One step of the rule from the current fit's leave-one-out residuals; returns ``h``."""
        if self.settled:
            return self.h
        if self._target is not None:  # the probe's descent, then the rule again
            h_new = max(self._target, self.h / self.max_fall)
            if h_new <= self._target:
                self._target = None
        else:
            sigma2 = inlier_variance(loo_residuals, self.h / self.factor, self.weights)
            h_new = max(self.factor * sigma2, self.h / self.max_fall, self.floor)
            if abs(math.log(h_new / self.h)) <= self.settle:
                if self._probed:
                    self.settled = True
                else:
                    self._probed = True
                    self._target = max(h_new / self.probe, self.floor)
        self.h = h_new
        self.path.append(h_new)
        return h_new
