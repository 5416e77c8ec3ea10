"""What a worker runs: rebuild a cell's data from its key, cross-validate, refit, score.

Plain, picklable functions with no Dask, Hydra or I/O. A cell's data (and CV folds) are a pure
function of ``(seed, psi, tau)`` and the data spec, so workers rebuild them and every method sees
the same data; a data file's arrays are shipped once per worker (:func:`run_block`). One cell:
K-fold CV over the method's candidates (ties: the first in the grid; ``cv.race`` drops clearly
worse candidates early), or with ``cv.scheme=alo`` one fit per candidate scored on approximate
leave-one-out residuals; a final fit; the paper's metrics on the noise-free test set. A fit that
raises is recorded (CV: a NaN score; final fit: a failed cell) and the block goes on; so does a
cell whose data (a generator of one's own) or metric raises: a failed cell, with its error.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import time
import traceback
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import KFold

from .config import CVSpec, ExperimentSpec
from .config.checks import ConfigError
from .grid import Block, Cell, cv_candidates, cv_units
from .metrics import Evaluation, MetricError, scores_of
from .models.search import FIT_ERRORS, Search, choose, fit_error
from .records import STATUS_DONE, STATUS_FAILED, BlockResult, CellResult

__all__ = ["TRIAL_ROWS", "cv_fit", "cv_loss", "finish_cell", "kfold_scores", "run_block",
           "run_cell", "search", "try_methods"]

#: the training rows of a method's trial fit (:func:`try_methods`)
TRIAL_ROWS = 60


def cv_loss(residuals: np.ndarray, cv: CVSpec) -> float:
    """Validation loss (lower is better) of held-out residuals.

    ``mae``: mean absolute error; ``medae``: median absolute error; ``rmse``: root mean squared
    error; ``correntropy``: ``1 - mean exp(-e^2 / 2 w)`` at the fixed ``cv.reference_width`` w.
    """
    e = np.asarray(residuals, dtype=float)
    losses = {"mae": lambda: np.mean(np.abs(e)), "medae": lambda: np.median(np.abs(e)),
              "rmse": lambda: np.sqrt(np.mean(e * e)),
              "correntropy": lambda: 1.0 - np.mean(np.exp(-e * e / (2.0 * cv.reference_width)))}
    if cv.score not in losses:
        raise ValueError(f"cv.score must be one of mae, medae, rmse, correntropy; got {cv.score!r}")
    return float(losses[cv.score]())


@contextlib.contextmanager
def _quiet():
    """No convergence or floating-point warning of a cell's fits (the store records them)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _neg_loss(cv, estimator, X, y):
    """The scikit-learn scorer of ``cv.score`` (with ``cv`` bound): minus :func:`cv_loss`."""
    return -cv_loss(y - estimator.predict(X), cv)


def folds(n_train: int, n_folds: int, seed: int):
    """The cell's K folds: shuffled, drawn from the cell's seed (the same for every method)."""
    return list(KFold(n_splits=n_folds, shuffle=True, random_state=seed).split(np.empty(n_train)))


def search(spec, method, X) -> Search:
    """The method's K-fold search (:class:`~mccard_dist.models.search.Search`) on a cell's
    training data ``X``: its candidates, fitted in :func:`~mccard_dist.grid.cv_units`, with one
    solver for every fold and the final fit (a solver ``"auto"`` chosen from ``X``'s shape)."""
    params = method.kind.resolve(method.params, *X.shape)
    return Search(cv_candidates(method), cv_units(method, spec.cv),
                  functools.partial(method.kind.fit_members, params))


def kfold_scores(spec, method, X, y, seed):
    """(n_candidates, n_folds) validation losses (NaN where a fit failed, or where ``cv.race``
    dropped the candidate), the failure count and the first failure's message."""
    with _quiet():
        scores, failed, error = search(spec, method, X).fold_scores(
            X, y, folds(len(y), spec.cv.n_folds, seed), functools.partial(_neg_loss, spec.cv),
            race=spec.cv.race)
    return -scores, failed, error


