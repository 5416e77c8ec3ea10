"""Per-sample log-likelihood terms of the correntropy noise models and their derivatives.

For a residual ``e`` and kernel width ``h`` let ``psi = exp(-e^2 / 2h)`` (the Gaussian kernel).

* deviant (paper eq. for C):  ``log C(e) = psi``
* proper  (paper eq. for C'): ``log C'(e) = log(exp(psi) - 1)``

Both have derivative ``d log p / de = -(e / h) * omega``, with ``omega = psi`` (deviant) and
``omega = psi / (1 - exp(-psi))`` (proper, from 1 at a gross outlier to e/(e-1) ~ 1.58 at a perfect
inlier). The half-quadratic / IRLS w-step therefore uses sample weights ``omega / h``; the
"printed" reading of the paper's w-step uses ``omega`` (see :class:`MCCARDRegressor`).

Everything is computed without overflow, underflow to NaN, or ``log(0)``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["kernel", "log_density", "irls_weight", "neg_second_derivative"]


def kernel(e: np.ndarray, h: float) -> np.ndarray:
    """Gaussian kernel ``psi = exp(-e^2 / 2h)`` in [0, 1]."""
    return np.exp(-np.square(e) / (2.0 * h))


def _omega_proper(psi: np.ndarray) -> np.ndarray:
    """``psi / (1 - exp(-psi))`` with its limit 1 (series ``1 + psi/2 + psi^2/12``) near 0."""
    out = np.empty_like(psi)
    small = psi < 1e-6
    ps = psi[small]
    out[small] = 1.0 + ps / 2.0 + ps * ps / 12.0
    pl = psi[~small]
    out[~small] = pl / -np.expm1(-pl)
    return out


def _omega_proper_derivative(psi: np.ndarray) -> np.ndarray:
    """d omega / d psi for the proper likelihood (series ``1/2 + psi/6`` near 0)."""
    out = np.empty_like(psi)
    small = psi < 1e-4
    out[small] = 0.5 + psi[small] / 6.0
    pl = psi[~small]
    q = -np.expm1(-pl)  # 1 - exp(-psi)
    out[~small] = (q - pl * np.exp(-pl)) / (q * q)
    return out


def log_density(e: np.ndarray, h: float, likelihood: str) -> np.ndarray:
    """``log C(e)`` (deviant) or ``log C'(e)`` (proper), elementwise.

    For the proper likelihood ``log(expm1(psi)) = -e^2/2h + log(expm1(psi)/psi)``, finite even where
    ``psi`` underflows.
    """
    u = np.square(e) / (2.0 * h)
    psi = np.exp(-u)
    if likelihood == "deviant":
        return psi
    ratio = np.ones_like(psi)
    pos = psi > 0
    ratio[pos] = np.expm1(psi[pos]) / psi[pos]
    return -u + np.log(ratio)


def irls_weight(e: np.ndarray, h: float, likelihood: str) -> np.ndarray:
    """``omega``: ``-(d log p/de) * h / e``; the w-step's sample weight up to the 1/h factor."""
    psi = kernel(e, h)
    if likelihood == "deviant":
        return psi
    return _omega_proper(psi)


def neg_second_derivative(e: np.ndarray, h: float, likelihood: str) -> np.ndarray:
    """``-d^2 log p / de^2`` elementwise (negative where the density is locally convex)."""
    psi = kernel(e, h)
    e2h = np.square(e) / h
    if likelihood == "deviant":
        return psi * (1.0 - e2h) / h
    return _omega_proper(psi) / h - (e2h / h) * psi * _omega_proper_derivative(psi)
