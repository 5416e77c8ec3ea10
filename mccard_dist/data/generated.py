"""Data from a generator of one's own: a pure function of a cell's key, named by import path.

``generator(seed, psi, tau, **params)`` returns one cell's data, a mapping or an object with
``X_train``, ``y_train``, ``X_test``, ``y_test`` and, where known, ``coef_true`` (the selection
metrics need it) and ``outlier_mask`` (the training rows it contaminated). Workers call it for
each cell, as they build the shipped sources' data, so it must depend on nothing but its
arguments.
"""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass

import numpy as np

from .synthetic import _CellData

__all__ = ["GeneratedData", "generate", "generator_function"]


@dataclass(frozen=True, eq=False)
class GeneratedData(_CellData):
    """One cell's data from a generator of one's own (the attributes of
    :class:`~mccard_dist.data.PaperData`; ``coef_true`` None when the generator gives none)."""


@functools.lru_cache(maxsize=16)
def generator_function(path: str):
    """The function ``"module:name"`` names, imported once per process."""
    module, _, name = path.partition(":")
    found = getattr(importlib.import_module(module), name)
    if not callable(found):
        raise TypeError(f"{path} is a {type(found).__name__}, not a function")
    return found


def _part(out, name: str):
    return out.get(name) if isinstance(out, dict) else getattr(out, name, None)


def _array(path: str, name: str, value, ndim: int) -> np.ndarray:
    if value is None:
        raise ValueError(f"the data generator {path} gave no {name}")
    array = np.array(value, dtype=np.float64)
    if array.ndim != ndim:
        raise ValueError(f"the data generator {path} gave a {name} of shape {array.shape}; it "
                         f"must be {ndim}-D")
    array.setflags(write=False)
    return array


def generate(path: str, params: dict, seed: int, psi: float, tau: float) -> GeneratedData:
    """The data of the cell ``(seed, psi, tau)`` from the generator ``path`` with ``params``,
    checked: 2-D designs and 1-D targets of matching sizes, ``coef_true`` one per feature,
    ``outlier_mask`` one per training row (all False when not given). Raises ValueError naming
    the generator and what is wrong."""
    out = generator_function(path)(seed, psi, tau, **params)
    X_train = _array(path, "X_train", _part(out, "X_train"), 2)
    y_train = _array(path, "y_train", _part(out, "y_train"), 1)
    X_test = _array(path, "X_test", _part(out, "X_test"), 2)
    y_test = _array(path, "y_test", _part(out, "y_test"), 1)
    n_train, n_features = X_train.shape
    if len(y_train) != n_train or len(y_test) != len(X_test) or X_test.shape[1] != n_features:
        raise ValueError(f"the data generator {path} gave X_train {X_train.shape}, y_train "
                         f"{y_train.shape}, X_test {X_test.shape} and y_test {y_test.shape}: "
                         "the rows of X and y, and the columns of X_train and X_test, must agree")
    coef = _part(out, "coef_true")
    if coef is not None:
        coef = _array(path, "coef_true", coef, 1)
        if len(coef) != n_features:
            raise ValueError(f"the data generator {path} gave {len(coef)} true coefficients "
                             f"for {n_features} features")
    mask = _part(out, "outlier_mask")
    mask = np.zeros(n_train, bool) if mask is None else np.array(mask, dtype=bool)
    if mask.shape != (n_train,):
        raise ValueError(f"the data generator {path} gave an outlier_mask of shape {mask.shape} "
                         f"for {n_train} training rows")
    mask.setflags(write=False)
    return GeneratedData(X_train, y_train, X_test, y_test, coef, mask, int(seed), float(psi),
                         float(tau), n_train, len(y_test), n_features)