def _alo_order(method, candidates):
    """Fitting order of the candidates: widths as given, each width's penalties from the largest
    (sparsest, cheapest fit) down; the order ``cv.path_stop`` walks its paths in."""
    width, penalty = method.kind.width_param, method.kind.penalty_name
    position = {w: i for i, w in enumerate(dict.fromkeys(c.get(width) for c in candidates))}
    return sorted(range(len(candidates)), key=lambda c: (position[candidates[c].get(width)],
                                                         -candidates[c].get(penalty, 0.0)))


def _select_alo(spec, method, X, y, candidates):
    """One fit per candidate on all the training data, scored on its approximate leave-one-out
    residuals; the best is the final fit (``best``: None if every candidate failed or scored NaN);
    returns the scores, the best, the failure count and the first failure's message.
    ``cv.path_stop`` skips a width's smaller penalties once one scores clearly worse."""
    scores = np.full((len(candidates), 1), np.nan)
    penalty_cache = {}
    best = None  # (score, index, estimator, seconds)
    n_failures, first = 0, ""
    path_stop = spec.cv.path_stop
    width, penalty = method.kind.width_param, method.kind.penalty_name
    path_best: dict = {}
    stopped: set = set()
    for c in _alo_order(method, candidates):
        h, ratio = candidates[c].get(width), candidates[c].get(penalty, 0.0)
        if h in stopped:
            continue
        try:
            est, _ = method.kind.build(method.params, candidates[c], X, y, penalty_cache)
            fit_start = time.perf_counter()
            with _quiet():
                est.fit(X, y)
            seconds = time.perf_counter() - fit_start
            scores[c, 0] = cv_loss(est.loo_residuals(X, y), spec.cv)
        except FIT_ERRORS as exc:
            n_failures += 1
            first = first or fit_error(exc)
            continue
        score = scores[c, 0]
        if np.isnan(score):
            continue
        if path_stop is not None and ratio > 0:
            if score > (1.0 + path_stop) * path_best.get(h, np.inf):
                stopped.add(h)
            path_best[h] = min(path_best.get(h, np.inf), score)
        # strict <, in grid order: ties keep the earlier candidate, as np.nanargmin does
        if best is None or score < best[0] or (score == best[0] and c < best[1]):
            best = (score, c, est, seconds)
    return scores, best, n_failures, first


def run_cell(spec: ExperimentSpec, cell: Cell, save_coef: bool | None = None,
             source=None, method=None, candidates=None) -> CellResult:
    """Cross-validate, refit and score one cell; never raises for a failing fit (``source``: the
    data's arrays when the driver ships them, else None; ``method`` and its ``candidates``: the
    cell's, when the caller has them)."""
    start = time.perf_counter()
    method = spec.method(cell.method) if method is None else method
    try:
        data = spec.data.make_data(cell.seed, cell.psi, cell.tau, source)
    except Exception as exc:  # recorded, not raised: the block's other cells go on
        return _failed(cell, exc, 0, time.perf_counter() - start, None, what=DATA_FAILED)
    candidates = cv_candidates(method) if candidates is None else candidates
    scores = None
    n_failures, cv_error = 0, ""
    try:
        if candidates and spec.cv.scheme == "alo":
            scores, best, n_failures, cv_error = _select_alo(spec, method, data.X_train,
                                                             data.y_train, candidates)
            if best is None:
                first = f"; first: {cv_error}" if cv_error else ""
                raise RuntimeError(f"every candidate failed or has a NaN leave-one-out score "
                                   f"({n_failures} failed fits{first})")
            _, c, est, fit_seconds = best
            chosen = candidates[c]
        else:
            if candidates:
                scores, n_failures, cv_error = kfold_scores(spec, method, data.X_train,
                                                            data.y_train, cell.seed)
            chosen, est, fit_seconds = _choose_and_refit(spec, method, data, scores,
                                                         n_failures, cv_error)
        metrics, coef = _evaluate(est, data, spec.metric_table, cell)
    except Exception as exc:  # recorded, not raised: one bad cell must not stop the run
        return _failed(cell, exc, n_failures, time.perf_counter() - start, scores, cv_error)
    return _done(spec, method, cell, est, chosen, metrics, coef, data, fit_seconds,
                 time.perf_counter() - start, n_failures, scores, save_coef, cv_error)


