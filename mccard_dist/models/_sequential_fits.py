"""MCC-ARD and LS-ARD fits by the sequential solver: outer loops around :class:`SequentialARD`.

The outer loop of a robust fit refreshes the per-sample noise precisions (the half-quadratic
weights, and the auto width) from the residuals; that of a Gaussian fit re-estimates the noise
variance. Each runs the evidence maximisation of :mod:`._sequential` for the precisions it holds.

The fit leaves the process's BLAS threads as the caller set them (a limit is process-wide, so
an estimator that set one would change every other thread's fits too); the pipeline's workers
run with one BLAS thread each.
"""

from __future__ import annotations

import numpy as np

from ._base import ARDFit, relative_change, weighted_median, weighted_var
from ._linalg import loo_from_leverage
from ._sequential import SequentialARD

__all__ = ["fit_gaussian", "fit_robust"]

#: the relevances' tolerance (in log) of the inner maximisation while the outer loop still moves
_LOOSE = 0.1


def _changes(engine: SequentialARD, coef_prev: np.ndarray, active_prev):
    """The engine's coefficients (all features) and sorted active set, the change of the
    coefficients since ``coef_prev`` (:func:`relative_change`), and whether the active set is
    ``active_prev``."""
    coef = np.zeros(coef_prev.size)
    coef[engine.active] = engine.coef
    active = np.sort(engine.active)
    return (coef, active, relative_change(coef, coef_prev),
            active_prev is not None and np.array_equal(active, active_prev))


def _result(engine, kernel_width, noise_var, n_iter, converged, degenerate) -> ARDFit:
    active, coef, relevance = engine.in_feature_order()
    if degenerate and not np.isnan(kernel_width):  # robust: every sample lost its weight
        active, coef, relevance = active[:0], coef[:0], relevance[:0]
    return ARDFit(active, coef, float(engine.intercept), relevance, float(kernel_width),
                  float(noise_var), n_iter, converged, degenerate, engine=engine)


def _inner_tol(dw: float, tol: float, moved: bool) -> float:
    """How far the relevances are settled for the next precisions: loosely while the outer
    loop still moves (the width, or coefficients by more than ``10 tol``), ``tol`` near its end.
    A maximisation for precisions that the next iteration replaces needs no more accuracy than
    the change it is about to see; the fit converges only after one at ``tol``."""
    if moved:
        return _LOOSE
    return float(min(max(tol, 0.1 * dw), _LOOSE))


def _max_steps(n_features: int) -> int:
    """Steps of one inner maximisation: enough to add every feature a well-posed problem keeps
    several times over; an outer iteration that stops early resumes where it stopped."""
    return 200 + 4 * min(n_features, 1000)


def fit_robust(model, X, y, schedule) -> ARDFit:
    """MCC-ARD (:class:`~.mcc_ard.MCCARDRegressor` ``model``'s parameters) by the sequential
    solver: an outer loop that refreshes the per-sample precisions ``model._precisions(e, h)``
    from the residuals (the half-quadratic step) around the evidence maximisation for fixed
    precisions.

    The model starts empty, so its residuals start as large as ``y``: at a width far below
    ``var(y)`` every sample would have weight ~0. A fixed width is therefore reached by halving
    from ``var(y)`` (a continuation over the width: the wide kernels see every sample as an
    inlier and the first features entered are the ones the clean samples agree on); the auto
    width (``schedule``) anneals from ``var(y)`` by its own rule and is widened by
    the model's final width ratio once settled. The fit has converged when the width has
    reached its value, the inner maximisation has settled at ``tol`` (:func:`_inner_tol`), the
    active set is that of the previous iteration and no coefficient moved by more than ``tol``
    times the largest. The precisions carry the samples' weights; they also weight ``var(y)``
    and the median of the start.
    """
    precisions, tol, sample_weight = model._precisions, model.tol, model._fit_weights
    kernel_width = None if schedule is not None else model.kernel_width
    scale = weighted_var(y, sample_weight)
    if not (np.isfinite(scale) and scale > 0.0):
        scale = 1.0
    h = schedule.h if schedule is not None else max(kernel_width, scale)
    engine = SequentialARD(X, fit_intercept=model.fit_intercept,
                           relevance_max=model.relevance_max)
    e = y - weighted_median(y, sample_weight) if model.fit_intercept else y
    coef_prev = np.zeros(X.shape[1])
    active_prev = None
    converged = degenerate = False
    n_iter = 0
    inner_tol = _LOOSE
    for n_iter in range(1, model.max_iter + 1):
        beta = precisions(e, h)
        if not beta.any():
            degenerate = True
            break
        engine.set_precisions(beta, y)
        settled, _ = engine.run(_max_steps(X.shape[1]), inner_tol)
        e = engine.residuals()
        coef_prev, active_prev, dw, same = _changes(engine, coef_prev, active_prev)
        moved = False
        if schedule is not None and not schedule.settled:
            h = schedule.update(loo_from_leverage(e, engine.leverage(), sample_weight))
            if schedule.settled:
                h = schedule.widen(model._final_width_ratio())
            moved = True
        elif schedule is None and h > kernel_width:
            h = max(kernel_width, h / 2.0)
            moved = True
        converged = bool(settled and inner_tol <= tol and same and dw <= tol and not moved)
        if converged:
            break
        inner_tol = _inner_tol(dw, tol, moved)
    return _result(engine, h, float("nan"), n_iter, converged, degenerate)


