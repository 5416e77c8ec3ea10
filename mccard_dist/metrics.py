"""Prediction and feature-selection metrics of the paper, with the edge cases defined.

- ``r``: Pearson correlation of prediction and test target; ``nan`` when either is constant
  (for example a model that selected nothing and predicts its intercept everywhere).
- ``rmse``: root mean squared error on the test set.
- Selection: a feature is *selected* when its coefficient is non-zero, *relevant* when its true
  coefficient is non-zero. Precision, recall and F1 of the selected set against the relevant set;
  an undefined ratio (0 / 0) is 0.0, so nothing selected gives precision = F1 = 0.

All functions return plain Python ``int`` / ``float`` values and never emit warnings.

:data:`METRICS` is the table of the built-in per-cell results: each :class:`Metric` is a column of
the store, of the report's tables and figures and of ``--versus``, computed from one
:class:`Evaluation` of the cell (its predictions, coefficients and confusion counts, each computed
once, the fitted estimator and the cell's data). A metric of one's own is a :class:`Metric` of
the same form in a module of one's own, named by import path in ``experiment.metrics``
(:func:`table`); the store records its declarations, so that the report reads it without
importing it. The public functions validate their inputs; a cell's evaluation does not, its
arrays being the fit's own. A metric added needs no store migration: a store written before gets
it for its finished cells from their stored coefficients and their data where the metric needs
only those, and NaN with a note otherwise (:mod:`mccard_dist.store.backfill`).
"""

from __future__ import annotations

import functools
import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np

__all__ = ["EVALUATION_KEYS", "METRICS", "NEEDS", "Evaluation", "Metric", "MetricError",
           "correlation", "evaluate", "metric", "rmse", "scores_of", "selection_counts",
           "selection_scores", "table"]

#: what a metric may read of a cell's evaluation (:attr:`Metric.needs`)
NEEDS = ("prediction", "coef", "selection", "estimator")


class MetricError(RuntimeError):
    """A metric of one's own raised an error on a cell: the message names the metric."""


@dataclass(frozen=True, eq=False)
class Evaluation:
    """What the metrics of one cell are computed from: the test targets and the final fit's
    predictions of them (None where unknown, as in a store, which keeps no predictions), its
    coefficients (None for a model without them) and the true ones (None for real data); the
    fitted estimator (None where it is gone: a store keeps none), the cell's data (its
    ``X_train``, ``y_train``, ``X_test``, ``outlier_mask``, ..., as the data spec makes them)
    and its key (``method``, ``tau``, ``psi``, ``seed``). The confusion counts of the selection
    are computed once, on first use."""

    y_test: np.ndarray | None = None
    y_pred: np.ndarray | None = None
    coef: np.ndarray | None = None
    coef_true: np.ndarray | None = None
    estimator: object = None
    data: object = None
    cell: object = None

    @cached_property
    def counts(self) -> dict[str, int]:
        """``tp``, ``fp``, ``fn``, ``tn`` of the selected features (``coef != 0``, NaN included)
        against the relevant ones (``coef_true != 0``)."""
        selected, relevant = self.coef != 0, self.coef_true != 0
        tp = int(np.count_nonzero(selected & relevant))
        n_selected, n_relevant = int(np.count_nonzero(selected)), int(np.count_nonzero(relevant))
        return {"tp": tp, "fp": n_selected - tp, "fn": n_relevant - tp,
                "tn": selected.size - n_selected - n_relevant + tp}


