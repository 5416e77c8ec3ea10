"""The sequential sparse Bayesian solver (Tipping & Faul, 2003) with per-sample noise precisions.

For fixed precisions ``B = diag(beta)`` the ARD evidence is maximised over the relevances one
feature at a time from an empty model. The sparsity and quality factors
``S_d = x_d^T B x_d - x_d^T B Z Sigma Z^T B x_d``, ``Q_d = x_d^T B t - x_d^T B Z mu`` (``Z`` the
active columns and, with an intercept, a flat-prior column of ones; ``s = S``, ``q = Q`` outside
the model, ``s = gamma_d / Sigma_dd``, ``q = mu_d / Sigma_dd`` inside) give the best relevance
``a_d = s^2 / (q^2 - s)`` if ``q^2 > s``, else ``inf``. Each step takes the addition,
re-estimation or deletion of largest evidence gain (their eqs. 27-29 with ``B`` for ``beta I``),
updating the active set's posterior in ``O(D K^2)``.

References: M. E. Tipping and A. C. Faul, AISTATS 2003; M. E. Tipping, JMLR 1, 2001 (Section 4).
"""

from __future__ import annotations

import numpy as np
from scipy import linalg

__all__ = ["SequentialARD", "ard_evidence"]

#: rows of ``X`` per block when ``sum_n beta_n x_nd^2`` is accumulated (bounds the temporary)
_ROWS = 2048

#: an action is taken only if it raises the (doubled) log evidence by more than this
_MIN_GAIN = 1e-10

#: rank-one updates between two fresh factorisations of the posterior (bounds rounding drift)
_REFRESH = 25


