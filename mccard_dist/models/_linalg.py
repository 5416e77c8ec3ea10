"""Weighted ridge solves shared by the ARD and L1 estimators.

Every estimator in :mod:`mccard_dist.models` reduces one iteration to the same problem: for sample
weights ``s_n >= 0`` and per-feature relevances ``a_d > 0``, find

.. math::

    \\min_{w, b} \\sum_n s_n (t_n - b - x_n w)^2 + \\sum_d a_d w_d^2

with an unpenalised intercept ``b`` (optional). The solution is
``w = (X_c^T S X_c + A)^{-1} X_c^T S t_c`` where ``X_c`` and ``t_c`` are centred by their
*weighted* means, which is the exact profile of the intercept (the Schur complement), not a
plain mean-centring that outliers would move.

Two algebraically equal forms are offered, both on the rescaled matrix ``B' = S^{1/2} X_c A^{-1/2}``:

* primal: Cholesky of the ``k x k`` matrix ``I + B'^T B'`` (cheap when few features are active);
* dual (Woodbury): Cholesky of the ``N x N`` matrix ``K = I + B' B'^T`` (cheap while more features
  are active than samples).

Both scalings keep the factorised matrix ``>= I``, so samples whose weight underflows to exactly
zero simply drop out (no ``1 / s_n`` appears anywhere) and relevances near the pruning threshold do
not spoil the conditioning.

The ARD updates also need ``gamma_d = 1 - a_d Sigma_dd`` (the "well-determinedness" of ``w_d``).
Computing it by that subtraction cancels catastrophically as ``a_d`` grows; it is obtained instead
from expressions with no cancellation: ``gamma_d = ||L^{-1} b'_d||^2`` in the dual form and
``gamma_d = (M'^{-1} B'^T B')_dd`` in the primal form.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import linalg

__all__ = ["RidgeSolution", "RidgeSteps", "weighted_ridge", "choose_form", "posterior_covariance",
           "hat_diagonal", "loo_from_leverage"]

@dataclass(frozen=True)
class RidgeSolution:
    """Result of :func:`weighted_ridge` for the active columns it was given.

    Attributes
    ----------
    coef : ndarray of shape (k,)
        Ridge coefficients ``w``.
    intercept : float
        Unpenalised intercept (0.0 without intercept, or when every weight is zero).
    gamma : ndarray of shape (k,) or None
        ``1 - a_d Sigma_dd`` without cancellation (``None`` if not requested).
    form : {"primal", "dual"}
        The form that was used.
    leverage : ndarray of shape (N,) or None
        Diagonal of the hat matrix of this solve (:func:`hat_diagonal`), if requested.
    """

    coef: np.ndarray
    intercept: float
    gamma: np.ndarray | None
    form: str
    leverage: np.ndarray | None = None


def choose_form(n_samples: int, n_active: int) -> str:
    """Return ``"dual"`` while more features are active than samples, else ``"primal"``."""
    return "dual" if n_active > n_samples else "primal"


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
    """Dual-form solution from the lower Cholesky factor ``L`` of ``K = I + B' B'^T`` (consumed):
    the scaled coefficients ``B'^T K^{-1} z``, ``gamma_d = b'_d^T K^{-1} b'_d`` and
    ``1 - (K^{-1})_nn``, the hat diagonal of the centred problem
    (``B' (I + B'^T B')^{-1} B'^T = I - K^{-1}``).

    ``K^{-1}`` is formed explicitly (LAPACK potri; ``K >= I``, so it is well conditioned) and
    applied by one matrix product, ``C = K^{-1} B'``: twice the flops of the triangular solve
    ``L^{-1} B'`` but at matrix-product speed. Then ``gamma = colsum(B' * C)`` and
    ``B'^T K^{-1} z = C^T z``.
    """
    inv = inverse_lower(L)
    inv += np.tril(inv, -1).T  # the full symmetric inverse: a plain product is the fastest here
    C = inv @ B
    gamma = np.einsum("ij,ij->j", B, C)
    return C.T @ z, gamma, 1.0 - np.diag(inv)


def _primal_hat(B, T):
    """``diag(B' M'^{-1} B'^T)`` from the lower triangle ``T`` of ``M'^{-1}``, ``M' = I + B'^T B'``:
    the hat diagonal of the centred problem (``N k^2`` flops)."""
    full = T + np.tril(T, -1).T
    return np.einsum("ij,ij->i", B @ full, B)


def _with_base(hat, sample_weight, total, centre):
    """Hat diagonal of the problem with its intercept: ``s_n / sum(s)`` more when centred."""
    return hat + sample_weight / total if centre else hat


def weighted_ridge(
    X: np.ndarray,
    t: np.ndarray,
    sample_weight: np.ndarray,
    relevance: np.ndarray,
    *,
    fit_intercept: bool = True,
    form: str = "auto",
    compute_gamma: bool = True,
    compute_leverage: bool = False,
) -> RidgeSolution:
    """Solve the weighted ridge problem for the given (active) columns.

    Parameters
    ----------
    X : ndarray of shape (N, k)
        Design matrix restricted to the active features.
    t : ndarray of shape (N,)
        Targets.
    sample_weight : ndarray of shape (N,)
        Non-negative sample weights ``s_n`` (zeros allowed).
    relevance : ndarray of shape (k,)
        Positive, finite relevances ``a_d``.
    fit_intercept : bool
        Whether to profile out an unpenalised intercept.
    form : {"auto", "primal", "dual"}
        ``"auto"`` picks the dual form while ``k > N`` (:func:`choose_form`).
    compute_gamma : bool
        Whether to return ``gamma``.
    compute_leverage : bool
        Whether to return the hat diagonal (with ``compute_gamma`` only, which factors the
        inverse it needs).

    Returns
    -------
    RidgeSolution
    """
    n_samples, n_active = X.shape
    if form == "auto":
        form = choose_form(n_samples, n_active)
    if n_active == 0:
        xc, tc, _, t_mean = _centre(X, t, sample_weight, fit_intercept)
        intercept = 0.0 if t_mean is None else float(t_mean)
        empty = np.zeros(0)
        leverage = None
        if compute_gamma and compute_leverage:
            total = float(np.sum(sample_weight))
            leverage = _with_base(np.zeros(n_samples), sample_weight, total,
                                  fit_intercept and total > 0.0)
        return RidgeSolution(empty, intercept, empty if compute_gamma else None, form, leverage)

    Xc, tc, x_mean, t_mean = _centre(X, t, sample_weight, fit_intercept)
    root_w = np.sqrt(sample_weight)
    inv_root_a = 1.0 / np.sqrt(relevance)
    # B' = S^{1/2} Xc A^{-1/2};  z = S^{1/2} tc
    B = Xc * root_w[:, None]
    B *= inv_root_a[None, :]
    z = tc * root_w

    gamma = hat = None
    if form == "dual":
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
        leverage = _with_base(hat, sample_weight, total, x_mean is not None)
    return RidgeSolution(coef, intercept, gamma, form, leverage)


class RidgeSteps:
    """Repeated weighted ridge solves on fixed columns and relevances, with changing weights.

    The w-steps of one MCC-ARD iteration solve :func:`weighted_ridge` again and again with the same
    active columns and relevances and new sample weights. This object keeps what does not depend on
    the weights:

    * dual form (``k > N``): the kernel ``P = X A^{-1} X^T`` is formed once (``N^2 k``); the
      weighted centring is applied to it in ``O(N^2)``, ``Xc A^{-1} Xc^T = P - 1 c^T - c 1^T + q 1 1^T``
      with ``c = P s / sum(s)`` and ``q = s^T P s / sum(s)^2``, so each solve costs one ``N x N``
      Cholesky instead of ``N^2 k`` more;
    * primal form: ``Xc^T S Xc + A`` as the symmetric product ``B^T B`` of ``B = S^{1/2} Xc``
      (BLAS syrk, ``N k^2`` flops) and one LAPACK ``posv`` call (with ``gamma`` requested it
      defers to :func:`weighted_ridge`).

    The solutions are those of :func:`weighted_ridge` (same equations, rounding apart).
    """

    def __init__(self, X: np.ndarray, relevance: np.ndarray, *, fit_intercept: bool = True,
                 form: str = "auto"):
        self.X = X
        self.relevance = relevance
        self.fit_intercept = fit_intercept
        n_samples, n_active = X.shape
        self.form = choose_form(n_samples, n_active) if form == "auto" else form
        if self.form == "dual" and n_active:
            scaled = X * (1.0 / np.sqrt(relevance))
            self.P = scaled @ scaled.T  # X A^{-1} X^T (symmetric rank-k product)

    def solve(self, t: np.ndarray, sample_weight: np.ndarray, *,
              compute_gamma: bool = False, compute_leverage: bool = False) -> RidgeSolution:
        """:func:`weighted_ridge` for targets ``t`` and these weights (the stored columns,
        relevances and form). With ``compute_gamma`` the dual form still reuses the kernel for
        the factorisation; ``gamma`` then costs one ``N x N`` inverse and one ``N^2 k`` matrix
        product (:func:`_dual_with_gamma`). ``compute_leverage`` (with ``compute_gamma``) adds
        the hat diagonal."""
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
            Pc = self.P
            if centre:
                c = (self.P @ s) / total
                q = float(s @ c) / total
                Pc = Pc - c[:, None] - c[None, :] + q
            root = np.sqrt(s)
            K = Pc * root[:, None]
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
                    leverage = _with_base(hat, s, total, centre)
            else:
                v, info = linalg.lapack.dpotrs(factor, z, lower=1)
                if info != 0:
                    raise linalg.LinAlgError(f"potrs failed with info={info}")
                u = root * v
                if centre:
                    u = u - s * (u.sum() / total)  # Xc^T u = X^T (u - s sum(u)/sum(s))
                coef = (X.T @ u) / self.relevance
        else:
            # B = S^{1/2} Xc, so that M = B^T B + A is one symmetric rank-k product (BLAS syrk,
            # half the flops of the general product Xc^T (S Xc)).
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


def posterior_covariance(
    X: np.ndarray,
    sample_weight: np.ndarray,
    relevance: np.ndarray,
    *,
    fit_intercept: bool = True,
) -> np.ndarray:
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


def hat_diagonal(
    X: np.ndarray,
    sample_weight: np.ndarray,
    sigma: np.ndarray,
    *,
    fit_intercept: bool = True,
) -> np.ndarray:
    """Diagonal of the hat matrix of a weighted ridge fit, ``y_hat = H y``.

    With ``Z = [1, X]`` and the penalty on ``w`` only, ``H = Z (Z^T S Z + P)^{-1} Z^T S``; profiling
    out the intercept gives ``H_nn = s_n / sum(s) + s_n x~_n^T Sigma x~_n`` where ``x~`` is ``x``
    centred by the weighted mean and ``Sigma = (X~^T S X~ + A)^{-1}`` (:func:`posterior_covariance`).

    Parameters
    ----------
    X : ndarray of shape (N, k)
        Active columns.
    sample_weight : ndarray of shape (N,)
        The weights ``s_n`` of the fit.
    sigma : ndarray of shape (k, k)
        ``Sigma`` for the same weights and columns.
    fit_intercept : bool
        Whether the fit had an intercept.
    """
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
    ``H_nn >= 1``: the fit interpolates that sample, its held-out error is unbounded).

    With ``sample_weight`` ``c`` (in the smoother's weights), one unit of weight is left out, or
    the whole sample when ``c_n < 1``: ``H_nn / max(c_n, 1)``, for ``c_n >= 1`` the leverage of
    one of ``c_n`` copies of the sample, so integer weights give the residuals of the repeated
    samples (a sample of weight 0 keeps its residual)."""
    e = np.asarray(residuals, dtype=float)
    leverage = np.asarray(leverage, dtype=float)
    if sample_weight is not None:
        leverage = leverage / np.maximum(sample_weight, 1.0)
    denom = 1.0 - leverage
    out = np.full_like(e, np.inf)
    ok = denom > 1e-12
    out[ok] = e[ok] / denom[ok]
    return out