@dataclass(frozen=True)
class Metric:
    """One per-cell result of a final fit on its test data.

    ``of(evaluation)``: its value from an :class:`Evaluation`. ``needs``: what it reads,
    ``"prediction"`` (``y_test`` and ``y_pred``), ``"coef"`` (the coefficients alone) or
    ``"selection"`` (the coefficients and the true ones; NaN where those are unknown) or
    ``"estimator"`` (the fitted estimator, and anything else of the evaluation): what a store
    made before the metric existed can give it without a refit (:mod:`~mccard_dist.store.backfill`:
    ``coef`` and ``selection`` from the stored coefficients, the others NaN with a note).
    ``better``: +1 higher is better, -1 lower, 0 neither (a count). ``label``: a column title;
    ``heading``: an axis or table title, with the unit. ``shown``: a column of the report's
    tables, figures and ``--versus``; ``log``: its figures' y scale (``"auto"``: log where the
    means lie far apart); ``fmt``: its number format. ``bounds``: the ``(low, high)`` every value
    lies in, where there are such (a stop rule's intervals of the metric are then exact at every
    number of seeds, :mod:`mccard_dist.intervals`)."""

    name: str
    of: Callable[[Evaluation], float]
    needs: str
    better: int
    label: str
    heading: str
    shown: bool = False
    log: bool | str = False
    fmt: str = ".3g"
    bounds: tuple[float, float] | None = None

    def __post_init__(self):
        if self.needs not in NEEDS:
            raise ValueError(f"Metric {self.name!r}: needs must be one of {', '.join(NEEDS)}, "
                             f"got {self.needs!r}")
        if self.better not in (-1, 0, 1):
            raise ValueError(f"Metric {self.name!r}: better must be 1 (higher is better), -1 "
                             f"(lower) or 0 (neither), got {self.better!r}")
        if self.bounds is not None and not (len(self.bounds) == 2
                                            and math.isfinite(self.bounds[0])
                                            and math.isfinite(self.bounds[1])
                                            and self.bounds[0] < self.bounds[1]):
            raise ValueError(f"Metric {self.name!r}: bounds must be (low, high) with low < high, "
                             f"both finite, or None, got {self.bounds!r}")

    def value(self, evaluation: Evaluation) -> float:
        """:attr:`of` the evaluation, NaN where it lacks what the metric needs."""
        lacking = {"prediction": evaluation.y_pred is None,
                   "coef": evaluation.coef is None,
                   "selection": evaluation.coef is None or evaluation.coef_true is None,
                   "estimator": evaluation.estimator is None}
        return np.nan if lacking[self.needs] else self.of(evaluation)

    def declared(self) -> dict:
        """Everything but :attr:`of`, as plain JSON values: what a store records of a metric of
        one's own (:meth:`from_declared`)."""
        return {"name": self.name, "needs": self.needs, "better": self.better,
                "label": self.label, "heading": self.heading, "shown": self.shown,
                "log": self.log, "fmt": self.fmt,
                **({"bounds": list(self.bounds)} if self.bounds is not None else {})}

    @classmethod
    def from_declared(cls, declared) -> Metric:
        """The metric a store recorded, without its function (reading a store imports
        nothing): its column, labels and direction for the report."""
        bounds = declared.get("bounds")
        return cls(of=None, bounds=tuple(bounds) if bounds is not None else None,
                   **{k: declared[k] for k in ("name", "needs", "better", "label", "heading",
                                               "shown", "log", "fmt")})


def _ratio(numerator: int, denominator: int) -> float:
    """``numerator / denominator``, 0.0 where the denominator is 0 (scikit-learn's
    ``zero_division=0``)."""
    return numerator / denominator if denominator else 0.0


def _count(key: str) -> Callable[[Evaluation], int]:
    return lambda ev: ev.counts[key]


def _precision(ev: Evaluation) -> float:
    return _ratio(ev.counts["tp"], ev.counts["tp"] + ev.counts["fp"])


def _recall(ev: Evaluation) -> float:
    return _ratio(ev.counts["tp"], ev.counts["tp"] + ev.counts["fn"])


def _f1(ev: Evaluation) -> float:
    c = ev.counts
    return _ratio(2 * c["tp"], 2 * c["tp"] + c["fp"] + c["fn"])


