"""The kernel width set inside the fit (``kernel_width="auto"``), piece by piece.

- the bias-corrected kernel-weighted variance against the Gaussian product formula and a
  contaminated sample of known inlier variance;
- the hat diagonal of a ridge solve against explicit leave-one-out refits (dense normal equations);
- the final width on clean data of known noise variance against the Welsch constant;
- bad values of the parameter.
"""

import warnings

import numpy as np
import pytest
from _references import refit_without
from sklearn.base import clone
from sklearn.utils.estimator_checks import parametrize_with_checks

from mccard_dist import MCCARDRegressor, MCCL1Regressor, make_paper_data
from mccard_dist.models._linalg import (
    RidgeSteps,
    hat_diagonal,
    loo_from_leverage,
    posterior_covariance,
    weighted_ridge,
)
from mccard_dist.models._width import WELSCH_95, WidthSchedule, inlier_variance


def test_welsch_constant_is_the_95_percent_efficiency_tuning():
    # Welsch's rho(e) = c^2/2 (1 - exp(-(e/c)^2)) with c = 2.9846 sigma (95% Gaussian efficiency);
    # exp(-e^2 / 2h) is the same kernel when c^2 = 2h.
    c = 2.9846
    assert WELSCH_95 == pytest.approx(c * c / 2.0)
    # its asymptotic efficiency at the normal, by quadrature: E[psi']^2 / E[psi^2]
    e = np.linspace(-12, 12, 200001)
    phi = np.exp(-e * e / 2) / np.sqrt(2 * np.pi)
    psi = e * np.exp(-(e / c) ** 2)
    dpsi = (1 - 2 * e * e / c**2) * np.exp(-(e / c) ** 2)
    de = e[1] - e[0]
    efficiency = (np.sum(dpsi * phi) * de) ** 2 / (np.sum(psi * psi * phi) * de)
    assert efficiency == pytest.approx(0.95, abs=0.002)


@pytest.mark.parametrize("width", [0.5, 3.0, 40.0])
def test_inlier_variance_undoes_the_weighting_of_gaussian_residuals(width):
    # For e ~ N(0, s2) the weights exp(-e^2 / 2w) give a weighted variance s2 w / (s2 + w):
    # one step returns s2 whatever the width (where the weighted variance is below 0.9 w).
    sigma2 = 2.0
    r = np.random.default_rng(0).normal(0.0, np.sqrt(sigma2), 400_000)
    assert inlier_variance(r, width) == pytest.approx(sigma2, rel=0.02)


def test_inlier_variance_ignores_gross_outliers():
    rng = np.random.default_rng(1)
    inliers = rng.normal(0.0, 0.7, 8000)  # variance 0.49
    outliers = rng.choice([-1, 1], 2000) * rng.uniform(15, 60, 2000)
    r = rng.permutation(np.concatenate([inliers, outliers]))
    naive = float(np.var(r))
    assert naive > 100  # what a plain variance would say
    width = 5.0
    for _ in range(10):
        width = inlier_variance(r, width)
    assert width == pytest.approx(0.49, rel=0.05)


def test_inlier_variance_widens_when_it_cannot_tell():
    r = np.random.default_rng(2).uniform(-30, 30, 1000)  # far wider than the width
    assert inlier_variance(r, 1.0) == 2.0
    assert inlier_variance(np.full(5, np.inf), 3.0) == 6.0  # every sample interpolated


def test_schedule_anneals_from_var_y_and_settles():
    y = np.random.default_rng(3).normal(0.0, 3.0, 500)
    schedule = WidthSchedule(y)
    assert schedule.h == pytest.approx(np.var(y))
    tiny = np.random.default_rng(4).normal(0.0, 0.01, 500)  # residuals of a near-perfect fit
    widths = [schedule.update(tiny) for _ in range(40)]
    ratios = np.array(widths[1:]) / np.array(widths[:-1])
    assert np.all(ratios >= 0.5 - 1e-12)  # falls by at most 2x per update
    assert schedule.h == pytest.approx(1e-3 * np.var(y))  # floor
    assert schedule.settled
    assert schedule.update(np.ones(500) * 100) == schedule.h  # settled: no more updates


def test_schedule_probes_below_its_first_fixed_point_then_settles_where_the_rule_returns():
    y = np.random.default_rng(3).normal(0.0, 3.0, 500)
    residuals = np.random.default_rng(4).normal(0.0, 0.5, 500)  # the same fit at every update
    schedule = WidthSchedule(y)
    while not schedule.settled and len(schedule.path) < 100:
        schedule.update(residuals)
    path = np.array(schedule.path)
    assert schedule.settled
    steps = path[1:] / path[:-1]
    first = int(np.argmax(np.abs(np.log(steps)) <= 0.02)) + 1  # where the rule first settled
    h1 = path[first]
    assert h1 == pytest.approx(WELSCH_95 * 0.25, rel=0.1)
    # the probe: halving down to h1 / 9, then the rule from there, free to rise back to h1
    low = int(np.argmin(path))
    assert path[low] == pytest.approx(h1 / 9.0)
    np.testing.assert_allclose(steps[first:low - 1], 0.5)
    assert schedule.h == pytest.approx(h1, rel=0.05)
    # probe=1: the first fixed point ends the schedule
    plain = WidthSchedule(y, probe=1.0)
    while not plain.settled:
        plain.update(residuals)
    assert len(plain.path) == first + 1


