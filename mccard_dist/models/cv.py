"""MCC-ARD with its kernel width chosen by cross-validation, in the tradition of ``LassoCV``."""

from __future__ import annotations

import numbers

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.metrics import check_scoring
from sklearn.model_selection import check_cv
from sklearn.utils.validation import check_is_fitted, validate_data

from ._base import FIT_ERRORS, check_sample_weight
from .mcc_ard import MCCARDRegressor

__all__ = ["DEFAULT_KERNEL_WIDTHS", "MCCARDRegressorCV", "check_widths", "search_results"]

#: 10 widths log-spaced from 0.05 to 100 (in squared units of y), the paper experiment's grid
DEFAULT_KERNEL_WIDTHS = (0.05, 0.12, 0.27, 0.63, 1.5, 3.4, 7.9, 18.0, 43.0, 100.0)


def check_widths(kernel_widths) -> list[float]:
    """``kernel_widths`` as a list of floats; ValueError unless a non-empty sequence of positive
    finite numbers."""
    widths = np.atleast_1d(np.asarray(kernel_widths, dtype=object))
    if widths.ndim != 1 or widths.size == 0:
        raise ValueError(f"kernel_widths must be a non-empty sequence of positive numbers, "
                         f"got {kernel_widths!r}")
    out = []
    for h in widths:
        if isinstance(h, bool) or not isinstance(h, numbers.Real) or not np.isfinite(h) or h <= 0:
            raise ValueError(f"kernel_widths must hold positive finite numbers, got {h!r}")
        out.append(float(h))
    return out


def search_results(scores, params: dict, what: str) -> tuple[dict, int]:
    """``cv_results_`` as :class:`~sklearn.model_selection.GridSearchCV` has them, from
    ``scores`` (candidates x folds, higher is better, NaN for a failed fit) and the candidates'
    ``params`` columns, and the index of the best mean (the first among equals; a candidate with
    a failed fold is never chosen). ValueError if every candidate has one (``what`` names them)."""
    with np.errstate(invalid="ignore"):
        mean = scores.mean(axis=1)
        std = scores.std(axis=1)
    if np.all(np.isnan(mean)):
        raise ValueError(f"every {what} failed on at least one fold; widen kernel_widths or "
                         f"check the data")
    ranked = np.where(np.isnan(mean), -np.inf, mean)
    results = {
        **params,
        **{f"split{k}_test_score": scores[:, k] for k in range(scores.shape[1])},
        "mean_test_score": mean,
        "std_test_score": std,
        "rank_test_score": 1 + np.argsort(np.argsort(-ranked, kind="stable"), kind="stable"),
    }
    return results, int(np.nanargmax(mean))


def _fit_and_score(estimator, X, y, train, test, scorer, sample_weight=None):
    """Validation score of one (kernel width, fold) fit; NaN if the fit fails.
    ``sample_weight`` weights the fit and the score."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    fit_kw, score_kw = {}, {}
    if sample_weight is not None:
        fit_kw, score_kw = {"sample_weight": sample_weight[train]}, {
            "sample_weight": sample_weight[test]}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            estimator.fit(X[train], y[train], **fit_kw)
        return float(scorer(estimator, X[test], y[test], **score_kw))
    except FIT_ERRORS:
        return np.nan


class MCCARDRegressorCV(RegressorMixin, BaseEstimator):
    """MCC-ARD whose kernel width is chosen by cross-validation, then refitted on all the data.

    Every (kernel width, fold) fit is one joblib task, so ``n_jobs`` fits them in parallel, and
    ``with joblib.parallel_backend("dask"):`` (with a ``distributed.Client``) sends them to a Dask
    cluster. The choice does not depend on the backend or ``n_jobs``: the folds come from ``cv``
    and each fit is deterministic.

    Parameters
    ----------
    kernel_widths : sequence of float, default=DEFAULT_KERNEL_WIDTHS
        Candidate widths ``h > 0`` (squared units of y; see :class:`MCCARDRegressor`).
    cv : int, cross-validation generator or iterable, default=5
        As in scikit-learn (:func:`sklearn.model_selection.check_cv`): an integer is that many
        unshuffled K folds.
    scoring : str or callable, default="neg_mean_absolute_error"
        Validation score, higher is better. The default, the mean absolute error, is robust to
        outliers in the validation folds; the squared error rewards fitting them.
    n_jobs : int, default=None
        Parallel fits (joblib; ``-1``: all cores).
    likelihood, w_steps, max_iter, tol, relevance_max, fit_intercept, h_factor, curvature, init, \
