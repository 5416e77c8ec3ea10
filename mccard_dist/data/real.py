"""Real covariates: the user's data file or scikit-learn's diabetes data, with injected outliers.

A *table source* holds a dataset's arrays as given (a file's, read by
:func:`mccard_dist.data.files.load_table`). :func:`make_split_data` turns it and a key
``(seed, psi, tau)`` into one cell's data: the seed draws a train/test split (unless a test set is
given), then each training target gets, with probability ``psi``, ``tau`` times a unit outlier draw
added; with ``standardize`` the data are first scaled by the training split's (and clean targets')
statistics, so ``tau`` is in units of the target's spread. The random streams are 4-8 of
:mod:`mccard_dist.data.synthetic` and 9-10 below: for a fixed seed the split and the clean data are
the same in every cell, and the outliers at a smaller ``psi`` are a subset of those at a larger one.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from .synthetic import _STREAM_UNIFORM, OUTLIERS, _CellData, _read_only, _rng, _unit_outliers

__all__ = ["SOURCES", "SplitData", "TableSource", "diabetes_source", "make_split_data"]

#: where an experiment's data come from (``data.source``)
SOURCES = ("paper", "file", "diabetes", "generator")

_STREAM_SPLIT = 9  # the permutation that splits the rows
_STREAM_NOISE_FEATURES = 10  # the diabetes data's added noise features

#: rows and columns of scikit-learn's diabetes data
DIABETES_SHAPE = (442, 10)


@dataclass(frozen=True, eq=False)
class TableSource:
    """A dataset as given: arrays (read-only float64), feature names and a content hash.

    ``X_test``/``y_test`` are None when the file has no test set (the seed then splits ``X``);
    ``coef_true`` is None when the true coefficients are unknown (selection metrics are NaN).
    ``sha256`` is computed from the arrays' values and shapes only, so the same numbers in another
    format or under another name hash the same.
    """

    X: np.ndarray = field(repr=False)
    y: np.ndarray = field(repr=False)
    X_test: np.ndarray | None = field(default=None, repr=False)
    y_test: np.ndarray | None = field(default=None, repr=False)
    coef_true: np.ndarray | None = field(default=None, repr=False)
    feature_names: tuple[str, ...] = field(default=(), repr=False)
    sha256: str = ""

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @property
    def n_rows(self) -> int:
        return int(self.X.shape[0])


@dataclass(frozen=True, eq=False)
class SplitData(_CellData):
    """One cell's data from a :class:`TableSource` (returned by :func:`make_split_data`).

    The same attributes as :class:`~mccard_dist.data.PaperData` where they exist: ``X_train,
    y_train`` (with the outliers), ``X_test, y_test`` (as given, standardized with the training
    statistics if asked), ``coef_true`` (None when unknown), ``outlier_mask``; ``train_index`` and
    ``test_index`` are the rows of the source (None for a given test set).
    """

    train_index: np.ndarray | None = field(repr=False)
    test_index: np.ndarray | None = field(repr=False)


def split_sizes(n_rows: int, test_fraction: float) -> tuple[int, int]:
    """``(n_train, n_test)`` of a random split: ``round(test_fraction * n_rows)`` test rows, at
    least 2 and leaving at least 2 for training."""
    n_test = min(max(2, int(round(test_fraction * n_rows))), n_rows - 2)
    return n_rows - n_test, n_test


def make_split_data(source: TableSource, seed: int, psi: float, tau: float, *,
                    n_train: int | None = None, standardize: bool = True,
                    outliers: str = "laplace", df: float | None = None) -> SplitData:
    """One cell's training and test data from ``source`` (see the module docstring).

    ``n_train`` (required, and used, only when ``source`` has no test set): the training rows of
    the random split. ``standardize``: centre and scale X's columns (a constant one is centred
    only) and y. ``outliers``, ``df``: the outlier distribution (:data:`OUTLIERS`) and the degrees
    of freedom of ``student_t``.
    """
    if outliers not in OUTLIERS:
        raise ValueError(f"outliers must be one of {', '.join(OUTLIERS)}, got {outliers!r}")
    if not 0.0 <= psi <= 1.0:
        raise ValueError(f"psi must be in [0, 1], got {psi!r}")
    if not tau > 0:
        raise ValueError(f"tau must be > 0, got {tau!r}")
    if source.X_test is None:
        if n_train is None or not 2 <= n_train <= source.n_rows - 2:
            raise ValueError(f"n_train must be in [2, {source.n_rows - 2}] for a random split of "
                             f"{source.n_rows} rows, got {n_train!r}")
        order = _rng(seed, _STREAM_SPLIT).permutation(source.n_rows)
        train_index, test_index = np.sort(order[:n_train]), np.sort(order[n_train:])
        X_train, y_train = source.X[train_index], source.y[train_index]
        X_test, y_test = source.X[test_index], source.y[test_index]
    else:
        train_index = test_index = None
        X_train, y_train = source.X.copy(), source.y.copy()
        X_test, y_test = source.X_test.copy(), source.y_test.copy()
    if standardize:
        mean, scale = X_train.mean(axis=0), X_train.std(axis=0)
        scale[scale == 0] = 1.0
        X_train, X_test = (X_train - mean) / scale, (X_test - mean) / scale
        y_mean, y_scale = y_train.mean(), y_train.std()
        y_scale = y_scale if y_scale > 0 else 1.0
        y_train, y_test = (y_train - y_mean) / y_scale, (y_test - y_mean) / y_scale
    n = len(y_train)
    outlier_mask = _rng(seed, _STREAM_UNIFORM).random(n) < psi
    y_train = np.where(outlier_mask, y_train + tau * _unit_outliers(seed, n, outliers, df), y_train)
    arrays = [np.ascontiguousarray(a, dtype=np.float64) for a in (X_train, y_train, X_test, y_test)]
    _read_only(*arrays, outlier_mask)
    return SplitData(*arrays, coef_true=source.coef_true, outlier_mask=outlier_mask,
                     train_index=train_index, test_index=test_index, seed=int(seed),
                     psi=float(psi), tau=float(tau), n_train=n, n_test=len(arrays[3]),
                     n_features=source.n_features)


@functools.lru_cache(maxsize=1)
def _diabetes():
    from sklearn.datasets import load_diabetes

    bunch = load_diabetes(scaled=False)
    return (np.asarray(bunch.data, dtype=np.float64), np.asarray(bunch.target, dtype=np.float64),
            tuple(bunch.feature_names))


def diabetes_source(n_noise_features: int, seed: int) -> TableSource:
    """scikit-learn's diabetes data (442 patients, 10 covariates, raw units) with
    ``n_noise_features`` added columns of standard normal noise drawn from ``seed`` (stream 10):
    features a sparse method should leave out. The true coefficients are unknown."""
    X, y, names = _diabetes()
    noise = _rng(seed, _STREAM_NOISE_FEATURES).standard_normal((len(y), n_noise_features))
    X = np.hstack([X, noise])
    _read_only(X)
    names = names + tuple(f"noise{j}" for j in range(n_noise_features))
    return TableSource(X, y, feature_names=names)


def diabetes_sizes(n_train: int, n_noise_features: int) -> tuple[int, int, int]:
    """``(n_train, n_test, n_features)`` of the diabetes data with a split of ``n_train`` rows."""
    n_rows, n_covariates = DIABETES_SHAPE
    return n_train, n_rows - n_train, n_covariates + n_noise_features