@pytest.mark.parametrize("seed", [5, 8, 9])
def test_probe_reaches_the_lower_fixed_point_of_a_contaminated_fit(seed, monkeypatch):
    # half the samples carry Laplace(0, 10) noise; from var(y) the rule first settles at a width
    # whose fit still follows part of them, and the probe finds the lower fixed point
    import functools

    import mccard_dist.models.mcc_ard as mcc_ard_module

    data = make_paper_data(seed, psi=0.5, tau=10.0, n_train=150, n_features=200, n_relevant=10)
    probed = MCCARDRegressor("auto", final_width_ratio=1.0).fit(data.X_train, data.y_train)
    monkeypatch.setattr(mcc_ard_module, "WidthSchedule",
                        functools.partial(WidthSchedule, probe=1.0))
    plain = MCCARDRegressor("auto", final_width_ratio=1.0).fit(data.X_train, data.y_train)
    assert probed.kernel_width_ < 0.5 * plain.kernel_width_
    error = [np.linalg.norm(m.coef_ - data.coef_true) for m in (probed, plain)]
    assert error[0] < 0.8 * error[1]


# -- the hat diagonal of the solves, against explicit leave-one-out refits ------------------------
@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("n_active", [12, 60], ids=["primal", "dual"])
@pytest.mark.parametrize("steps", [False, True], ids=["weighted_ridge", "RidgeSteps"])
def test_solve_leverage_gives_exact_leave_one_out_residuals(fit_intercept, n_active, steps):
    rng = np.random.default_rng(5)
    n = 30
    X = rng.standard_normal((n, n_active))
    t = X[:, 0] - 2 * X[:, 1] + 0.3 * rng.standard_normal(n)
    s = rng.uniform(0.2, 2.0, n)
    s[[3, 17]] = 0.0  # samples a robust fit ignores
    a = rng.uniform(0.5, 5.0, n_active)
    if steps:
        sol = RidgeSteps(X, a, fit_intercept=fit_intercept).solve(
            t, s, compute_gamma=True, compute_leverage=True)
    else:
        sol = weighted_ridge(X, t, s, a, fit_intercept=fit_intercept, compute_leverage=True)
    assert sol.form == ("dual" if n_active > n else "primal")
    e = t - sol.intercept - X @ sol.coef
    loo = loo_from_leverage(e, sol.leverage)
    explicit = [refit_without(X, t, s, a, i, fit_intercept=fit_intercept) for i in range(n)]
    np.testing.assert_allclose(loo, explicit, rtol=1e-8, atol=1e-10)
    sigma = posterior_covariance(X, s, a, fit_intercept=fit_intercept)
    np.testing.assert_allclose(sol.leverage, hat_diagonal(X, s, sigma, fit_intercept=fit_intercept),
                               rtol=1e-9, atol=1e-12)


def test_leverage_is_only_computed_on_request():
    rng = np.random.default_rng(6)
    X, t = rng.standard_normal((20, 5)), rng.standard_normal(20)
    assert weighted_ridge(X, t, np.ones(20), np.ones(5)).leverage is None


# -- the estimators ----------------------------------------------------------------------------------
def clean_data(noise_var, n=400, d=20, seed=7, return_noise=False):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    w = np.zeros(d)
    w[:5] = rng.normal(0.0, 2.0, 5)
    noise = rng.normal(0.0, np.sqrt(noise_var), n)
    y = X @ w + 1.5 + noise
    return (X, y, noise) if return_noise else (X, y)


@pytest.mark.parametrize("noise_var", [0.05, 0.3, 2.0])
@pytest.mark.parametrize("seed", [7, 8])
def test_auto_width_on_clean_data_is_welsch_times_the_noise_variance(noise_var, seed):
    X, y, noise = clean_data(noise_var, n=3000, seed=seed, return_noise=True)
    model = MCCARDRegressor("auto", final_width_ratio=1.0).fit(X, y)
    # against the variance of the noise actually drawn
    assert model.kernel_width_ == pytest.approx(WELSCH_95 * np.var(noise), rel=0.08)
    assert model.converged_


