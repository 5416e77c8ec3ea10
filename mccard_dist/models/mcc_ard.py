"""MCC-ARD: maximum-correntropy regression with automatic relevance determination."""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import StrOptions

from ._base import (AT_LEAST_ONE, POSITIVE, WIDTH, PosteriorPredictive, RegressorBase,
                    WarmStart, resolve_relevance_update, resolve_solver)
from . import _pruning_fits, _sequential_fits
from ._likelihoods import irls_weight, kernel, log_density
from ._linalg import hat_diagonal
from ._width import WidthSchedule, is_auto

__all__ = ["MCCARDRegressor", "fit_width_path"]

#: ``final_width_ratio=None``: the final width over the annealed one, per likelihood.
FINAL_WIDTH_RATIO = {"deviant": 2.0, "proper": 8.0}


class MCCARDRegressor(PosteriorPredictive, RegressorBase):
    """Robust sparse linear regression by MCC-ARD (Li et al., IJCNN 2023, Algorithm 1).

    The noise model is the correntropy-induced density ``C(e|0,h) = exp(exp(-e^2/2h))``
    ("deviant", the paper's proposal) or its normalisable shift
    ``C'(e|0,h) = exp(exp(-e^2/2h)) - 1`` ("proper", the paper's Discussion). An ARD prior
    ``w_d ~ N(0, 1/a_d)`` with a Jeffreys hyper-prior on each relevance ``a_d`` prunes irrelevant
    features: a feature whose relevance reaches ``relevance_max`` has its coefficient set to zero
    and is removed from later updates.

    Parameters
    ----------
    kernel_width : float or "auto", default="auto"
        Kernel width ``h > 0`` (a variance, in squared units of ``y``): ``"auto"`` sets it inside
        the fit from the fit's own leave-one-out residuals, scaled to the data (see Notes); a
        number fixes it (choose it by cross-validation, e.g. :class:`MCCARDRegressorCV`). With the
        default ``h_factor`` it plays the role of the inlier noise variance.
    likelihood : {"deviant", "proper"}, default="deviant"
        Noise density: ``C`` (the paper's eq. (22), the MCC-aware PDF) or ``C'`` (eq. (40), in
        its Discussion).
    h_factor : {"consistent", "printed"}, default="consistent"
        Reading of the w-step. ``"consistent"``: the stationary point of the log-joint
        ``sum_n log p(e_n) - w^T A w / 2`` whose negative Hessian the paper states,
        ``w = (X^T Psi X / h + A)^{-1} X^T Psi t / h``. ``"printed"``: the w-step exactly as printed
        in the paper's fixed-point equation (34), ``w = (X^T Psi X + A)^{-1} X^T Psi t``, which is
        the stationary point of ``h sum_n log p(e_n) - w^T A w / 2`` (inlier noise variance 1).
    curvature : {"fisher", "exact"}, default="fisher"
        Curvature whose inverse diagonal gives ``s_d^2`` in the a-step. ``"fisher"``: the w-step's
        own matrix ``X^T Psi X / h + A`` (always positive definite). ``"exact"``: the negative
        Hessian of the paper's Laplace approximation (eq. (29)), which can be indefinite; where it
        is not positive definite, or gives ``gamma_d = 1 - a_d s_d^2`` (eq. (35)) outside (0, 1],
        the Fisher value is used for that feature and counted in ``n_curvature_fallbacks_``.
    init : {"ridge", "zero"}, default="ridge"
        Starting coefficients: ``"ridge"`` is one w-step with every kernel weight 1 (``Psi = I``)
        and ``a = 1``; ``"zero"`` starts from ``w = 0`` (and the median of ``y`` as intercept).
    w_steps : int, default=10
        Maximum fixed-point w-steps per outer iteration. The paper's text asks for the maximum
        point ``w*`` of ``log Q_w`` before each a-step; the default iterates the w-step towards it
        (stopping early once the relative change of ``w`` is below ``tol``). ``w_steps=1`` is
        Algorithm 1 read literally (one step per iteration): cheaper, but it reaches worse
        solutions under heavy contamination.
    max_iter : int, default=300
        Maximum number of outer (w-step + a-step) iterations.
    tol : float, default=1e-4
        Stop when, after an a-step that pruned nothing, the largest change of ``w`` relative to
        ``max |w|`` and the largest change of ``log a`` are both below ``tol``.
    relevance_max : float, default=1e6
        Pruning threshold ``a_max``.
    fit_intercept : bool, default=True
        Fit an unpenalised intercept inside the robust loop (weighted by the current sample
        weights, so outliers do not move it).
    form : {"auto", "primal", "dual"}, default="auto"
        Linear algebra of the w-step: dual (``N x N``, Woodbury) while more features are active
        than samples, primal afterwards (``"auto"``); or forced.
    final_width_ratio : float or None, default=None
        ``kernel_width="auto"`` only: the width of the final phase as a multiple of the annealed
        one (see Notes). ``None``: 2 for the deviant likelihood, 8 for the proper one.
    solver : {"auto", "pruning", "sequential"}, default="auto"
        ``"pruning"``: Algorithm 1, starting with every feature and pruning (a solve in
        ``min(N, D)`` per iteration). ``"sequential"``: the fast marginal-likelihood maximisation
        of Tipping & Faul (2003) with per-sample noise precisions, starting from an empty model
        and adding, re-estimating or deleting one feature at a time, so the cost grows with the
        features kept, not with ``N`` and ``D`` (see Notes; ``curvature="fisher"`` only;
        ``init``, ``w_steps`` and ``form`` do not apply). ``"auto"``: pruning where
        ``N D min(N, D) <= 3e8`` and ``D <= 10 N`` (the paper's sizes: it converges there and
        keeps the sparser selection) and, with ``kernel_width="auto"``, where ``D > N`` up to
        ``N D min(N, D) <= 3e10`` (the sequential fit's width rule settles narrower there and
        keeps extra features);
        sequential beyond (:func:`~mccard_dist.models.resolve_solver`); always pruning with
        ``curvature="exact"``. ``solver_`` says which ran.
    relevance_update : {"auto", "mackay", "tail-exact"}, default="auto"
        The pruning solver's a-step. ``"mackay"``: ``a_d <- gamma_d / w_d^2`` throughout (the
        paper's). ``"tail-exact"``: the same until the fit's tail, then each relevance set to
        its exact one-dimensional optimum ``s_d^2 / (q_d^2 - s_d)`` (Faul & Tipping, 2002; the
        same fixed points as MacKay's update, which only creeps towards them); where
        ``q_d^2 <= s_d`` (optimum infinite) it is held at ``relevance_max`` and pruned when the
        fit ends, since the others' moves can bring it back. The tail: after the first
        iteration, width settled, ``curvature="fisher"``, no more active features than samples
        and ``w`` moving by at most 3e-4 relative. The sequential solver
        always uses the exact step. ``"auto"``: tail-exact wherever the pruning solver runs
        (MacKay's update stops at ``max_iter`` short of its fixed point in many paper-size fits;
        :func:`~mccard_dist.models.resolve_relevance_update`); ``relevance_update_`` says which
        ran. ``"mackay"`` is the paper's Algorithm 1 as printed.
    warm_start : bool, default=False
        Start ``fit`` from the previous fit's answer (on as many features; a fixed
        ``kernel_width`` only) instead of ``init``: the pruning solver from its coefficients and
        relevances with the pruned features back in at ``relevance_max`` (the first a-step prunes
        again those the new width does not need), the sequential one from its active set,
        relevances and residuals, halving from its width. :class:`MCCARDRegressorCV` refits
        its widths this way, wide to narrow, with ``warm_start=True``; with the pruning solver
        the fits at narrow widths can end elsewhere than independent ones.

    Attributes
    ----------
    solver_ : str
        The solver that ran, ``"pruning"`` or ``"sequential"``.
    relevance_update_ : str
        The pruning solver's a-step that ran, ``"mackay"`` or ``"tail-exact"``.
    kernel_width_ : float
        The width ``h`` of the final fit (``kernel_width`` itself when it is a number).
    kernel_width_path_ : ndarray of shape (n_updates + 1,)
        ``"auto"``: the start width and the width after each update; else ``[kernel_width]``.
    coef_ : ndarray of shape (n_features,)
        Coefficients; exactly 0 for pruned features.
    intercept_ : float
        Intercept (0.0 if ``fit_intercept=False``).
    relevance_ : ndarray of shape (n_features,)
        Final relevances ``a_d`` (``inf`` for pruned features).
    active_ : ndarray of bool, shape (n_features,)
        Features kept at the end.
    outlier_weights_ : ndarray of shape (n_samples,)
        Final kernel values ``kappa_n = exp(-e_n^2/2h)`` of the training samples: near 1 for samples
        the fit treats as inliers, near 0 for outliers.
    noise_precisions_ : ndarray of shape (n_samples,)
        The w-step's sample weights at the final residuals (``omega_n / h``, or ``omega_n`` with
        ``h_factor="printed"``, times ``sample_weight``): the per-sample noise precisions of the
        final posterior.
    sigma_ : ndarray of shape (n_active, n_active)
        Posterior covariance (Laplace approximation, Fisher curvature) of the kept coefficients.
    objective_ : float
        Final value of ``sum_n log p(e_n) - w^T A w / 2`` (times ``h`` for ``h_factor="printed"``):
        the paper's log joint (eq. (26)) without its ``-log|A| / 2`` term, so comparable between
        iterations of one fit, not across widths or active sets.
    n_iter_ : int
        Outer iterations run.
    converged_ : bool
        Whether the stopping rule fired before ``max_iter``.
    n_curvature_fallbacks_ : int
        Number of (iteration, feature) pairs where the exact curvature was unusable.
    degenerate_ : bool
        Whether every training sample lost its weight (the residuals far exceed the width): the
        fit then keeps no feature and predicts the intercept. A ``ConvergenceWarning`` says so too.
    n_features_in_ : int
        Number of features seen in ``fit``.

    Notes
    -----
    ``predict(X, return_std=True)`` gives the spread of a new *inlier* target: the Laplace
    posterior of the kept coefficients and the intercept (pruned features exactly 0) plus the
    inlier noise variance ``h`` (``kernel_width_``; 1 for ``h_factor="printed"``). A width larger
    than the inliers' variance (as CV chooses under heavy contamination) widens the band;
    outliers are not covered by it.

    One outer iteration (Algorithm 1):

    1. w-step: sample weights ``omega_n / h`` from the current residuals (``omega = kappa`` for
       the deviant density, ``kappa / (1 - exp(-kappa))`` for the proper one), then the weighted
       ridge solve with the current relevances. An intercept is profiled out with the same weights.
    2. a-step: ``a_d <- gamma_d / w_d^2`` with ``gamma_d = 1 - a_d s_d^2`` (the paper's fast
       update), ``s_d^2`` the inverse curvature's diagonal; ``gamma_d`` computed without
       cancellation.
    3. prune features with ``a_d >= relevance_max``.

    The stopping rule is tested only after an a-step, so a ridge start (already a fixed point of
    the w-step alone) cannot stop the loop with every feature kept.

    Where this departs from the paper's equations:

    - **Intercept.** The paper's model (eq. (2)) has none; ``fit_intercept=True`` (the default)
      profiles one out of every w-step with the same sample weights. ``fit_intercept=False`` is
      the paper's model.
    - **gamma.** ``gamma_d`` is clipped to ``[0, 1]`` before the a-step (eq. (35)), and a feature
      whose ``gamma_d / w_d^2`` is not positive and finite is pruned at once (``a_d = inf``),
      whatever ``relevance_max``.
    - **objective_** is not the log joint of eq. (26): the ``-log|A| / 2`` term is left out (see
      the attribute).
    - The w-step's ``h`` factor, the Fisher curvature, the number of w-steps per iteration, the
      ridge start and the stopping rule are the parameters above, with their defaults' reasons.

    ``kernel_width="auto"`` (the paper leaves ``h`` open). The kernel is Welsch's loss with
    ``c^2 = 2h``, 95% efficient for Gaussian noise at ``c = 2.9846 sigma``, so the rule sets
    ``h = 4.454 sigma^2``, ``sigma^2`` the inlier noise variance estimated after every a-step from
    the last w-step's leave-one-out residuals ``e_n / (1 - H_nn)`` (training residuals understate
    the noise when D > N), kernel-weighted and debiased (:mod:`mccard_dist.models._width`). The
    width starts at ``var(y)`` and falls by at most 2x per update; while it moves, relevances
    reaching ``relevance_max`` are held there instead of pruned. When it first settles it is
    lowered to a ninth and the rule runs again, free to rise, to leave a fixed point whose fit
    still follows part of the outliers. Once settled again the fit goes on at
    ``final_width_ratio`` times that width: ``h`` is also the noise variance of ARD's evidence,
    and a wider final width prunes the small spurious features ARD keeps at the Welsch width
    while gross outliers stay out (the proper likelihood, whose weights are at least ``1/h``,
    needs a wider ratio). The ratios were set on development seeds that the comparisons in
    docs/results/ do not use.

    References
    ----------
    Y. Li, B. Chen, O. Yamashita, N. Yoshimura, Y. Koike. "Adaptive sparseness for
    correntropy-based robust regression via automatic relevance determination", IJCNN 2023.

    Examples
    --------
    >>> from mccard_dist import MCCARDRegressor, make_paper_data
    >>> data = make_paper_data(seed=0, psi=0.2, tau=5.0, n_features=200)
    >>> model = MCCARDRegressor(kernel_width=0.5).fit(data.X_train, data.y_train)
    >>> bool(model.score(data.X_test, data.y_test) > 0.9)
    True
    """

    #: what the pipeline reads about this estimator (:func:`mccard_dist.methods.kind_of`)
    mccard_method = {
        "label": "MCC-ARD", "width_param": "kernel_width", "auto_width": True, "alo": True,
        "path": "mccard_dist.models.mcc_ard:fit_width_path", "path_param": "warm_start",
        "sparser_upwards": ("kernel_width",),
        "solver_params": ("solver", "warm_start", "w_steps", "init", "form",
                          "relevance_update"),
        "resolve_params": "mccard_dist.models._base:resolve_params",
        "label_params": (("likelihood", "proper", "proper C'"),
                         ("solver", "sequential", "sequential solver"))}

    _parameter_constraints = {
        "kernel_width": WIDTH,
        "likelihood": [StrOptions({"deviant", "proper"})],
        "h_factor": [StrOptions({"consistent", "printed"})],
        "curvature": [StrOptions({"fisher", "exact"})],
        "init": [StrOptions({"ridge", "zero"})],
        "w_steps": [AT_LEAST_ONE],
        "max_iter": [AT_LEAST_ONE],
        "tol": [POSITIVE],
        "relevance_max": [POSITIVE],
        "fit_intercept": ["boolean"],
        "form": [StrOptions({"auto", "primal", "dual"})],
        "final_width_ratio": [POSITIVE, None],
        "solver": [StrOptions({"auto", "pruning", "sequential"})],
        "warm_start": ["boolean"],
        "relevance_update": [StrOptions({"auto", "mackay", "tail-exact"})],
    }

    def __init__(self, kernel_width="auto", *, likelihood="deviant", h_factor="consistent",
                 curvature="fisher", init="ridge", w_steps=10, max_iter=300, tol=1e-4,
                 relevance_max=1e6, fit_intercept=True, form="auto", final_width_ratio=None,
                 solver="auto", warm_start=False, relevance_update="auto"):
        self.kernel_width = kernel_width
        self.likelihood = likelihood
        self.h_factor = h_factor
        self.curvature = curvature
        self.init = init
        self.w_steps = w_steps
        self.max_iter = max_iter
        self.tol = tol
        self.relevance_max = relevance_max
        self.fit_intercept = fit_intercept
        self.form = form
        self.final_width_ratio = final_width_ratio
        self.solver = solver
        self.warm_start = warm_start
        self.relevance_update = relevance_update

    def _final_width_ratio(self):
        if self.final_width_ratio is None:
            return FINAL_WIDTH_RATIO[self.likelihood]
        return self.final_width_ratio

    def _weight_scale(self, h):
        """Factor between ``omega`` and the w-step's sample weight: 1/h or 1 (printed)."""
        return 1.0 / h if self.h_factor == "consistent" else 1.0

    def _precisions(self, e, h):
        """The w-step's precisions ``c_n omega_n / h`` (``c_n omega_n`` if printed; ``c``: the
        fit's weights)."""
        s = self._weight_scale(h) * irls_weight(e, h, self.likelihood)
        return s if self._fit_weights is None else s * self._fit_weights

    def _validate_params(self):
        super()._validate_params()
        if self.solver == "sequential" and self.curvature != "fisher":
            raise ValueError("curvature='exact' needs solver='pruning': the sequential solver "
                             "uses the Fisher curvature (sample weights that are never negative)")

    def _warm_start(self) -> WarmStart | None:
        """The previous fit's answer when ``warm_start`` asks for it (none after a degenerate
        fit, where no sample kept its weight)."""
        if not self.warm_start or not hasattr(self, "coef_") or self.degenerate_:
            return None
        return WarmStart(self.coef_, self.intercept_, self.relevance_, self.kernel_width_)

    def _objective(self, e, coef, relevance, h):
        density = log_density(e, h, self.likelihood)
        data = density.sum() if self._fit_weights is None else self._fit_weights @ density
        if self.h_factor == "printed":
            data *= h
        return float(data - 0.5 * np.sum(relevance * coef**2))

    def _leverage(self, X, e):
        """Hat diagonal of the final w-step (its weights ``omega/h``, relevances, active set)."""
        return hat_diagonal(X[:, self.active_], self._precisions(e, self.kernel_width_),
                            self.sigma_, fit_intercept=self.fit_intercept)

    def _noise_variance(self) -> float:
        """The predictive noise: the inlier variance ``h`` of the density's Gaussian core
        ``log C(e) ~ 1 - e^2 / 2h`` (1 under ``h_factor="printed"``)."""
        return self.kernel_width_ if self.h_factor == "consistent" else 1.0

    def fit(self, X, y, sample_weight=None):
        """Fit the model by Algorithm 1.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (finite values, at least 2 samples).
        y : array-like of shape (n_samples,)
            Targets.
        sample_weight : array-like of shape (n_samples,), optional
            Weights ``c_n >= 0`` of the samples' log-likelihood terms: each half-quadratic
            weight becomes ``c_n omega_n / h``, so an integer weight acts as that many copies of
            the sample and a weight of 0 drops it (the leave-one-out residuals of
            ``kernel_width="auto"`` leave one unit of weight out, a whole sample below 1).

        Returns
        -------
        self : MCCARDRegressor
        """
        self._validate_params()
        start = self._warm_start()
        X, y, self._fit_weights = self._validate_fit_data(X, y, sample_weight)
        auto = is_auto(self.kernel_width)
        schedule = WidthSchedule(y, weights=self._fit_weights) if auto else None
        if auto or (start is not None and start.coef.size != X.shape[1]):
            start = None
        self.solver_ = resolve_solver(self.solver, *X.shape, self.curvature, auto_width=auto)
        self.relevance_update_ = resolve_relevance_update(self.relevance_update, self.solver_,
                                                          *X.shape, self.likelihood)
        solver = _sequential_fits if self.solver_ == "sequential" else _pruning_fits
        fit = solver.fit_robust(self, X, y, schedule, start)
        active, coef, relevance, h = fit.active, fit.coef, fit.relevance, fit.kernel_width
        if fit.degenerate:
            warnings.warn(f"every training sample has zero weight at kernel_width={h!r}: the "
                          "residuals are far too large for this width; all features were pruned. "
                          "Use a larger kernel_width.", ConvergenceWarning, stacklevel=3)
        elif not fit.converged and active.size > 0:
            warnings.warn(f"MCC-ARD did not converge in max_iter={self.max_iter} iterations "
                          f"(tol={self.tol!r}); increase max_iter or tol.", ConvergenceWarning,
                          stacklevel=3)
        if fit.n_fallbacks:
            warnings.warn(f"the exact curvature was unusable (indefinite, or gamma outside "
                          f"(0, 1]) {fit.n_fallbacks} times; the Fisher curvature was used there.",
                          RuntimeWarning, stacklevel=3)
        intercept = float(fit.intercept) if self.fit_intercept else 0.0
        e = y - intercept - X[:, active] @ coef
        weights = self._precisions(e, h)
        self._keep_fit(X, fit, weights)
        self.kernel_width_ = float(h)
        self.kernel_width_path_ = np.array(schedule.path if schedule else [h], dtype=float)
        self.outlier_weights_ = kernel(e, h)
        self.noise_precisions_ = weights
        self.objective_ = self._objective(e, coef, relevance, h)
        self.n_curvature_fallbacks_ = fit.n_fallbacks
        self.degenerate_ = bool(fit.degenerate)
        return self


def fit_width_path(models, X, y, sample_weight=None):
    """Fit the first of ``models`` (:class:`MCCARDRegressor` s that differ only in their fixed
    ``kernel_width``) at each one's width in their order, each fit warm-started from the one
    before (``warm_start``), yielding it (the same object) after each fit. Wide to narrow, each
    fit starts where a cold fit's route passes (the sequential solver anneals from wide widths
    down) or from a neighbour's near answer (the pruning solver)."""
    model = clone(models[0]).set_params(warm_start=True)
    kw = {} if sample_weight is None else {"sample_weight": sample_weight}
    for m in models:
        yield model.set_params(kernel_width=m.kernel_width).fit(X, y, **kw)