def _choose_and_refit(spec, method, data, scores, n_failures, cv_error=""):
    """The candidate with the lowest mean K-fold loss (ties: the first), fitted on all the
    training data (along the path the CV walked, down to it): ``(candidate, estimator, fit
    seconds)`` (candidate ``{}`` without a grid; ``cv_error``: the first failed CV fit's
    message, said when no candidate is left)."""
    fit_start = time.perf_counter()
    cv = search(spec, method, data.X_train)
    if cv.candidates:
        best = choose(-scores, n_failures, cv_error)
        chosen = cv.candidates[best]
    else:
        cv, best, chosen = Search([{}], [(0,)], cv.fit), 0, {}
    with _quiet():
        est = cv.refit(best, data.X_train, data.y_train)
    return chosen, est, time.perf_counter() - fit_start


def _last_step_coef(est, n_features: int) -> np.ndarray | None:
    """A scikit-learn ``Pipeline``'s coefficients: its last step's ``coef_``, on the features as
    its earlier steps give them (a scaler's: the same features selected), where there is one per
    feature (None where its steps change the features, or it has none)."""
    from sklearn.pipeline import Pipeline

    if not isinstance(est, Pipeline) or not hasattr(est[-1], "coef_"):
        return None
    coef = np.asarray(np.ravel(est[-1].coef_), dtype=np.float64)
    return coef if coef.shape[0] == n_features else None


def _evaluate(est, data, table, cell) -> tuple[dict, np.ndarray | None]:
    """The test metrics ``table`` of a fitted estimator on the cell ``cell`` (from one
    :class:`~mccard_dist.metrics.Evaluation`) and its coefficients: the predictions are
    ``X_test @ coef_ + intercept_`` (0 without) where it has ``coef_``, else its ``predict``;
    the coefficients its ``coef_``, a ``Pipeline``'s its last step's (:func:`_last_step_coef`),
    else None, and the metrics of coefficients NaN."""
    X_test = data.X_test
    if hasattr(est, "coef_"):
        coef = np.asarray(np.ravel(est.coef_), dtype=np.float64)
        if coef.shape[0] != X_test.shape[1]:
            raise ValueError(f"the final fit's coef_ has {coef.shape[0]} entries for "
                             f"{X_test.shape[1]} features")
        with np.errstate(all="ignore"):
            y_pred = X_test @ coef + float(getattr(est, "intercept_", 0.0))
    else:
        coef = _last_step_coef(est, X_test.shape[1])
        y_pred = np.asarray(np.ravel(est.predict(X_test)), dtype=np.float64)
    metrics = scores_of(Evaluation(data.y_test, y_pred, coef, data.coef_true, est, data, cell),
                        table)
    if not np.isfinite(metrics["rmse"]):
        where = ("its coef_ or intercept_ holds non-finite values (the predictions are X_test @ "
                 "coef_ + intercept_)" if hasattr(est, "coef_")
                 else "it predicts non-finite values")
        raise ArithmeticError(f"the final fit cannot be scored: {where} (test RMSE "
                              f"{metrics['rmse']})")
    return metrics, coef


def _number(value) -> float:
    """A numeric attribute of a fitted estimator as one float: its largest value where it is an
    array (an ``n_iter_`` per target), NaN where it is not numeric or empty."""
    try:
        return float(np.asarray(value, dtype=np.float64).max()) if np.size(value) else np.nan
    except (TypeError, ValueError):
        return np.nan


#: what a failed cell's error starts with when its data raised (not a fit)
DATA_FAILED = "the cell's data"


