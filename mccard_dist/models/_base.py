"""Parameter validation and the pieces the ARD estimators share."""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils._param_validation import (Interval, InvalidParameterError, StrOptions,
                                             validate_parameter_constraints)
from sklearn.utils.validation import _check_sample_weight, check_is_fitted, validate_data

from ._linalg import loo_from_leverage, posterior_covariance
from ._threads import BlasThreads

__all__ = ["ARDFit", "AT_LEAST_ONE", "NON_NEGATIVE", "POSITIVE", "WIDTH", "WarmStart",
           "check_params", "PosteriorPredictive", "RegressorBase", "ard_relevance_step",
           "check_sample_weight", "faul_tipping_step", "relative_change",
           "resolve_ls_params", "resolve_params", "resolve_relevance_update", "resolve_solver",
           "weighted_median", "weighted_var"]

@dataclass
class ARDFit:
    """An ARD fit by either solver: kept features (increasing), their coefficients and
    relevances, the kernel width (robust) or noise variance (Gaussian; the other NaN), how it
    ended, and the sequential solver's final ``engine``."""

    active: np.ndarray
    coef: np.ndarray
    intercept: float
    relevance: np.ndarray
    kernel_width: float
    noise_var: float
    n_iter: int
    converged: bool
    degenerate: bool
    n_fallbacks: int = 0
    engine: object = None


@dataclass(frozen=True)
class WarmStart:
    """A fitted MCC-ARD estimator's answer, where a warm-started fit begins: coefficients and
    relevances of every feature (``inf`` where pruned), intercept, and the kernel width it ended
    at (``scale``)."""

    coef: np.ndarray
    intercept: float
    relevance: np.ndarray
    scale: float

    @property
    def active(self) -> np.ndarray:
        return np.flatnonzero(np.isfinite(self.relevance))


#: ``solver="auto"`` takes the pruning solver up to this ``N D min(N, D)`` (the cost of one of
#: its iterations) and ``D / N``; beyond either, the sequential one (docs/user_guide/sequential.md)
PRUNING_MAX_COST = 3e8
PRUNING_MAX_RATIO = 10
#: ... except with the width set in the fit and more features than samples, where it takes the
#: pruning solver up to this cost: the sequential fit's width rule settles narrower there and
#: keeps extra features, but beyond this the pruning solver's iterations cost minutes
AUTO_WIDTH_PRUNING_MAX_COST = 3e10


def _paper_sizes(n_samples: int, n_features: int) -> bool:
    """Whether a pruning iteration is cheap and features do not far outnumber samples."""
    cost = n_samples * n_features * min(n_samples, n_features)
    return cost <= PRUNING_MAX_COST and n_features <= PRUNING_MAX_RATIO * n_samples


def resolve_solver(solver: str, n_samples: int, n_features: int,
                   curvature: str = "fisher", auto_width: bool = False) -> str:
    """``solver``, or for ``"auto"`` the solver the data's shape calls for: ``"pruning"`` where
    its iterations are cheap and features do not far outnumber samples (it converges there and
    keeps the sparser selection), and with the in-fit width (``auto_width``) where features
    outnumber samples, up to :data:`AUTO_WIDTH_PRUNING_MAX_COST`; else ``"sequential"``. Always
    ``"pruning"`` for the exact curvature, which only it computes."""
    if solver != "auto":
        return solver
    cost = n_samples * n_features * min(n_samples, n_features)
    if (curvature == "exact" or _paper_sizes(n_samples, n_features)
            or (auto_width and n_features > n_samples and cost <= AUTO_WIDTH_PRUNING_MAX_COST)):
        return "pruning"
    return "sequential"


