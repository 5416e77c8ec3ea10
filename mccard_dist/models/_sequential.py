"""The sequential sparse Bayesian solver (Tipping & Faul, 2003) with per-sample noise precisions.

For fixed noise precisions ``beta_n`` (one per sample: MCC-ARD's half-quadratic weights, or one
value for Gaussian noise) the ARD evidence ``log N(t | 0, B^-1 + Phi A^-1 Phi^T)`` is maximised
over the relevances ``a`` one feature at a time, starting from an empty model. For every feature
the sparsity and quality factors

    ``S_d = x_d^T B x_d - x_d^T B Z Sigma Z^T B x_d``,  ``Q_d = x_d^T B t - x_d^T B Z mu``

(``Z`` the active columns and, with an intercept, a column of ones whose prior is flat;
``Sigma = (A + Z^T B Z)^-1``, ``mu = Sigma Z^T B t``) give, with ``s = S``, ``q = Q`` outside the
model and ``s = gamma_d / Sigma_dd``, ``q = mu_d / Sigma_dd`` inside it
(``gamma_d = 1 - a_d Sigma_dd``; Tipping & Faul's ``a S / (a - S)`` without its cancellation), the
relevance that maximises the evidence in ``a_d`` alone: ``a_d = s^2 / (q^2 - s)`` if
``q^2 > s``, else ``a_d = inf`` (the feature leaves the model). Each step takes the addition,
re-estimation or deletion with the largest gain of the evidence (their eqs. 27-29, here with
``B`` in place of ``beta I``) and refreshes the posterior of the active set only, so a step costs
``O(D K^2)`` for ``K`` active features (``O(N D)`` more to add one), never a solve in ``N`` or
``D``.

References
----------
M. E. Tipping and A. C. Faul. "Fast marginal likelihood maximisation for sparse Bayesian
models", AISTATS 2003. M. E. Tipping. "Sparse Bayesian learning and the relevance vector
machine", JMLR 1, 2001 (non-Gaussian likelihoods through per-sample precisions, Section 4).
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
    """The evidence maximisation of one fit: the active set, its relevances and posterior.

    Parameters
    ----------
    X : ndarray of shape (N, D)
        Training data (C-contiguous).
    fit_intercept : bool
        Whether a column of ones with a flat prior is always in the model.
    relevance_max : float
        A re-estimated relevance at or above this removes the feature (the pruning threshold of
        the other solver).

    Attributes
    ----------
    active : ndarray of int
        Active features, in the order they entered.
    relevance : ndarray
        Their relevances ``a``.
    mu : ndarray
        Posterior mean of the active coefficients (then the intercept, if any).
    sigma : ndarray
        Posterior covariance of the same.
    """

    def __init__(self, X: np.ndarray, *, fit_intercept: bool, relevance_max: float):
        self.X = X
        self.fit_intercept = fit_intercept
        self.relevance_max = relevance_max
        self.active = np.empty(0, dtype=np.intp)
        self.relevance = np.empty(0)
        self.sigma, self.mu = np.zeros((0, 0)), np.zeros(0)
        self._beta = None

    # -- the precisions and what depends on them ----------------------------------------------
    def set_precisions(self, beta: np.ndarray, t: np.ndarray) -> None:
        """New noise precisions ``beta`` (and targets ``t``): the weighted cross products of
        every feature with the active columns, the intercept and the targets, ``O(N D K)``."""
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
        """Sigma, mu and the log evidence of the current active set (``O(K^3)``; ``gram``: the
        :meth:`_gram` of this active set, if already made), and with ``factors`` the factors S,
        Q of every feature (``O(D K^2)``)."""
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

    # -- one step ------------------------------------------------------------------------------
    def _actions(self):
        """For every feature, the gain of the (doubled) log evidence of its best action and the
        relevance that action gives it (``inf``: out of the model)."""
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
        """Add feature ``d``, re-estimate its relevance, or delete it (``a_new = inf``), with
        rank-one updates of Sigma, mu, S, Q and the log evidence (``O(D K)``, and ``O(N D)`` for
        the new column of an addition; Tipping & Faul's appendix, with ``B`` for ``beta I``)."""
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
        """The relevance that maximises the evidence in each active feature alone (``inf``: it
        leaves the model; with ``capped``, also where it reaches ``relevance_max``), from the
        active set's posterior only."""
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

    def _state(self):
        return (self.active, self.relevance.copy(), self._P, self.sigma, self.mu, self._S,
                self._Q, self.log_evidence)

    def _restore(self, state) -> None:
        (self.active, self.relevance, self._P, self.sigma, self.mu, self._S, self._Q,
         self.log_evidence) = state

    def _reestimate_all(self, tol: float, max_rounds: int) -> int:
        """Re-estimate every active relevance at once (each to its own optimum given the
        others), round after round, with the active set fixed: ``O(K^3)`` a round, no factor of
        an inactive feature. Stops when a feature should leave, when no relevance moves by more
        than ``tol`` in log, or when a round would lower the evidence (undone). Returns the
        rounds kept; ``S`` and ``Q`` are then stale (refresh with :meth:`_posterior`)."""
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
        """Take the best action until none gains, or until no feature is to be added or deleted
        and no relevance would move by more than ``tol`` in log; returns (whether it got there
        within ``max_steps``, steps taken).

        When the best action re-estimates a relevance, all of them are re-estimated together
        until they settle (:meth:`_reestimate_all`, on the active set alone) before the factors
        of every feature are refreshed. An addition after which the feature's own optimum is to
        leave again (its outside factors were rounding: those of a feature that nearly repeats
        active ones are differences of close numbers) is undone and the feature is left out for
        the rest of this call. The rank-one updates of :meth:`_take` are replaced by a fresh
        factorisation every ``_REFRESH`` steps.
        """
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
            before = self._state()
            self._take(best, float(new[best]))
            if not inside[best] and not np.isfinite(self._inside()[-1]):
                # the feature, once in, asks to leave: its outside factors were rounding
                self._restore(before)
                barred[best] = True
            updates += 1
            if updates % _REFRESH == 0:
                self._posterior()
        return False, max_steps

    # -- results -------------------------------------------------------------------------------
    def in_feature_order(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The active features, their coefficients and relevances, by feature index (the engine
        keeps them in the order they entered)."""
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
        """``gamma_d = 1 - a_d Sigma_dd`` of the active features (their well-determinedness),
        in ``[tiny, 1]``: the one form every step of this solver uses.

        The difference cancels as ``a_d Sigma_dd`` nears 1 (a feature about to leave), where the
        pruning solver's ``(Sigma G)_dd`` does not; that form needs ``Z^T B Z``, ``N k^2`` flops
        at every step of a solver whose steps cost ``k^2``. Here a cancelled ``gamma`` is a small
        number (floored at ``tiny``): it sends the feature out, and adds next to nothing to the
        degrees of freedom of LS-ARD's variance update."""
        k = self.active.size
        tiny = np.finfo(float).tiny
        sdd = np.maximum(np.diag(self.sigma)[:k], tiny)
        return np.clip(1.0 - self.relevance * sdd, tiny, 1.0)


def ard_evidence(X, t, precisions, features, relevances, fit_intercept: bool = True) -> float:
    """``log N(t | 0, B^-1 + Z A^-1 Z^T)`` of the columns ``features`` of ``X`` with relevances
    ``relevances`` (and an intercept under a flat prior), ``B = diag(precisions)``, up to a
    constant that depends on ``B`` only: values at one ``B`` compare two models."""
    engine = SequentialARD(np.ascontiguousarray(X, dtype=float), fit_intercept=fit_intercept,
                           relevance_max=np.inf)
    engine.active = np.asarray(features, dtype=np.intp)
    engine.relevance = np.asarray(relevances, dtype=float)
    engine.set_precisions(np.asarray(precisions, dtype=float), np.asarray(t, dtype=float))
    return engine.log_evidence
