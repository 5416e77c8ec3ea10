"""MCC-L1: L1-regularised maximum-correntropy regression."""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lasso
from sklearn.utils._param_validation import StrOptions

from ._base import (AT_LEAST_ONE, NON_NEGATIVE, POSITIVE, WIDTH, RegressorBase, check_params,
                    check_sample_weight, relative_change, weighted_median)
from ._likelihoods import kernel
from ._linalg import loo_from_leverage, weighted_ridge
from ._width import WidthSchedule, is_auto

__all__ = ["MCCL1Regressor", "mcc_l1_alpha_max", "mcc_l1_objective"]


def mcc_l1_objective(X, y, coef, intercept, kernel_width, alpha, sample_weight=None):
    """``F(w, b) = (h/N) sum_n (1 - exp(-e_n^2 / 2h)) + alpha ||w||_1`` (to be minimised); with
    ``sample_weight`` ``c``, ``(h / sum c) sum_n c_n (1 - exp(-e_n^2 / 2h)) + alpha ||w||_1``."""
    return _objective(y - intercept - X @ coef, coef, kernel_width, alpha, sample_weight)


def _objective(e, coef, h, alpha, sample_weight=None):
    """:func:`mcc_l1_objective` from the residuals ``e``."""
    loss = -np.expm1(-np.square(e) / (2.0 * h))
    mean = np.mean(loss) if sample_weight is None else (sample_weight @ loss) / sample_weight.sum()
    return float(h * mean + alpha * np.abs(coef).sum())


def _residual(X, y, coef, intercept, design_t=None):
    """``y - intercept - X coef`` through the non-zero coefficients (``design_t``: ``X``
    transposed, C-ordered, whose rows are gathered faster than ``X``'s columns)."""
    nonzero = np.flatnonzero(coef)
    if design_t is not None:
        return y - intercept - coef[nonzero] @ design_t[nonzero]
    return y - intercept - X[:, nonzero] @ coef[nonzero]


def _robust_location(y, h, sample_weight=None, max_iter=200, tol=1e-10):
    """Maximiser of ``sum_n c_n exp(-(y_n - b)^2 / 2h)`` by half-quadratic steps from the
    (weighted) median."""
    b = weighted_median(y, sample_weight)
    for _ in range(max_iter):
        kappa = kernel(y - b, h)
        if sample_weight is not None:
            kappa = kappa * sample_weight
        total = kappa.sum()
        if total <= 0.0:
            return b
        b_new = float(kappa @ y / total)
        if abs(b_new - b) <= tol * (1.0 + abs(b)):
            return b_new
        b = b_new
    return b


