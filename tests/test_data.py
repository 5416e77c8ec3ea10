"""Tests for mccard_dist.data: the paper's generator and its common random numbers."""

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from mccard_dist.data import PaperData, make_paper_data

ARRAY_FIELDS = ("X_train", "y_train", "X_test", "y_test", "coef_true", "outlier_mask")
SMALL = dict(n_train=40, n_test=15, n_features=12, n_relevant=4)


def test_paper_defaults_shapes_and_support():
    data = make_paper_data(seed=0, psi=0.1, tau=5.0)
    assert isinstance(data, PaperData)
    assert data.X_train.shape == (300, 1000)
    assert data.X_test.shape == (300, 1000)
    assert data.y_train.shape == (300,)
    assert data.y_test.shape == (300,)
    assert data.coef_true.shape == (1000,)
    assert data.outlier_mask.shape == (300,)
    assert data.outlier_mask.dtype == bool
    assert np.all(data.coef_true[:30] != 0)
    assert np.all(data.coef_true[30:] == 0)
    np.testing.assert_array_equal(data.relevant_mask, np.arange(1000) < 30)
    assert (data.seed, data.psi, data.tau, data.noise_var) == (0, 0.1, 5.0, 0.05)
    assert (data.n_train, data.n_test, data.n_features, data.n_relevant) == (300, 300, 1000, 30)


def test_same_seed_gives_identical_arrays():
    a = make_paper_data(seed=7, psi=0.3, tau=2.0, **SMALL)
    b = make_paper_data(seed=7, psi=0.3, tau=2.0, **SMALL)
    for name in ARRAY_FIELDS:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


def test_different_seeds_differ():
    a = make_paper_data(seed=1, psi=0.3, tau=2.0, **SMALL)
    b = make_paper_data(seed=2, psi=0.3, tau=2.0, **SMALL)
    for name in ("X_train", "y_train", "X_test", "y_test", "coef_true"):
        assert not np.array_equal(getattr(a, name), getattr(b, name)), name


def test_result_is_frozen_and_read_only():
    data = make_paper_data(seed=0, psi=0.2, tau=2.0, **SMALL)
    with pytest.raises(dataclasses.FrozenInstanceError):
        data.psi = 0.5
    for name in ARRAY_FIELDS:
        with pytest.raises(ValueError, match="read-only"):
            getattr(data, name)[0] = 0
    assert "X_train" not in repr(data)  # arrays are kept out of the repr


def test_test_targets_are_noise_free():
    data = make_paper_data(seed=3, psi=0.5, tau=10.0, **SMALL)
    np.testing.assert_array_equal(data.y_test, data.X_test @ data.coef_true)


def test_psi_zero_gives_gaussian_noise_with_noise_var():
    data = make_paper_data(
        seed=11, psi=0.0, tau=10.0, n_train=4000, n_test=1, n_features=5, n_relevant=3,
        noise_var=0.05,
    )
    assert not data.outlier_mask.any()
    residual = data.y_train - data.X_train @ data.coef_true
    # Sample variance of 4000 draws: relative standard error sqrt(2 / 3999) ~ 2.2 %.
    assert residual.var(ddof=1) == pytest.approx(0.05, rel=0.1)
    assert stats.kstest(residual, stats.norm(scale=math.sqrt(0.05)).cdf).pvalue > 1e-3


def test_psi_one_gives_laplace_noise_with_scale_tau():
    tau = 2.0
    data = make_paper_data(
        seed=12, psi=1.0, tau=tau, n_train=4000, n_test=1, n_features=5, n_relevant=3,
    )
    assert data.outlier_mask.all()
    residual = data.y_train - data.X_train @ data.coef_true
    # E|e| = tau for Laplace(0, tau); sd of |e| is tau, so the standard error is tau / sqrt(4000).
    assert np.mean(np.abs(residual)) == pytest.approx(tau, abs=5 * tau / math.sqrt(4000))
    assert stats.kstest(residual, stats.laplace(scale=tau).cdf).pvalue > 1e-3


def test_noise_free_training_targets_without_noise():
    data = make_paper_data(seed=4, psi=0.0, tau=1.0, noise_var=0.0, **SMALL)
    np.testing.assert_allclose(data.y_train, data.X_train @ data.coef_true, rtol=0, atol=1e-12)


@pytest.mark.parametrize("psi", [0.05, 0.3, 0.8])
def test_outlier_fraction_over_many_seeds_is_close_to_psi(psi):
    n_seeds, n_train = 50, 200
    count = sum(
        int(make_paper_data(seed, psi, 1.0, n_train=n_train, n_test=1, n_features=1,
                            n_relevant=1).outlier_mask.sum())
        for seed in range(n_seeds)
    )
    n = n_seeds * n_train
    # Binomial(n, psi): five standard errors.
    assert abs(count / n - psi) <= 5 * math.sqrt(psi * (1 - psi) / n)


