"""The sequential solver (Tipping & Faul) against the textbook evidence; the estimators with it.

The evidence of a set of relevances is computed here the direct way, ``log N(t | 0, C)`` with
``C = B^-1 + Z A^-1 Z^T`` formed and factorised densely: every gain the solver predicts must be
the change of that number, and where the solver stops no single relevance may raise it.
"""

import warnings

import numpy as np
import pytest

from mccard_dist import LSARDRegressor, MCCARDRegressor, make_paper_data
from mccard_dist.models._sequential import SequentialARD


def problem(seed=0, n=40, d=25):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w = np.zeros(d)
    w[:4] = [2.0, -1.0, 0.5, 1.5]
    t = 3.0 + X @ w + 0.3 * rng.normal(size=n)
    beta = rng.uniform(0.5, 12.0, size=n)  # per-sample precisions, far from one value
    return X, t, beta


def log_evidence(X, t, beta, active, relevance, intercept):
    """``log N(t | 0, C)``; with an intercept under a flat prior, the restricted likelihood
    ``-(log|C| + log(1^T C^-1 1) + t^T (C^-1 - C^-1 1 1^T C^-1 / 1^T C^-1 1) t) / 2``."""
    Z, a = X[:, active], np.asarray(relevance, dtype=float)
    C = np.diag(1.0 / beta) + (Z / a) @ Z.T
    _, logdet = np.linalg.slogdet(C)
    Ct = np.linalg.solve(C, t)
    if not intercept:
        return -0.5 * (logdet + t @ Ct)
    C1 = np.linalg.solve(C, np.ones(len(t)))
    total = C1.sum()
    return -0.5 * (logdet + np.log(total) + t @ Ct - (C1 @ t) ** 2 / total)


def apply(engine, d, a_new):
    active, relevance = list(engine.active), list(engine.relevance)
    if d in active:
        j = active.index(d)
        if np.isfinite(a_new):
            relevance[j] = a_new
        else:
            del active[j], relevance[j]
    else:
        active.append(d)
        relevance.append(a_new)
    return np.array(active, dtype=int), np.array(relevance)


@pytest.mark.parametrize("intercept", [False, True])
def test_every_predicted_gain_is_the_change_of_the_textbook_evidence(intercept):
    X, t, beta = problem()
    engine = SequentialARD(X, fit_intercept=intercept, relevance_max=1e12)
    engine.set_precisions(beta, t)
    for d in (20, 21, 22):  # features of no use, in the model from the start: to be deleted
        engine._take(d, 1.0)
    checked = {"add": 0, "update": 0, "delete": 0}
    for _ in range(12):
        gain, new = engine._actions()
        base = log_evidence(X, t, beta, engine.active, engine.relevance, intercept)
        for d in np.flatnonzero(np.isfinite(gain)):
            kind = ("add" if d not in engine.active else
                    "update" if np.isfinite(new[d]) else "delete")
            active, relevance = apply(engine, d, new[d])
            change = log_evidence(X, t, beta, active, relevance, intercept) - base
            assert gain[d] / 2 == pytest.approx(change, rel=1e-6, abs=1e-7), (kind, d)
            checked[kind] += 1
        best = int(np.argmax(gain))
        engine._take(best, float(new[best]))
    assert min(checked.values()) > 0, checked


@pytest.mark.parametrize("intercept", [False, True])
def test_the_rank_one_updates_equal_a_fresh_factorisation(intercept):
    X, t, beta = problem(seed=2)
    engine = SequentialARD(X, fit_intercept=intercept, relevance_max=1e12)
    engine.set_precisions(beta, t)
    kinds = set()
    for d in (20, 21):
        engine._take(d, 1.0)
    evidence = [log_evidence(X, t, beta, engine.active, engine.relevance, intercept)]
    gain, new = engine._actions()
    steps = [(int(d), float(new[d])) for d in np.argsort(-gain)[:6] if d not in engine.active]
    steps += [(20, 5.0), (21, np.inf)]  # and a re-estimation and a deletion for sure
    for d, a_new in steps:
        kinds.add("add" if d not in engine.active else
                  "update" if np.isfinite(a_new) else "delete")
        before = engine.log_evidence
        engine._take(d, a_new)
        evidence.append(log_evidence(X, t, beta, engine.active, engine.relevance, intercept))
        assert engine.log_evidence - before == pytest.approx(evidence[-1] - evidence[-2],
                                                             rel=1e-8, abs=1e-9)
    assert kinds == {"add", "update", "delete"}
    updated = (engine.sigma, engine.mu, engine._S, engine._Q)
    engine._posterior()
    for a, b in zip(updated, (engine.sigma, engine.mu, engine._S, engine._Q)):
        np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("intercept", [False, True])