def resolve_relevance_update(update: str, solver: str, n_samples: int, n_features: int,
                             likelihood: str = "deviant") -> str:
    """``update``, or for ``"auto"``: ``"tail-exact"`` wherever the pruning solver runs MCC-ARD
    (``likelihood`` ``"deviant"`` or ``"proper"``: MacKay's update creeps for hundreds of
    iterations towards the fixed point the exact step reaches at once, and at ``max_iter`` 300
    stops short of it in many paper-size fits); for LS-ARD (``likelihood="gaussian"``) MacKay's
    at the paper's sizes, where it converges, and ``"tail-exact"`` beyond."""
    if update != "auto":
        return update
    if solver != "pruning":
        return "mackay"
    if likelihood != "gaussian" or not _paper_sizes(n_samples, n_features):
        return "tail-exact"
    return "mackay"


def resolve_params(params: dict, n_samples: int, n_features: int,
                   likelihood: str = "deviant") -> dict:
    """MCC-ARD's fixed parameters for training data of ``n_samples x n_features`` (its
    :attr:`~mccard_dist.methods.MethodKind.resolve_params`): a solver ``"auto"`` replaced by
    :func:`resolve_solver`'s choice, then a ``relevance_update`` ``"auto"`` by
    :func:`resolve_relevance_update`'s (for ``params``' likelihood, else ``likelihood``: the
    estimator's default), so that every fold's fit and the final fit of a cell use one solver
    and one update."""
    solver = resolve_solver(params["solver"], n_samples, n_features,
                            params.get("curvature", "fisher"),
                            auto_width=params.get("kernel_width") == "auto")
    resolved = {**params, "solver": solver}
    if "relevance_update" in params:
        resolved["relevance_update"] = resolve_relevance_update(
            params["relevance_update"], solver, n_samples, n_features,
            params.get("likelihood", likelihood))
    return resolved


def resolve_ls_params(params: dict, n_samples: int, n_features: int) -> dict:
    """:func:`resolve_params` for LS-ARD (the Gaussian likelihood)."""
    return resolve_params(params, n_samples, n_features, likelihood="gaussian")


def relative_change(coef, coef_prev) -> float:
    """``max |coef - coef_prev| / max(max |coef|, 1e-12)``: the solvers' convergence test."""
    return float(np.max(np.abs(coef - coef_prev), initial=0.0)
                 / max(np.max(np.abs(coef), initial=0.0), 1e-12))


def check_sample_weight(sample_weight, X):
    """``None``, or a checked float64 copy of ``sample_weight`` (finite, ``>= 0``, not all 0)."""
    if sample_weight is None:
        return None
    return _check_sample_weight(sample_weight, X, dtype=np.float64, ensure_non_negative=True,
                                copy=True)


def weighted_var(y, sample_weight=None) -> float:
    """``var(y)``, or its weighted form ``sum s (y - m)^2 / sum s`` (``m`` the weighted mean)."""
    if sample_weight is None:
        return float(np.var(y))
    total = float(np.sum(sample_weight))
    mean = float(sample_weight @ y) / total
    return float(sample_weight @ np.square(y - mean)) / total


def weighted_median(y, sample_weight=None) -> float:
    """``median(y)``, or the mean of the lower and upper weighted medians (for integer weights,
    the median of the repeated samples)."""
    if sample_weight is None:
        return float(np.median(y))
    keep = sample_weight > 0
    order = np.argsort(y[keep], kind="stable")
    values, cum = y[keep][order], np.cumsum(sample_weight[keep][order])
    half = cum[-1] / 2.0
    lower = values[np.searchsorted(cum, half, side="left")]
    upper = values[min(np.searchsorted(cum, half, side="right"), values.size - 1)]
    return 0.5 * (float(lower) + float(upper))


#: the constraints the estimators' parameters share (scikit-learn's ``_parameter_constraints``)
POSITIVE = Interval(Real, 0, None, closed="neither")
NON_NEGATIVE = Interval(Real, 0, None, closed="left")
AT_LEAST_ONE = Interval(Integral, 1, None, closed="left")
#: a kernel width: a finite number > 0, or exactly "auto" (set inside the fit)
WIDTH = [POSITIVE, StrOptions({"auto"})]


