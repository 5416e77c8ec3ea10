"""The weighted Lasso solves inside MCC-L1's half-quadratic loop: scikit-learn's coordinate
descent, capped in sweeps, on the whole design or on a working set of its columns."""

from __future__ import annotations

import warnings

import numpy as np
from sklearn import config_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import enet_path

__all__ = ["lasso_sweeps", "working_set_lasso"]


def lasso_sweeps(X, z, alpha, coef, sweeps):
    """At most ``sweeps`` sweeps of ``enet_path`` on ``(1/2N) ||z - X w||^2 + alpha ||w||_1``
    from ``coef`` (not modified; ``X`` Fortran-ordered); returns the coefficients and sweeps."""
    # the sweep cap is deliberate; the arguments are ours and valid, so scikit-learn's checks of
    # them are skipped (they cost a sizeable share of a call at this size)
    with warnings.catch_warnings(), config_context(skip_parameter_validation=True):
        warnings.simplefilter("ignore", ConvergenceWarning)
        _, path_coef, _, n_iter = enet_path(
            X, z, l1_ratio=1.0, alphas=[alpha], precompute=False, coef_init=coef.copy(),
            max_iter=sweeps, tol=1e-8, check_input=False, copy_X=False, return_n_iter=True)
    return path_coef[:, 0].copy(), int(n_iter[0])


def working_set_lasso(X, x_mean, root, z, alpha, coef, sweeps, screen_alpha=None):
    """:func:`lasso_sweeps` on the weighted, centred design ``(X - x_mean) * root[:, None]``,
    restricted to a working set: the non-zero coefficients and the columns violating the zero
    coefficient's optimality condition ``|x_j^T r| / N > alpha``, re-checked on all columns
    after each solve until none or the sweeps are spent. ``screen_alpha`` (the sequential strong
    rule, Tibshirani et al. 2012) lowers the first round's threshold."""
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
