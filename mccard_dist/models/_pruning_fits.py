"""MCC-ARD and LS-ARD by the pruning solver: every feature starts in the model; w-steps (weighted
ridge solves) and a-steps (``a_d = gamma_d / w_d^2``) prune a feature at ``relevance_max``.
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

from ._base import (ARDFit, ard_relevance_step, faul_tipping_step, relative_change, weighted_median,
                    weighted_var)
from ._likelihoods import neg_second_derivative
from ._linalg import RidgeSteps, inverse_lower, loo_from_leverage, weighted_ridge

__all__ = ["TAIL_CHANGE", "fit_gaussian", "fit_robust"]

#: ``relevance_update="tail-exact"``: the relative change of ``w`` in an iteration at or below
#: which (after the first iteration, with no more active features than samples) the a-step is
#: Faul & Tipping's exact one. Applied earlier, or from the start, it leaves the basin MacKay's
#: updates reach (the model collapses to a few features); a looser gate lands in a neighbouring
#: fixed point more often.
TAIL_CHANGE = 3e-4

def _gate_holds(n_iter, Xa, coef, coef_prev) -> bool:
    """The tail's gate: after the first iteration, no more active features than samples, ``w``
    moving by at most :data:`TAIL_CHANGE`."""
    return n_iter > 1 and Xa.shape[1] <= Xa.shape[0] and \
        relative_change(coef, coef_prev) <= TAIL_CHANGE

def _in_tail(model, n_iter, Xa, coef, coef_prev) -> bool:
    """Whether this iteration's a-step is the exact per-feature one (``tail-exact``)."""
    return model.relevance_update_ == "tail-exact" and _gate_holds(n_iter, Xa, coef, coef_prev)

def _tail_step(gamma, coef, relevance, relevance_max):
    """The tail's a-step: each relevance set to its exact one-dimensional optimum
    (:func:`faul_tipping_step`); one whose optimum is infinite (``q^2 <= s``) is held at
    ``relevance_max`` in the model rather than pruned, since the other relevances still move and
    can bring it back, and is pruned when the fit ends (:func:`_drop_held`). Nothing is pruned
    here, so MacKay's convergence test applies unchanged."""
    new, _ = faul_tipping_step(gamma, coef, relevance, relevance_max)
    return np.minimum(new, relevance_max), np.ones(new.shape, dtype=bool)

def _drop_held(relevance, relevance_max, *arrays):
    """``relevance`` and ``arrays`` without the features the tail held at ``relevance_max``."""
    keep = relevance < relevance_max
    return [a[keep] for a in (relevance, *arrays)]

def _settle_w(model, Xa, y, coef, intercept, relevance, h, ridge):
    """w-steps at fixed relevances until ``w`` settles (at most ``w_steps``): the w-step's fixed
    point of a model that lost the features the tail held, whose tiny coefficients the
    others' had absorbed; returns the coefficients and intercept."""
    steps = RidgeSteps(Xa, relevance, **ridge)
    for _ in range(model.w_steps):
        s = model._precisions(y - intercept - Xa @ coef, h)
        if not s.any():
            break
        sol = steps.solve(y, s, compute_gamma=False)
        settled = relative_change(sol.coef, coef) <= model.tol
        coef, intercept = sol.coef, sol.intercept
        if settled:
            break
    return coef, intercept

def _exact_gamma(model, Xa, e, relevance, gamma_fisher, h):
    """``gamma_d = 1 - a_d s_d^2`` from the exact negative Hessian ``H = G + A`` (eq. (29)) as
    ``(H^{-1} G)_dd`` (no cancellation), the Fisher value where unusable; returns (gamma, n_bad)."""
    c = model._weight_scale(h) * h * neg_second_derivative(e, h, model.likelihood)
    if model._fit_weights is not None:
        c = c * model._fit_weights
    k = Xa.shape[1]
    if model.fit_intercept:
        Z = np.hstack([Xa, np.ones((Xa.shape[0], 1))])
        prior = np.append(relevance, 0.0)
    else:
        Z, prior = Xa, relevance
    G = (Z * c[:, None]).T @ Z
    H = G.copy()
    H.flat[:: H.shape[0] + 1] += prior
    try:
        factor, _ = linalg.cho_factor(H, lower=True, check_finite=False)
        T = inverse_lower(factor)  # lower triangle of H^{-1}
    except linalg.LinAlgError:
        return gamma_fisher, k
    P = T * G  # (H^{-1} G)_dd = sum_j (T + T^T - diag T)_dj G_jd
    gamma = (P.sum(axis=0) + P.sum(axis=1) - np.diag(P))[:k]
    s2 = np.diag(T)[:k]
    bad = ~((s2 > 0.0) & (gamma > 0.0) & (gamma <= 1.0))
    gamma = np.where(bad, gamma_fisher, gamma)
    return gamma, int(bad.sum())