def check_params(constraints: dict, params: dict, caller: str) -> None:
    """scikit-learn's check of ``params`` against ``constraints``, refusing a boolean (which its
    intervals take for 1) except where ``"boolean"`` or ``"verbose"`` allows one."""
    for name, value in params.items():
        rules = constraints.get(name, ["boolean"])
        if isinstance(value, (bool, np.bool_)) and "boolean" not in rules \
                and "verbose" not in rules:
            raise InvalidParameterError(f"The {name!r} parameter of {caller} must not be a "
                                        f"boolean. Got {value!r} instead.")
    validate_parameter_constraints(constraints, params, caller_name=caller)


class RegressorBase(BlasThreads, RegressorMixin, BaseEstimator):
    """Validation of parameters and data, and prediction, for the linear estimators; every
    subclass's ``fit`` runs with the BLAS threads its size pays for (:mod:`._threads`)."""

    #: name -> constraints, as scikit-learn's; checked at the start of ``fit``
    _parameter_constraints: dict = {}
    #: the ``sample_weight`` of the last fit (a checked copy), ``None`` when not given
    _fit_weights = None

    def _validate_params(self):
        check_params(self._parameter_constraints, self.get_params(deep=False),
                     type(self).__name__)

    def _validate_fit_data(self, X, y, sample_weight=None):
        """Validated ``X`` (C-ordered float64), ``y`` and ``sample_weight``. At least 3 samples:
        with an intercept and 2, any feature fits the centred data exactly."""
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True, ensure_min_samples=3,
                             reset=True)
        X = np.ascontiguousarray(X)
        return X, np.asarray(y, dtype=np.float64), check_sample_weight(sample_weight, X)

    def loo_residuals(self, X, y):
        """Approximate leave-one-out residuals of the training data, from this one fit.

        ``e_n / (1 - H_nn)`` with ``H`` the hat matrix of the final weighted least-squares problem
        the fit solves (its sample weights, relevances or active set held fixed): the exact
        leave-one-out residual of that linear smoother, and an approximation for the robust and
        sparse fits, whose weights and hyper-parameters would move a little without sample ``n``.
        A sample the fit ignores (weight 0) keeps its residual; one it interpolates (``H_nn = 1``)
        gets ``inf``. After a fit with ``sample_weight``, one unit of a sample's weight is left
        out (the whole sample when its weight is below 1). Used by ``cv.scheme=alo`` to select
        hyper-parameters from one fit per candidate instead of K.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The training data the estimator was fitted on.
        y : array-like of shape (n_samples,)
            The training targets.

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        y = np.asarray(y, dtype=np.float64)
        if y.shape != (X.shape[0],):
            raise ValueError(f"y must have shape ({X.shape[0]},) to match X; got {y.shape}")
        e = y - X @ self.coef_ - self.intercept_
        return loo_from_leverage(e, self._leverage(X, e), self._fit_weights)

    def _leverage(self, X, e):  # pragma: no cover - every estimator overrides it
        raise NotImplementedError

    def predict(self, X):
        """Predict targets, ``X @ coef_ + intercept_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return X @ self.coef_ + self.intercept_