class SequentialARD:
    """The evidence maximisation of one fit on C-contiguous ``X``: ``active`` (features in the
    order they entered), their ``relevance``, and the posterior ``mu``, ``sigma`` of their
    coefficients (then the intercept, if any). A relevance reaching ``relevance_max`` removes
    its feature."""

    def __init__(self, X: np.ndarray, *, fit_intercept: bool, relevance_max: float):
        self.X = X
        self.fit_intercept = fit_intercept
        self.relevance_max = relevance_max
        self.active = np.empty(0, dtype=np.intp)
        self.relevance = np.empty(0)
        self.sigma, self.mu = np.zeros((0, 0)), np.zeros(0)
        self._beta = None

    def set_precisions(self, beta: np.ndarray, t: np.ndarray) -> None:
        """New precisions ``beta`` and targets ``t``, and the weighted cross products they give."""
        X = self.X
        self._beta, self._t = beta, t
        self._d = np.zeros(X.shape[1])
        for start in range(0, X.shape[0], _ROWS):
            rows = X[start:start + _ROWS]
            self._d += np.square(rows).T @ beta[start:start + _ROWS]
        bt = beta * t
        self._bx = X.T @ bt
        extra = [X.T @ beta] if self.fit_intercept else []
        self._P = np.column_stack([X.T @ (beta[:, None] * X[:, self.active]), *extra]) \
            if self.active.size or extra else np.zeros((X.shape[1], 0))
        self._beta_sum = float(beta.sum())
        self._bt_sum = float(bt.sum())
        self._posterior()

    def _gram(self):
        """``Z^T B Z`` and ``Z^T B t`` of the active columns (then the intercept)."""
        idx = self.active
        k = idx.size
        P = self._P
        n = k + int(self.fit_intercept)
        G = np.empty((n, n))
        G[:k, :] = P[idx, :]
        b = self._bx[idx]
        if self.fit_intercept:
            G[k, :k] = P[idx, k]
            G[k, k] = self._beta_sum
            b = np.append(b, self._bt_sum)
        return G, b

    def _posterior(self, factors: bool = True, gram=None) -> None:
        """Sigma, mu and the log evidence of the active set (``gram``: its :meth:`_gram`, if
        made), and with ``factors`` every feature's S and Q."""
        P = self._P
        G, b = self._gram() if gram is None else gram
        n = G.shape[0]
        prior = self.relevance
        if self.fit_intercept:
            prior = np.append(prior, 0.0)
        H = G.copy()
        H.flat[:: n + 1] += prior
        if n:
            try:
                factor = linalg.cho_factor(H, lower=True, check_finite=False)
            except linalg.LinAlgError:
                # a flat intercept prior with all precisions ~0, or columns that repeat
                H.flat[:: n + 1] += 1e-10 * max(np.max(np.diag(H)), 1e-300)
                factor = linalg.cho_factor(H, lower=True, check_finite=False)
            self.sigma = linalg.cho_solve(factor, np.eye(n), check_finite=False)
            self.mu = self.sigma @ b
            # log evidence up to terms that do not depend on the relevances
            logdet = 2.0 * np.sum(np.log(np.diag(factor[0])))
            self.log_evidence = 0.5 * float(np.sum(np.log(self.relevance)) - logdet
                                            + b @ self.mu)
            if factors:
                PS = P @ self.sigma
                self._S = self._d - np.einsum("ij,ij->i", PS, P)
                self._Q = self._bx - P @ self.mu
        else:
            self.sigma, self.mu = np.zeros((0, 0)), np.zeros(0)
            self._S, self._Q = self._d.copy(), self._bx.copy()
            self.log_evidence = 0.0

    def _actions(self):
        """Every feature's best action: its gain of doubled log evidence and new relevance."""
        S, Q = self._S, self._Q
        D = S.size
        tiny = np.finfo(float).tiny
        gain = np.full(D, -np.inf)
        new = np.full(D, np.inf)
        # outside the model (s = S, q = Q): add where q^2 > s
        s_out = np.maximum(S, tiny)
        theta = np.square(Q) - s_out
        # a column the model already explains (S ~ 0 by rounding, e.g. a constant one next to
        # the intercept) has no information to add
        add = (theta > 0.0) & (S > 1e-10 * self._d)
        add[self.active] = False
        ratio = np.square(Q[add]) / s_out[add]
        gain[add] = ratio - 1.0 - np.log(ratio)
        new[add] = np.square(s_out[add]) / theta[add]
        k = self.active.size
        if k:  # inside: s = gamma / Sigma_dd, q = mu / Sigma_dd
            a = self.relevance
            a_new = self._inside()
            S_in, Q_in = a * self.gamma(), a * self.mu[:k]  # the factors with the feature in
            g = np.empty(k)
            keep = np.isfinite(a_new)
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                delta = 1.0 / a_new[keep] - 1.0 / a[keep]
                g[keep] = (np.square(Q_in[keep]) / (S_in[keep] + 1.0 / delta)
                           - np.log1p(S_in[keep] * delta))
                drop = ~keep
                g[drop] = (np.square(Q_in[drop]) / (S_in[drop] - a[drop])
                           - np.log1p(-S_in[drop] / a[drop]))
            g[~np.isfinite(g)] = -np.inf
            gain[self.active] = g
            new[self.active] = a_new
        gain[~np.isfinite(gain)] = -np.inf
        return gain, new

    def _take(self, d: int, a_new: float) -> None:
        """Add, re-estimate or delete (``a_new = inf``) feature ``d`` by rank-one updates
        (Tipping & Faul's appendix)."""
        where = np.flatnonzero(self.active == d)
        P, sigma, mu = self._P, self.sigma, self.mu
        if where.size:
            j = int(where[0])
            a = self.relevance[j]
            col = sigma[:, j]
            z = P @ col
            s_in, q_in = a - a * a * sigma[j, j], a * mu[j]  # S, Q with d in the model
            if np.isfinite(a_new):  # re-estimate: Sigma - kappa col col^T
                kappa = 1.0 / (sigma[j, j] + 1.0 / (a_new - a))
                self.sigma = sigma - kappa * np.outer(col, col)
                self.mu = mu - kappa * mu[j] * col
                self._S = self._S + kappa * np.square(z)
                self._Q = self._Q + kappa * mu[j] * z
                delta = 1.0 / a_new - 1.0 / a
                self.log_evidence += 0.5 * (q_in**2 / (s_in + 1.0 / delta)
                                            - np.log1p(s_in * delta))
                self.relevance = self.relevance.copy()
                self.relevance[j] = a_new
            else:  # delete: Sigma - col col^T / Sigma_jj, without row and column j
                scale = 1.0 / sigma[j, j]
                self.log_evidence += 0.5 * (q_in**2 / (s_in - a) - np.log1p(-s_in / a))
                self.sigma = np.delete(np.delete(sigma - scale * np.outer(col, col), j, 0), j, 1)
                self.mu = np.delete(mu - scale * mu[j] * col, j)
                self._S = self._S + scale * np.square(z)
                self._Q = self._Q + scale * mu[j] * z
                self.active = np.delete(self.active, j)
                self.relevance = np.delete(self.relevance, j)
                self._P = np.delete(P, j, axis=1)
        else:  # add at position k (before the intercept)
            k = self.active.size
            column = self.X.T @ (self._beta * self.X[:, d])
            c_z = P[d, :]  # Z^T B x_d
            w = sigma @ c_z
            s_new = 1.0 / (a_new + self._S[d])
            m_new = s_new * self._Q[d]
            self.log_evidence += 0.5 * (np.log(a_new * s_new) + self._Q[d] * m_new)
            v = column - P @ w
            n = mu.size + 1
            grown = np.empty((n, n))
            rest = np.r_[0:k, k + 1:n]
            grown[np.ix_(rest, rest)] = sigma + s_new * np.outer(w, w)
            grown[rest, k] = grown[k, rest] = -s_new * w
            grown[k, k] = s_new
            self.sigma = grown
            self.mu = np.insert(mu - m_new * w, k, m_new)
            self._S = self._S - s_new * np.square(v)
            self._Q = self._Q - m_new * v
            self._P = np.column_stack([P[:, :k], column, P[:, k:]])
            self.active = np.append(self.active, d)
            self.relevance = np.append(self.relevance, a_new)

    def _inside(self, capped: bool = True):
        """Each active feature's evidence-maximising relevance (``inf``: leave; with ``capped``
        also at ``relevance_max``)."""
        k = self.active.size
        tiny = np.finfo(float).tiny
        sdd = np.maximum(np.diag(self.sigma)[:k], tiny)
        s_in, q_in = self.gamma() / sdd, self.mu[:k] / sdd
        th = np.square(q_in) - s_in
        a_new = np.full(k, np.inf)
        stay = th > 0.0
        a_new[stay] = np.square(s_in[stay]) / th[stay]
        if capped:
            a_new[a_new >= self.relevance_max] = np.inf
        return a_new

    def _reestimate_all(self, tol: float, max_rounds: int) -> int:
        """Re-estimate every active relevance at once, round after round on the fixed active set,
        until a feature should leave, none moves by ``tol`` in log, or a round would lower the
        evidence (undone). Returns the rounds kept; ``S`` and ``Q`` are then stale."""
        gram = self._gram()
        for rounds in range(max_rounds):
            a_new = self._inside()
            if not np.isfinite(a_new).all():
                return rounds
            if np.max(np.abs(np.log(a_new / self.relevance)), initial=0.0) <= tol:
                return rounds
            before = (self.relevance, self.sigma, self.mu, self.log_evidence)
            self.relevance = a_new
            self._posterior(factors=False, gram=gram)
            if self.log_evidence < before[-1]:
                self.relevance, self.sigma, self.mu, self.log_evidence = before
                return rounds
        return max_rounds

    def run(self, max_steps: int, tol: float) -> tuple[bool, int]:
        """Take the best action until none gains, or none adds or deletes and no relevance
        moves by ``tol`` in log; returns (whether within ``max_steps``, steps taken).

        A best re-estimation re-estimates all relevances (:meth:`_reestimate_all`). An addition
        whose feature then asks to leave (its outside factors were rounding) is undone and the
        feature barred for this call. A fresh factorisation every ``_REFRESH`` updates."""
        barred = np.zeros(self.X.shape[1], dtype=bool)
        updates = 0
        for n_steps in range(max_steps + 1):
            if n_steps < max_steps and self.active.size:
                # a relevance whose optimum reaches relevance_max prunes its feature, whatever
                # the evidence says of deleting it at its current value (the pruning rule)
                over = np.flatnonzero(self._inside(capped=False) >= self.relevance_max)
                if over.size:
                    self._take(int(self.active[over[0]]), np.inf)
                    continue
            gain, new = self._actions()
            gain[barred] = -np.inf
            useful = gain > _MIN_GAIN
            if not useful.any():
                return True, n_steps
            inside = np.zeros(gain.size, dtype=bool)
            inside[self.active] = True
            structural = useful & (inside != np.isfinite(new))  # an addition or a deletion
            if not structural.any():
                moves = np.abs(np.log(new[self.active] / self.relevance))
                if np.max(moves, initial=0.0) <= tol:
                    return True, n_steps
            if n_steps == max_steps:
                break
            best = int(np.argmax(gain))
            if inside[best] and np.isfinite(new[best]) and not (
                    structural & (gain >= gain[best])).any():
                if self._reestimate_all(tol, max_rounds=50):
                    self._posterior()
                    continue
            before = (self.active, self.relevance.copy(), self._P, self.sigma, self.mu,
                      self._S, self._Q, self.log_evidence)
            self._take(best, float(new[best]))
            if not inside[best] and not np.isfinite(self._inside()[-1]):
                (self.active, self.relevance, self._P, self.sigma, self.mu, self._S, self._Q,
                 self.log_evidence) = before
                barred[best] = True
            updates += 1
            if updates % _REFRESH == 0:
                self._posterior()
        return False, max_steps

    def in_feature_order(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The active features, their coefficients and relevances, by feature index."""
        order = np.argsort(self.active)
        return self.active[order], self.coef[order], self.relevance[order]

    @property
    def coef(self) -> np.ndarray:
        return self.mu[: self.active.size]

    @property
    def intercept(self) -> float:
        return float(self.mu[-1]) if self.fit_intercept and self.mu.size else 0.0

    def residuals(self) -> np.ndarray:
        return self._t - self.intercept - self.X[:, self.active] @ self.coef

    def leverage(self) -> np.ndarray:
        """Diagonal of the hat matrix ``Z Sigma Z^T B`` of the current posterior mean."""
        Z = self.X[:, self.active]
        if self.fit_intercept:
            Z = np.column_stack([Z, np.ones(Z.shape[0])])
        return self._beta * np.einsum("ij,ij->i", Z @ self.sigma, Z)

    def gamma(self) -> np.ndarray:
        """``gamma_d = 1 - a_d Sigma_dd`` of the active features in ``[tiny, 1]``. It cancels
        for a feature about to leave, which a small value sends out anyway; the pruning
        solver's cancellation-free form would cost ``N k^2`` per step."""
        k = self.active.size
        tiny = np.finfo(float).tiny
        sdd = np.maximum(np.diag(self.sigma)[:k], tiny)
        return np.clip(1.0 - self.relevance * sdd, tiny, 1.0)


def ard_evidence(X, t, precisions, features, relevances, fit_intercept: bool = True) -> float:
    """``log N(t | 0, B^-1 + Z A^-1 Z^T)`` of the columns ``features`` with ``relevances`` (and
    a flat-prior intercept), ``B = diag(precisions)``, up to a constant that depends on ``B``."""
    engine = SequentialARD(np.ascontiguousarray(X, dtype=float), fit_intercept=fit_intercept,
                           relevance_max=np.inf)
    engine.active = np.asarray(features, dtype=np.intp)
    engine.relevance = np.asarray(relevances, dtype=float)
    engine.set_precisions(np.asarray(precisions, dtype=float), np.asarray(t, dtype=float))
    return engine.log_evidence
