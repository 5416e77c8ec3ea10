"""The peer baselines: scikit-learn's Lasso and Huber regression, and the robust sparse
regressors MCC-ARD is compared with: Huber regression with an L1 or MCP penalty (skglm's
``Huber`` datafit, the optional extra ``peers``) and LAD-Lasso (scikit-learn's
``QuantileRegressor`` at the median). Each records ``converged_``, which the pipeline stores.
"""

from __future__ import annotations

import warnings
from numbers import Real

import numpy as np
from scipy.optimize import brentq
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import HuberRegressor, Lasso, QuantileRegressor
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted, validate_data

from ._base import AT_LEAST_ONE, NON_NEGATIVE, POSITIVE, check_params, check_sample_weight
from .search import InadmissibleCandidate

__all__ = ["HuberBaseline", "HuberL1Regressor", "HuberMCPRegressor", "LADLassoRegressor",
           "LassoBaseline", "huber_alpha_max", "huber_scale", "lad_alpha_max",
           "lasso_alpha_max", "mcp_gamma_bound"]

#: what a missing skglm is refused with
SKGLM_MISSING = ("needs skglm, which is not installed: pip install 'mccard-dist[peers]' "
                 "(or pip install skglm)")


class LassoBaseline(Lasso):
    """:class:`sklearn.linear_model.Lasso`, recording ``converged_``."""

    #: what the pipeline reads about this estimator (:func:`mccard_dist.methods.kind_of`)
    mccard_method = {"label": "Lasso", "penalty_name": "alpha_ratio",
                     "penalty_scale": "mccard_dist.models:lasso_alpha_max"}

    def fit(self, X, y, sample_weight=None, check_input=True):
        super().fit(X, y, sample_weight=sample_weight, check_input=check_input)
        self.converged_ = bool(np.max(self.n_iter_) < self.max_iter)
        return self


class HuberBaseline(HuberRegressor):
    """:class:`sklearn.linear_model.HuberRegressor` (``epsilon``: the robustness threshold in
    units of the fitted scale; ``alpha``: the L2 penalty), recording ``converged_``."""

    #: what the pipeline reads about this estimator (:func:`mccard_dist.methods.kind_of`)
    mccard_method = {"label": "Huber", "width_param": "epsilon", "penalty_name": "alpha",
                     "bounds": (("epsilon", 1.0, None),)}

    def fit(self, X, y, sample_weight=None):
        super().fit(X, y, sample_weight=sample_weight)
        self.converged_ = bool(self.n_iter_ < self.max_iter)
        return self


def _weights(X, sample_weight):
    """The samples' weights (ones without ``sample_weight``) and their sum."""
    sw = check_sample_weight(sample_weight, X)
    sw = np.ones(X.shape[0]) if sw is None else sw
    return sw, float(sw.sum())


def lasso_alpha_max(X, y, _=None, fit_intercept=True, sample_weight=None) -> float:
    """The smallest ``alpha`` at which :class:`~sklearn.linear_model.Lasso` keeps no feature:
    ``max_d |x_d^T (y - mean(y))| / n``, the columns centred too; without ``fit_intercept``
    nothing centred; with ``sample_weight`` ``c``: ``c``-weighted means, each term times ``c_n``
    and ``sum c`` for ``n``, as the Lasso weights its loss. (The unused third argument is the
    width other methods' scales take.)"""
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    sw, total = _weights(X, sample_weight)
    if fit_intercept:
        X = X - sw @ X / total
        y = y - sw @ y / total
    return float(np.max(np.abs(X.T @ (sw * y))) / total)


# -- Huber regression with a sparse penalty (skglm) -------------------------------------------

def huber_scale(y) -> float:
    """The robust scale Huber's threshold is measured in: the normalised median absolute
    deviation of the training targets, ``1.4826 median|y - median(y)|`` (the standard deviation
    for Gaussian ``y``; 1 when it is 0). Known before the fit, so that ``epsilon`` means the same
    on every fold; it is the targets' spread, signal included, not the noise's."""
    y = np.asarray(y, dtype=float)
    scale = 1.4826 * float(np.median(np.abs(y - np.median(y))))
    return scale if scale > 0 else 1.0


