"""The kernel width chosen inside the fit (``kernel_width="auto"``).

``exp(-e^2 / 2h)`` is Welsch's loss with ``c^2 = 2h``, 95% efficient for Gaussian inliers of
variance ``sigma^2`` at ``h = WELSCH_95 sigma^2``. ``sigma^2`` is estimated from the fit's
leave-one-out residuals by a kernel-weighted variance with its truncation bias removed
(:func:`inlier_variance`). :class:`WidthSchedule` anneals ``h`` from ``var(y)`` towards that
value; as the rule can have several fixed points (a wide one whose fit still follows part of
the outliers), it probes below the first one, ``h1``, descending to ``h1 / probe`` and running
the rule again from there.
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
    """Inlier variance of ``residuals``: ``v = sum p r^2 / sum p`` with ``p = exp(-r^2 / 2
    width)`` (times ``weights``), debiased to ``v width / (width - v)``; ``2 * width`` when
    ``v >= 0.9 width`` or nothing carries weight. Non-finite residuals are ignored."""
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
    """The annealed kernel width ``h`` of one fit, from ``var(y)`` (weighted by ``weights``),
    with every width used in ``path``. An update lowers ``h`` by at most ``max_fall``, not below
    ``floor * var(y)``; ``h`` has ``settled`` once an update moves ``log h`` by at most
    ``settle`` (after the probe to ``h1 / probe``; ``probe=1`` settles at ``h1``)."""

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
