"""Per-sample log-likelihood terms of the correntropy noise models and their derivatives.

With ``kappa = exp(-e^2 / 2h)``: ``log C(e) = kappa`` (deviant, eq. (22)) and
``log C'(e) = log(exp(kappa) - 1)`` (proper, eq. (40)). Both have ``d log p / de = -(e/h) omega``
with ``omega = kappa`` (deviant) or ``kappa / (1 - exp(-kappa))`` (proper), the w-step's weight
up to ``1/h``. All are computed without overflow, NaN or ``log(0)``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["kernel", "log_density", "irls_weight", "neg_second_derivative"]


def kernel(e: np.ndarray, h: float) -> np.ndarray:
    """Gaussian kernel ``kappa = exp(-e^2 / 2h)`` in [0, 1]."""
    return np.exp(-np.square(e) / (2.0 * h))


def _omega_proper(kappa: np.ndarray) -> np.ndarray:
    """``kappa / (1 - exp(-kappa))`` (series ``1 + kappa/2 + kappa^2/12`` near 0)."""
    out = np.empty_like(kappa)
    small = kappa < 1e-6
    ps = kappa[small]
    out[small] = 1.0 + ps / 2.0 + ps * ps / 12.0
    pl = kappa[~small]
    out[~small] = pl / -np.expm1(-pl)
    return out


def _omega_proper_derivative(kappa: np.ndarray) -> np.ndarray:
    """d omega / d kappa for the proper likelihood (series ``1/2 + kappa/6`` near 0)."""
    out = np.empty_like(kappa)
    small = kappa < 1e-4
    out[small] = 0.5 + kappa[small] / 6.0
    pl = kappa[~small]
    q = -np.expm1(-pl)  # 1 - exp(-kappa)
    out[~small] = (q - pl * np.exp(-pl)) / (q * q)
    return out


def log_density(e: np.ndarray, h: float, likelihood: str) -> np.ndarray:
    """``log C(e)`` (deviant) or ``log C'(e)`` (proper, as ``-e^2/2h + log(expm1(kappa)/kappa)``,
    finite where ``kappa`` underflows)."""
    u = np.square(e) / (2.0 * h)
    kappa = np.exp(-u)
    if likelihood == "deviant":
        return kappa
    ratio = np.ones_like(kappa)
    pos = kappa > 0
    ratio[pos] = np.expm1(kappa[pos]) / kappa[pos]
    return -u + np.log(ratio)


def irls_weight(e: np.ndarray, h: float, likelihood: str) -> np.ndarray:
    """``omega``: ``-(d log p/de) * h / e``; the w-step's sample weight up to the 1/h factor."""
    kappa = kernel(e, h)
    if likelihood == "deviant":
        return kappa
    return _omega_proper(kappa)


def neg_second_derivative(e: np.ndarray, h: float, likelihood: str) -> np.ndarray:
    """``-d^2 log p / de^2`` elementwise (negative where the density is locally convex)."""
    kappa = kernel(e, h)
    e2h = np.square(e) / h
    if likelihood == "deviant":
        return kappa * (1.0 - e2h) / h
    return _omega_proper(kappa) / h - (e2h / h) * kappa * _omega_proper_derivative(kappa)