def _relevance_change(new, before, keep) -> float:
    """The largest change, in log, of the relevances that stay."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.max(np.abs(np.log(new[keep] / before[keep])), initial=0.0))

def fit_robust(model, X, y, schedule, start=None) -> ARDFit:
    """MCC-ARD by Algorithm 1: up to ``w_steps`` w-steps per iteration (until ``w`` settles),
    the a-step and pruning. ``schedule``: the auto width's, or None. Converged when nothing is
    pruned and neither ``w`` nor the relevances move by more than ``tol`` (width settled).

    ``relevance_update="tail-exact"`` (Fisher curvature, width settled): in the tail
    (:func:`_in_tail`) the a-step is :func:`_tail_step`, with the same convergence test.

    ``start``: a previous fit (:class:`WarmStart`) to start from instead of ``init``: its
    coefficients and relevances, every feature it pruned back in at ``relevance_max``, so the
    first a-step prunes again those the new fit does not need and lets back in those it does."""
    n_samples, n_features = X.shape
    sw = model._fit_weights
    h = schedule.h if schedule else model.kernel_width
    ridge = dict(fit_intercept=model.fit_intercept, form=model.form)
    active = np.arange(n_features)
    relevance = np.ones(n_features)
    Xa = X
    if start is not None:
        coef, intercept = start.coef.copy(), start.intercept
        relevance = np.minimum(start.relevance, model.relevance_max)
    elif model.init == "ridge":
        start_weights = model._weight_scale(h) * (np.ones(n_samples) if sw is None else sw)
        ridge_start = weighted_ridge(X, y, start_weights, relevance, compute_gamma=False, **ridge)
        coef, intercept = ridge_start.coef, ridge_start.intercept
    else:
        coef = np.zeros(n_features)
        intercept = weighted_median(y, sw) if model.fit_intercept else 0.0
    converged = degenerate = False
    n_fallbacks = n_iter = 0
    for n_iter in range(1, model.max_iter + 1):
        coef_prev = coef
        # an unsettled auto width needs the last w-step's hat diagonal (leave-one-out)
        update_width = schedule is not None and not schedule.settled
        # w-steps until w settles; the last (one more once settled) also gives gamma
        steps = RidgeSteps(Xa, relevance, **ridge)
        last = False
        for step in range(model.w_steps):
            e = y - intercept - Xa @ coef
            s = model._precisions(e, h)
            if not s.any():
                degenerate = True
                break
            last = last or step == model.w_steps - 1
            sol = steps.solve(y, s, compute_gamma=last, compute_leverage=last and update_width)
            settled = relative_change(sol.coef, coef) <= model.tol
            coef, intercept = sol.coef, sol.intercept
            if last:
                break
            last = settled
        if degenerate:
            break
        gamma = np.clip(sol.gamma, 0.0, 1.0)
        if model.curvature == "exact":
            gamma, bad = _exact_gamma(model, Xa, e, relevance, gamma, h)
            n_fallbacks += bad
        tail = (not update_width and model.curvature == "fisher"
                and _in_tail(model, n_iter, Xa, coef, coef_prev))
        step = _tail_step(gamma, coef, relevance, model.relevance_max) if tail else \
            ard_relevance_step(gamma, coef, model.relevance_max)
        new_relevance, keep = step
        if update_width:
            h = schedule.update(loo_from_leverage(y - intercept - Xa @ coef, sol.leverage, sw))
            if schedule.settled:
                h = schedule.widen(model._final_width_ratio())
            else:
                # h still moves: hold relevances at the threshold instead of pruning
                new_relevance = np.minimum(new_relevance, model.relevance_max)
                keep = np.ones_like(keep)
        converged = bool(keep.all() and not update_width
                         and relative_change(coef, coef_prev) <= model.tol
                         and _relevance_change(new_relevance, relevance, keep) <= model.tol)
        relevance = new_relevance
        if not keep.all():
            active, coef, relevance = active[keep], coef[keep], relevance[keep]
            Xa = X[:, active]
        if active.size == 0:
            converged = True  # w = 0 is a fixed point of both steps
        if converged:
            break
    held = int(np.sum(relevance >= model.relevance_max))
    relevance, active, coef = _drop_held(relevance, model.relevance_max, active, coef)
    if held and active.size and not degenerate:
        coef, intercept = _settle_w(model, X[:, active], y, coef, intercept, relevance, h, ridge)
    if degenerate:
        active, coef, relevance = active[:0], coef[:0], relevance[:0]
    return ARDFit(active, coef, float(intercept), relevance, float(h), float("nan"), n_iter,
                  converged, degenerate, n_fallbacks)

def fit_gaussian(model, X, y) -> ARDFit:
    """LS-ARD by MacKay's updates: a weighted ridge solve, ``a_d = gamma_d / mu_d^2`` (pruning)
    and ``sigma^2 = ||t - X mu||^2 / (N - sum gamma)`` until neither moves by ``tol``, then the
    posterior mean. A variance below ``1e-12 var(y)`` has collapsed (``degenerate``).

    ``relevance_update="tail-exact"``: in the tail (:func:`_in_tail`) the a-step is
    :func:`_tail_step` at the ``sigma^2`` of the solve, with the same convergence test."""
    n_samples, n_features = X.shape
    sw = model._fit_weights
    ridge = dict(fit_intercept=model.fit_intercept, form=model.form)
    total = n_samples if sw is None else float(sw.sum())
    dof_total = total - (1 if model.fit_intercept else 0)
    active = np.arange(n_features)
    relevance = np.ones(n_features)
    noise_var = weighted_var(y, sw) + np.finfo(float).eps
    floor = 1e-12 * noise_var
    collapsed = converged = False
    coef = np.zeros(n_features)
    Xa = X
    n_iter = 0
    for n_iter in range(1, model.max_iter + 1):
        coef_prev = coef
        sol = weighted_ridge(Xa, y, model._weights(n_samples, noise_var), relevance, **ridge)
        coef = sol.coef
        gamma = np.clip(sol.gamma, 0.0, 1.0)
        e2 = (y - sol.intercept - Xa @ coef) ** 2
        sse = float(np.sum(e2) if sw is None else sw @ e2)
        tail = _in_tail(model, n_iter, Xa, coef, coef_prev)
        step = _tail_step(gamma, coef, relevance, model.relevance_max) if tail else \
            ard_relevance_step(gamma, coef, model.relevance_max)
        new_relevance, keep = step
        dof_left = dof_total - float(gamma.sum())
        new_noise_var = sse / dof_left if dof_left > 0 else 0.0
        collapsed = not new_noise_var > floor
        new_noise_var = max(new_noise_var, floor)
        change = max(relative_change(coef, coef_prev), abs(np.log(new_noise_var / noise_var)),
                     _relevance_change(new_relevance, relevance, keep))
        converged = bool(n_iter > 1 and keep.all() and change <= model.tol)
        relevance, noise_var = new_relevance, new_noise_var
        if not keep.all():
            active, coef, relevance = active[keep], coef[keep], relevance[keep]
            Xa = X[:, active]
        if active.size == 0:
            converged = True
        if converged:
            break
    relevance, active = _drop_held(relevance, model.relevance_max, active)
    Xa = X[:, active]
    sol = weighted_ridge(Xa, y, model._weights(n_samples, noise_var), relevance,
                         compute_gamma=False, **ridge)
    return ARDFit(active, sol.coef, float(sol.intercept), relevance, float("nan"), noise_var,
                  n_iter, converged, collapsed)