#: every per-cell metric, in the order of the store and of the report's columns
METRICS = (
    Metric("r", lambda ev: _correlation(ev.y_test, ev.y_pred), "prediction", 1, "r",
           "test r (Pearson, unitless)", shown=True, fmt=".3f", bounds=(-1.0, 1.0)),
    Metric("rmse", lambda ev: _rmse(ev.y_test, ev.y_pred), "prediction", -1, "RMSE",
           "test RMSE (units of y)", shown=True, log="auto"),
    Metric("f1", _f1, "selection", 1, "F1", "F1 of the selected features", shown=True,
           fmt=".3f", bounds=(0.0, 1.0)),
    Metric("n_selected", lambda ev: int(np.count_nonzero(ev.coef)), "coef", 0, "features",
           "selected features (count)", shown=True, log=True, fmt=".1f"),
    *(Metric(k, _count(k), "selection", 0, k, f"{k} of the selection (count)")
      for k in ("tp", "fp", "fn", "tn")),
    Metric("precision", _precision, "selection", 1, "precision", "precision of the selection",
           bounds=(0.0, 1.0)),
    Metric("recall", _recall, "selection", 1, "recall", "recall of the selection",
           bounds=(0.0, 1.0)),
)

#: Keys of the dict returned by :func:`evaluate`, in order: the names of :data:`METRICS` as this
#: module defines them
EVALUATION_KEYS = tuple(m.name for m in METRICS)


def metric(name: str, metrics=None) -> Metric | None:
    """The entry of ``metrics`` (default :data:`METRICS`) named ``name`` (None for a value that
    is not a metric)."""
    return next((m for m in (METRICS if metrics is None else metrics) if m.name == name), None)


def table(paths: tuple[str, ...] = ()) -> tuple[Metric, ...]:
    """:data:`METRICS`, then the metrics of one's own named by ``paths`` (``"module:name"``,
    each a :class:`Metric`), imported here once per process. Raises ValueError naming the path
    for one that cannot be imported, is not a Metric, or repeats a metric's name."""
    out = list(METRICS)
    for path, found in zip(paths, _imported(tuple(paths))):
        if any(m.name == found.name for m in out):
            raise ValueError(f"{path} is named {found.name!r}, as another metric is")
        out.append(found)
    return tuple(out)


@functools.lru_cache(maxsize=64)
def _imported(paths: tuple[str, ...]) -> tuple[Metric, ...]:
    out = []
    for path in paths:
        module, _, name = path.partition(":")
        try:
            found = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"{path} cannot be imported ({type(exc).__name__}: {exc})") from None
        if not isinstance(found, Metric):
            raise ValueError(f"{path} is not a mccard_dist.metrics.Metric (it is of type "
                             f"{type(found).__name__})")
        out.append(found)
    return tuple(out)


def scores_of(evaluation: Evaluation, metrics=None) -> dict[str, int | float]:
    """Every metric of ``metrics`` (default :data:`METRICS`) of one evaluation, by name (NaN
    where it lacks what a metric needs). An error of a metric of one's own is raised as a
    :class:`MetricError` naming it."""
    out = {}
    for m in METRICS if metrics is None else metrics:
        if m in METRICS:
            out[m.name] = m.value(evaluation)
            continue
        try:
            out[m.name] = float(m.value(evaluation))
        except Exception as exc:  # noqa: BLE001 - said with the metric's name
            said = " ".join(str(exc).split())[:300]
            raise MetricError(f"metric {m.name}: {type(exc).__name__}: {said}") from exc
    return out


def _as_1d(name: str, value, *, min_length: int = 1) -> np.ndarray:
    array = np.asarray(value, dtype=float)
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got an array of shape {array.shape}")
    if array.shape[0] < min_length:
        raise ValueError(f"{name} must have at least {min_length} element(s), got {array.shape[0]}")
    return array


