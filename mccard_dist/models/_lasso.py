"""The weighted Lasso solves inside MCC-L1's half-quadratic loop: scikit-learn's coordinate
descent, capped in sweeps, on the whole design or on a working set of its columns."""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import enet_path

__all__ = ["lasso_sweeps", "working_set_lasso"]


def lasso_sweeps(X, z, alpha, coef, sweeps):
    """At most ``sweeps`` coordinate-descent sweeps of scikit-learn's ``enet_path`` on
    ``(1/2N) ||z - X w||^2 + alpha ||w||_1`` from ``coef`` (``X`` Fortran-ordered); returns the
    coefficients and the number of sweeps run. ``coef`` is not modified (the descent works in
    place on its ``coef_init``, hence the copy)."""
    with warnings.catch_warnings():  # the sweep cap is deliberate
        warnings.simplefilter("ignore", ConvergenceWarning)
        _, path_coef, _, n_iter = enet_path(
            X, z, l1_ratio=1.0, alphas=[alpha], precompute=False, coef_init=coef.copy(),
            max_iter=sweeps, tol=1e-8, check_input=False, copy_X=False, return_n_iter=True)
    return path_coef[:, 0].copy(), int(n_iter[0])


def working_set_lasso(X, x_mean, root, z, alpha, coef, sweeps, screen_alpha=None):
    """:func:`lasso_sweeps` on the weighted, centred design ``(X - x_mean) * root[:, None]``,
    restricted to a working set of its columns.

    The working set holds the non-zero coefficients and every column that violates the Lasso's
    optimality condition for a zero coefficient, ``|x_j^T r| / N > alpha`` (``r`` the residual).
    Coordinate descent runs on those columns only; then the condition is checked on all columns
    and the violators join the set, until there are none or the sweep budget is spent. A zero
    coefficient that satisfies the condition would stay zero in a full sweep as well, so the
    sweeps do the same kind of updates on fewer columns. Only the working set's columns are
    weighted; the check uses ``x_j^T r = X_j^T (root r) - x_mean_j sum(root r)``.

    ``screen_alpha`` (a path's sequential strong rule, Tibshirani et al. 2012, eq. 7): the first
    round also takes in every column with ``|x_j^T r| / N >= screen_alpha`` (``2 alpha -
    alpha_previous``: the columns likely to enter at this penalty), so the checks that follow
    rarely find a violator; they still run on all columns, so the screening never drops one.
    """
    n_samples = X.shape[0]
    threshold = alpha * n_samples
    first_threshold = threshold if screen_alpha is None else min(threshold,
                                                                 screen_alpha * n_samples)
    coef = coef.copy()
    inside = coef != 0.0

    def design(cols):
        Xc = X[:, cols] if x_mean is None else X[:, cols] - x_mean[cols]
        return np.asfortranarray(Xc * root[:, None])

    fitted = X @ coef
    if x_mean is not None:
        fitted -= x_mean @ coef
    residual = z - root * fitted
    used = 0
    while used < sweeps:
        scaled = root * residual
        grad = scaled @ X
        if x_mean is not None:
            grad -= x_mean * scaled.sum()
        limit = first_threshold if used == 0 else threshold
        violators = np.flatnonzero((np.abs(grad) > limit) & ~inside)
        if used and violators.size == 0:
            break
        inside[violators] = True
        cols = np.flatnonzero(inside)
        if cols.size == 0:
            break
        Xw = design(cols)
        sub, n_iter = lasso_sweeps(Xw, z, alpha, coef[cols], sweeps - used)
        used += max(n_iter, 1)
        coef[cols] = sub
        residual = z - Xw @ sub
    return coef
