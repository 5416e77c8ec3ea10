"""Cross-validated search over candidates ``{parameter: value}``: the engine of the CV
estimators and the pipeline's K-fold tasks.

Candidates are fitted in *units* (one candidate, or a warm-started path of several). A fit that
raises one of :data:`FIT_ERRORS` scores NaN, and so does every later candidate of its path. A
candidate whose fit raises :class:`InadmissibleCandidate` (a value the training fold's data does
not admit) is skipped there: NaN on that fold, not a failed fit, and one warning names each
fold's bound. The choice is the best mean score over folds (the first among equals, never one
with a NaN fold); the refit walks the chosen candidate's unit down to it.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral

import numpy as np
from joblib import Parallel, delayed
from scipy.stats import rankdata
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import check_scoring
from sklearn.model_selection import check_cv
from sklearn.utils.validation import check_is_fitted, validate_data

from ._base import check_params, check_sample_weight
from ._threads import BlasThreads

__all__ = ["FIT_ERRORS", "InadmissibleCandidate", "Search", "SearchCV", "choose", "fit_error",
           "fit_one", "quiet", "race_survivors", "search_results"]

#: what a fit that fails on its data raises (it scores NaN); anything else is a bug
FIT_ERRORS = (ValueError, ArithmeticError, np.linalg.LinAlgError)


def fit_error(exc: BaseException) -> str:
    """A failed fit's message as a run reports it: ``"ValueError: ..."``, its first line."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:300]}" if text else type(exc).__name__


class InadmissibleCandidate(ValueError):
    """What a fit raises when its training data does not admit a parameter's value: ``parameter``
    must exceed ``bound`` on these data (MCP's ``gamma`` and :func:`mcp_gamma_bound`). A search
    skips that candidate on that fold rather than counting a failed fit."""

    def __init__(self, message: str, parameter: str, bound: float):
        super().__init__(message)
        self.parameter = parameter
        self.bound = bound


def _warn_skipped(skipped) -> None:
    """One warning for the ``skipped`` fits, ``(fold or None, parameter, bound)`` each: every
    fold's bound, and that those candidates score NaN there (so the choice is none of them)."""
    if not skipped:
        return
    folds = {}
    for fold, parameter, bound in skipped:
        folds.setdefault((-1 if fold is None else fold, parameter), bound)
    where = ", ".join(f"{parameter} > {bound:.4g}" + ("" if fold < 0 else f" on fold {fold}")
                      for (fold, parameter), bound in sorted(folds.items()))
    warnings.warn(f"{len(skipped)} candidate fit(s) skipped: the training data need {where} "
                  f"(the data's bound); those candidates score NaN there and are not chosen",
                  UserWarning, stacklevel=3)