def fit_gaussian(model, X, y) -> ARDFit:
    """LS-ARD (:class:`~.ls_ard.LSARDRegressor` ``model``'s parameters) by the sequential solver: the evidence maximisation in the relevances for a fixed
    noise variance, then ``sigma^2 = ||t - Z mu||^2 / (N - sum gamma)`` (one degree of freedom
    fewer with an intercept), until the variance, the active set and the coefficients settle.
    The variance starts at ``var(y)``.

    With more features than samples the evidence can grow without bound as the variance falls
    and features are added until the model interpolates the training data: the fit stops there
    (``degenerate``), at ``K = N - 2`` active features (``N - 1`` with no intercept).

    Sample weights ``c``: the precisions are ``c_n / sigma^2``, ``||.||^2`` is weighted and
    ``N`` is ``sum c`` in the variance; the interpolation limit counts the samples of weight > 0.
    """
    tol, fit_intercept, sample_weight = model.tol, model.fit_intercept, model._fit_weights
    n = X.shape[0]
    c = np.ones(n) if sample_weight is None else sample_weight
    rows = n if sample_weight is None else int(np.count_nonzero(c))
    total = n if sample_weight is None else float(c.sum())
    dof = total - (1 if fit_intercept else 0)
    limit = rows - (1 if fit_intercept else 0)
    tiny = np.finfo(float).tiny
    noise_var = weighted_var(y, sample_weight) + np.finfo(float).eps
    floor = 1e-12 * noise_var
    engine = SequentialARD(X, fit_intercept=fit_intercept, relevance_max=model.relevance_max)
    coef_prev = np.zeros(X.shape[1])
    active_prev = None
    converged = collapsed = False
    n_iter = 0
    for n_iter in range(1, model.max_iter + 1):
        beta = c / noise_var
        engine.set_precisions(beta, y)
        settled, _ = engine.run(_max_steps(X.shape[1]), tol)
        e = engine.residuals()
        dof_left = dof - float(engine.gamma().sum())
        new_var = max(max(float(e @ (c * e)), tiny) / max(dof_left, tiny), floor)
        if engine.active.size >= limit - 1 or dof_left <= 0:
            # the model interpolates (or, with weights below 1, uses up the degrees of freedom
            # sum c gives): the noise variance has collapsed
            noise_var, collapsed = (new_var if dof_left > 0 else floor), True
            break
        coef_prev, active_prev, dw, same = _changes(engine, coef_prev, active_prev)
        dv = abs(np.log(new_var / noise_var))
        converged = bool(settled and same and dw <= tol and dv <= tol)
        noise_var = new_var
        if converged:
            break
    # the posterior at the final variance
    engine.set_precisions(c / noise_var, y)
    return _result(engine, float("nan"), noise_var, n_iter, converged, collapsed)
