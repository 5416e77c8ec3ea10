"""MCC-L1 with its kernel width and penalty chosen by cross-validation over paths, like
``LassoCV``."""

from __future__ import annotations

import warnings

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import check_scoring
from sklearn.model_selection import check_cv
from sklearn.utils.validation import check_is_fitted, validate_data

from ._base import FIT_ERRORS, Integer, Options, Real, check_sample_weight
from .cv import DEFAULT_KERNEL_WIDTHS, check_widths, search_results
from .mcc_l1 import MCCL1Regressor, mcc_l1_alpha_max
from .mcc_l1_path import iter_path, iter_width_path, penalty_sequence

__all__ = ["MCCL1RegressorCV"]

_FITTED = ("coef_", "intercept_", "active_", "outlier_weights_", "objective_", "n_iter_",
           "converged_")


def _path_scores(base, X, y, train, test, widths, alphas, route, scorer, sample_weight=None):
    """Validation scores of one path on one fold, one per ``(widths[k], alphas[k])`` (widths
    decreasing for route ``width``; one width and decreasing penalties for ``penalty``; a
    single fit for ``none``); NaN from the first fit that fails on. ``sample_weight`` weights
    the fits and the scores."""
    scores = np.full(len(alphas), np.nan)
    Xt, yt = X[train], y[train]
    sw_train, score_kw = None, {}
    if sample_weight is not None:
        sw_train, score_kw = sample_weight[train], {"sample_weight": sample_weight[test]}
    if route == "width":
        fits = iter_width_path(base, Xt, yt, widths, alphas, sw_train)
    else:
        fits = iter_path(base, Xt, yt, alphas, warm_start=route == "penalty",
                         sample_weight=sw_train)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            for k, fitted in enumerate(fits):
                scores[k] = scorer(fitted, X[test], y[test], **score_kw)
    except FIT_ERRORS:
        pass
    return scores


