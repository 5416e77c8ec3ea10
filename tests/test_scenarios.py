"""Contamination scenarios of the synthetic problem: each outlier distribution against its law,
leverage points and correlated features against their definitions, the paper's default unchanged."""

import numpy as np
import pytest
from conftest import refusal
from scipy import stats

from mccard_dist.config import from_dictconfig
from mccard_dist.data import OUTLIERS, make_paper_data
from mccard_dist.grid import grid_hash

TAU = 3.0


def outlier_noise(outliers, **kwargs):
    """Training noise when every sample is an outlier (psi = 1, no inlier noise, no features)."""
    d = make_paper_data(seed=11, psi=1.0, tau=TAU, n_train=20000, n_test=1, n_features=1,
                        n_relevant=0, noise_var=0.0, outliers=outliers, **kwargs)
    return d.y_train


@pytest.mark.parametrize("outliers, law, kwargs", [
    ("laplace", stats.laplace(scale=TAU), {}),
    ("gaussian", stats.norm(scale=TAU), {}),
    ("student_t", stats.t(3.0, scale=TAU), {"df": 3.0}),
    ("cauchy", stats.cauchy(scale=TAU), {}),
    ("one_sided", stats.expon(scale=TAU), {}),  # |Laplace(0, tau)| is exponential with scale tau
])
def test_each_outlier_distribution_follows_its_law(outliers, law, kwargs):
    noise = outlier_noise(outliers, **kwargs)
    assert stats.kstest(noise, law.cdf).pvalue > 0.01
    # ... and not the paper's Laplace law (except itself): the option changes the data
    if outliers != "laplace":
        assert stats.kstest(noise, stats.laplace(scale=TAU).cdf).pvalue < 1e-6


def test_scenarios_keep_common_random_numbers():
    base = make_paper_data(4, 0.3, 5.0, n_features=50)
    for outliers in OUTLIERS:
        d = make_paper_data(4, 0.3, 5.0, n_features=50, outliers=outliers,
                            df=2.0 if outliers == "student_t" else None)
        np.testing.assert_array_equal(d.X_train, base.X_train)
        np.testing.assert_array_equal(d.outlier_mask, base.outlier_mask)
        inliers = ~d.outlier_mask
        np.testing.assert_array_equal(d.y_train[inliers], base.y_train[inliers])


def test_leverage_shifts_the_relevant_features_of_outlying_rows_only():
    clean = make_paper_data(2, 0.25, 4.0, n_features=40, n_relevant=6)
    bad = make_paper_data(2, 0.25, 4.0, n_features=40, n_relevant=6, leverage=True)
    shift = bad.X_train - clean.X_train
    rows = clean.outlier_mask
    assert rows.any() and (~rows).any()
    np.testing.assert_allclose(shift[np.ix_(rows, np.arange(6))], 4.0, rtol=1e-12)
    assert np.all(shift[:, 6:] == 0) and np.all(shift[~rows] == 0)
    np.testing.assert_array_equal(bad.y_train, clean.y_train)  # y from the clean rows
    np.testing.assert_array_equal(bad.X_test, clean.X_test)


def test_correlated_features_have_the_toeplitz_covariance():
    rho = 0.6
    d = make_paper_data(5, 0.0, 1.0, n_train=40000, n_test=1, n_features=6, n_relevant=2,
                        rho=rho)
    cov = np.cov(d.X_train, rowvar=False)
    target = rho ** np.abs(np.subtract.outer(np.arange(6), np.arange(6)))
    np.testing.assert_allclose(cov, target, atol=0.03)


def test_the_paper_problem_is_the_default_and_keeps_its_hash(compose):
    spec = from_dictconfig(compose(["experiment=smoke"]))
    assert (spec.data.outliers, spec.data.df, spec.data.leverage, spec.data.rho) == (
        "laplace", None, False, 0.0)
    # a compatibility pin, not a correctness check (the table of pins is in test_config.py):
    # the scenario keys left at their defaults keep the paper problem's hash
    assert grid_hash(spec).startswith("0b8747c2")
    other = from_dictconfig(compose(["experiment=smoke", "data.outliers=cauchy"]))
    assert grid_hash(other) != grid_hash(spec)
    d = other.data.make_data(0, 0.5, 5.0)
    assert d.outliers == "cauchy"


@pytest.mark.parametrize("overrides, message", [
    (["data.outliers=student_t"], "data.df: is required with data.outliers=student_t"),
    (["data.outliers=pareto"], "data.outliers: must be one of laplace, gaussian"),
    (["data.df=3"], "data.df: is only used with data.outliers=student_t"),
    (["data.rho=1.0"], "data.rho: must be in [0, 1)"),
    (["data.leverage=maybe"], "data.leverage"),
])
def test_bad_scenarios_are_refused_naming_the_key(overrides, message):
    assert message in refusal(["experiment=smoke", *overrides])


@pytest.mark.slow
def test_a_scenario_store_names_its_data_and_does_not_judge_the_papers_claims(smoke_spec,
                                                                             tmp_path):
    from mccard_dist import analysis
    from mccard_dist.analysis.claims import NOT_APPLICABLE
    from mccard_dist.analysis.figures import fig_prediction
    from mccard_dist.analysis.values import scenario
    from mccard_dist.runner import run_serial
    from mccard_dist.store import open_results, store_path

    spec = smoke_spec("experiment.methods=[mcc_ard,ls_ard]", "data.n_features=40",
                      "data.outliers=student_t", "data.df=2", "data.leverage=true", name="scen")
    run_serial(spec)
    ds = open_results(store_path(spec))
    assert (ds["status"] == 1).all()
    assert scenario(ds) == "student_t outliers (df = 2), leverage points"
    assert all(c.verdict == NOT_APPLICABLE for c in analysis.check_claims(ds))
    fig = fig_prediction(ds)
    assert "student_t outliers" in fig._suptitle.get_text()
    out = analysis.write_report(ds, tmp_path / "report")
    assert "- data: student_t outliers (df = 2), leverage points" in out.path.read_text()