class PosteriorPredictive:
    """``predict(X, return_std=True)`` for the ARD estimators, from their final posterior.

    The predictive variance of a row is ``(x_a - m)^T sigma_ (x_a - m) + 1 / sum(s) + noise``
    (``x_a`` the kept features, ``s`` the final sample precisions, ``m`` the ``s``-weighted mean
    of the kept training columns; ``m`` and ``1 / sum(s)``, the flat-prior intercept's variance,
    only with ``fit_intercept``; ``noise`` from :meth:`_noise_variance`): ``z^T P^{-1} z + noise``
    for ``z = [1, x_a]`` and the joint precision ``P`` of intercept and coefficients.
    """

    def _keep_fit(self, X, fit: ARDFit, weights):
        """The fitted attributes of an ARD fit (posterior at the final precisions ``weights``)."""
        n_features = X.shape[1]
        Xa = X[:, fit.active]
        self.coef_ = np.zeros(n_features)
        self.coef_[fit.active] = fit.coef
        self.intercept_ = float(fit.intercept) if self.fit_intercept else 0.0
        self.relevance_ = np.full(n_features, np.inf)
        self.relevance_[fit.active] = fit.relevance
        self.active_ = np.zeros(n_features, dtype=bool)
        self.active_[fit.active] = True
        self.sigma_ = posterior_covariance(Xa, weights, fit.relevance,
                                           fit_intercept=self.fit_intercept)
        self.n_iter_ = fit.n_iter
        self.converged_ = fit.converged
        total = float(np.sum(weights))
        if self.fit_intercept and total > 0:
            self._x_center = (weights @ Xa) / total
            self._intercept_var = 1.0 / total
        else:
            self._x_center = np.zeros(Xa.shape[1])
            self._intercept_var = 0.0

    def _noise_variance(self) -> float:  # pragma: no cover - every estimator overrides it
        raise NotImplementedError

    def predict(self, X, return_std=False):
        """Predict targets, ``X @ coef_ + intercept_``, and optionally their predictive spread.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        return_std : bool, default=False
            Also return the standard deviation of the predictive distribution of a new target
            (posterior uncertainty of the kept coefficients and the intercept, plus the noise
            variance; see the class's Notes).

        Returns
        -------
        y_mean : ndarray of shape (n_samples,)
        y_std : ndarray of shape (n_samples,)
            Only with ``return_std=True``.
        """
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        mean = X @ self.coef_ + self.intercept_
        if not return_std:
            return mean
        Xa = X[:, self.active_] - self._x_center
        var = np.einsum("ij,jk,ik->i", Xa, self.sigma_, Xa)
        return mean, np.sqrt(np.maximum(var, 0.0) + self._intercept_var + self._noise_variance())


def ard_relevance_step(gamma, coef, relevance_max):
    """The ARD update ``a_d = gamma_d / w_d^2`` (``inf`` where not positive and finite) and
    the mask of relevances below ``relevance_max``."""
    w2 = np.square(coef)
    with np.errstate(divide="ignore", invalid="ignore"):
        relevance = np.where(w2 > 0.0, gamma / w2, np.inf)
    relevance[~np.isfinite(relevance) | (relevance <= 0.0)] = np.inf
    keep = relevance < relevance_max
    return relevance, keep


#: ``gamma`` at or above this is treated as 1 by :func:`faul_tipping_step` (``1 - gamma``
#: carries no digits there), which keeps MacKay's ``gamma / w^2``.
GAMMA_ONE = 1.0 - 1e-12


def faul_tipping_step(gamma, coef, relevance, relevance_max):
    """Each relevance set to the maximiser of the evidence in it alone (Faul & Tipping, 2002),
    the others and the noise precisions held, from the posterior the relevances ``relevance``
    gave (``gamma = 1 - a Sigma_dd``, ``coef = mu``); returns it and the mask below
    ``relevance_max``.

    With ``s = a gamma / (1 - gamma)`` and ``q = a mu / (1 - gamma)`` (Tipping & Faul's sparsity
    and quality factors), the maximiser is ``s^2 / (q^2 - s) = a gamma^2 / (a mu^2 -
    gamma (1 - gamma))`` where ``q^2 > s`` and ``inf`` otherwise. It equals ``a`` exactly where
    MacKay's ``gamma / mu^2`` does (the same fixed points), and ``q^2 <= s`` is where MacKay's
    update, an affine map of slope ``s / q^2`` in that relevance, grows without bound. Where
    ``gamma`` is 1 to rounding, MacKay's value is kept."""
    mackay, _ = ard_relevance_step(gamma, coef, relevance_max)
    m, g1 = relevance * np.square(coef), gamma * (1.0 - gamma)
    exact = (gamma > 0.0) & (gamma < GAMMA_ONE)
    ok = exact & (m > g1)
    new = np.where(exact, np.inf, mackay)
    new[ok] = relevance[ok] * gamma[ok] ** 2 / (m[ok] - g1[ok])
    return new, new < relevance_max
