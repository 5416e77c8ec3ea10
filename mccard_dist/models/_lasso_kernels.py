"""Compiled kernels of MCC-L1's weighted Lasso step (numba, imported on the first ``"cd"`` fit).

The step solves, for sample weights ``s`` (summing to ``N``) and the weighted means ``m`` of the
columns and ``ybar`` of ``y``,

    min_w  (1/2N) sum_n s_n (r_n)^2 + alpha ||w||_1,   r = (y - ybar) - (X - m) w,

by cyclic coordinate descent on a working set of columns, with scikit-learn's stopping test
(``cd_fast``): after a sweep that moves no coefficient by more than ``tol`` relative to the
largest, the duality gap of the set's problem against ``tol * sum_n s_n (y_n - ybar)^2``. The
working set is the non-zero coefficients and the columns violating a zero coefficient's
optimality condition ``|sum_n s_n (x_nj - m_j) r_n| > N alpha``, re-checked on every column
after each solve until none does or the sweeps are spent. The design comes transposed
(``XT``, one contiguous row per column) so that a coordinate's update reads contiguous memory.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["set_cd", "weighted_lasso_step"]


@njit(cache=True, fastmath=True)
def _dot(a, b):
    acc = 0.0
    for i in range(a.size):
        acc += a[i] * b[i]
    return acc


@njit(cache=True, fastmath=True)
def _rows_dot(M, v):
    """``M @ v`` for a C-ordered ``M``, row by row (contiguous reads)."""
    out = np.empty(M.shape[0])
    for j in range(M.shape[0]):
        acc = 0.0
        for i in range(M.shape[1]):
            acc += M[j, i] * v[i]
        out[j] = acc
    return out


@njit(cache=True, fastmath=True)
def _set_gap(Xw, R, zw, w, alpha):
    """The duality gap of ``(1/2)||zw - Xw^T w||^2 + alpha ||w||_1`` at ``w`` with residual ``R``
    (the dual point ``R`` rescaled into the feasible set), as scikit-learn's ``cd_fast``."""
    dual_norm = 0.0
    l1 = 0.0
    for a in range(w.size):
        dual_norm = max(dual_norm, abs(_dot(Xw[a], R)))
        l1 += abs(w[a])
    r_norm2 = _dot(R, R)
    if dual_norm > alpha:
        const = alpha / dual_norm
        gap = 0.5 * r_norm2 * (1.0 + const * const)
    else:
        const = 1.0
        gap = r_norm2
    return gap + alpha * l1 - const * _dot(R, zw)


@njit(cache=True, fastmath=True)
def set_cd(Xw, R, zw, w, alpha, max_sweeps, tol):
    """Cyclic coordinate descent on ``(1/2)||zw - Xw^T w||^2 + alpha ||w||_1`` (``Xw``: the
    working set's weighted, centred columns as rows; ``w`` and the residual ``R`` updated in
    place); stops at ``max_sweeps`` or by scikit-learn's test with ``tol``. Returns the sweeps
    run."""
    k, n = Xw.shape
    norms = np.empty(k)
    for a in range(k):
        norms[a] = _dot(Xw[a], Xw[a])
    norm_y = _dot(zw, zw)
    for sweep in range(max_sweeps):
        w_max = 0.0
        d_w_max = 0.0
        for a in range(k):
            if norms[a] == 0.0:
                continue
            old = w[a]
            rho = norms[a] * old
            for i in range(n):
                rho += Xw[a, i] * R[i]
            new = 0.0
            if rho > alpha:
                new = (rho - alpha) / norms[a]
            elif rho < -alpha:
                new = (rho + alpha) / norms[a]
            if new != old:
                delta = new - old
                for i in range(n):
                    R[i] -= delta * Xw[a, i]
                w[a] = new
            d_w_max = max(d_w_max, abs(new - old))
            w_max = max(w_max, abs(new))
        if w_max == 0.0 or d_w_max / w_max < tol or sweep == max_sweeps - 1:
            if _set_gap(Xw, R, zw, w, alpha) < tol * norm_y:
                return sweep + 1
    return max_sweeps


