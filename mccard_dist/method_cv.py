"""Any method of the experiment configs, cross-validated as the pipeline does it, as one
scikit-learn estimator: ``MethodCV("huber_l1").fit(X, y)``."""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Mapping
from functools import partial

import numpy as np

from .methods import grid_edge
from .models.search import Search, SearchCV

__all__ = ["MethodCV"]


def method_spec(method: str, grid: Mapping | None = None, params: Mapping | None = None):
    """The checked method ``method`` of the config folders (``method/<method>.yaml`` of
    :func:`~mccard_dist.config.config_path`), its grid's and params' entries replaced by
    ``grid``'s and ``params``'."""
    from omegaconf import OmegaConf

    from .config import config_path, method_files, register_resolvers

    register_resolvers()
    files = method_files(config_path())
    path = files.get(method)
    if path is None:
        raise ValueError(f"method {method!r} has no file method/{method}.yaml in "
                         f"{', '.join(map(str, config_path()))}; known methods: "
                         f"{', '.join(files)}")
    raw = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
    raw.pop("defaults", None)
    return _checked(method, raw, grid, params)


def _checked(name: str, raw: dict, grid: Mapping | None, params: Mapping | None):
    """The checked :class:`~mccard_dist.config.MethodSpec` of a method's raw section, its grid's
    entries replaced by ``grid``'s, its params' by ``params``' (less those the grid now spans)."""
    from .config import MethodSpec
    from .config.checks import ConfigError

    raw["grid"] = {**(raw.get("grid") or {}), **dict(grid or {})}
    raw["params"] = {k: v for k, v in {**(raw.get("params") or {}), **dict(params or {})}.items()
                     if k not in (grid or {})}
    try:
        return MethodSpec(**raw).checked(name)
    except ConfigError as exc:
        raise ValueError(str(exc)) from None


def estimator_spec(estimator, grid: Mapping | None = None, params: Mapping | None = None):
    """The checked method of an estimator class or object (its parameters that differ from the
    class's defaults fixed, where it has ``get_params``) with the CV grid ``grid``. The class is
    named by its import path, as a method file names it: it must be importable as
    ``module:Class``."""
    import importlib
    import inspect as _inspect

    from .methods import ESTIMATOR_RE

    cls = estimator if _inspect.isclass(estimator) else type(estimator)
    path = f"{cls.__module__}:{cls.__qualname__}"
    try:
        importable = (ESTIMATOR_RE.match(path) is not None and getattr(
            importlib.import_module(cls.__module__), cls.__qualname__, None) is cls)
    except ImportError:
        importable = False
    if not importable:
        raise ValueError(f"MethodCV: {cls.__qualname__} cannot be imported as {path}; define "
                         "the class at the top level of a module (or of the notebook)")
    own = {}
    if not _inspect.isclass(estimator) and hasattr(estimator, "get_params"):
        defaults = {n: p.default for n, p in _inspect.signature(cls.__init__).parameters.items()}
        own = {k: v for k, v in estimator.get_params(deep=False).items()
               if k in defaults and not (v is defaults[k] or _same(v, defaults[k]))}
    return _checked(cls.__name__, {"estimator": path, "params": own}, grid, params)


