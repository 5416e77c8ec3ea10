"""Weighted ridge solves shared by the ARD and L1 estimators.

Each iteration solves ``min_{w,b} sum_n s_n (t_n - b - x_n w)^2 + sum_d a_d w_d^2`` with the
intercept profiled out by *weighted* centring, on ``B' = S^{1/2} X_c A^{-1/2}``: primal (Cholesky
of ``I + B'^T B'``, few active features) or dual (Woodbury, Cholesky of ``I + B' B'^T``, more
features than samples). Both factorised matrices are ``>= I``, so zero weights drop out and
relevances near the threshold keep the conditioning. ``gamma_d = 1 - a_d Sigma_dd`` is computed
without that subtraction's cancellation: ``||L^{-1} b'_d||^2`` (dual), ``(M'^{-1} B'^T B')_dd``
(primal).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg

__all__ = ["RidgeSolution", "RidgeSteps", "weighted_ridge", "posterior_covariance",
           "hat_diagonal", "loo_from_leverage"]

@dataclass(frozen=True)
class RidgeSolution:
    """A solve's coefficients and intercept (0.0 without one, or with every weight 0), its
    ``gamma`` and hat diagonal ``leverage`` (``None`` unless requested) and the form used."""

    coef: np.ndarray
    intercept: float
    gamma: np.ndarray | None
    form: str
    leverage: np.ndarray | None = None


def _centre(X, t, sample_weight, fit_intercept):
    """Weighted centring; returns (Xc, tc, x_mean, t_mean)."""
    if not fit_intercept:
        return X, t, None, 0.0
    total = sample_weight.sum()
    if total <= 0.0:
        # No sample carries weight: nothing determines the intercept.
        return X, t, None, None
    x_mean = (sample_weight @ X) / total
    t_mean = float(sample_weight @ t) / total
    return X - x_mean, t - t_mean, x_mean, t_mean


def inverse_lower(lower_factor: np.ndarray) -> np.ndarray:
    """Lower triangle of ``M^{-1}`` from a lower Cholesky factor (LAPACK potri), upper part 0."""
    inv, info = linalg.lapack.dpotri(lower_factor, lower=1, overwrite_c=1)
    if info != 0:
        raise linalg.LinAlgError(f"potri failed with info={info}")
    return np.tril(inv)


def _dual_with_gamma(L, B, z):
    """From the lower Cholesky factor ``L`` of ``K = I + B' B'^T`` (consumed): ``B'^T K^{-1} z``,
    ``gamma_d = b'_d^T K^{-1} b'_d`` and the centred hat diagonal ``1 - (K^{-1})_nn``.
    ``K^{-1}`` (well conditioned, ``K >= I``) is formed explicitly: a matrix product is faster
    than the triangular solve."""
    inv = inverse_lower(L)
    inv += np.tril(inv, -1).T  # the full symmetric inverse: a plain product is the fastest here
    C = inv @ B
    gamma = np.einsum("ij,ij->j", B, C)
    return C.T @ z, gamma, 1.0 - np.diag(inv)


def _primal_hat(B, T):
    """The centred hat diagonal ``diag(B' M'^{-1} B'^T)`` (``T``: lower triangle of ``M'^{-1}``)."""
    full = T + np.tril(T, -1).T
    return np.einsum("ij,ij->i", B @ full, B)


def weighted_ridge(X: np.ndarray, t: np.ndarray, sample_weight: np.ndarray,
                   relevance: np.ndarray, *, fit_intercept: bool = True, form: str = "auto",
                   compute_gamma: bool = True, compute_leverage: bool = False) -> RidgeSolution:
    """The weighted ridge solve on the active columns ``X`` (N x k) for targets ``t``, weights
    ``s_n >= 0`` and relevances ``a_d > 0``; ``form="auto"`` is dual while ``k > N``. The hat
    diagonal (``compute_leverage``) comes only with ``compute_gamma``, which factors its inverse."""
    n_samples, n_active = X.shape
    if form == "auto":
        form = "dual" if n_active > n_samples else "primal"
    Xc, tc, x_mean, t_mean = _centre(X, t, sample_weight, fit_intercept)
    root_w = np.sqrt(sample_weight)
    inv_root_a = 1.0 / np.sqrt(relevance)
    # B' = S^{1/2} Xc A^{-1/2};  z = S^{1/2} tc
    B = Xc * root_w[:, None]
    B *= inv_root_a[None, :]
    z = tc * root_w

    gamma = hat = None
    if n_active == 0:
        coef_scaled = np.zeros(0)
        if compute_gamma:
            gamma, hat = np.zeros(0), np.zeros(n_samples)
    elif form == "dual":
        K = B @ B.T
        K.flat[:: n_samples + 1] += 1.0
        L = linalg.cholesky(K, lower=True, overwrite_a=True, check_finite=False)
        if compute_gamma:
            coef_scaled, gamma, hat = _dual_with_gamma(L, B, z)
        else:
            u = linalg.solve_triangular(L, z, lower=True, check_finite=False)
            v = linalg.solve_triangular(L, u, lower=True, trans="T", check_finite=False)
            coef_scaled = B.T @ v
    elif form == "primal":
        G = B.T @ B
        M = G.copy()
        M.flat[:: n_active + 1] += 1.0
        c, low = linalg.cho_factor(M, lower=True, overwrite_a=True, check_finite=False)
        coef_scaled = linalg.cho_solve((c, low), B.T @ z, check_finite=False)
        if compute_gamma:
            # gamma_d = (M'^{-1} G')_dd, a sum with no 1 - x cancellation, from the lower
            # triangle T of the symmetric inverse: sum_j (T + T^T - diag T)_dj G_jd.
            T = inverse_lower(c)  # c is not needed after the solve above
            P = T * G
            gamma = P.sum(axis=0) + P.sum(axis=1) - np.diag(P)
            if compute_leverage:
                hat = _primal_hat(B, T)
    else:
        raise ValueError(f"form must be 'auto', 'primal' or 'dual', got {form!r}")

    coef = coef_scaled * inv_root_a
    if fit_intercept:
        intercept = 0.0 if t_mean is None else float(t_mean - x_mean @ coef)
    else:
        intercept = 0.0
    leverage = None
    if compute_leverage and hat is not None:
        total = float(np.sum(sample_weight))
        leverage = hat + sample_weight / total if x_mean is not None else hat
    return RidgeSolution(coef, intercept, gamma, form, leverage)


class RidgeSteps:
    """:func:`weighted_ridge` repeated on fixed columns and relevances with changing weights
    (one MCC-ARD iteration's w-steps). The dual form keeps the kernel ``P = X A^{-1} X^T`` and
    centres it in ``O(N^2)`` (``P - 1 c^T - c 1^T + q``, ``c = P s / sum s``,
    ``q = s^T P s / (sum s)^2``); the primal form solves ``B^T B + A`` (``B = S^{1/2} Xc``) by one
    ``posv``, deferring to :func:`weighted_ridge` when ``gamma`` is requested."""

    def __init__(self, X: np.ndarray, relevance: np.ndarray, *, fit_intercept: bool = True,
                 form: str = "auto"):
        self.X = X
        self.relevance = relevance
        self.fit_intercept = fit_intercept
        n_samples, n_active = X.shape
        if form == "auto":
            form = "dual" if n_active > n_samples else "primal"
        self.form = form
        if self.form == "dual" and n_active:
            scaled = X * (1.0 / np.sqrt(relevance))
            self.P = scaled @ scaled.T  # X A^{-1} X^T (symmetric rank-k product)

    def solve(self, t: np.ndarray, sample_weight: np.ndarray, *,
              compute_gamma: bool = False, compute_leverage: bool = False) -> RidgeSolution:
        """:func:`weighted_ridge` for targets ``t`` and these weights on the stored columns."""
        X, s = self.X, sample_weight
        n_samples, n_active = X.shape
        if n_active == 0 or (compute_gamma and self.form == "primal"):
            return weighted_ridge(X, t, s, self.relevance, fit_intercept=self.fit_intercept,
                                  form=self.form, compute_gamma=compute_gamma,
                                  compute_leverage=compute_leverage)
        total = float(s.sum())
        centre = self.fit_intercept and total > 0.0
        t_mean = float(s @ t) / total if centre else 0.0
        gamma = leverage = None
        if self.form == "dual":
            root = np.sqrt(s)
            if centre:  # K formed in place: one N x N array, not one per operation
                c = (self.P @ s) / total
                K = np.subtract(self.P, c[:, None])
                K -= c[None, :]
                K += float(s @ c) / total
                K *= root[:, None]
            else:
                K = self.P * root[:, None]
            K *= root[None, :]
            K.flat[:: n_samples + 1] += 1.0
            z = (t - t_mean) * root
            factor, info = linalg.lapack.dpotrf(K, lower=1, overwrite_a=1, clean=1)
            if info != 0:
                raise linalg.LinAlgError(f"potrf failed with info={info}")
            if compute_gamma:
                inv_root_a = 1.0 / np.sqrt(self.relevance)
                B = X - (s @ X) / total if centre else X.copy()
                B *= inv_root_a[None, :]
                B *= root[:, None]
                coef, gamma, hat = _dual_with_gamma(factor, B, z)
                coef *= inv_root_a
                if compute_leverage:
                    leverage = hat + s / total if centre else hat
            else:
                v, info = linalg.lapack.dpotrs(factor, z, lower=1)
                if info != 0:
                    raise linalg.LinAlgError(f"potrs failed with info={info}")
                u = root * v
                if centre:
                    u = u - s * (u.sum() / total)  # Xc^T u = X^T (u - s sum(u)/sum(s))
                coef = (X.T @ u) / self.relevance
        else:
            root = np.sqrt(s)
            B = X - (s @ X) / total if centre else X.copy()
            B *= root[:, None]
            M = B.T @ B
            M.flat[:: n_active + 1] += self.relevance
            rhs = B.T @ ((t - t_mean) * root)
            _, coef, info = linalg.lapack.dposv(M, rhs, lower=1, overwrite_a=1, overwrite_b=1)
            if info != 0:
                raise linalg.LinAlgError(f"posv failed with info={info}")
        if not self.fit_intercept:
            intercept = 0.0
        elif not centre:
            intercept = t_mean  # no sample carries weight: nothing determines the intercept
        else:
            intercept = t_mean - float(s @ (X @ coef)) / total
        return RidgeSolution(coef, intercept, gamma, self.form, leverage)


def posterior_covariance(X: np.ndarray, sample_weight: np.ndarray, relevance: np.ndarray, *,
                         fit_intercept: bool = True) -> np.ndarray:
    """Full ``Sigma = (X_c^T S X_c + A)^{-1}`` for the active columns (``k x k``)."""
    n_samples, n_active = X.shape
    if n_active == 0:
        return np.zeros((0, 0))
    Xc, _, _, _ = _centre(X, np.zeros(n_samples), sample_weight, fit_intercept)
    inv_root_a = 1.0 / np.sqrt(relevance)
    B = Xc * np.sqrt(sample_weight)[:, None] * inv_root_a[None, :]
    if n_active > n_samples:
        K = B @ B.T
        K.flat[:: n_samples + 1] += 1.0
        L = linalg.cholesky(K, lower=True, check_finite=False)
        V = linalg.solve_triangular(L, B, lower=True, check_finite=False)
        M_inv = np.eye(n_active) - V.T @ V
    else:
        M = B.T @ B
        M.flat[:: n_active + 1] += 1.0
        M_inv = linalg.cho_solve(linalg.cho_factor(M, lower=True, check_finite=False),
                                 np.eye(n_active), check_finite=False)
    return M_inv * inv_root_a[:, None] * inv_root_a[None, :]


def hat_diagonal(X: np.ndarray, sample_weight: np.ndarray, sigma: np.ndarray, *,
                 fit_intercept: bool = True) -> np.ndarray:
    """Hat diagonal of a weighted ridge fit on the active columns ``X`` with weights ``s``:
    ``H_nn = s_n / sum(s) + s_n x~_n^T Sigma x~_n`` (the first term and the weighted centring
    ``x~`` with an intercept only), ``sigma`` from :func:`posterior_covariance`."""
    s = np.asarray(sample_weight, dtype=float)
    total = s.sum()
    if fit_intercept and total > 0.0:
        base = s / total
        Xt = X - (s @ X) / total
    else:
        base = np.zeros_like(s)
        Xt = X
    if X.shape[1] == 0:
        return base
    return base + s * np.einsum("ij,ij->i", Xt @ sigma, Xt)


def loo_from_leverage(residuals: np.ndarray, leverage: np.ndarray,
                      sample_weight: np.ndarray | None = None) -> np.ndarray:
    """Leave-one-out residuals ``e_n / (1 - H_nn)`` of a linear smoother (``inf`` where
    ``H_nn >= 1``). With ``sample_weight`` ``c``, one unit of weight is left out
    (``H_nn / max(c_n, 1)``: integer weights act as repeated samples)."""
    e = np.asarray(residuals, dtype=float)
    leverage = np.asarray(leverage, dtype=float)
    if sample_weight is not None:
        leverage = leverage / np.maximum(sample_weight, 1.0)
    denom = 1.0 - leverage
    out = np.full_like(e, np.inf)
    ok = denom > 1e-12
    out[ok] = e[ok] / denom[ok]
    return out