def test_where_it_stops_no_single_relevance_raises_the_evidence(intercept):
    X, t, beta = problem(seed=1)
    engine = SequentialARD(X, fit_intercept=intercept, relevance_max=1e12)
    engine.set_precisions(beta, t)
    settled, _ = engine.run(1000, 1e-9)
    assert settled
    assert {0, 1, 2, 3} <= set(engine.active.tolist())
    best = log_evidence(X, t, beta, engine.active, engine.relevance, intercept)
    for j in range(engine.active.size):
        for factor in (0.9, 0.99, 1.01, 1.1):
            relevance = engine.relevance.copy()
            relevance[j] *= factor
            assert log_evidence(X, t, beta, engine.active, relevance, intercept) < best
        dropped = np.delete(np.arange(engine.active.size), j)
        assert log_evidence(X, t, beta, engine.active[dropped], engine.relevance[dropped],
                            intercept) < best
    for d in sorted(set(range(X.shape[1])) - set(engine.active.tolist())):
        for a in (1e-2, 1.0, 1e2):
            assert log_evidence(X, t, beta, np.append(engine.active, d),
                                np.append(engine.relevance, a), intercept) < best
    # the posterior mean is the weighted ridge solution of the active set
    Z = X[:, engine.active]
    prior = np.diag(engine.relevance)
    if intercept:
        Z = np.column_stack([Z, np.ones(len(t))])
        prior = np.diag(np.append(engine.relevance, 0.0))
    mu = np.linalg.solve(prior + Z.T @ (beta[:, None] * Z), Z.T @ (beta * t))
    np.testing.assert_allclose(engine.mu, mu, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(engine.leverage(),
                               np.diag(Z @ np.linalg.solve(prior + Z.T @ (beta[:, None] * Z),
                                                           Z.T * beta)), atol=1e-10)


@pytest.mark.slow  # fits on paper-like data, seconds each
def test_ls_ard_sequential_reaches_the_pruning_solvers_fit_when_n_exceeds_d():
    data = make_paper_data(seed=3, psi=0.0, tau=2.0, n_features=60)
    a = LSARDRegressor().fit(data.X_train, data.y_train)
    b = LSARDRegressor(solver="sequential").fit(data.X_train, data.y_train)
    assert b.converged_
    assert b.noise_var_ == pytest.approx(a.noise_var_, rel=0.05)
    np.testing.assert_allclose(b.predict(data.X_test), a.predict(data.X_test), atol=0.05)
    assert (b.active_ & (data.coef_true != 0)).sum() == 30


@pytest.mark.slow
@pytest.mark.parametrize("kernel_width", [0.3, "auto"])
def test_mcc_ard_sequential_recovers_the_features_under_outliers(kernel_width):
    for seed in (11, 12):
        data = make_paper_data(seed=seed, psi=0.3, tau=10.0)
        model = MCCARDRegressor(kernel_width=kernel_width, solver="sequential").fit(
            data.X_train, data.y_train)
        assert model.converged_
        found = (model.active_ & (data.coef_true != 0)).sum()
        assert found >= 27 and model.active_.sum() <= 40, (seed, found, model.active_.sum())
        assert model.score(data.X_test, data.y_test) > 0.95


@pytest.mark.slow
def test_mcc_ard_sequential_with_the_proper_likelihood_fits_clean_data():
    data = make_paper_data(seed=13, psi=0.0, tau=2.0, n_features=300)
    model = MCCARDRegressor(kernel_width="auto", likelihood="proper",
                            solver="sequential").fit(data.X_train, data.y_train)
    assert model.converged_ and (model.active_ & (data.coef_true != 0)).sum() >= 28
    assert model.score(data.X_test, data.y_test) > 0.99


def test_the_sequential_solver_refuses_the_exact_curvature():
    X, t, _ = problem()
    with pytest.raises(ValueError, match="curvature='exact' needs solver='pruning'"):
        MCCARDRegressor(curvature="exact", solver="sequential").fit(X, t)


@pytest.mark.slow
def test_d_far_above_n_converges_and_finds_the_features():
    for seed in (21, 22):
        data = make_paper_data(seed=seed, psi=0.2, tau=5.0, n_features=10_000)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no ConvergenceWarning
            model = MCCARDRegressor(kernel_width="auto", solver="sequential").fit(
                data.X_train, data.y_train)
        assert (model.active_ & (data.coef_true != 0)).sum() >= 27


def test_a_relevance_whose_optimum_reaches_the_threshold_prunes_its_feature():
    X, t, beta = problem(seed=4)
    engine = SequentialARD(X, fit_intercept=True, relevance_max=1e12)
    engine.set_precisions(beta, t)
    engine.run(1000, 1e-9)
    optimum = engine._inside(capped=False)
    weakest = int(np.argmax(optimum))
    engine.relevance_max = float(optimum[weakest]) * 0.9  # now above the threshold
    feature = int(engine.active[weakest])
    engine.run(1000, 1e-9)
    assert feature not in engine.active
    assert np.all(engine._inside(capped=False) < engine.relevance_max)


def test_a_column_the_intercept_explains_and_weightless_samples_do_no_harm():
    X, t, _ = problem(seed=5)
    X[:, 2] = 3.7  # constant: the intercept explains it
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow or invalid-value warning either
        model = MCCARDRegressor(kernel_width=0.5, solver="sequential").fit(X, t)
    assert not model.active_[2] and model.active_[[0, 1, 3]].all()
    rng = np.random.default_rng(0)
    with pytest.warns(Warning, match="zero weight"):  # every residual far beyond the width
        model = MCCARDRegressor(kernel_width=1e-300, solver="sequential").fit(
            X, 1e160 * rng.normal(size=len(t)))
    assert not model.active_.any()


def test_a_converged_robust_fit_ends_at_a_maximum_for_its_last_precisions():
    # the inner maximisation runs loosely while the outer loop moves: a converged fit must
    # still end where no relevance moves by more than tol and no feature is to be added
    from mccard_dist.models._sequential_fits import fit_robust

    data = make_paper_data(seed=31, psi=0.4, tau=5.0, n_features=200)
    model = MCCARDRegressor(kernel_width=0.5, solver="sequential", max_iter=300, tol=1e-4,
                            relevance_max=1e6, fit_intercept=True)
    fit = fit_robust(model, data.X_train, data.y_train, None)
    assert fit.converged
    engine = fit.engine
    moves = np.abs(np.log(engine._inside() / engine.relevance))
    assert np.max(moves) <= 1e-4
    gain, new = engine._actions()
    outside = np.ones(gain.size, dtype=bool)
    outside[engine.active] = False
    assert not (outside & np.isfinite(new) & (gain > 1e-8)).any()


def test_a_sequential_fit_leaves_the_processes_blas_threads_alone(monkeypatch):
    """A BLAS limit is process-wide: set by a fit, it would hold every other thread's fits to it
    too (joblib's threading backend, a Dask worker with several threads), and overlapping fits
    restore each other's saved limits out of order. During a fit, the main thread and another
    thread see the BLAS threads the caller set; after it, the process has them."""
    import threading

    from threadpoolctl import threadpool_info, threadpool_limits

    def blas():
        return {i["filepath"]: i["num_threads"] for i in threadpool_info()
                if i["user_api"] == "blas"}

    seen = []
    run = SequentialARD.run

    def spy(self, *args, **kwargs):
        seen.append(blas())
        other = threading.Thread(target=lambda: seen.append(blas()))
        other.start()
        other.join()
        return run(self, *args, **kwargs)

    monkeypatch.setattr(SequentialARD, "run", spy)
    X, t, _ = problem()
    with threadpool_limits(limits=2, user_api="blas"):
        before = blas()
        MCCARDRegressor(kernel_width=1.0, solver="sequential").fit(X, t)
        LSARDRegressor(solver="sequential").fit(X, t)
        after = blas()
    assert set(before.values()) == {2}
    assert seen and all(s == before for s in seen)
    assert after == before