@pytest.mark.parametrize("likelihood, ratio", [("deviant", 2.0), ("proper", 8.0)])
def test_auto_path_anneals_then_widens_once(likelihood, ratio):
    X, y = clean_data(0.3)
    model = MCCARDRegressor("auto", likelihood=likelihood).fit(X, y)
    path = model.kernel_width_path_
    assert path[0] == pytest.approx(np.var(y))
    assert path[-1] == model.kernel_width_
    assert path[-1] / path[-2] == pytest.approx(ratio)  # the final widening
    steps = path[1:-1] / path[:-2]
    assert np.all(steps >= 0.5 - 1e-12)
    # the final phase is a fixed-width fit: relevances and weights use the final width
    e = y - model.predict(X)
    np.testing.assert_allclose(model.outlier_weights_, np.exp(-e * e / (2 * model.kernel_width_)))


def test_auto_width_sees_through_outliers():
    data = make_paper_data(seed=11, psi=0.3, tau=10.0, n_train=200, n_features=100, n_relevant=5)
    model = MCCARDRegressor("auto", final_width_ratio=1.0).fit(data.X_train, data.y_train)
    # inlier noise variance 0.05: the settled width is near Welsch's, far below var(y)
    assert model.kernel_width_ < 3 * WELSCH_95 * 0.05
    assert model.kernel_width_path_[0] > 50 * model.kernel_width_
    # and most outliers end with ~0 weight
    gross = data.outlier_mask & (np.abs(data.y_train - data.X_train @ data.coef_true) > 3.0)
    assert np.mean(model.outlier_weights_[gross] < 1e-3) > 0.9


def test_numeric_width_keeps_its_value():
    X, y = clean_data(0.3)
    model = MCCARDRegressor(0.7).fit(X, y)
    assert model.kernel_width_ == 0.7
    np.testing.assert_array_equal(model.kernel_width_path_, [0.7])
    l1 = MCCL1Regressor(0.7, 0.01).fit(X, y)
    assert l1.kernel_width_ == 0.7


def test_mcc_l1_auto_width():
    X, y = clean_data(0.3)
    model = MCCL1Regressor("auto", alpha=0.01).fit(X, y)
    assert model.kernel_width_path_[0] == pytest.approx(np.var(y))
    assert model.kernel_width_ < np.var(y) / 4
    assert model.score(X, y) > 0.9
    # alpha_max at the width an auto fit starts from
    from mccard_dist import mcc_l1_alpha_max
    assert mcc_l1_alpha_max(X, y, "auto") == mcc_l1_alpha_max(X, y, float(np.var(y)))


@pytest.mark.parametrize("estimator", [MCCARDRegressor, MCCL1Regressor])
@pytest.mark.parametrize("value", ["Auto", "AUTO", "", -1.0, 0.0, float("nan"), float("inf"), True,
                                   None, [1.0]])
def test_bad_kernel_width_is_refused_naming_the_parameter(estimator, value):
    X, y = clean_data(0.3, n=30, d=6)
    with pytest.raises(ValueError, match=r"'kernel_width' parameter of MCCL?\w+ must (be a float in "
                                         r"the range \(0.0, inf\) or a str among \{'auto'\}|not "
                                         r"be a boolean)"):
        estimator(kernel_width=value).fit(X, y)


def test_bad_final_width_ratio_and_em_with_auto_are_refused():
    X, y = clean_data(0.3, n=30, d=6)
    with pytest.raises(ValueError, match=r"'final_width_ratio' parameter of MCCARDRegressor must "
                                         r"be a float in the range \(0.0, inf\) or None"):
        MCCARDRegressor("auto", final_width_ratio=-2.0).fit(X, y)
    with pytest.raises(ValueError, match="kernel_width='auto' needs solver='cd' or 'lasso'"):
        MCCL1Regressor("auto", solver="em").fit(X, y)


@pytest.mark.slow  # scikit-learn's checks on auto widths; the numeric-width estimators run them in the fast subset
@parametrize_with_checks([MCCARDRegressor("auto"), MCCARDRegressor("auto", likelihood="proper"),
                          MCCL1Regressor("auto", alpha=0.01)])
def test_auto_estimators_pass_sklearn_checks(estimator, check):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)
        check(clone(estimator))


def test_the_default_width_follows_the_scale_of_y():
    """The default is "auto": with y in thousands a fit still keeps features and predicts, where
    the old default of a fixed h = 1 (in units of y²) gives every sample ~zero weight."""
    d = make_paper_data(seed=3, psi=0.3, tau=5.0, n_train=150, n_features=200, n_relevant=10)
    y = 1e3 * d.y_train
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        default = MCCARDRegressor().fit(d.X_train, y)
        fixed = MCCARDRegressor(1.0).fit(d.X_train, y)
    assert MCCARDRegressor().kernel_width == "auto"
    assert default.kernel_width_ > 1e5  # a variance in units of y² (here ~ 3e7)
    assert default.active_.sum() >= 5 and not fixed.active_.any()
    assert np.corrcoef(default.predict(d.X_test), d.y_test)[0, 1] > 0.9
