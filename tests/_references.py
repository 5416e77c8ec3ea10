"""Textbook references the tests compare the code with (shared by several test modules)."""

import numpy as np


def refit_without(X, y, s, a, n, fit_intercept=True):
    """Dense weighted ridge ``sum s (y - b - Xw)^2 + sum a w^2`` without sample n; its residual at n."""
    keep = np.arange(len(y)) != n
    Z = np.hstack([np.ones((len(y), 1)), X]) if fit_intercept else X
    P = np.diag(np.concatenate([[0.0], a]) if fit_intercept else a)
    Zk, sk = Z[keep], s[keep]
    theta = np.linalg.lstsq(Zk.T @ (sk[:, None] * Zk) + P, Zk.T @ (sk * y[keep]), rcond=None)[0]
    return y[n] - Z[n] @ theta