def _pair(name_a: str, a, name_b: str, b, *, min_length: int = 1):
    """Both inputs as 1-D float arrays of at least ``min_length`` elements and the same length."""
    a = _as_1d(name_a, a, min_length=min_length)
    b = _as_1d(name_b, b, min_length=min_length)
    if a.shape[0] != b.shape[0]:
        raise ValueError(
            f"{name_a} and {name_b} must have the same length, got {a.shape[0]} and {b.shape[0]}"
        )
    return a, b


def correlation(y_true, y_pred) -> float:
    """Pearson correlation coefficient of targets and predictions.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Targets, n_samples >= 2.
    y_pred : array-like of shape (n_samples,)
        Predictions.

    Returns
    -------
    float
        The correlation r in [-1, 1]. ``nan`` (without a warning) when either input is constant
        (all values equal), where r is undefined, or when either input contains a non-finite value.

    Raises
    ------
    ValueError
        If an input is not 1-D, has fewer than 2 elements, or the lengths differ.

    Examples
    --------
    >>> correlation([1.0, 2.0, 3.0], [2.0, 4.0, 7.0])
    0.9933992677987828
    >>> correlation([1.0, 2.0, 3.0], [0.5, 0.5, 0.5])
    nan
    """
    return _correlation(*_pair("y_true", y_true, "y_pred", y_pred, min_length=2))