def _huber_location(y, delta: float) -> float:
    """The intercept of the empty Huber fit: ``b`` with ``sum_i clip(y_i - b, -delta, delta) =
    0`` (the sum falls from positive to negative over ``[min y, max y]``)."""
    def psi_sum(b):
        return float(np.sum(np.clip(y - b, -delta, delta)))
    low, high = float(np.min(y)), float(np.max(y))
    return low if low == high else brentq(psi_sum, low, high, xtol=1e-12 * (1 + abs(high)))


def huber_alpha_max(X, y, epsilon, fit_intercept=True, sample_weight=None) -> float:
    """The smallest ``alpha`` at which :class:`HuberL1Regressor` (and, with any ``gamma``,
    :class:`HuberMCPRegressor`) keeps no feature: ``max_d |x_d^T psi(y - b)| / n``, ``psi`` the
    Huber score clipped at ``epsilon * huber_scale(y)`` and ``b`` the empty fit's intercept (0
    without ``fit_intercept``). ``sample_weight`` must be None: the estimators take none."""
    if sample_weight is not None:
        raise ValueError(f"huber_alpha_max: HuberL1Regressor and HuberMCPRegressor "
                         f"{_HuberPenalised.NO_WEIGHTS}")
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    delta = float(epsilon) * huber_scale(y)
    b = _huber_location(y, delta) if fit_intercept else 0.0
    score = np.clip(y - b, -delta, delta)
    return float(np.max(np.abs(X.T @ score)) / X.shape[0])


class _HuberPenalised(RegressorMixin, BaseEstimator):
    """Huber loss ``(1/n) sum_i H_delta(y_i - x_i^T w - b)`` plus a sparse penalty of ``w``,
    solved by skglm's Anderson-accelerated working-set coordinate descent, with ``delta =
    epsilon * huber_scale(y)``."""

    _parameter_constraints = {
        "epsilon": [POSITIVE], "alpha": [NON_NEGATIVE], "fit_intercept": ["boolean"],
        "max_iter": [AT_LEAST_ONE], "max_epochs": [AT_LEAST_ONE], "tol": [POSITIVE],
    }
    #: why a sample weight is refused
    NO_WEIGHTS = "take no sample weights (skglm's Huber datafit has none)"

    def _penalty(self, skglm_penalties):  # pragma: no cover - each subclass defines it
        raise NotImplementedError

    def _validate_params(self):
        check_params(self._parameter_constraints, self.get_params(deep=False),
                     type(self).__name__)

    def fit(self, X, y):
        """Fit on ``X, y`` (no sample weights: skglm's Huber datafit has none).

        Returns
        -------
        self
        """
        try:
            from skglm import GeneralizedLinearEstimator, datafits, penalties
            from skglm.solvers import AndersonCD
        except ImportError:
            raise ImportError(f"{type(self).__name__} {SKGLM_MISSING}") from None
        self._validate_params()
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True, ensure_min_samples=2,
                             reset=True)
        X = np.ascontiguousarray(X)
        self.scale_ = huber_scale(y)
        self.delta_ = self.epsilon * self.scale_
        self._check_data(X)
        solver = AndersonCD(max_iter=self.max_iter, max_epochs=self.max_epochs, tol=self.tol,
                            fit_intercept=self.fit_intercept, warm_start=True)
        model = GeneralizedLinearEstimator(datafits.Huber(self.delta_), self._penalty(penalties),
                                           solver)
        # start from the empty fit (w = 0 at its own intercept), from which the non-convex MCP
        # stays empty above huber_alpha_max as the convex L1 does
        model.coef_ = np.zeros(X.shape[1])
        model.intercept_ = _huber_location(y, self.delta_) if self.fit_intercept else 0.0
        model.fit(X, y)
        self.coef_ = np.asarray(model.coef_, dtype=float)
        self.intercept_ = float(model.intercept_)
        self.n_iter_ = int(model.n_iter_)
        self.stop_crit_ = float(np.max(model.stop_crit_))
        self.converged_ = bool(self.stop_crit_ <= self.tol)
        return self

    def _check_data(self, X):
        pass

    def predict(self, X):
        """``X @ coef_ + intercept_``."""
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return X @ self.coef_ + self.intercept_