def mcc_l1_alpha_max(X, y, kernel_width, fit_intercept=True, sample_weight=None):
    """Smallest ``alpha`` for which ``w = 0`` satisfies the first-order conditions of MCC-L1.

    With ``b0`` the robust location of ``y`` (or 0 without intercept) and the kernel values
    ``kappa_n = exp(-(y_n - b0)^2 / 2h)``:
    ``alpha_max = max_d |sum_n kappa_n (y_n - b0) x_nd| / N`` (with ``sample_weight`` ``c``:
    ``kappa_n`` times ``c_n``, and ``sum c`` for ``N``).
    Grids of ``alpha`` are conveniently given as fractions of this value. For
    ``kernel_width="auto"`` it is taken at the width an auto fit starts from, ``var(y)``.
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ValueError(f"X must be 2-D and y 1-D of matching length; got {X.shape} and {y.shape}")
    check_params({"kernel_width": WIDTH}, {"kernel_width": kernel_width}, "mcc_l1_alpha_max")
    sw = check_sample_weight(sample_weight, X)
    if is_auto(kernel_width):
        kernel_width = WidthSchedule(y, weights=sw).h
    b0 = _robust_location(y, kernel_width, sw) if fit_intercept else 0.0
    r = y - b0
    kappa = kernel(r, kernel_width)
    if sw is not None:
        kappa = kappa * sw
    total = X.shape[0] if sw is None else float(sw.sum())
    return float(np.max(np.abs(X.T @ (kappa * r)), initial=0.0) / total)


def _active_set_leverage(Z, weight, fit_intercept):
    """Hat diagonal of the weighted least-squares fit on the columns ``Z`` (plus an intercept)."""
    root = np.sqrt(weight)
    if fit_intercept:
        Z = np.hstack([np.ones((Z.shape[0], 1)), Z])
    if Z.shape[1] == 0:
        return np.zeros(Z.shape[0])
    U, sv, _ = np.linalg.svd(Z * root[:, None], full_matrices=False)
    rank = int(np.sum(sv > sv[0] * max(Z.shape) * np.finfo(float).eps)) if sv[0] > 0 else 0
    return np.einsum("ij,ij->i", U[:, :rank], U[:, :rank])


class MCCL1Regressor(RegressorBase):
    """Robust sparse regression by L1-regularised maximum correntropy (MCC-L1).

    Minimises ``F(w, b) = (h/N) sum_n (1 - exp(-e_n^2 / 2h)) + alpha ||w||_1``, i.e. maximises
    the correntropy ``sum_n exp(-e_n^2/2h) - lambda ||w||_1`` with ``alpha = h lambda / N``.
    As ``h`` grows, ``F`` tends to the Lasso objective ``||e||^2 / 2N + alpha ||w||_1``, so
    ``alpha`` has scikit-learn's meaning.

    Parameters
    ----------
    kernel_width : float or "auto", default=1.0
        Kernel width ``h > 0``, or ``"auto"``: set inside the fit by the rule of
        :class:`~mccard_dist.MCCARDRegressor` (Notes there), from the leave-one-out residuals of
        each half-quadratic step (``solver="cd"`` or ``"lasso"``). ``alpha`` keeps its value
        while ``h`` moves, so it has the Lasso's meaning on the samples the fit treats as inliers.
    alpha : float, default=0.1
        L1 penalty (``>= 0``); see :func:`mcc_l1_alpha_max` for the scale.
    solver : {"cd", "lasso", "em"}, default="cd"
        ``"cd"``: half-quadratic outer loop (sample weights ``kappa_n`` from the residuals) around
        a weighted-Lasso solve by cyclic coordinate descent on the weighted, centred columns of
        a working set (compiled by numba, with scikit-learn's stopping test at ``tol=1e-8``),
        warm-started, at most 50 sweeps per outer iteration: each sweep lowers the surrogate,
        so ``F`` still decreases monotonically. ``"lasso"``: the same
        loop through scikit-learn's ``Lasso`` with ``sample_weight``, a slower reference route
        with scikit-learn's own inner solver and stopping test (it stops at slightly different
        points). ``"em"``: the EM method of Figueiredo (2003) cited by the paper, majorising the
        correntropy term (weights ``kappa_n``) and ``|w_d|`` (by ``w_d^2 / 2|w_d'| + |w_d'|/2``)
        into a weighted ridge problem, so ``F`` decreases monotonically; coefficients below
        ``zero_tol * max |w|`` are set to exactly zero (EM reaches zeros only in the limit).
    working_set : bool, default=True
        ``"cd"`` only: sweep only a working set's columns (the non-zero coefficients and the
        columns violating a zero coefficient's optimality condition, checked on all columns
        after each inner solve): the same descent on fewer columns. ``False`` sweeps every
        column, for checking that the working set changes nothing.
    max_iter : int, default=500
        Maximum outer iterations (EM: MM iterations).
    tol : float, default=1e-6
        ``"cd"``: stop when the relative decrease of ``F`` (monotone) is below ``tol``.
        ``"lasso"`` and ``"em"``: stop when the relative decrease of ``F`` and the change of
        ``w`` relative to ``max |w|`` are both below ``tol``. On flat objectives the test on
        ``w`` takes many more outer iterations than the test on ``F``.
    zero_tol : float, default=1e-8
        EM only: relative magnitude below which a coefficient is set to zero.
    fit_intercept : bool, default=True
        Fit an unpenalised intercept (weighted by ``kappa``).

    Attributes
    ----------
    kernel_width_ : float
        The width ``h`` of the final fit (``kernel_width`` itself when it is a number).
    kernel_width_path_ : ndarray
        ``"auto"``: the start width and the width after each update; else ``[kernel_width]``.
    coef_, intercept_ : ndarray of shape (n_features,), float
    active_ : ndarray of bool, shape (n_features,)
        Non-zero coefficients.
    outlier_weights_ : ndarray of shape (n_samples,)
        Final ``kappa_n``.
    objective_ : float
        Final ``F(w, b)``.
    n_iter_ : int
    converged_ : bool
    n_features_in_ : int

    Examples
    --------
    >>> from mccard_dist import MCCL1Regressor, make_paper_data
    >>> data = make_paper_data(seed=0, psi=0.2, tau=5.0, n_features=100)
    >>> model = MCCL1Regressor(kernel_width=1.0, alpha=0.02).fit(data.X_train, data.y_train)
    >>> bool(model.score(data.X_test, data.y_test) > 0.9)
    True
    """

    #: what the pipeline reads about this estimator (:func:`mccard_dist.methods.kind_of`)
    mccard_method = {
        "label": "MCC-L1", "width_param": "kernel_width", "auto_width": True, "alo": True,
        "penalty_name": "alpha_ratio", "penalty_scale": "mccard_dist.models:mcc_l1_alpha_max",
        "path": "mccard_dist.models.mcc_l1_path:fit_path", "no_path_solvers": ("em",),
        "solver_params": ("solver",)}

    _parameter_constraints = {
        "kernel_width": WIDTH,
        "alpha": [NON_NEGATIVE],
        "solver": [StrOptions({"cd", "lasso", "em"})],
        "working_set": ["boolean"],
        "max_iter": [AT_LEAST_ONE],
        "tol": [POSITIVE],
        "zero_tol": [NON_NEGATIVE],
        "fit_intercept": ["boolean"],
    }

    def __init__(self, kernel_width=1.0, alpha=0.1, *, solver="cd", working_set=True,
                 max_iter=500, tol=1e-6, zero_tol=1e-8, fit_intercept=True):
        self.kernel_width = kernel_width
        self.alpha = alpha
        self.solver = solver
        self.working_set = working_set
        self.max_iter = max_iter
        self.tol = tol
        self.zero_tol = zero_tol
        self.fit_intercept = fit_intercept

    def _validate_params(self):
        super()._validate_params()
        if is_auto(self.kernel_width) and self.solver == "em":
            raise ValueError("kernel_width='auto' needs solver='cd' or 'lasso' (the half-quadratic "
                             "loop); set a number for solver='em'")

    def _leverage(self, X, e):
        """Hat diagonal of the weighted least-squares refit on the active set (weights ``kappa``):
        the L1 penalty is locally linear there (the Lasso's leave-one-out formula)."""
        return _active_set_leverage(X[:, self.active_], self._kappa(e, self.kernel_width_),
                                    self.fit_intercept)

    def _kappa(self, e, h):
        """The half-quadratic weights ``c_n exp(-e_n^2 / 2h)`` (``c``: the fit's weights)."""
        kappa = kernel(e, h)
        return kappa if self._fit_weights is None else kappa * self._fit_weights

    def fit(self, X, y, sample_weight=None):
        """Fit MCC-L1 from a cold start (``w = 0``, kernel weights 1).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), optional
            Weights ``c_n >= 0`` of the samples' correntropy terms, ``F = (h / sum c) sum_n c_n
            (1 - exp(-e_n^2 / 2h)) + alpha ||w||_1``: an integer weight acts as that many copies
            of the sample and a weight of 0 drops it (as ``Lasso``'s ``sample_weight``).

        Returns
        -------
        self : MCCL1Regressor
        """
        self._validate_params()
        X, y, sw = self._validate_fit_data(X, y, sample_weight)
        return self._fit_arrays(X, y, sample_weight=sw)

    def _fit_arrays(self, X, y, start=None, alpha_previous=None, sample_weight=None,
                    design_t=None):
        """:meth:`fit` on validated arrays. ``start``: ``(coef, intercept)`` of a path's previous
        fit at ``alpha_previous``, from which the outer loop starts (and whose penalty the first
        inner solve's strong rule screens from); ``design_t``: ``X`` transposed, C-ordered (a
        path's fits share it)."""
        self._fit_weights = sample_weight
        auto = is_auto(self.kernel_width)
        schedule = WidthSchedule(y, weights=sample_weight) if auto else None
        if self.solver == "em":
            coef, intercept, n_iter, converged = self._fit_em(X, y)
        else:
            if self.solver == "cd" and design_t is None:
                design_t = np.ascontiguousarray(X.T, dtype=np.float64)
            step = (self._cd_step(X, y, alpha_previous, design_t) if self.solver == "cd"
                    else self._lasso_step(X, y))
            coef, intercept, n_iter, converged = self._fit_half_quadratic(
                X, y, step, schedule, start, design_t)
        h = schedule.h if auto else self.kernel_width
        if not converged:
            warnings.warn(f"MCC-L1 ({self.solver}) did not converge in max_iter={self.max_iter} "
                          f"iterations (tol={self.tol!r}).", ConvergenceWarning, stacklevel=4)
        self.coef_ = coef
        self.intercept_ = float(intercept) if self.fit_intercept else 0.0
        self.active_ = coef != 0.0
        self.kernel_width_ = float(h)
        self.kernel_width_path_ = np.array(schedule.path if auto else [h], dtype=float)
        e = _residual(X, y, coef, self.intercept_, design_t)
        self.outlier_weights_ = kernel(e, h)
        self.objective_ = _objective(e, coef, h, self.alpha, sample_weight)
        self.n_iter_ = n_iter
        self.converged_ = converged
        return self

    def _stop(self, f_old, f_new, coef_old, coef_new):
        df = (f_old - f_new) / max(abs(f_new), 1e-300)
        if self.solver == "cd":
            return df <= self.tol
        return df <= self.tol and relative_change(coef_new, coef_old) <= self.tol

    def _fit_half_quadratic(self, X, y, lasso_step, schedule=None, start=None, design_t=None):
        """Outer loop of ``cd``/``lasso``: weights ``kappa`` from the residuals, then
        ``lasso_step(kappa, total, coef) -> (coef, intercept)``. A :class:`WidthSchedule`'s width
        is updated from each step's leave-one-out residuals; the loop goes on while it moves."""
        n_samples, n_features = X.shape
        sw = self._fit_weights
        h = schedule.h if schedule is not None else self.kernel_width
        if start is None:
            kappa = np.ones(n_samples) if sw is None else sw.copy()
            coef = np.zeros(n_features)
            intercept = 0.0
        else:
            coef, intercept = np.array(start[0], dtype=float), float(start[1])
            kappa = self._kappa(_residual(X, y, coef, intercept, design_t), h)
        f_old = np.inf
        for n_iter in range(1, self.max_iter + 1):
            total = kappa.sum()
            if total <= 0.0:
                return coef, intercept, n_iter, False
            if self.alpha == 0.0:
                sol = weighted_ridge(X, y, kappa, np.full(n_features, 1e-12),
                                     fit_intercept=self.fit_intercept, compute_gamma=False)
                new_coef, new_intercept = sol.coef, sol.intercept
            else:
                new_coef, new_intercept = lasso_step(kappa, total, coef)
            e = _residual(X, y, new_coef, new_intercept, design_t)
            f_new = _objective(e, new_coef, h, self.alpha, sw)
            done = self._stop(f_old, f_new, coef, new_coef)
            coef, intercept, f_old = new_coef, new_intercept, f_new
            if schedule is not None and not schedule.settled:
                leverage = _active_set_leverage(X[:, coef != 0.0], kappa, self.fit_intercept)
                h = schedule.update(loo_from_leverage(e, leverage, sw))
                f_old = _objective(e, coef, h, self.alpha, sw)
                done = False
            if done:
                return coef, intercept, n_iter, True
            kappa = self._kappa(e, h)
        return coef, intercept, self.max_iter, False

    def _cd_step(self, X, y, alpha_previous=None, design_t=None):
        """Weighted Lasso step by coordinate descent, at most 50 sweeps (the first screened by
        the strong rule from ``alpha_previous``, on a path), compiled
        (:mod:`._lasso_kernels`); ``design_t``: ``X`` transposed, C-ordered."""
        from ._lasso_kernels import weighted_lasso_step

        n_samples = X.shape[0]
        size = n_samples if self._fit_weights is None else float(self._fit_weights.sum())
        screen = [alpha_previous]  # the first step only

        y = np.ascontiguousarray(y, dtype=np.float64)

        def step(kappa, total, coef):
            # (1/2M) sum kappa e^2 + alpha |w|_1 = (total/M) [(1/2N) sum s e^2 + alpha' |w|_1]
            # with M = size, s = kappa N / total and alpha' = alpha M / total
            s = kappa * (n_samples / total)
            alpha = self.alpha * size / total
            previous, screen[0] = screen[0], None
            first = alpha if previous is None else min(alpha, (2.0 * self.alpha - previous)
                                                       * size / total)
            new_coef, intercept, _ = weighted_lasso_step(
                design_t, y, s, coef, alpha, first, 50, 1e-8, self.fit_intercept, self.working_set)
            return new_coef, intercept

        return step

    def _lasso_step(self, X, y):
        """Weighted Lasso step through scikit-learn's warm-started Lasso."""
        size = X.shape[0] if self._fit_weights is None else float(self._fit_weights.sum())
        lasso = Lasso(alpha=1.0, fit_intercept=self.fit_intercept, warm_start=True,
                      max_iter=50, tol=1e-8, selection="cyclic")

        def step(kappa, total, coef):
            # scikit-learn rescales the sample weights to sum to N, hence the alpha conversion
            lasso.alpha = self.alpha * size / total
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                lasso.fit(X, y, sample_weight=kappa, check_input=False)
            return lasso.coef_.copy(), float(lasso.intercept_)

        return step

    def _fit_em(self, X, y):
        n_samples, n_features = X.shape
        h = self.kernel_width
        sw = self._fit_weights
        size = n_samples if sw is None else float(sw.sum())
        penalty = size * self.alpha  # sum kappa e^2 + N alpha sum_d w_d^2 / |w_d'|
        start = weighted_ridge(X, y, np.ones(n_samples) if sw is None else sw,
                               np.full(n_features, max(penalty, 1e-12)),
                               fit_intercept=self.fit_intercept, compute_gamma=False)
        coef, intercept = start.coef, start.intercept
        f_old = mcc_l1_objective(X, y, coef, intercept, h, self.alpha, sw)
        for n_iter in range(1, self.max_iter + 1):
            kappa = self._kappa(y - intercept - X @ coef, h)
            if not kappa.any():
                return coef, intercept, n_iter, False
            magnitude = np.abs(coef)
            active = np.flatnonzero(magnitude > 0.0)
            relevance = (np.full(active.size, 1e-12) if penalty == 0.0
                         else penalty / magnitude[active])
            sol = weighted_ridge(X[:, active], y, kappa, relevance,
                                 fit_intercept=self.fit_intercept, compute_gamma=False)
            new_coef = np.zeros(n_features)
            new_coef[active] = sol.coef
            small = np.abs(new_coef) <= self.zero_tol * np.max(np.abs(new_coef), initial=0.0)
            new_coef[small] = 0.0
            new_intercept = sol.intercept
            f_new = mcc_l1_objective(X, y, new_coef, new_intercept, h, self.alpha, sw)
            done = self._stop(f_old, f_new, coef, new_coef)
            coef, intercept, f_old = new_coef, new_intercept, f_new
            if done:
                return coef, intercept, n_iter, True
        return coef, intercept, self.max_iter, False
