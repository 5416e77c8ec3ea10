"""MCC-ARD with its kernel width chosen by cross-validation, in the tradition of ``LassoCV``."""

from __future__ import annotations

from functools import partial
from numbers import Real

import numpy as np
from sklearn.base import clone

from ..defaults import DEFAULT_KERNEL_WIDTHS
from .search import Search, SearchCV, fit_one
from ._base import resolve_relevance_update, resolve_solver
from .mcc_ard import MCCARDRegressor, fit_width_path

__all__ = ["DEFAULT_KERNEL_WIDTHS", "MCCARDRegressorCV", "check_widths"]



def check_widths(kernel_widths) -> list[float]:
    """``kernel_widths`` as a list of floats; ValueError unless a non-empty sequence of positive
    finite numbers."""
    widths = np.atleast_1d(np.asarray(kernel_widths, dtype=object))
    if widths.ndim != 1 or widths.size == 0:
        raise ValueError(f"kernel_widths must be a non-empty sequence of positive numbers, "
                         f"got {kernel_widths!r}")
    for h in widths:
        if isinstance(h, bool) or not isinstance(h, Real) or not np.isfinite(h) or h <= 0:
            raise ValueError(f"kernel_widths must hold positive finite numbers, got {h!r}")
    return [float(h) for h in widths]


def _fit_path(base, members, X, y, sample_weight=None, cache=None):
    """:attr:`Search.fit` of one warm-started path through the members' widths."""
    return fit_width_path([clone(base).set_params(**c) for c in members], X, y, sample_weight)


class MCCARDRegressorCV(SearchCV):
    """MCC-ARD whose kernel width is chosen by cross-validation, then refitted on all the data.

    Every fold's path of widths (or, without ``warm_start``, every (kernel width, fold) fit) is
    one joblib task, so ``n_jobs`` fits them in parallel, and
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
    warm_start : bool, default=False
        Fit each fold's widths as one path, widest first, each fit warm-started from the one
        before (:func:`~mccard_dist.models.mcc_ard.fit_width_path`; the refit walks the same path
        down to the chosen width), one joblib task per fold. ``False``: independent fits, one
        task per width and fold (``GridSearchCV``'s scores). With the pruning solver the warm
        fits end elsewhere than independent ones at narrow widths (lower test RMSE, more
        features kept where outliers are light); docs/results/speed.md has the comparison.
    likelihood, w_steps, max_iter, tol, relevance_max, fit_intercept, h_factor, curvature, init, \
form, solver, relevance_update
        Passed to every :class:`MCCARDRegressor` fit (``final_width_ratio`` applies only to an
        ``"auto"`` width, which needs no cross-validation). ``solver="auto"`` (and
        ``relevance_update="auto"``) is resolved once, from the shape of the data given to
        ``fit``, so every fold and the refit use one solver.
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

    _estimator = MCCARDRegressor
    _fitted = ("coef_", "intercept_", "relevance_", "active_", "sigma_", "n_iter_", "converged_")
    _parameter_constraints = {
        **{k: v for k, v in MCCARDRegressor._parameter_constraints.items()
           if k not in ("kernel_width", "final_width_ratio", "warm_start")},
        **SearchCV._parameter_constraints, "kernel_widths": ["array-like", Real],
        "warm_start": ["boolean"]}

    def __init__(self, kernel_widths=DEFAULT_KERNEL_WIDTHS, *, cv=5,
                 scoring="neg_mean_absolute_error", n_jobs=None, likelihood="deviant", w_steps=10,
                 max_iter=300, tol=1e-4, relevance_max=1e6, fit_intercept=True, verbose=0,
                 h_factor="consistent", curvature="fisher", init="ridge", form="auto",
                 solver="auto", warm_start=False, relevance_update="auto"):
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
        self.warm_start = warm_start
        self.relevance_update = relevance_update

    def _search(self, X, y, sample_weight):
        widths = check_widths(self.kernel_widths)
        candidates = [{"kernel_width": h} for h in widths]
        solver = resolve_solver(self.solver, *X.shape, self.curvature)
        base = self._base().set_params(
            solver=solver, warm_start=False,
            relevance_update=resolve_relevance_update(self.relevance_update, solver, *X.shape,
                                                      self.likelihood))
        if self.warm_start:
            units = [tuple(sorted(range(len(widths)), key=lambda c: -widths[c]))]
            fit = partial(_fit_path, base)
        else:
            units, fit = [(c,) for c in range(len(widths))], partial(fit_one, base)
        search = Search(candidates, units, fit)
        return search, {"param_kernel_width": np.asarray(widths)}