class MCCL1RegressorCV(RegressorMixin, BaseEstimator):
    """MCC-L1 whose kernel width and L1 penalty are chosen by cross-validation, then refitted.

    Every fold fits the candidates as warm-started paths (``path``): one joblib task per path
    and fold, so ``n_jobs`` runs them in parallel and ``with joblib.parallel_backend("dask"):``
    sends them to a Dask cluster. The refit on all the data walks the chosen candidate's path
    down to it, so it is the kind of fit the CV scored.

    Parameters
    ----------
    kernel_widths : sequence of float, default=DEFAULT_KERNEL_WIDTHS
        Candidate widths ``h > 0`` (squared units of y).
    alphas : array-like, optional
        The penalties tried at every width. Default: for each width, ``n_alphas`` log-spaced
        from :func:`mcc_l1_alpha_max` of all the data down to ``eps`` times it (as ``LassoCV``
        takes its grid from all the data).
    n_alphas : int, default=30
    eps : float, default=1e-2
        With more features than samples, penalties far below ``alpha_max`` interpolate the
        training data; ``LassoCV``'s ``1e-3`` would spend most of the path there.
    cv : int, cross-validation generator or iterable, default=5
        As in scikit-learn (:func:`sklearn.model_selection.check_cv`).
    scoring : str or callable, default="neg_mean_absolute_error"
        Validation score, higher is better (robust to outliers in the validation folds).
    n_jobs : int, default=None
        Parallel paths (joblib; ``-1``: all cores).
    path : {"width", "penalty", "none"}, default="width"
        ``"width"``: one path per column of ``alphas_`` (the same fraction of each width's
        ``alpha_max`` with the default grid) over the kernel widths, widest first, each fit
        starting from the previous one (a continuation from near-Lasso fits). ``"penalty"``: one
        path per kernel width over the penalties, largest first, as ``LassoCV`` does
        (:func:`mcc_l1_path`). ``"none"``: every (width, penalty, fold) fitted from ``w = 0``, as
        :class:`~sklearn.model_selection.GridSearchCV` over :class:`MCCL1Regressor` does (the
        same scores and choice). The objective is not convex, so at small widths the routes can
        end at different fits (:func:`mcc_l1_path`).
    solver : {"cd", "lasso"}, default="cd"
    max_iter, tol, working_set, fit_intercept
        Passed to every :class:`MCCL1Regressor` fit.
    verbose : int, default=0

    Attributes
    ----------
    kernel_width_, alpha_ : float
        The choice: the best mean validation score, the first in (``kernel_widths``, decreasing
        penalty) order among equals.
    alphas_ : ndarray of shape (n_widths, n_alphas)
        The penalties of each width, decreasing.
    best_score_ : float
    best_index_ : int
        Index of the choice in ``cv_results_`` (width-major, penalties decreasing).
    cv_results_ : dict of ndarray
        ``param_kernel_width``, ``param_alpha``, ``split{k}_test_score``, ``mean_test_score``,
        ``std_test_score``, ``rank_test_score``, as :class:`GridSearchCV` has them.
    best_estimator_ : MCCL1Regressor
    coef_, intercept_, active_, outlier_weights_, objective_, n_iter_, converged_
        The refitted estimator's.
    n_features_in_ : int

    Examples
    --------
    >>> from mccard_dist import MCCL1RegressorCV, make_paper_data
    >>> d = make_paper_data(seed=0, psi=0.2, tau=5.0, n_train=100, n_features=50, n_relevant=5)
    >>> model = MCCL1RegressorCV(kernel_widths=[1.0, 10.0], n_alphas=8, cv=3)
    >>> model.fit(d.X_train, d.y_train).alphas_.shape
    (2, 8)
    """

    _constraints = {
        "n_alphas": Integer(1),
        "eps": Real(0.0, 1.0, low_open=True, high_open=True),
        "path": Options(("width", "penalty", "none")),
        "solver": Options(("cd", "lasso")),
    }

    def __init__(self, kernel_widths=DEFAULT_KERNEL_WIDTHS, *, alphas=None, n_alphas=30,
                 eps=1e-2, cv=5, scoring="neg_mean_absolute_error", n_jobs=None,
                 path="width", solver="cd", max_iter=500, tol=1e-6, working_set=True,
                 fit_intercept=True, verbose=0):
        self.kernel_widths = kernel_widths
        self.alphas = alphas
        self.n_alphas = n_alphas
        self.eps = eps
        self.cv = cv
        self.scoring = scoring
        self.n_jobs = n_jobs
        self.path = path
        self.solver = solver
        self.max_iter = max_iter
        self.tol = tol
        self.working_set = working_set
        self.fit_intercept = fit_intercept
        self.verbose = verbose

    def _base(self, h):
        return MCCL1Regressor(kernel_width=h, solver=self.solver, max_iter=self.max_iter,
                              tol=self.tol, working_set=self.working_set,
                              fit_intercept=self.fit_intercept)

    def _penalties(self, X, y, widths, sample_weight):
        if self.alphas is None:
            return np.vstack([penalty_sequence(
                mcc_l1_alpha_max(X, y, h, self.fit_intercept, sample_weight), self.n_alphas,
                self.eps) for h in widths])
        alphas = np.atleast_1d(np.asarray(self.alphas, dtype=float))
        if alphas.ndim != 1 or alphas.size == 0 or not np.all(np.isfinite(alphas)) \
                or np.any(alphas < 0):
            raise ValueError(f"alphas must be a non-empty 1-D sequence of finite numbers >= 0, "
                             f"got {self.alphas!r}")
        return np.tile(np.sort(alphas)[::-1], (len(widths), 1))

    def fit(self, X, y, sample_weight=None):
        """Score every (kernel width, fold) path, choose, refit on all the data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), optional
            Weights of the samples in every fit (:meth:`MCCL1Regressor.fit`) and in the
            validation scores (passed to the scorer), as ``LassoCV`` weights its fits and its
            validation errors.

        Returns
        -------
        self : MCCL1RegressorCV
        """
        for name, rule in self._constraints.items():
            rule.check(name, getattr(self, name))
        widths = check_widths(self.kernel_widths)
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True, ensure_min_samples=2,
                             reset=True)
        X = np.ascontiguousarray(X)
        sample_weight = check_sample_weight(sample_weight, X)
        self._base(widths[0])._validate_params()  # the shared parameters, before any fit
        alphas = self._penalties(X, y, widths, sample_weight)
        splits = list(check_cv(self.cv).split(X, y))
        scorer = check_scoring(self._base(widths[0]), scoring=self.scoring)
        n_widths, n_alphas = alphas.shape
        if self.path == "width":  # one path per column of alphas, widths decreasing
            order = np.argsort(-np.asarray(widths), kind="stable")
            units = [(order, np.full(n_widths, j)) for j in range(n_alphas)]
        elif self.path == "penalty":
            units = [(np.full(n_alphas, i), np.arange(n_alphas)) for i in range(n_widths)]
        else:
            units = [(np.array([i]), np.array([j]))
                     for i in range(n_widths) for j in range(n_alphas)]
        results = Parallel(n_jobs=self.n_jobs, verbose=self.verbose)(
            delayed(_path_scores)(self._base(widths[rows[0]]), X, y, train, test,
                                  [widths[i] for i in rows], alphas[rows, cols], self.path,
                                  scorer, sample_weight)
            for rows, cols in units for train, test in splits)
        # rows of scores: candidates width-major, penalties decreasing; columns: folds
        scores = np.full((n_widths * n_alphas, len(splits)), np.nan)
        results = iter(results)
        for rows, cols in units:
            for k in range(len(splits)):
                scores[rows * n_alphas + cols, k] = next(results)
        self.cv_results_, best = search_results(
            scores, {"param_kernel_width": np.repeat(widths, n_alphas),
                     "param_alpha": alphas.ravel()}, "(kernel width, penalty)")
        self.alphas_ = alphas
        self.best_index_ = best
        self.best_score_ = float(self.cv_results_["mean_test_score"][best])
        i, j = divmod(best, n_alphas)
        self.kernel_width_ = widths[i]
        self.alpha_ = float(alphas[i, j])
        if self.path == "width":
            rows = [r for r in np.argsort(-np.asarray(widths), kind="stable")
                    if widths[r] >= widths[i]]
            fits = iter_width_path(self._base(widths[rows[0]]), X, y,
                                   [widths[r] for r in rows], alphas[rows, j], sample_weight)
            n_steps = len(rows)
        elif self.path == "penalty":
            fits = iter_path(self._base(widths[i]), X, y, alphas[i, : j + 1],
                             sample_weight=sample_weight)
            n_steps = j + 1
        else:
            fits = iter_path(self._base(widths[i]), X, y, alphas[i, j : j + 1],
                             sample_weight=sample_weight)
            n_steps = 1
        with warnings.catch_warnings():  # the steps on the way to the chosen fit
            warnings.simplefilter("ignore", ConvergenceWarning)
            for _ in range(n_steps - 1):
                next(fits)
        model = next(fits)  # the final fit warns as an MCCL1Regressor fit does
        model.n_features_in_ = X.shape[1]
        self.best_estimator_ = model
        for name in _FITTED:
            setattr(self, name, getattr(model, name))
        return self

    def predict(self, X):
        """Predict with the refitted estimator."""
        check_is_fitted(self, "best_estimator_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return self.best_estimator_.predict(X)