def _same(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - an array or an object without a plain equality
        return False


class MethodCV(SearchCV):
    """A method of the experiment configs (its estimator, fixed parameters and CV grid, from
    ``conf/method/<method>.yaml``) with its hyper-parameters chosen by K-fold cross-validation,
    then refitted on all the data: the pipeline's choice for one cell, in one estimator.

    A penalty given as ``alpha_ratio`` is scaled by the estimator's ``alpha_max`` of each
    training fold (and of all the data for the refit), as in the pipeline, computed as the
    estimator sees the data (with or without its intercept, with the sample weights). Every
    candidate is fitted from scratch (one joblib task per candidate and fold): the product of
    the grid's sizes times the folds, plus the refit. A choice at an edge of a grid of three or
    more values is warned about, by the pipeline's rule
    (:func:`~mccard_dist.methods.grid_edge`).

    Parameters
    ----------
    method : str, estimator class or estimator, default="huber_l1"
        A method file's name (``huber_l1``, ``huber_mcp``, ``lad_lasso``, ``lasso``, ``mcc_ard``
        ..., or one of one's own config folder), or an estimator class or object (``Ridge``,
        ``Ridge(fit_intercept=False)``: the object's parameters that differ from its defaults are
        fixed) with its CV ``grid``. Any class with ``fit`` and ``predict`` will do.
    grid : dict, optional
        Grid entries replacing the file's (``{"epsilon": [0.1, 1.0], "alpha_ratio": [...]}``).
    params : dict, optional
        Fixed parameters replacing or adding to the file's.
    cv : int, cross-validation generator or iterable, default=5
        As in scikit-learn (:func:`sklearn.model_selection.check_cv`).
    scoring : str or callable, default="neg_mean_absolute_error"
        Validation score, higher is better (the pipeline's ``cv.score=mae``).
    n_jobs : int, default=None
    verbose : int, default=0

    Attributes
    ----------
    best_params_ : dict
        The chosen candidate, ``{grid name: value}``; each also as ``<name>_``.
    best_score_ : float
    best_index_ : int
    cv_results_ : dict of ndarray
        ``param_<name>`` per grid name and the scores, as :class:`GridSearchCV` has them.
    best_estimator_ : estimator
        The refit (its ``alpha`` the absolute penalty).
    coef_, intercept_
        The refit's.
    n_features_in_ : int
    """

    _fitted = ("coef_", "intercept_")
    _parameter_constraints = {**SearchCV._parameter_constraints, "method": "no_validation",
                              "grid": [None, dict], "params": [None, dict]}

    def __init__(self, method="huber_l1", grid=None, params=None, cv=5,
                 scoring="neg_mean_absolute_error", n_jobs=None, verbose=0):
        self.method = method
        self.grid = grid
        self.params = params
        self.cv = cv
        self.scoring = scoring
        self.n_jobs = n_jobs
        self.verbose = verbose

    def _spec(self):
        if isinstance(self.method, str):
            return method_spec(self.method, self.grid, self.params)
        return estimator_spec(self.method, self.grid, self.params)

    def _base(self, **params):
        spec = self._spec()
        first = next(iter(spec.kind.candidates(spec.grid)), {})
        return spec.kind.build(spec.params, {**first, **params})[0]

    def _search(self, X, y, sample_weight):
        spec = self._spec()
        kind = spec.kind
        if sample_weight is not None and "sample_weight" not in inspect.signature(
                kind.cls.fit).parameters:
            raise ValueError(f"MethodCV({self._name()}): {kind.cls.__name__} takes no "
                             f"sample_weight; fit without it")
        params = kind.resolve(spec.params, *X.shape)
        candidates = kind.candidates(spec.grid) or [{}]
        columns = {f"param_{name}": [c.get(name) for c in candidates]
                   for name in dict.fromkeys(n for c in candidates for n in c)}
        return (Search(candidates, [(c,) for c in range(len(candidates))],
                       partial(kind.fit_members, params)), columns)

    def fit(self, X, y, sample_weight=None):
        """As :meth:`SearchCV.fit <mccard_dist.models.search.SearchCV.fit>`, then a warning for
        each grid whose edge CV chose where a wider grid might choose beyond it.

        Returns
        -------
        self
        """
        super().fit(X, y, sample_weight)
        spec = self._spec()
        mean = np.asarray(self.cv_results_["mean_test_score"], dtype=float)
        coef = getattr(self.best_estimator_, "coef_", None)
        empty = None if coef is None else not np.any(coef)
        for axis, value in self.best_params_.items():
            grid = spec.grid.get(axis)
            if isinstance(grid, str):
                continue
            side = grid_edge(spec.kind, axis, grid, float(value), empty,
                             partial(self._losses, mean, axis))
            if side in ("low", "high"):
                warnings.warn(
                    f"MethodCV({self._name()}): CV chose {axis}={value:g}, the "
                    f"{'smallest' if side == 'low' else 'largest'} value of its grid; the best "
                    f"value may lie outside it: widen grid={{{axis!r}: [...]}}", UserWarning,
                    stacklevel=3)
        return self

    def _name(self) -> str:
        method = self.method
        return repr(method) if isinstance(method, str) else getattr(
            method, "__name__", type(method).__name__)

    def _losses(self, mean, axis, neighbour):
        """The mean CV losses of the choice and of the candidate at ``neighbour`` on ``axis``
        (the other values as chosen; None if the grid has no such candidate)."""
        params = {k[len("param_"):]: v for k, v in self.cv_results_.items()
                  if k.startswith("param_")}
        at = {**self.best_params_, axis: neighbour}
        near = [c for c in range(len(mean))
                if all(np.isclose(params[k][c], v, rtol=1e-9, atol=0.0) for k, v in at.items())]
        return (-mean[self.best_index_], -mean[near[0]]) if len(near) == 1 else None