class HuberL1Regressor(_HuberPenalised):
    """Sparse robust regression: the Huber loss with an L1 penalty (a robust Lasso).

    Minimises ``(1/n) sum_i H_delta(y_i - x_i^T w - b) + alpha ||w||_1`` with skglm (the
    optional extra ``peers``), where ``H_delta`` is quadratic within ``delta`` of 0 and linear
    beyond, ``delta = epsilon * huber_scale(y)``.

    Parameters
    ----------
    epsilon : float, default=1.35
        The Huber threshold in units of :func:`huber_scale` of the training targets (their
        normalised median absolute deviation). Large values give the Lasso's squared loss.
    alpha : float, default=1.0
        The L1 penalty (:func:`huber_alpha_max` keeps no feature).
    fit_intercept : bool, default=True
    max_iter : int, default=50
        Working-set iterations of skglm's ``AndersonCD``.
    max_epochs : int, default=50000
        Coordinate-descent epochs per working set.
    tol : float, default=1e-6
        The optimality (KKT) violation at which the solver stops.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    scale_, delta_ : float
        The training targets' :func:`huber_scale` and the threshold ``epsilon * scale_``.
    n_iter_ : int
    stop_crit_ : float
        The final optimality violation.
    converged_ : bool
        ``stop_crit_ <= tol``.
    n_features_in_ : int
    """

    #: what the pipeline reads about this estimator (:func:`mccard_dist.methods.kind_of`)
    mccard_method = {"label": "Huber + L1", "width_param": "epsilon", "penalty_name": "alpha_ratio",
                     "penalty_scale": "mccard_dist.models:huber_alpha_max", "requires": "skglm"}

    def __init__(self, epsilon=1.35, alpha=1.0, fit_intercept=True, max_iter=50,
                 max_epochs=50_000, tol=1e-6):
        self.epsilon = epsilon
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.max_epochs = max_epochs
        self.tol = tol

    def _penalty(self, penalties):
        return penalties.L1(self.alpha)


def mcp_gamma_bound(X) -> float:
    """The concavity MCP's ``gamma`` must exceed on ``X``: ``n / ||x_d||^2`` at the smallest
    non-zero column norm (a coordinate step of MCP on the Huber datafit is a minimisation only
    above it; 1 for standardised columns). ``inf`` when every column is zero."""
    X = np.asarray(X, dtype=float)
    curvature = np.einsum("ij,ij->j", X, X) / X.shape[0]
    return 1.0 / float(np.min(curvature[curvature > 0], initial=np.inf))


class HuberMCPRegressor(_HuberPenalised):
    """Sparse robust regression: the Huber loss with the minimax concave penalty (MCP).

    Minimises ``(1/n) sum_i H_delta(y_i - x_i^T w - b) + sum_d MCP(w_d)``, ``MCP(t) = alpha |t|
    - t^2 / (2 gamma)`` for ``|t| <= gamma alpha`` and ``gamma alpha^2 / 2`` beyond: the L1
    penalty near 0, none for large coefficients (less shrinkage of the features it keeps).
    Non-convex: coordinate descent finds a stationary point, from ``w = 0``.

    Parameters
    ----------
    epsilon, alpha, fit_intercept, max_iter, max_epochs, tol
        As :class:`HuberL1Regressor`'s (:func:`huber_alpha_max` keeps no feature).
    gamma : float, default=3.0
        The concavity, ``> 1``: small values approach hard thresholding, large ones the L1
        penalty. Each coordinate step is a proper minimisation only where ``gamma`` exceeds
        :func:`mcp_gamma_bound` of ``X`` (1 for standardised columns), which the fit checks.

    Attributes
    ----------
    coef_, intercept_, scale_, delta_, n_iter_, stop_crit_, converged_, n_features_in_
        As :class:`HuberL1Regressor`'s.
    """

    #: what the pipeline reads about this estimator (:func:`mccard_dist.methods.kind_of`)
    mccard_method = {"label": "Huber + MCP", "width_param": "epsilon",
                     "penalty_name": "alpha_ratio",
                     "penalty_scale": "mccard_dist.models:huber_alpha_max", "requires": "skglm"}

    _parameter_constraints = {**_HuberPenalised._parameter_constraints,
                              "gamma": [Interval(Real, 1, None, closed="neither")]}

    def __init__(self, epsilon=1.35, alpha=1.0, gamma=3.0, fit_intercept=True, max_iter=50,
                 max_epochs=50_000, tol=1e-6):
        self.epsilon = epsilon
        self.alpha = alpha
        self.gamma = gamma
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.max_epochs = max_epochs
        self.tol = tol

    def _penalty(self, penalties):
        return penalties.MCPenalty(self.alpha, self.gamma)

    def _check_data(self, X):
        needed = mcp_gamma_bound(X)
        if self.gamma <= needed:
            raise InadmissibleCandidate(
                f"HuberMCPRegressor: gamma={self.gamma} must exceed n / ||x_d||^2 = {needed:.3g} "
                f"for every feature; standardise X's columns or raise gamma", "gamma", needed)


