"""MCC-L1 with its kernel width and penalty chosen by cross-validation over paths, like
``LassoCV``."""

from __future__ import annotations

from functools import partial
from numbers import Integral, Real

import numpy as np
from sklearn.base import clone
from sklearn.utils._param_validation import Interval, StrOptions

from .search import Search, SearchCV
from .cv import DEFAULT_KERNEL_WIDTHS, check_widths
from .mcc_l1 import MCCL1Regressor, mcc_l1_alpha_max
from .mcc_l1_path import check_alphas, fit_path, penalty_sequence

__all__ = ["MCCL1RegressorCV"]


def _fit_members(base, members, X, y, sample_weight=None, cache=None):
    """:attr:`Search.fit`: clones of ``base`` with ``members``' parameters, as one path."""
    return fit_path([clone(base).set_params(**m) for m in members], X, y, sample_weight)


class MCCL1RegressorCV(SearchCV):
    """MCC-L1 whose kernel width and L1 penalty are chosen by cross-validation, then refitted.

    Every fold fits the candidates as warm-started paths (``path``), one joblib task per path
    and fold (``n_jobs``, or ``joblib.parallel_backend("dask")``). The refit walks the chosen
    candidate's path down to it, so it is the kind of fit the CV scored.

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
        :class:`~sklearn.model_selection.GridSearchCV` over :class:`MCCL1Regressor` does. The
        objective is not convex: at small widths the routes can end at different fits.
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

    _estimator = MCCL1Regressor
    _fitted = ("coef_", "intercept_", "active_", "outlier_weights_", "objective_", "n_iter_",
               "converged_")
    _parameter_constraints = {
        **{k: v for k, v in MCCL1Regressor._parameter_constraints.items()
           if k not in ("kernel_width", "alpha", "zero_tol")},
        **SearchCV._parameter_constraints,
        "kernel_widths": ["array-like", Real],
        "alphas": ["array-like", Real, None],
        "n_alphas": [Interval(Integral, 1, None, closed="left")],
        "eps": [Interval(Real, 0, 1, closed="neither")],
        "path": [StrOptions({"width", "penalty", "none"})],
        "solver": [StrOptions({"cd", "lasso"})],
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

    def _penalties(self, X, y, widths, sample_weight):
        if self.alphas is None:
            return np.vstack([penalty_sequence(
                mcc_l1_alpha_max(X, y, h, self.fit_intercept, sample_weight), self.n_alphas,
                self.eps) for h in widths])
        return np.tile(np.sort(check_alphas(self.alphas))[::-1], (len(widths), 1))

    def _search(self, X, y, sample_weight):
        widths = check_widths(self.kernel_widths)
        self.alphas_ = alphas = self._penalties(X, y, widths, sample_weight)
        n_widths, n_alphas = alphas.shape
        candidates = [{"kernel_width": widths[i], "alpha": float(alphas[i, j])}
                      for i in range(n_widths) for j in range(n_alphas)]
        if self.path == "width":
            order = np.argsort(-np.asarray(widths), kind="stable")
            units = [tuple(int(i) * n_alphas + j for i in order) for j in range(n_alphas)]
        elif self.path == "penalty":
            units = [tuple(range(i * n_alphas, (i + 1) * n_alphas)) for i in range(n_widths)]
        else:
            units = [(c,) for c in range(len(candidates))]
        params = {"param_kernel_width": np.repeat(widths, n_alphas),
                  "param_alpha": alphas.ravel()}
        return Search(candidates, units, partial(_fit_members, self._base())), params
