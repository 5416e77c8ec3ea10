"""Real covariates: the user's data file or scikit-learn's diabetes data, with injected outliers.

A *table source* holds a dataset's arrays as given. :func:`make_split_data` turns it and a key
``(seed, psi, tau)`` into one cell's data: the seed draws a train/test split (unless a test set is
given), then each training target gets, with probability ``psi``, ``tau`` times a unit outlier draw
added; with ``standardize`` the data are first scaled by the training split's (and clean targets')
statistics, so ``tau`` is in units of the target's spread. The random streams are 4-8 of
:mod:`mccard_dist.data.synthetic` and 9-10 below: for a fixed seed the split and the clean data are
the same in every cell, and the outliers at a smaller ``psi`` are a subset of those at a larger one.
"""

from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import UsageError
from .synthetic import _STREAM_UNIFORM, OUTLIERS, _CellData, _read_only, _rng, _unit_outliers

__all__ = ["FORMATS", "SOURCES", "DataFileError", "SplitData", "TableSource", "diabetes_source",
           "load_table", "make_split_data"]

#: where an experiment's data come from (``data.source``)
SOURCES = ("paper", "file", "diabetes")

#: file suffix -> format of :func:`load_table` (a zarr group is a folder)
FORMATS = {".npz": "npz", ".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".zarr": "zarr"}

#: arrays a .npz file or a zarr group may hold (X and y required)
ARRAYS = ("X", "y", "X_test", "y_test", "coef_true")

_STREAM_SPLIT = 9  # the permutation that splits the rows
_STREAM_NOISE_FEATURES = 10  # the diabetes data's added noise features

#: rows and columns of scikit-learn's diabetes data
DIABETES_SHAPE = (442, 10)


class DataFileError(ValueError, UsageError):
    """A data file that cannot be used; the message names the file and the problem."""


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


def load_table(path, target: str | None = None) -> TableSource:
    """Read and check a data file; cached per (path, modification time, size, target).

    A ``.npz`` file or zarr group holds arrays ``X`` and ``y``, optionally ``X_test`` and ``y_test``
    (both or neither) and ``coef_true``; in a ``.csv`` or ``.parquet`` file the column ``target`` is
    y and every other column a numeric feature. Anything a run would trip over later raises
    :class:`DataFileError` with one line naming the file and the problem.
    """
    path = Path(path).expanduser()
    if not path.exists():
        raise DataFileError(f"data.path: no such file: {path}")
    stat = path.stat()
    return _load_cached(str(path.resolve()), stat.st_mtime_ns, stat.st_size, target)


@functools.lru_cache(maxsize=4)
def _load_cached(path: str, mtime_ns: int, size: int, target: str | None) -> TableSource:
    fmt = FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise DataFileError(f"data.path: {path} has an unknown format; use a .npz, .csv or "
                            ".parquet file or a zarr group (a .zarr folder)")
    if fmt in ("csv", "parquet"):
        arrays, names = _read_frame(path, fmt, target)
    else:
        if target is not None:
            raise DataFileError(f"data.target: only used with .csv and .parquet files (the "
                                f"target of {Path(path).name} is its array y); remove it")
        arrays, names = _read_arrays(path, fmt), ()
    return _checked(path, arrays, names)


def _unreadable(name: str, fmt: str, exc: Exception) -> DataFileError:
    """The error for a file a reader refused: the first line of the reader's message."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return DataFileError(f"data.path: cannot read {name} as {fmt}: {first}")


def _read_frame(path: str, fmt: str, target: str | None):
    import pandas as pd

    name = Path(path).name
    try:
        frame = pd.read_csv(path) if fmt == "csv" else pd.read_parquet(path)
    except ImportError as exc:
        raise DataFileError(f"data.path: reading {name} needs a parquet engine ({exc}); "
                            "pip install pyarrow") from None
    except Exception as exc:  # noqa: BLE001 - a parser's message, shown on one line
        raise _unreadable(name, fmt, exc) from None
    columns = [str(c) for c in frame.columns]
    frame.columns = columns
    if target is None:
        raise DataFileError(f"data.target: set the target column of {name} (columns: "
                            f"{_listed(columns)})")
    if target not in columns:
        raise DataFileError(f"data.target: {name} has no column {target!r} (columns: "
                            f"{_listed(columns)})")
    numeric = frame.apply(pd.to_numeric, errors="coerce")
    bad = [c for c in columns if numeric[c].isna().sum() > frame[c].isna().sum()]
    if bad:
        raise DataFileError(f"data.path: {name} has non-numeric column(s) {_listed(bad)}; every "
                            "column but the target must be a number (encode or drop them)")
    features = [c for c in columns if c != target]
    if not features:
        raise DataFileError(f"data.path: {name} has no feature column besides the target "
                            f"{target!r}")
    arrays = {"X": numeric[features].to_numpy(dtype=np.float64),
              "y": numeric[target].to_numpy(dtype=np.float64)}
    return arrays, tuple(features)


def _read_arrays(path: str, fmt: str) -> dict:
    name = Path(path).name
    expected = ("data.path: a .npz file or zarr group holds arrays X and y (optionally X_test, "
                "y_test, coef_true)")
    try:
        if fmt == "npz":
            if not os.path.isfile(path):
                raise DataFileError(f"data.path: {name} is not a file")
            with np.load(path, allow_pickle=False) as npz:
                found = {key: npz[key] for key in npz.files}
        else:
            import zarr

            group = zarr.open_group(path, mode="r")
            found = {key: group[key][...] for key in group.array_keys()}
    except DataFileError:
        raise
    except Exception as exc:  # noqa: BLE001 - a reader's message, shown on one line
        raise _unreadable(name, fmt, exc) from None
    unknown = sorted(set(found) - set(ARRAYS))
    if unknown:
        raise DataFileError(f"{expected}; {name} also has {_listed(unknown)}: rename or remove "
                            "them")
    missing = [key for key in ("X", "y") if key not in found]
    if missing:
        raise DataFileError(f"{expected}; {name} has no {' or '.join(missing)} "
                            f"(arrays: {_listed(sorted(found)) or 'none'})")
    if ("X_test" in found) != ("y_test" in found):
        raise DataFileError(f"data.path: {name} has only one of X_test and y_test; give both "
                            "or neither (then the seed splits X)")
    arrays = {}
    for key, value in found.items():
        if not np.issubdtype(value.dtype, np.number) or np.iscomplexobj(value):
            raise DataFileError(f"data.path: array {key} of {name} is not real numbers (dtype "
                                f"{value.dtype})")
        arrays[key] = np.asarray(value, dtype=np.float64)
    return arrays


def _checked(path: str, arrays: dict, names: tuple) -> TableSource:
    name = Path(path).name
    X, y = arrays["X"], arrays["y"]
    if X.ndim != 2:
        raise DataFileError(f"data.path: X of {name} must be 2-D (rows x features), got shape "
                            f"{X.shape}")
    if y.ndim != 1:
        raise DataFileError(f"data.path: y of {name} must be 1-D, got shape {y.shape}")
    if len(y) != len(X):
        raise DataFileError(f"data.path: y of {name} has {len(y)} values but X has {len(X)} rows")
    n_features = X.shape[1]
    X_test, y_test = arrays.get("X_test"), arrays.get("y_test")
    if X_test is not None:
        if X_test.ndim != 2 or X_test.shape[1] != n_features:
            raise DataFileError(f"data.path: X_test of {name} must have {n_features} columns "
                                f"like X, got shape {X_test.shape}")
        if y_test.ndim != 1 or len(y_test) != len(X_test):
            raise DataFileError(f"data.path: y_test of {name} must have one value per row of "
                                f"X_test ({len(X_test)}), got shape {y_test.shape}")
        if len(y_test) < 2:
            raise DataFileError(f"data.path: the test set of {name} needs at least 2 rows")
    coef_true = arrays.get("coef_true")
    if coef_true is not None and coef_true.shape != (n_features,):
        raise DataFileError(f"data.path: coef_true of {name} must have one value per feature "
                            f"({n_features}), got shape {coef_true.shape}")
    digest = hashlib.sha256()
    for key in ARRAYS:
        array = arrays.get(key)
        if array is None:
            continue
        bad = ~np.isfinite(array)
        if bad.any():
            where = np.argwhere(bad)[0]
            at = f"row {where[0]}" + (f", column {names[where[1]] if names else where[1]}"
                                      if array.ndim == 2 else "")
            what = "the target" if key == "y" and names else key
            raise DataFileError(f"data.path: {what} of {name} has {int(bad.sum())} NaN or "
                                f"infinite value(s) (first at {at}); remove or impute them")
        digest.update(f"{key}:{array.shape}".encode())
        digest.update(np.ascontiguousarray(array, dtype="<f8").tobytes())
    for key, array in (("y", y), ("y_test", y_test)):
        if array is not None and np.ptp(array) == 0:
            what = "the target" if key == "y" and names else key
            raise DataFileError(f"data.path: {what} of {name} is constant ({array[0]:g} in every "
                                "row): correlation and fits are undefined; give a target that "
                                "varies")
    _read_only(X, y, X_test, y_test, coef_true)
    return TableSource(X, y, X_test, y_test, coef_true,
                       feature_names=names or tuple(f"x{d}" for d in range(n_features)),
                       sha256=digest.hexdigest())


def _listed(items, limit: int = 8) -> str:
    items = list(items)
    shown = ", ".join(items[:limit])
    return shown + (f", ... ({len(items)} in all)" if len(items) > limit else "")


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