def _failed(cell, exc, n_failures, seconds, scores, cv_error="", what="") -> CellResult:
    """A failed cell with ``exc``'s message, after ``what`` raised it where given."""
    message = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    message = f"{what}: {message}" if what else message
    return CellResult(cell.index, STATUS_FAILED, error=message[:2000],
                      scalars={"n_cv_failures": n_failures, "cell_seconds": seconds},
                      cv_score=scores, cv_error=cv_error)


def _degenerate(est) -> float:
    """1 when the final fit says it is degenerate (its ``degenerate_``: MCC-ARD's when every
    sample lost its weight, LS-ARD's when the noise variance collapsed), 0 when not, NaN for an
    estimator that does not say."""
    return float(bool(est.degenerate_)) if hasattr(est, "degenerate_") else np.nan


def _done(spec, method, cell, est, chosen, metrics, coef, data, fit_seconds, cell_seconds,
          n_failures, scores, save_coef, cv_error="") -> CellResult:
    save_coef = spec.run.save_coef if save_coef is None else save_coef
    scalars = dict(metrics)
    for name in method.grid_names:
        # the final fit's grid values: the CV choice, or where an auto width settled
        scalars[f"chosen_{name}"] = (float(chosen[name]) if name in chosen
                                     else _number(getattr(est, f"{name}_", np.nan)))
    converged = getattr(est, "converged_", None)
    scalars.update(
        chosen_alpha=_number(getattr(est, "alpha", np.nan)),
        n_iter=_number(getattr(est, "n_iter_", np.nan)),
        converged=np.nan if converged is None else int(bool(converged)), fit_seconds=fit_seconds,
        cell_seconds=cell_seconds, n_cv_failures=n_failures, degenerate=_degenerate(est),
    )
    if not save_coef:
        coef = None
    elif coef is None:  # without coef_: NaN, the store's coefficients of a model it cannot give
        coef = np.full(data.X_test.shape[1], np.nan)
    return CellResult(cell.index, STATUS_DONE, scalars=scalars, cv_score=scores, coef=coef,
                      cv_error=cv_error)


def try_methods(spec: ExperimentSpec, source=None,
                rows: int | None = TRIAL_ROWS) -> dict:
    """Fit each method once, with its first CV candidate, on the first ``rows`` training rows
    (None: all) of the grid's first cell, and evaluate and record it as a cell: a class whose
    ``fit``, ``predict`` or fitted attributes raise what no fit on data raises (an
    AttributeError, a TypeError: code to change, not data) is refused in one line naming the
    method, before any store or cluster exists. A fit that fails as fits on data fail
    (:data:`~mccard_dist.models.search.FIT_ERRORS`) is left to the grid, where CV scores it, and
    so is a first cell whose data raise (no trial: the grid fails that cell with its error).
    Returns the seconds of each method's fit (NaN for one that failed so; none without a
    trial)."""
    seed, psi, tau = spec.seeds[0], spec.psi[0], spec.tau[0]
    try:
        data = spec.data.make_data(seed, psi, tau, source)
    except Exception:  # noqa: BLE001 - no trial: that cell fails in the grid, with its error
        return {}
    n = len(data.y_train) if rows is None else min(rows, len(data.y_train))
    trial = dataclasses.replace(data, X_train=data.X_train[:n], y_train=data.y_train[:n])
    seconds = {}
    for method in spec.methods:
        candidate = (cv_candidates(method) or [{}])[0]
        cell = Cell(method.name, tau, psi, seed, (0, 0, 0, 0))
        seconds[method.name] = float("nan")
        try:
            with _quiet():
                start = time.perf_counter()
                params = method.kind.resolve(method.params, *trial.X_train.shape)
                est = next(iter(method.kind.fit_members(params, [candidate], trial.X_train,
                                                        trial.y_train)))
                seconds[method.name] = time.perf_counter() - start
                metrics, coef = _evaluate(est, trial, spec.metric_table, cell)
                _done(spec, method, cell, est, candidate, metrics, coef, trial, 0.0, 0.0, 0,
                      None, True)
        except MetricError as exc:
            raise ConfigError(f"experiment.metrics: on the trial fit of methods.{method.name}, "
                              f"{exc}") from None
        except FIT_ERRORS:
            continue
        except Exception as exc:  # noqa: BLE001 - the class's code, said in one line
            said = " ".join(str(exc).split())[:300]
            raise ConfigError(
                f"methods.{method.name}: a trial fit of {method.kind.cls.__name__} on {n} rows "
                f"of the first cell failed: {type(exc).__name__}: {said}") from None
    return seconds


