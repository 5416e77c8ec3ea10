"""The ridge solves made inside a block, and their textbook flop count. The solves are traced by
wrapping ``weighted_ridge`` and ``RidgeSteps``, so the estimators carry no instrumentation."""

from __future__ import annotations

import inspect
import sys
from contextlib import ExitStack, contextmanager
from unittest import mock

__all__ = ["floor_flops", "trace_solves"]


@contextmanager
def trace_solves():
    """Record the ridge solves made inside the block (by any thread; nested blocks both record).

    Yields a list receiving ``("kernel", N, k)`` per dual kernel ``X A^{-1} X^T`` formed (by a
    dual ``weighted_ridge`` call or ``RidgeSteps``) and ``("solve", form, N, k, gamma)`` per
    solve that returns (``gamma``: whether gamma was computed).
    """
    from mccard_dist.models import RidgeSteps, weighted_ridge

    events = []
    ridge = weighted_ridge
    ridge_signature = inspect.signature(ridge)
    steps_init, steps_solve = RidgeSteps.__init__, RidgeSteps.solve
    solve_signature = inspect.signature(steps_solve)

    def traced_ridge(*args, **kwargs):
        bound = ridge_signature.bind(*args, **kwargs)
        bound.apply_defaults()
        solution = ridge(*args, **kwargs)
        n_samples, n_active = bound.arguments["X"].shape
        if solution.form == "dual" and n_active:
            events.append(("kernel", n_samples, n_active))
        events.append(("solve", solution.form, n_samples, n_active,
                       bool(bound.arguments["compute_gamma"])))
        return solution

    def traced_init(self, *args, **kwargs):
        steps_init(self, *args, **kwargs)
        n_samples, n_active = self.X.shape
        if self.form == "dual" and n_active:
            events.append(("kernel", n_samples, n_active))

    def traced_solve(self, *args, **kwargs):
        bound = solve_signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        gamma = bool(bound.arguments["compute_gamma"])
        n_samples, n_active = self.X.shape
        # an empty active set, or gamma in the primal form, is handed to weighted_ridge, which
        # records itself
        if n_active and not (gamma and self.form == "primal"):
            events.append(("solve", self.form, n_samples, n_active, gamma))
        return steps_solve(self, *args, **kwargs)

    with ExitStack() as stack:
        for name, module in list(sys.modules.items()):
            if name.startswith("mccard_dist.models") and \
                    getattr(module, "weighted_ridge", None) is ridge:
                stack.enter_context(mock.patch.object(module, "weighted_ridge", traced_ridge))
        stack.enter_context(mock.patch.object(RidgeSteps, "__init__", traced_init))
        stack.enter_context(mock.patch.object(RidgeSteps, "solve", traced_solve))
        yield events


def floor_flops(events) -> float:
    """Floating-point operations the traced solves need at least, each charged its textbook
    minimum: a symmetric product ``N k^2`` (``N^2 k`` for the dual kernel), a Cholesky factor
    ``n^3/3``, a triangular solve with ``m`` right-hand sides ``n^2 m``, an inverse from a factor
    ``2 n^3/3``, plus ``2 N k`` per solve for the residuals ``X w``."""
    total = 0.0
    for event in events:
        if event[0] == "kernel":
            _, n, k = event
            total += n * n * k
            continue
        _, form, n, k, gamma = event
        total += 2.0 * n * k  # residuals
        if k == 0:
            continue
        if form == "dual":
            # Cholesky of K, the centring and the two triangular solves, X^T u
            total += n**3 / 3.0 + 4.0 * n * n + 2.0 * n * k
            if gamma:  # L^{-1} B' for gamma_d = ||L^{-1} b'_d||^2
                total += n * n * k + 2.0 * n * k
        else:
            # B^T B, its Cholesky factor, right-hand side
            total += n * k * k + k**3 / 3.0 + 2.0 * n * k
            if gamma:  # the inverse of the factored matrix
                total += 2.0 * k**3 / 3.0
    return total
