"""scikit-learn's Lasso and Huber regression, unchanged, as the pipeline's peer baselines; they
only add ``converged_`` (the solver stopped before ``max_iter``), which the pipeline records.
"""

from __future__ import annotations

import numpy as np
from sklearn.linear_model import HuberRegressor, Lasso

__all__ = ["HuberBaseline", "LassoBaseline", "lasso_alpha_max"]


class LassoBaseline(Lasso):
    """:class:`sklearn.linear_model.Lasso`, recording ``converged_``."""

    def fit(self, X, y, sample_weight=None, check_input=True):
        super().fit(X, y, sample_weight=sample_weight, check_input=check_input)
        self.converged_ = bool(np.max(self.n_iter_) < self.max_iter)
        return self


class HuberBaseline(HuberRegressor):
    """:class:`sklearn.linear_model.HuberRegressor` (``epsilon``: the robustness threshold in
    units of the fitted scale; ``alpha``: the L2 penalty), recording ``converged_``."""

    def fit(self, X, y, sample_weight=None):
        super().fit(X, y, sample_weight=sample_weight)
        self.converged_ = bool(self.n_iter_ < self.max_iter)
        return self


def lasso_alpha_max(X, y, _=None) -> float:
    """The smallest ``alpha`` at which :class:`~sklearn.linear_model.Lasso` (with an intercept)
    keeps no feature: ``max_d |x_d^T (y - mean(y))| / n``."""
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    Xc = X - X.mean(axis=0)
    return float(np.max(np.abs(Xc.T @ (y - y.mean()))) / X.shape[0])