# -- LAD-Lasso (scikit-learn) ------------------------------------------------------------------

def lad_alpha_max(X, y, _=None, fit_intercept=True, sample_weight=None) -> float:
    """The smallest ``alpha`` at which :class:`LADLassoRegressor` keeps no feature: ``max_d
    |x_d^T (c * s)| / sum c``, ``c`` the sample weights (ones without) and ``s`` the subgradient
    of the loss at the empty fit ``b``, ``sign(y_i - b) / 2``, and where ``y_i = b`` the value in
    ``[-1/2, 1/2]`` that makes ``sum c s = 0``, as the intercept's optimality asks. ``b`` is the
    ``c``-weighted median of ``y`` (0 without ``fit_intercept``, and no sum to make 0). Exact
    when at most one sample lies on ``b``; otherwise a penalty at which the empty fit is
    optimal. (The unused third argument is the width other methods' scales take.)"""
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    sw, total = _weights(X, sample_weight)
    b = _weighted_median(y, sw) if fit_intercept else 0.0
    s = 0.5 * np.sign(y - b)
    on = (y == b) & (sw > 0)
    if fit_intercept and on.any():
        s[on] = -float(sw @ s) / float(sw[on].sum())
    return float(np.max(np.abs(X.T @ (sw * s))) / total)


def _weighted_median(y, weights) -> float:
    """The midpoint of the minimisers of ``sum_i c_i |y_i - b|`` (the median for equal
    weights): where the cumulative weight of the sorted ``y`` first reaches half the total, and
    first passes it."""
    order = np.argsort(y, kind="stable")
    ys, cum = y[order], np.cumsum(weights[order])
    half = cum[-1] / 2.0
    low = np.searchsorted(cum, half, side="left")
    high = min(int(np.searchsorted(cum, half, side="right")), len(ys) - 1)
    return float(ys[low] + ys[high]) / 2.0


class LADLassoRegressor(QuantileRegressor):
    """LAD-Lasso: least absolute deviations with an L1 penalty, scikit-learn's
    :class:`~sklearn.linear_model.QuantileRegressor` at the median.

    Minimises ``(1/n) sum_i |y_i - x_i^T w - b| / 2 + alpha ||w||_1`` (the pinball loss at 0.5),
    a linear programme solved by HiGHS.

    Parameters
    ----------
    alpha : float, default=1.0
        The L1 penalty (:func:`lad_alpha_max` keeps no feature).
    fit_intercept : bool, default=True
    solver : str, default="highs"
    solver_options : dict, optional
        As :class:`~sklearn.linear_model.QuantileRegressor`'s.

    Attributes
    ----------
    coef_, intercept_, n_iter_, n_features_in_
        As :class:`~sklearn.linear_model.QuantileRegressor`'s.
    converged_ : bool
        The linear programme was solved (no ``ConvergenceWarning``).
    """

    #: what the pipeline reads about this estimator (:func:`mccard_dist.methods.kind_of`)
    mccard_method = {"label": "LAD-Lasso", "penalty_name": "alpha_ratio",
                     "penalty_scale": "mccard_dist.models:lad_alpha_max"}

    quantile = 0.5

    def __init__(self, alpha=1.0, fit_intercept=True, solver="highs", solver_options=None):
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.solver = solver
        self.solver_options = solver_options

    def fit(self, X, y, sample_weight=None):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            super().fit(X, y, sample_weight=sample_weight)
        self.converged_ = True
        for warning in caught:
            if issubclass(warning.category, ConvergenceWarning):
                self.converged_ = False
            warnings.warn_explicit(warning.message, warning.category, warning.filename,
                                   warning.lineno)
        return self