form, solver
        Passed to every :class:`MCCARDRegressor` fit (``final_width_ratio`` applies only to an
        ``"auto"`` width, which needs no cross-validation).
    verbose : int, default=0
        joblib's verbosity.

    Attributes
    ----------
    kernel_width_ : float
        The chosen width (the first of the best mean score's in ``kernel_widths`` order).
    best_score_ : float
        Its mean validation score.
    best_index_ : int
        Its index in ``kernel_widths``.
    cv_results_ : dict of ndarray
        ``param_kernel_width``, ``split{k}_test_score``, ``mean_test_score``,
        ``std_test_score``, ``rank_test_score`` (as :class:`~sklearn.model_selection.GridSearchCV`;
        a failed fit scores NaN and its width is not chosen).
    best_estimator_ : MCCARDRegressor
        The refit on all the data with ``kernel_width_``.
    coef_, intercept_, relevance_, active_, sigma_, n_iter_, converged_
        The refitted estimator's.
    n_features_in_ : int

    Examples
    --------
    >>> from mccard_dist import MCCARDRegressorCV, make_paper_data
    >>> d = make_paper_data(seed=0, psi=0.2, tau=5.0, n_train=100, n_features=50, n_relevant=5)
    >>> model = MCCARDRegressorCV(kernel_widths=[0.1, 1.0, 10.0], cv=3).fit(d.X_train, d.y_train)
    >>> model.kernel_width_ in (0.1, 1.0, 10.0)
    True
    """

    def __init__(self, kernel_widths=DEFAULT_KERNEL_WIDTHS, *, cv=5,
                 scoring="neg_mean_absolute_error", n_jobs=None, likelihood="deviant", w_steps=10,
                 max_iter=300, tol=1e-4, relevance_max=1e6, fit_intercept=True, verbose=0,
                 h_factor="consistent", curvature="fisher", init="ridge", form="auto",
                 solver="pruning"):
        self.kernel_widths = kernel_widths
        self.cv = cv
        self.scoring = scoring
        self.n_jobs = n_jobs
        self.likelihood = likelihood
        self.w_steps = w_steps
        self.max_iter = max_iter
        self.tol = tol
        self.relevance_max = relevance_max
        self.fit_intercept = fit_intercept
        self.verbose = verbose
        self.h_factor = h_factor
        self.curvature = curvature
        self.init = init
        self.form = form
        self.solver = solver

    def _widths(self):
        return check_widths(self.kernel_widths)

    def _base(self, h):
        return MCCARDRegressor(kernel_width=h, likelihood=self.likelihood, w_steps=self.w_steps,
                               max_iter=self.max_iter, tol=self.tol,
                               relevance_max=self.relevance_max, fit_intercept=self.fit_intercept,
                               h_factor=self.h_factor, curvature=self.curvature, init=self.init,
                               form=self.form, solver=self.solver)

    def fit(self, X, y, sample_weight=None):
        """Score every (kernel width, fold) fit, choose the width, refit on all the data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), optional
            Weights of the samples in every fit (:meth:`MCCARDRegressor.fit`) and in the
            validation scores (passed to the scorer).

        Returns
        -------
        self : MCCARDRegressorCV
        """
        widths = self._widths()
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True, ensure_min_samples=2,
                             reset=True)
        sample_weight = check_sample_weight(sample_weight, X)
        self._base(widths[0])._validate_params()  # the shared parameters, before any fit
        splits = list(check_cv(self.cv).split(X, y))
        scorer = check_scoring(self._base(widths[0]), scoring=self.scoring)
        scores = Parallel(n_jobs=self.n_jobs, verbose=self.verbose)(
            delayed(_fit_and_score)(self._base(h), X, y, train, test, scorer, sample_weight)
            for h in widths for train, test in splits)
        scores = np.asarray(scores, dtype=float).reshape(len(widths), len(splits))
        self.cv_results_, best = search_results(
            scores, {"param_kernel_width": np.asarray(widths)}, "kernel width")
        self.best_index_ = best
        self.best_score_ = float(self.cv_results_["mean_test_score"][best])
        self.kernel_width_ = widths[best]
        self.best_estimator_ = clone(self._base(self.kernel_width_)).fit(
            X, y, sample_weight=sample_weight)
        for name in ("coef_", "intercept_", "relevance_", "active_", "sigma_", "n_iter_",
                     "converged_"):
            setattr(self, name, getattr(self.best_estimator_, name))
        return self

    def predict(self, X, return_std=False):
        """Predict with the refitted estimator (``return_std``: see
        :meth:`MCCARDRegressor.predict`)."""
        check_is_fitted(self, "best_estimator_")
        validate_data(self, X, dtype=np.float64, reset=False)
        return self.best_estimator_.predict(X, return_std=return_std)