def test_common_random_numbers_across_psi_and_tau():
    grid = [(psi, tau) for psi in (0.0, 0.05, 0.1, 0.2, 0.5, 0.8) for tau in (2.0, 5.0, 10.0)]
    datasets = {key: make_paper_data(5, *key, **SMALL) for key in grid}
    reference = datasets[(0.0, 2.0)]
    inlier_noise = reference.y_train - reference.X_train @ reference.coef_true
    for (psi, tau), data in datasets.items():
        for name in ("X_train", "X_test", "y_test", "coef_true"):
            np.testing.assert_array_equal(getattr(data, name), getattr(reference, name))
        noise = data.y_train - data.X_train @ data.coef_true
        inliers = ~data.outlier_mask
        # Inlier noise is the same draw whatever psi and tau.
        np.testing.assert_allclose(noise[inliers], inlier_noise[inliers], rtol=1e-9, atol=1e-12)
        # Outlier noise is the same unit-Laplace draw scaled by tau.
        other = datasets[(psi, 2.0)]
        other_noise = other.y_train - other.X_train @ other.coef_true
        np.testing.assert_array_equal(other.outlier_mask, data.outlier_mask)
        np.testing.assert_allclose(
            noise[data.outlier_mask], tau / 2.0 * other_noise[data.outlier_mask],
            rtol=1e-9, atol=1e-12,
        )
    # Outliers are nested in psi.
    masks = [datasets[(psi, 5.0)].outlier_mask for psi in (0.0, 0.05, 0.1, 0.2, 0.5, 0.8)]
    for smaller, larger in zip(masks, masks[1:]):
        assert np.all(larger[smaller])


def test_sizes_do_not_leak_into_other_streams():
    base = make_paper_data(8, 0.2, 5.0, n_train=30, n_test=10, n_features=6, n_relevant=2)
    more_test = make_paper_data(8, 0.2, 5.0, n_train=30, n_test=25, n_features=6, n_relevant=2)
    more_train = make_paper_data(8, 0.2, 5.0, n_train=60, n_test=10, n_features=6, n_relevant=2)
    for name in ("X_train", "y_train", "outlier_mask", "coef_true"):
        np.testing.assert_array_equal(getattr(base, name), getattr(more_test, name))
    for name in ("X_test", "y_test", "coef_true"):
        np.testing.assert_array_equal(getattr(base, name), getattr(more_train, name))


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    psi_a=st.floats(0.0, 1.0),
    psi_b=st.floats(0.0, 1.0),
    tau=st.floats(0.01, 100.0),
)
def test_outliers_nested_and_inliers_shared_for_any_psi(seed, psi_a, psi_b, tau):
    low, high = sorted((psi_a, psi_b))
    a = make_paper_data(seed, low, tau, **SMALL)
    b = make_paper_data(seed, high, tau, **SMALL)
    assert np.all(b.outlier_mask[a.outlier_mask])
    shared = ~b.outlier_mask
    np.testing.assert_array_equal(a.y_train[shared], b.y_train[shared])
    np.testing.assert_array_equal(a.X_train, b.X_train)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(psi=-0.1), r"psi must be in \[0, 1\], got -0.1"),
        (dict(psi=1.5), r"psi must be in \[0, 1\], got 1.5"),
        (dict(psi=float("nan")), "psi must be finite"),
        (dict(psi="0.1"), "psi must be a real number"),
        (dict(tau=0.0), "tau must be > 0, got 0.0"),
        (dict(tau=-2.0), "tau must be > 0, got -2.0"),
        (dict(tau=float("inf")), "tau must be finite"),
        (dict(seed=-1), "seed must be an integer >= 0, got -1"),
        (dict(seed=1.5), "seed must be an integer >= 0, got 1.5"),
        (dict(seed=True), "seed must be an integer >= 0, got True"),
        (dict(noise_var=-0.01), "noise_var must be >= 0, got -0.01"),
        (dict(n_train=1), "n_train must be an integer >= 2, got 1"),
        (dict(n_test=0), "n_test must be an integer >= 1, got 0"),
        (dict(n_features=0), "n_features must be an integer >= 1, got 0"),
        (dict(n_relevant=-1), "n_relevant must be an integer >= 0, got -1"),
        (dict(n_relevant=13), r"n_relevant must be <= n_features \(12\), got 13"),
        (dict(n_train=10.0), "n_train must be an integer >= 2, got 10.0"),
    ],
)
def test_invalid_arguments_raise_value_error_naming_them(kwargs, message):
    arguments = dict(seed=0, psi=0.1, tau=2.0, **SMALL)
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=message):
        make_paper_data(**arguments)


def test_numpy_scalars_are_accepted():
    data = make_paper_data(np.int64(3), np.float32(0.25), np.float64(2.0), **SMALL)
    assert type(data.seed) is int and type(data.psi) is float
    reference = make_paper_data(3, float(np.float32(0.25)), 2.0, **SMALL)
    np.testing.assert_array_equal(data.y_train, reference.y_train)