# -- fit units (run.unit=fit): one CV fit per task, then the cell's choice and final fit ------

@functools.lru_cache(maxsize=4)
def _cached_data(data_spec, seed: int, psi: float, tau: float, source):
    """A cell's data, built once per worker process for all the fits of the cell it runs."""
    return data_spec.make_data(seed, psi, tau, source)


def cv_fit(spec: ExperimentSpec, cell: Cell, unit: int, fold: int, source=None):
    """The K-fold fits of one unit (:func:`~mccard_dist.grid.cv_units`: one candidate, or one
    path) on one fold of a cell: ``(validation losses of the unit's candidates, NaN where a fit
    failed; failed fits; seconds; the first failure's message)``; the same fits as
    :func:`run_cell` makes."""
    start = time.perf_counter()
    method = spec.method(cell.method)
    try:
        data = _cached_data(spec.data, cell.seed, cell.psi, cell.tau, source)
    except Exception:  # noqa: BLE001 - the cell's finish_cell fails it with the error
        n = len(cv_units(method, spec.cv)[unit])
        return np.full(n, np.nan), 0, time.perf_counter() - start, ""
    X, y = data.X_train, data.y_train
    train, val = folds(len(y), spec.cv.n_folds, cell.seed)[fold]
    cv = search(spec, method, X)
    with _quiet():
        out, failed, error = cv.unit_scores(cv.units[unit], X, y, train, val,
                                            functools.partial(_neg_loss, spec.cv))
    return -out, failed, time.perf_counter() - start, error


def finish_cell(spec: ExperimentSpec, cell: Cell, scores, n_failures: int, cv_seconds: float,
                source=None, cv_error: str = "") -> CellResult:
    """The rest of a cell whose K-fold scores came from :func:`cv_fit` tasks: the choice, the
    final fit and the metrics, as :func:`run_cell` would give them. ``cell_seconds`` counts the
    fits' seconds (``cv_seconds``) and this task's."""
    start = time.perf_counter()
    method = spec.method(cell.method)
    try:
        data = _cached_data(spec.data, cell.seed, cell.psi, cell.tau, source)
    except Exception as exc:  # recorded, not raised, as in run_cell
        return _failed(cell, exc, n_failures, cv_seconds + time.perf_counter() - start, scores,
                       cv_error, what=DATA_FAILED)
    try:
        chosen, est, fit_seconds = _choose_and_refit(spec, method, data, scores, n_failures,
                                                     cv_error)
        metrics, coef = _evaluate(est, data, spec.metric_table, cell)
    except Exception as exc:  # recorded, not raised, as in run_cell
        return _failed(cell, exc, n_failures, cv_seconds + time.perf_counter() - start, scores,
                       cv_error)
    return _done(spec, method, cell, est, chosen, metrics, coef, data, fit_seconds,
                 cv_seconds + time.perf_counter() - start, n_failures, scores, None, cv_error)


def run_block(spec: ExperimentSpec, block: Block, source=None) -> BlockResult:
    """Run every cell of a block (the unit of distribution) into the block's arrays, with the
    seconds they took; ``source``: what ``spec.data.load_source()`` gave the driver (a data
    file's arrays, scattered to each worker once), or None when workers build the data."""
    start = time.perf_counter()
    method = spec.method(block.method)
    candidates = cv_candidates(method)
    results = [run_cell(spec, cell, source=source, method=method, candidates=candidates)
               for cell in block.cells]
    return BlockResult.of(block.shape, results, time.perf_counter() - start)