@njit(cache=True, fastmath=True)
def weighted_lasso_step(XT, y, s, coef, alpha, first_alpha, max_sweeps, tol, fit_intercept,
                        working_set):
    """One weighted Lasso solve (module docstring) from ``coef`` (not modified): ``XT`` the
    design transposed, shape (D, N), C-ordered; ``s`` the weights; ``first_alpha`` the first
    round's penalty in the working set's test (the strong rule's, below ``alpha``, on a path;
    else ``alpha``). Without ``working_set``, one solve on every column.
    Returns ``(coef, intercept, sweeps)``."""
    d, n = XT.shape
    coef = coef.copy()
    root = np.empty(n)
    u = np.empty(n)  # y - X coef, through the non-zero coefficients
    su = np.empty(n)
    for i in range(n):
        root[i] = np.sqrt(s[i])
        u[i] = y[i]
    for j in range(d):
        if coef[j] != 0.0:
            c = coef[j]
            for i in range(n):
                u[i] -= XT[j, i] * c
    for i in range(n):
        su[i] = s[i] * u[i]
    # one pass over X for the weighted means and the gradient at the start
    m = np.zeros(d)
    grad = np.empty(d)
    ybar = 0.0
    offset = 0.0  # the intercept: r = u - offset
    for j in range(d):
        acc_s = 0.0
        acc_u = 0.0
        for i in range(n):
            acc_s += XT[j, i] * s[i]
            acc_u += XT[j, i] * su[i]
        if fit_intercept:
            m[j] = acc_s / n
        grad[j] = acc_u
    if fit_intercept:
        ybar = _dot(s, y) / n
        offset = ybar - _dot(m, coef)
    R = np.empty(n)  # the weighted residual, kept through the solves
    zw = np.empty(n)
    sum_sr = 0.0
    for i in range(n):
        R[i] = root[i] * (u[i] - offset)
        zw[i] = root[i] * (y[i] - ybar)
        sum_sr += s[i] * (u[i] - offset)
    # X^T S r = X^T S u - offset X^T s, centred: minus m sum(S r) (0 but for rounding)
    for j in range(d):
        grad[j] -= offset * m[j] * n + m[j] * sum_sr
    inside = np.empty(d, dtype=np.bool_)
    for j in range(d):
        inside[j] = coef[j] != 0.0 or not working_set
    threshold = alpha * n
    used = 0
    sr = np.empty(n)
    while used < max_sweeps:
        if working_set:
            if used:
                total = 0.0
                for i in range(n):
                    sr[i] = root[i] * R[i]
                    total += sr[i]
                grad = _rows_dot(XT, sr)
                if fit_intercept:
                    for j in range(d):
                        grad[j] -= m[j] * total
            limit = threshold if used else min(threshold, first_alpha * n)
            n_new = 0
            for j in range(d):
                if not inside[j] and abs(grad[j]) > limit:
                    inside[j] = True
                    n_new += 1
            if used and n_new == 0:
                break
        k = 0
        for j in range(d):
            k += inside[j]
        if k == 0:
            break
        cols = np.empty(k, dtype=np.int64)
        k = 0
        for j in range(d):
            if inside[j]:
                cols[k] = j
                k += 1
        Xw = np.empty((k, n))
        w = np.empty(k)
        for a in range(k):
            j = cols[a]
            w[a] = coef[j]
            for i in range(n):
                Xw[a, i] = (XT[j, i] - m[j]) * root[i]
        used += max(set_cd(Xw, R, zw, w, threshold, max_sweeps - used, tol), 1)
        for a in range(k):
            coef[cols[a]] = w[a]
        if not working_set:
            break
    intercept = ybar - _dot(m, coef) if fit_intercept else 0.0
    return coef, intercept, used
