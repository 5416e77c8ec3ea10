"""The paper authors' published MCC-ARD ("SBCL") and LS-ARD ("SBL"), as their MATLAB code (with
Li et al., 2025) runs them: a description of that algorithm, not a copy, to run next to this
package's reading. Separate estimators, as they differ in nearly every step: standardised data
without intercept, a zero start, the printed w-step, the exact Hessian, an unguarded a-step and
another stopping rule.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

from ._base import AT_LEAST_ONE, POSITIVE, RegressorBase

__all__ = ["AuthorsLSARDRegressor", "AuthorsMCCARDRegressor"]


class _Standardised(RegressorBase):
    """Fit on standardised data without intercept, mapped back so ``predict`` takes raw ``X``."""

    def fit(self, X, y):
        """Standardise ``X`` and ``y`` with their training mean and sample std, fit, map back.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self
        """
        self._validate_params()
        X, y, _ = self._validate_fit_data(X, y)
        x_mean, x_std = X.mean(axis=0), X.std(axis=0, ddof=1)
        x_std = np.where(x_std > 0, x_std, 1.0)  # a constant column stays 0 after centring
        y_mean, y_std = float(y.mean()), float(y.std(ddof=1))
        y_std = y_std if y_std > 0 else 1.0
        w, relevance, n_iter, converged = self._fit_standardised((X - x_mean) / x_std,
                                                                 (y - y_mean) / y_std)
        self.coef_standardised_ = w
        self.coef_ = w * y_std / x_std
        self.intercept_ = y_mean - float(x_mean @ self.coef_)
        self.active_ = w != 0.0
        self.relevance_ = np.where(self.active_, relevance, np.inf)
        self.n_iter_ = n_iter
        self.converged_ = converged
        return self

    def _leverage(self, X, e):  # pragma: no cover - leave-one-out is not offered
        raise NotImplementedError(f"{type(self).__name__} has no leave-one-out residuals")

    def _stop(self, iteration, a_old, a_new, n_before, n_after):
        """The authors' rule: from iteration 2, every relevance moved by under ``a_tol`` relative
        and nothing was pruned."""
        flag = bool(np.max(np.abs(a_new - a_old) / a_old, initial=0.0) < self.a_tol)
        return iteration >= 2 and flag and n_before == n_after


class AuthorsMCCARDRegressor(_Standardised):
    """MCC-ARD as the authors' published code runs it ("SBCL").

    Parameters
    ----------
    kernel_width : float, default=1.0
        Their ``hh``, **in standardised units of y** (the targets are divided by their sample std
        before fitting), unlike :class:`MCCARDRegressor`'s ``kernel_width`` in units of ``y``.
    w_steps : int, default=10
        Maximum w-steps per iteration.
    w_tol : float, default=1e-4
        The w-steps stop once the objective changes by less than this, relative.
    max_iter : int, default=500
        Their ``Nlearn``.
    relevance_max : float, default=1e6
        Their ``aaMax``: pruning threshold.
    a_tol : float, default=0.01
        Stop once every relevance moved by less than this, relative, and nothing was pruned.

    Attributes
    ----------
    coef_, intercept_ : ndarray of shape (n_features,), float
        For raw ``X`` and ``y`` (mapped back from the standardised fit).
    coef_standardised_ : ndarray of shape (n_features,)
        Their output ``w``, in standardised units.
    relevance_ : ndarray of shape (n_features,)
        Final relevances (``inf`` for pruned features).
    active_ : ndarray of bool
    n_iter_ : int
    converged_ : bool

    Notes
    -----
    On standardised ``X`` and ``y``, without intercept, from ``w = 0`` and ``a = 1``; each
    iteration on the active features:

    1. up to ``w_steps`` w-steps ``w = (X^T K X + A)^{-1} X^T K y``, ``K = diag(exp(-e^2/2h))``,
       the w-step exactly as printed in the paper (no ``1/h``: it assumes unit inlier noise
       variance, in standardised units), stopping once ``h sum exp(-e^2/2h) - w^T A w / 2``
       changes by less than ``w_tol`` relative to its value before the step;
    2. ``S = (-X^T diag(b) X + A)^{-1}`` with ``b = exp(-e^2/2h) (e^2/h - 1) / h``, the exact
       negative Hessian of ``sum exp(-e^2/2h) - w^T A w / 2``;
    3. ``a <- (1 - a diag(S)) / w^2``, unguarded (a negative ``S_dd`` or ``1 - a S_dd`` is used
       as it comes);
    4. features with ``a >= relevance_max`` are pruned; stop by :meth:`_stop`, when no feature
       is left, or after ``max_iter`` iterations.

    Examples
    --------
    >>> from mccard_dist import AuthorsMCCARDRegressor, make_paper_data
    >>> data = make_paper_data(seed=0, psi=0.0, tau=2.0, n_features=100)
    >>> model = AuthorsMCCARDRegressor(kernel_width=3.0).fit(data.X_train, data.y_train)
    >>> bool(model.score(data.X_test, data.y_test) > 0.9)
    True
    """

    #: what the pipeline reads about this estimator (:func:`mccard_dist.methods.kind_of`)
    mccard_method = {"label": "MCC-ARD (authors' algorithm)", "width_param": "kernel_width",
                     "auto_width": True, "width_unit": "standardised y²"}

    _parameter_constraints = {
        "kernel_width": [POSITIVE],
        "w_steps": [AT_LEAST_ONE],
        "w_tol": [POSITIVE],
        "max_iter": [AT_LEAST_ONE],
        "relevance_max": [POSITIVE],
        "a_tol": [POSITIVE],
    }

    def __init__(self, kernel_width=1.0, *, w_steps=10, w_tol=1e-4, max_iter=500,
                 relevance_max=1e6, a_tol=0.01):
        self.kernel_width = kernel_width
        self.w_steps = w_steps
        self.w_tol = w_tol
        self.max_iter = max_iter
        self.relevance_max = relevance_max
        self.a_tol = a_tol

    def _objective(self, e, w, a):
        h = self.kernel_width
        return h * float(np.sum(np.exp(-e * e / (2.0 * h)))) - 0.5 * float(np.sum(a * w * w))

    def _fit_standardised(self, X, y):
        h = self.kernel_width
        n_features = X.shape[1]
        w = np.zeros(n_features)
        a = np.ones(n_features)
        active = np.arange(n_features)
        converged = False
        iteration = 0
        for iteration in range(1, self.max_iter + 1):
            Xa, wa, aa = X[:, active], w[active], a[active]
            e = y - Xa @ wa
            obj_old = self._objective(e, wa, aa)
            for _ in range(self.w_steps):
                k = np.exp(-e * e / (2.0 * h))
                M = (Xa * k[:, None]).T @ Xa
                M.flat[:: M.shape[0] + 1] += aa
                wa = linalg.solve(M, Xa.T @ (k * y), assume_a="sym", check_finite=False)
                e = y - Xa @ wa
                obj = self._objective(e, wa, aa)
                done = abs(obj - obj_old) / abs(obj_old) < self.w_tol
                obj_old = obj
                if done:
                    break
            b = np.exp(-e * e / (2.0 * h)) * (e * e / h - 1.0) / h
            H = -(Xa * b[:, None]).T @ Xa
            H.flat[:: H.shape[0] + 1] += aa
            s_diag = np.diag(linalg.inv(H, check_finite=False))
            with np.errstate(divide="ignore", invalid="ignore"):
                a_new = (1.0 - aa * s_diag) / (wa * wa)
            keep = a_new < self.relevance_max
            stop = self._stop(iteration, aa, a_new, active.size, int(keep.sum()))
            w[active], a[active] = wa, a_new
            w[active[~keep]] = 0.0
            active = active[keep]
            if active.size == 0 or stop:
                converged = True
                break
        return w, a, iteration, converged


class AuthorsLSARDRegressor(_Standardised):
    """LS-ARD as the authors' published code runs it ("SBL"): MacKay updates on standardised
    data, no intercept, from ``sigma^2 = 1`` and ``a = 1``; the same stopping rule and pruning as
    :class:`AuthorsMCCARDRegressor`. The output is the posterior mean on the final active set with
    the final relevances and noise variance (``noise_var_``, standardised units).

    Parameters
    ----------
    max_iter : int, default=500
    relevance_max : float, default=1e6
    a_tol : float, default=0.01
    """

    #: what the pipeline reads about this estimator (:func:`mccard_dist.methods.kind_of`)
    mccard_method = {"label": "LS-ARD (authors' algorithm)"}

    _parameter_constraints = {
        "max_iter": [AT_LEAST_ONE],
        "relevance_max": [POSITIVE],
        "a_tol": [POSITIVE],
    }

    def __init__(self, *, max_iter=500, relevance_max=1e6, a_tol=0.01):
        self.max_iter = max_iter
        self.relevance_max = relevance_max
        self.a_tol = a_tol

    def _fit_standardised(self, X, y):
        n_samples, n_features = X.shape
        a = np.ones(n_features)
        active = np.arange(n_features)
        sigma2 = 1.0
        converged = False
        iteration = 0
        for iteration in range(1, self.max_iter + 1):
            Xa, aa = X[:, active], a[active]
            M = Xa.T @ Xa / sigma2
            M.flat[:: M.shape[0] + 1] += aa
            Sigma = np.linalg.inv(M)  # LAPACK gesv, as their inv: the iteration is chaotic
            mu = Sigma @ (Xa.T @ y) / sigma2
            gamma = 1.0 - aa * np.diag(Sigma)
            with np.errstate(divide="ignore", invalid="ignore"):
                a_new = gamma / (mu * mu)
            sigma2 = float(np.sum((y - Xa @ mu) ** 2)) / (n_samples - float(np.sum(gamma)))
            keep = a_new < self.relevance_max
            stop = self._stop(iteration, aa, a_new, active.size, int(keep.sum()))
            a[active] = a_new
            active = active[keep]
            if active.size == 0 or stop:
                converged = active.size > 0 or stop
                break
        w = np.zeros(n_features)
        if active.size:
            Xa, aa = X[:, active], a[active]
            M = Xa.T @ Xa / sigma2
            M.flat[:: M.shape[0] + 1] += aa
            w[active] = linalg.solve(M, Xa.T @ y / sigma2, assume_a="sym", check_finite=False)
        self.noise_var_ = sigma2
        return w, a, iteration, converged