@contextlib.contextmanager
def quiet():
    """Hide the convergence warnings of the search's fits (the refit warns as a plain fit)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        yield


@dataclass(frozen=True)
class Search:
    """Candidates (``{parameter: value}``, in tie-break order), units (tuples of indices into
    them, a path fitted in its order) and ``fit(members, X, y, sample_weight, cache)``, which
    yields the fitted estimator after each member (``cache``: a dict shared by one training
    fold's units)."""

    candidates: Sequence[Mapping]
    units: Sequence[tuple[int, ...]]
    fit: Callable

    def unit_scores(self, unit, X, y, train, test, scorer, sample_weight=None, scored=None,
                    cache=None):
        """``unit``'s validation scores on one fold (NaN where a fit failed, was skipped or not
        reached, or ``scored``, a mask over the candidates, is False), the number of failed fits
        and the failure's message (``""``: none); a skipped candidate
        (:class:`InadmissibleCandidate`) is warned about, not counted."""
        out, failed, skipped, error = self._unit_scores(unit, X, y, train, test, scorer,
                                                        sample_weight, scored, cache)
        _warn_skipped([(None, *s) for s in skipped])
        return out, failed, error

    def _unit_scores(self, unit, X, y, train, test, scorer, sample_weight=None, scored=None,
                     cache=None):
        """:meth:`unit_scores` with the skipped fits' ``(parameter, bound)`` third."""
        out = np.full(len(unit), np.nan)
        skipped, error = [], ""
        fit_sw, score_kw = None, {}
        if sample_weight is not None:
            fit_sw, score_kw = sample_weight[train], {"sample_weight": sample_weight[test]}
        members = [self.candidates[c] for c in unit]
        reached = 0
        try:
            with quiet():
                fits = self.fit(members, X[train], y[train], fit_sw, {} if cache is None else cache)
                for i, fitted in enumerate(fits):
                    if scored is None or scored[unit[i]]:
                        out[i] = scorer(fitted, X[test], y[test], **score_kw)
                    reached += 1
        except InadmissibleCandidate as exc:
            skipped.append((exc.parameter, exc.bound))
            reached += 1  # skipped, not failed; a path's later candidates are not reached
        except FIT_ERRORS as exc:
            error = fit_error(exc)
        return out, len(unit) - reached, skipped, error

    def fold_scores(self, X, y, splits, scorer, *, sample_weight=None, race=None, n_jobs=None,
                    verbose=0):
        """``(scores, failed fits, the first failure's message or "")``: candidates x folds
        scores, one joblib task per unit and fold.
        ``race``: after each fold, only the :func:`race_survivors` of the losses (minus the
        scores) are scored on the next; a path is still fitted from its start. One warning names
        the folds that skipped candidates (:class:`InadmissibleCandidate`) and their bounds."""
        n = len(self.candidates)
        scores = np.full((n, len(splits)), np.nan)
        parallel = Parallel(n_jobs=n_jobs, verbose=verbose)
        caches = [{} for _ in splits]  # one per training fold (shared where jobs run here)
        alive = np.ones(n, dtype=bool)
        failed, skipped, first = 0, [], ""
        rounds = [range(len(splits))] if race is None else [[f] for f in range(len(splits))]
        for folds in rounds:
            jobs = []
            for unit in self.units:
                last = max((i for i, c in enumerate(unit) if alive[c]), default=None)
                if last is not None:
                    jobs += [(unit[: last + 1], f) for f in folds]
            results = parallel(delayed(self._unit_scores)(
                unit, X, y, *splits[f], scorer, sample_weight, alive, caches[f])
                for unit, f in jobs)
            for (unit, f), (out, n_failed, skips, error) in zip(jobs, results):
                scores[list(unit), f] = out
                failed += n_failed
                first = first or error
                skipped += [(f, *s) for s in skips]
            if race is not None and folds[-1] < len(splits) - 1:
                alive = race_survivors(-scores[:, : folds[-1] + 1], alive, race)
        _warn_skipped(skipped)
        return scores, failed, first

    def refit(self, best, X, y, sample_weight=None):
        """``best`` fitted on all of ``X, y``: its unit walked down to it (quietly before it)."""
        unit = next(u for u in self.units if best in u)
        members = [self.candidates[c] for c in unit[: unit.index(best) + 1]]
        fits = self.fit(members, X, y, sample_weight, {})
        with quiet():
            for _ in range(len(members) - 1):
                next(fits)
        return next(fits)


def race_survivors(losses_so_far: np.ndarray, alive: np.ndarray, margin: float) -> np.ndarray:
    """The candidates alive, with no failed fold in ``losses_so_far`` (candidates x folds),
    whose mean loss exceeds the lowest among them by at most ``margin`` times its magnitude:
    ``(1 + margin)`` times the lowest for losses >= 0, and the same rule for losses of any sign
    (minus a score such as ``r2``)."""
    with np.errstate(invalid="ignore"):
        mean = np.mean(losses_so_far, axis=1)
    alive = alive & np.isfinite(mean)
    if not alive.any():
        return alive
    best = np.min(mean[alive])
    return alive & (mean <= best + margin * abs(best))


def choose(scores, failed: int | None = None, first: str = "") -> int:
    """The index of the best mean score (the first among equals); ValueError if every candidate
    has a NaN fold (``failed``: the failed fits, and ``first``: the first one's message
    (:func:`fit_error`), for the message: a fit that raised says why, not where to look)."""
    with np.errstate(invalid="ignore"):
        mean = np.mean(scores, axis=1)
    if np.all(np.isnan(mean)):
        said = [f"{failed} failed fits"] * (failed is not None) + [f"first: {first}"] * bool(first)
        count = f" ({'; '.join(said)})" if said else ""
        hint = "" if first else "; widen the grid or check the data"
        raise ValueError(f"every candidate failed on at least one fold{count}{hint}")
    return int(np.nanargmax(mean))


def search_results(scores, params: Mapping) -> dict:
    """``cv_results_`` as ``GridSearchCV`` has them, from ``scores`` (candidates x folds, NaN
    for a failed fit) and the ``params`` columns. Ranks as ``GridSearchCV``'s: equal means share
    the lowest rank (``rankdata(method="min")``), and a NaN mean ranks after every other, tied
    with the other NaNs."""
    with np.errstate(invalid="ignore"):
        mean = scores.mean(axis=1)
        std = scores.std(axis=1)
    if np.isnan(mean).all():
        rank = np.ones(len(mean), dtype=np.int32)
    else:
        ranked = np.where(np.isnan(mean), np.nanmin(mean) - 1.0, mean)
        rank = rankdata(-ranked, method="min").astype(np.int32)
    return {
        **params,
        **{f"split{k}_test_score": scores[:, k] for k in range(scores.shape[1])},
        "mean_test_score": mean,
        "std_test_score": std,
        "rank_test_score": rank,
    }


def fit_one(base, members, X, y, sample_weight=None, cache=None):
    """:attr:`Search.fit` of estimators fitted one candidate at a time: a clone of ``base`` with
    the candidate's parameters."""
    kw = {} if sample_weight is None else {"sample_weight": sample_weight}
    for candidate in members:
        yield clone(base).set_params(**candidate).fit(X, y, **kw)


class _Predicts(RegressorMixin, BaseEstimator):
    """A fitted regressor of a class without scikit-learn's tags (one with only ``fit`` and
    ``predict``), as scikit-learn's scorers need to see it."""

    def __init__(self, fitted=None):
        self.fitted = fitted

    def fit(self, X, y):  # pragma: no cover - scikit-learn's scorers ask that it has one
        raise NotImplementedError

    def predict(self, X):
        return self.fitted.predict(X)


def _scorer(base, scoring):
    """scikit-learn's scorer of ``scoring`` for estimators like ``base``; for a class without
    tags, a named scorer sees each fit through :class:`_Predicts` (a callable of one's own gets
    the fit itself)."""
    if hasattr(base, "__sklearn_tags__") or callable(scoring):
        return check_scoring(base, scoring=scoring)
    scorer = check_scoring(_Predicts(), scoring=scoring)
    return lambda fitted, X, y, **kw: scorer(_Predicts(fitted), X, y, **kw)


class SearchCV(BlasThreads, RegressorMixin, BaseEstimator):
    """The search over :meth:`_search`'s candidates, the choice, the refit and prediction.

    A subclass has ``cv``, ``scoring``, ``n_jobs``, ``verbose`` and its :attr:`_estimator`'s
    parameters (passed on to every fit, as ``LassoCV`` does); ``_fitted`` names the refit's
    attributes it shows. The choice is ``best_params_`` (as in ``GridSearchCV``) and each of its
    values ``<name>_``."""

    _estimator: type
    _fitted: tuple[str, ...] = ()
    _parameter_constraints: dict = {"cv": ["cv_object"], "scoring": [None, str, callable],
                                    "n_jobs": [None, Integral], "verbose": ["verbose"]}

    def _base(self, **params):
        """The estimator with this one's shared parameters and ``params`` (what the fits clone)."""
        own = self._estimator().get_params(deep=False)
        shared = {k: v for k, v in self.get_params(deep=False).items() if k in own}
        return self._estimator(**shared, **params)

    def _search(self, X, y, sample_weight) -> tuple[Search, dict]:  # pragma: no cover
        """The search on the validated data, and ``cv_results_``' ``param_*`` columns."""
        raise NotImplementedError

    def fit(self, X, y, sample_weight=None):
        """Score every candidate on every fold, choose, refit on all the data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), optional
            Weights of the samples in every fit and in the validation scores (passed to the
            scorer), as ``LassoCV`` weights its fits and its validation errors.

        Returns
        -------
        self
        """
        check_params(self._parameter_constraints, self.get_params(deep=False),
                     type(self).__name__)
        base = self._base()
        if hasattr(base, "_parameter_constraints"):  # scikit-learn's own check, before any fit
            base._validate_params()
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True, ensure_min_samples=2,
                             reset=True)
        X = np.ascontiguousarray(X)
        sample_weight = check_sample_weight(sample_weight, X)
        search, params = self._search(X, y, sample_weight)
        splits = list(check_cv(self.cv).split(X, y))
        scorer = _scorer(self._base(), self.scoring)
        scores, failed, first = search.fold_scores(X, y, splits, scorer,
                                                   sample_weight=sample_weight,
                                                   n_jobs=self.n_jobs, verbose=self.verbose)
        self.best_index_ = choose(scores, failed, first)
        self.cv_results_ = search_results(scores, params)
        self.best_score_ = float(self.cv_results_["mean_test_score"][self.best_index_])
        self.best_params_ = dict(search.candidates[self.best_index_])
        for name, value in self.best_params_.items():
            setattr(self, f"{name}_", value)
        model = search.refit(self.best_index_, X, y, sample_weight)
        model.n_features_in_ = X.shape[1]
        self.best_estimator_ = model
        for name in self._fitted:
            if hasattr(model, name):  # a class without coef_ predicts all the same
                setattr(self, name, getattr(model, name))
        return self

    def predict(self, X, **kwargs):
        """Predict with the refitted estimator (its ``predict``'s keywords, such as
        ``return_std``, are passed on)."""
        check_is_fitted(self, "best_estimator_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return self.best_estimator_.predict(X, **kwargs)
