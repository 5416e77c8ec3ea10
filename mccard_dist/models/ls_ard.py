"""LS-ARD: Gaussian-noise sparse Bayesian regression (MacKay / Tipping updates)."""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import StrOptions

from . import _pruning_fits, _sequential_fits
from ._base import (AT_LEAST_ONE, POSITIVE, PosteriorPredictive, RegressorBase,
                    resolve_relevance_update, resolve_solver)
from ._linalg import hat_diagonal

__all__ = ["LSARDRegressor"]


class LSARDRegressor(PosteriorPredictive, RegressorBase):
    """Sparse linear regression with an ARD prior and Gaussian noise (paper Section II).

    Parameters
    ----------
    max_iter : int, default=300
        Maximum number of iterations.
    tol : float, default=1e-4
        Stop when, after an update that pruned nothing, the largest change of ``w`` relative to
        ``max |w|`` and the largest change of ``log a`` and of ``log sigma^2`` are below ``tol``.
    relevance_max : float, default=1e6
        Pruning threshold ``a_max``.
    fit_intercept : bool, default=True
        Fit an unpenalised intercept (the posterior over ``w`` is then the one with the intercept
        profiled out, and the intercept counts as one degree of freedom in the noise update).
    form : {"auto", "primal", "dual"}, default="auto"
        Linear algebra: dual (Woodbury) while more features are active than samples.
    solver : {"auto", "pruning", "sequential"}, default="auto"
        ``"pruning"``: the updates below, starting with every feature and pruning.
        ``"sequential"``: the fast marginal-likelihood maximisation of Tipping & Faul (2003),
        from an empty model, one feature added, re-estimated or deleted at a time, with the noise
        variance re-estimated between maximisations (its cost grows with the features kept;
        ``form`` does not apply). ``"auto"``: the rule of :class:`MCCARDRegressor`
        (:func:`~mccard_dist.models.resolve_solver`): pruning at the paper's sizes,
        sequential for large ``N D min(N, D)`` or ``D > 10 N``.
    relevance_update : {"auto", "mackay", "tail-exact"}, default="auto"
        The pruning solver's a-step: MacKay's ``a_d <- gamma_d / mu_d^2`` throughout, or
        (``"tail-exact"``) in the fit's tail each relevance set to its exact one-dimensional
        optimum at the current ``sigma^2`` (Faul & Tipping, 2002; held at ``relevance_max``
        where it is infinite and pruned when the fit ends). The tail: after the first
        iteration, no more active features than samples and ``w`` moving by at most 3e-4
        relative (as :class:`MCCARDRegressor`). ``"auto"``: MacKay's at the paper's sizes (where
        it converges), tail-exact where the pruning solver runs beyond them
        (:func:`~mccard_dist.models.resolve_relevance_update`).

    Attributes
    ----------
    solver_ : str
        The solver that ran.
    relevance_update_ : str
        The pruning solver's a-step that ran, ``"mackay"`` or ``"tail-exact"``.
    coef_ : ndarray of shape (n_features,)
        Posterior mean of ``w``; exactly 0 for pruned features.
    intercept_ : float
        Intercept.
    relevance_ : ndarray of shape (n_features,)
        Relevances ``a_d`` (``inf`` where pruned).
    active_ : ndarray of bool, shape (n_features,)
        Kept features.
    noise_var_ : float
        Estimated noise variance ``sigma^2``.
    sigma_ : ndarray of shape (n_active, n_active)
        Posterior covariance of the kept coefficients.
    degenerate_ : bool
        Whether the fit is degenerate (the attribute MCC-ARD sets too): its noise variance
        collapsed, the model interpolates the training data (typically with more features than
        samples, or noise-free targets), and ``noise_var_``, the
        predictive band and the relevances say little. The pruning solver's variance then stops
        at its floor, ``1e-12 var(y)``; the sequential solver stops adding features at ``N - 2``
        of them (``N - 1`` without an intercept). A ``ConvergenceWarning`` says so too.
    n_iter_ : int
        Iterations run.
    converged_ : bool
        Whether the stopping rule fired.
    n_features_in_ : int
        Number of features seen in ``fit``.

    Notes
    -----
    ``predict(X, return_std=True)`` gives the predictive spread of a new target: the posterior of
    the kept coefficients and the intercept plus ``noise_var_`` (as ``ARDRegression``), only as
    good as ``noise_var_``, which can collapse with more features than samples.

    Each iteration: ``Sigma = (X^T X / sigma^2 + A)^{-1}``, ``mu = Sigma X^T t / sigma^2``;
    ``gamma_d = 1 - a_d Sigma_dd``; ``a_d = gamma_d / mu_d^2``;
    ``sigma^2 = ||t - X mu||^2 / (N - sum_d gamma_d)`` (one more degree of freedom with an
    intercept); features with ``a_d >= relevance_max`` are pruned. The start is
    ``sigma^2 = var(t)``, ``a = 1``, as in :class:`sklearn.linear_model.ARDRegression`, which
    runs the same updates (with Gamma hyper-priors; with those zero,
    ``threshold_lambda=relevance_max`` and ``fit_intercept=False`` the two agree; scikit-learn
    does not count an intercept as a degree of freedom). With far more features than samples the
    noise variance collapses and many features survive: that is the behaviour of LS-ARD itself.

    Examples
    --------
    >>> from mccard_dist import LSARDRegressor, make_paper_data
    >>> data = make_paper_data(seed=0, psi=0.0, tau=2.0, n_features=100)
    >>> model = LSARDRegressor().fit(data.X_train, data.y_train)
    >>> bool(model.score(data.X_test, data.y_test) > 0.9)
    True
    """

    #: what the pipeline reads about this estimator (:func:`mccard_dist.methods.kind_of`)
    mccard_method = {"label": "LS-ARD", "alo": True,
                     "solver_params": ("solver", "form", "relevance_update"),
                     "resolve_params": "mccard_dist.models._base:resolve_ls_params",
                     "label_params": (("solver", "sequential", "sequential solver"),)}

    _parameter_constraints = {
        "max_iter": [AT_LEAST_ONE],
        "tol": [POSITIVE],
        "relevance_max": [POSITIVE],
        "fit_intercept": ["boolean"],
        "form": [StrOptions({"auto", "primal", "dual"})],
        "solver": [StrOptions({"auto", "pruning", "sequential"})],
        "relevance_update": [StrOptions({"auto", "mackay", "tail-exact"})],
    }

    def __init__(self, *, max_iter=300, tol=1e-4, relevance_max=1e6, fit_intercept=True,
                 form="auto", solver="auto", relevance_update="auto"):
        self.max_iter = max_iter
        self.tol = tol
        self.relevance_max = relevance_max
        self.fit_intercept = fit_intercept
        self.form = form
        self.solver = solver
        self.relevance_update = relevance_update

    def _leverage(self, X, e):
        """Hat diagonal of the posterior mean (weights ``c / sigma^2``, final relevances)."""
        weights = self._weights(X.shape[0], self.noise_var_)
        return hat_diagonal(X[:, self.active_], weights, self.sigma_,
                            fit_intercept=self.fit_intercept)

    def _noise_variance(self) -> float:
        """The predictive noise: the estimated Gaussian noise variance ``noise_var_``."""
        return self.noise_var_

    def _weights(self, n_samples, noise_var):
        """The noise precisions ``c_n / sigma^2`` (``c``: the fit's weights, 1 when not given)."""
        if self._fit_weights is None:
            return np.full(n_samples, 1.0 / noise_var)
        return self._fit_weights / noise_var

    def fit(self, X, y, sample_weight=None):
        """Fit by the MacKay fixed-point updates.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), optional
            Weights ``c_n >= 0`` of the samples: sample ``n`` has noise variance
            ``noise_var_ / c_n``, so an integer weight acts as that many copies of the sample
            and a weight of 0 drops it (``N`` in the variance update is ``sum c``).

        Returns
        -------
        self : LSARDRegressor
        """
        self._validate_params()
        X, y, sw = self._validate_fit_data(X, y, sample_weight)
        self._fit_weights = sw
        self.solver_ = resolve_solver(self.solver, *X.shape)
        self.relevance_update_ = resolve_relevance_update(self.relevance_update, self.solver_,
                                                          *X.shape, likelihood="gaussian")
        solver = _sequential_fits if self.solver_ == "sequential" else _pruning_fits
        fit = solver.fit_gaussian(self, X, y)
        if fit.degenerate:
            warnings.warn(f"LS-ARD: the noise variance collapsed ({fit.noise_var:.3g}) with "
                          f"{fit.active.size} features: the model interpolates the training data "
                          "(degenerate_); with more features than samples the evidence "
                          "grows without bound as the variance falls.", ConvergenceWarning,
                          stacklevel=3)
        elif not fit.converged:
            warnings.warn(f"LS-ARD did not converge in max_iter={self.max_iter} iterations "
                          f"(tol={self.tol!r}); increase max_iter or tol.", ConvergenceWarning,
                          stacklevel=3)
        self._keep_fit(X, fit, self._weights(X.shape[0], fit.noise_var))
        self.noise_var_ = float(fit.noise_var)
        self.degenerate_ = bool(fit.degenerate)
        return self