def _correlation(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """:func:`correlation` of two 1-D float arrays of the same length, unchecked."""
    if not (np.isfinite(y_true).all() and np.isfinite(y_pred).all()):
        return math.nan
    if np.ptp(y_true) == 0 or np.ptp(y_pred) == 0:
        return math.nan
    with np.errstate(all="ignore"):
        a = y_true - y_true.mean()
        b = y_pred - y_pred.mean()
        # Normalise first so the sums of squares cannot overflow.
        a /= np.max(np.abs(a))
        b /= np.max(np.abs(b))
        r = float(a @ b) / math.sqrt(float(a @ a) * float(b @ b))
    if not math.isfinite(r):
        return math.nan
    return min(1.0, max(-1.0, r))


def rmse(y_true, y_pred) -> float:
    """Root mean squared error.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Targets, n_samples >= 1.
    y_pred : array-like of shape (n_samples,)
        Predictions.

    Returns
    -------
    float
        ``sqrt(mean((y_true - y_pred) ** 2))``; ``nan`` or ``inf`` propagate.

    Raises
    ------
    ValueError
        If an input is not 1-D, is empty, or the lengths differ.

    Examples
    --------
    >>> rmse([0.0, 0.0], [3.0, -3.0])
    3.0
    """
    return _rmse(*_pair("y_true", y_true, "y_pred", y_pred))


def _rmse(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    """:func:`rmse` of two 1-D float arrays of the same length, unchecked."""
    with np.errstate(all="ignore"):
        return float(np.sqrt(np.mean((y_true - y_pred) ** 2)))


def selection_counts(coef, coef_true) -> dict[str, int]:
    """Confusion counts (``int``) of the selected features (``coef != 0``, NaN included) against
    the relevant ones (``coef_true != 0``): ``tp``, ``fp``, ``fn``, ``tn``, summing to n_features.

    >>> selection_counts([1.5, 0.0, -2.0, 0.0], [1.0, 1.0, 0.0, 0.0])
    {'tp': 1, 'fp': 1, 'fn': 1, 'tn': 1}
    """
    coef, coef_true = _pair("coef", coef, "coef_true", coef_true)
    return dict(Evaluation(coef=coef, coef_true=coef_true).counts)


def selection_scores(coef, coef_true) -> dict[str, int | float]:
    """Number selected, confusion counts, precision, recall and F1 of the feature selection.

    Parameters
    ----------
    coef : array-like of shape (n_features,)
        Estimated coefficients; feature d is selected when ``coef[d] != 0``.
    coef_true : array-like of shape (n_features,)
        Generating coefficients; feature d is relevant when ``coef_true[d] != 0``.

    Returns
    -------
    dict
        ``n_selected``, ``tp``, ``fp``, ``fn``, ``tn`` (``int``) and ``precision``, ``recall``,
        ``f1`` (``float``).

    Raises
    ------
    ValueError
        If an input is not 1-D, is empty, or the lengths differ.

    Notes
    -----
    ``precision = tp / (tp + fp)``, ``recall = tp / (tp + fn)``, ``f1 = 2 tp / (2 tp + fp + fn)``.
    A ratio whose denominator is 0 is defined as 0.0 (scikit-learn's ``zero_division=0``):
    nothing selected gives precision = F1 = 0; no relevant feature gives recall = 0 (and F1 = 0).

    Examples
    --------
    >>> scores = selection_scores([1.5, 0.0, -2.0, 0.0], [1.0, 1.0, 0.0, 0.0])
    >>> scores["n_selected"], scores["precision"], scores["recall"], scores["f1"]
    (2, 0.5, 0.5, 0.5)
    >>> selection_scores([0.0, 0.0], [1.0, 0.0])["f1"]
    0.0
    """
    coef, coef_true = _pair("coef", coef, "coef_true", coef_true)
    ev = Evaluation(coef=coef, coef_true=coef_true)
    return {"n_selected": ev.counts["tp"] + ev.counts["fp"], **ev.counts,
            "precision": _precision(ev), "recall": _recall(ev), "f1": _f1(ev)}


def evaluate(coef, intercept, X_test, y_test, coef_true) -> dict[str, int | float]:
    """Prediction and selection metrics of a fitted linear model on the test set.

    Parameters
    ----------
    coef : array-like of shape (n_features,)
        Estimated coefficients.
    intercept : float
        Estimated intercept (0.0 for a model without one).
    X_test : array-like of shape (n_samples, n_features)
        Test design matrix.
    y_test : array-like of shape (n_samples,)
        Test targets, n_samples >= 2.
    coef_true : array-like of shape (n_features,), or None
        Generating coefficients; None when they are unknown (real data).

    Returns
    -------
    dict
        Every metric of :data:`METRICS` by name: ``r`` (:func:`correlation`) and ``rmse``
        (:func:`rmse`) of the prediction ``X_test @ coef + intercept`` against ``y_test``, then
        the entries of :func:`selection_scores`. Without ``coef_true`` only ``n_selected`` of
        those is known; the confusion counts, precision, recall and F1 are NaN.

    Raises
    ------
    ValueError
        If a shape does not match or ``intercept`` is not a real scalar.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> scores = evaluate([2.0, 0.0], 0.0, X, X @ [2.0, 0.0], [2.0, 0.0])
    >>> scores["r"], scores["rmse"], scores["f1"]
    (1.0, 0.0, 1.0)
    """
    if coef_true is None:
        coef = _as_1d("coef", coef)
    else:
        coef, coef_true = _pair("coef", coef, "coef_true", coef_true)
    X_test = np.asarray(X_test, dtype=float)
    if X_test.ndim != 2:
        raise ValueError(f"X_test must be 2-D, got an array of shape {X_test.shape}")
    y_test = _as_1d("y_test", y_test, min_length=2)
    if X_test.shape[0] != y_test.shape[0]:
        raise ValueError(f"X_test and y_test must have the same number of samples, got "
                         f"{X_test.shape[0]} and {y_test.shape[0]}")
    if X_test.shape[1] != coef.shape[0]:
        raise ValueError(f"X_test has {X_test.shape[1]} features but coef has {coef.shape[0]} "
                         "entries")
    intercept_array = np.asarray(intercept)
    if (intercept_array.size != 1 or intercept_array.ndim > 1 or isinstance(intercept, bool)
            or not np.issubdtype(intercept_array.dtype, np.number)
            or np.iscomplexobj(intercept_array)):
        raise ValueError(f"intercept must be a real scalar, got {intercept!r}")
    with np.errstate(all="ignore"):
        y_pred = X_test @ coef + float(intercept_array.reshape(()))
    return scores_of(Evaluation(y_test, y_pred, coef, coef_true))
