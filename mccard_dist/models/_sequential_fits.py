"""MCC-ARD and LS-ARD by the sequential solver: outer loops (the robust fit's precisions and
width, the Gaussian fit's noise variance) around :class:`SequentialARD`.
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
    """The engine's coefficients (all features), sorted active set, the coefficients' change
    since ``coef_prev`` and whether the active set is ``active_prev``."""
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


def _max_steps(n_features: int) -> int:
    """Steps of one inner maximisation (an outer iteration that stops early resumes there)."""
    return 200 + 4 * min(n_features, 1000)


def fit_robust(model, X, y, schedule, start=None) -> ARDFit:
    """MCC-ARD by the sequential solver: the precisions ``model._precisions(e, h)`` refreshed
    from the residuals around the evidence maximisation.

    The empty start's residuals are as large as ``y``, so a fixed width is reached by halving
    from ``var(y)`` (the wide kernels see every sample as an inlier); the auto width
    (``schedule``) anneals from ``var(y)`` and is widened once settled. Converged when the width
    is reached, the inner maximisation settled at ``tol``, the active set unchanged and no
    coefficient moved by more than ``tol`` relative.

    ``start`` (a fixed width only): a previous fit (:class:`WarmStart`) whose active set,
    relevances and residuals the fit starts from, halving from its width (if wider) instead of
    ``var(y)``: the route a cold fit takes, joined where the previous fit ended."""
    precisions, tol, sample_weight = model._precisions, model.tol, model._fit_weights
    kernel_width = None if schedule is not None else model.kernel_width
    scale = weighted_var(y, sample_weight)
    if not (np.isfinite(scale) and scale > 0.0):
        scale = 1.0
    engine = SequentialARD(X, fit_intercept=model.fit_intercept,
                           relevance_max=model.relevance_max)
    if start is not None:
        h = max(kernel_width, start.scale)
        engine.active = start.active
        engine.relevance = start.relevance[engine.active]
        e = y - start.intercept - X @ start.coef
    else:
        h = schedule.h if schedule is not None else max(kernel_width, scale)
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
        # loose while the outer loop moves: the next precisions replace these anyway
        inner_tol = _LOOSE if moved else float(min(max(tol, 0.1 * dw), _LOOSE))
    return _result(engine, h, float("nan"), n_iter, converged, degenerate)


def fit_gaussian(model, X, y) -> ARDFit:
    """LS-ARD by the sequential solver: the evidence maximisation at a fixed noise variance,
    then ``sigma^2 = ||t - Z mu||^2 / (N - sum gamma)`` (one fewer with an intercept), from
    ``var(y)`` until variance, active set and coefficients settle. It stops (``degenerate``)
    when the model interpolates, at ``N - 2`` features (``N - 1`` without intercept). Weights
    ``c``: precisions ``c_n / sigma^2``, ``N = sum c``, the limit counts weights > 0."""
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
    engine.set_precisions(c / noise_var, y)
    return _result(engine, float("nan"), noise_var, n_iter, converged, collapsed)
