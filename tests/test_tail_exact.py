"""relevance_update="tail-exact": Faul & Tipping's exact per-feature relevance step in the pruning
solver's tail, and its stopping rule."""

import numpy as np
import pytest
from sklearn.utils._param_validation import InvalidParameterError

from mccard_dist import LSARDRegressor, MCCARDRegressor, make_paper_data
from mccard_dist.models._base import faul_tipping_step


def _gaussian_posterior(seed=0, n=40, d=8, beta=4.0):
    """A Gaussian ARD posterior (noise precision ``beta``, relevances ``a``, no intercept):
    ``X``, ``y``, ``a``, ``mu``, ``gamma``; half the features irrelevant, some of them with a
    small relevance so their coefficient is fitted to noise."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    w = np.where(np.arange(d) < d // 2, rng.normal(0.0, 1.0, d), 0.0)
    y = X @ w + rng.normal(0.0, beta ** -0.5, n)
    a = np.exp(rng.uniform(np.log(0.05), np.log(50.0), d))
    Sigma = np.linalg.inv(beta * X.T @ X + np.diag(a))
    mu = beta * Sigma @ X.T @ y
    gamma = 1.0 - a * np.diag(Sigma)
    return X, y, a, mu, gamma, beta


def _sparsity_quality(X, y, a, beta):
    """Tipping & Faul's ``s_d = x_d^T C_{-d}^{-1} x_d`` and ``q_d = x_d^T C_{-d}^{-1} y`` from the
    marginal covariance without feature d, ``C_{-d} = I / beta + sum_{j != d} x_j x_j^T / a_j``."""
    n, d = X.shape
    s, q = np.empty(d), np.empty(d)
    for j in range(d):
        rest = np.arange(d) != j
        C = np.eye(n) / beta + (X[:, rest] / a[rest]) @ X[:, rest].T
        s[j] = X[:, j] @ np.linalg.solve(C, X[:, j])
        q[j] = X[:, j] @ np.linalg.solve(C, y)
    return s, q


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_exact_step_is_the_evidence_maximiser_and_prunes_where_q2_at_most_s(seed):
    X, y, a, mu, gamma, beta = _gaussian_posterior(seed)
    s, q = _sparsity_quality(X, y, a, beta)
    new, keep = faul_tipping_step(gamma, mu, a, relevance_max=1e6)
    dead = q**2 <= s
    assert dead.any() and not dead.all()  # both kinds of feature in the problem
    np.testing.assert_array_equal(np.isinf(new), dead)
    np.testing.assert_allclose(new[~dead], s[~dead] ** 2 / (q[~dead] ** 2 - s[~dead]), rtol=1e-8)
    np.testing.assert_array_equal(keep, ~dead)
    # the features it drops are those whose MacKay ratio a_new / a reaches 1 / (1 - gamma)
    mackay_ratio = (gamma / mu**2) / a
    np.testing.assert_array_equal(dead, mackay_ratio >= 1.0 / (1.0 - gamma))


def test_exact_step_keeps_mackays_value_where_gamma_is_one():
    gamma, coef, relevance = np.array([1.0, 0.5]), np.array([2.0, 1.0]), np.array([3.0, 1.0])
    new, keep = faul_tipping_step(gamma, coef, relevance, relevance_max=1e6)
    np.testing.assert_allclose(new, [1.0 / 4.0, 1.0 * 0.25 / (1.0 - 0.25)])
    assert keep.all()


def _small(seed):
    return make_paper_data(seed=seed, psi=0.2, tau=5.0, n_train=100, n_test=100, n_features=60,
                           n_relevant=10)


@pytest.mark.parametrize("seed, make", [
    (0, lambda ru, it: MCCARDRegressor(1.0, likelihood="proper", solver="pruning",
                                       relevance_update=ru, max_iter=it)),
    (1, lambda ru, it: MCCARDRegressor(1.0, likelihood="proper", solver="pruning",
                                       relevance_update=ru, max_iter=it)),
    (0, lambda ru, it: LSARDRegressor(solver="pruning", relevance_update=ru, max_iter=it)),
    (1, lambda ru, it: MCCARDRegressor("auto", likelihood="proper", solver="pruning",
                                       relevance_update=ru, max_iter=it)),
])
def test_tail_exact_ends_at_the_selection_of_mackays_update_run_to_its_limit(seed, make):
    data = _small(seed)
    today = make("mackay", 300).fit(data.X_train, data.y_train)
    limit = make("mackay", 5000).fit(data.X_train, data.y_train)
    fast = make("tail-exact", 300).fit(data.X_train, data.y_train)
    assert today.converged_ and limit.converged_ and fast.converged_
    np.testing.assert_array_equal(fast.active_, limit.active_)
    assert fast.n_iter_ < today.n_iter_  # the exact step fired
    assert abs(fast.score(data.X_test, data.y_test) - limit.score(data.X_test, data.y_test)) < 1e-3


def test_a_feature_whose_exact_optimum_is_infinite_in_the_tail_can_come_back():
    """A feature with ``q^2 <= s`` early in the tail is held, not pruned: here MacKay's update run
    to its limit keeps a feature that pruning it at once would lose."""
    data = make_paper_data(seed=8, psi=0.3, tau=5.0, n_train=100, n_test=100, n_features=60,
                           n_relevant=10)
    make = lambda ru, it: MCCARDRegressor(1.0, likelihood="proper", solver="pruning",
                                          relevance_update=ru, max_iter=it)
    limit = make("mackay", 5000).fit(data.X_train, data.y_train)
    fast = make("tail-exact", 300).fit(data.X_train, data.y_train)
    assert limit.converged_ and fast.converged_ and fast.n_iter_ < limit.n_iter_
    np.testing.assert_array_equal(fast.active_, limit.active_)
    assert np.all(fast.relevance_[fast.active_] < fast.relevance_max)


@pytest.mark.slow
def test_tail_exact_converges_where_mackays_update_stops_at_max_iter():
    data = _small(2)
    kw = {"likelihood": "proper", "solver": "pruning", "relevance_update": "mackay"}
    today = MCCARDRegressor(1.0, **kw, max_iter=300)
    with pytest.warns(Warning, match="did not converge"):
        today.fit(data.X_train, data.y_train)
    limit = MCCARDRegressor(1.0, **kw, max_iter=5000).fit(data.X_train, data.y_train)
    kw.pop("relevance_update")
    fast = MCCARDRegressor(1.0, **kw, relevance_update="tail-exact").fit(data.X_train,
                                                                         data.y_train)
    assert fast.converged_ and limit.converged_ and fast.n_iter_ < 100
    np.testing.assert_array_equal(fast.active_, limit.active_)
    assert not np.array_equal(today.active_, limit.active_)


@pytest.mark.parametrize("likelihood", ["deviant", "proper"])
@pytest.mark.parametrize("width", [1.0, "auto"])
def test_tail_exact_runs_for_both_likelihoods_and_width_modes(likelihood, width):
    data = _small(3)
    models = [MCCARDRegressor(width, likelihood=likelihood, solver="pruning", relevance_update=ru)
              .fit(data.X_train, data.y_train) for ru in ("mackay", "tail-exact")]
    today, fast = models
    assert fast.converged_ and fast.n_iter_ <= today.n_iter_
    assert fast.kernel_width_ == pytest.approx(today.kernel_width_, rel=1e-6)
    assert abs(fast.score(data.X_test, data.y_test) - today.score(data.X_test, data.y_test)) < 1e-3


@pytest.mark.parametrize("cls", [MCCARDRegressor, LSARDRegressor])
def test_relevance_update_is_validated(cls):
    data = _small(0)
    with pytest.raises(InvalidParameterError, match="'relevance_update' parameter of"):
        cls(relevance_update="exact").fit(data.X_train, data.y_train)
