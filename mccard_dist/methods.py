"""What the pipeline knows about a method's estimator: its class, named by import path in the
method file (``estimator: mccard_dist.models:MCCARDRegressor``, or a class of one's own package),
and what the class declares about its hyper-parameters in an optional class attribute
``mccard_method`` (a mapping of :class:`MethodKind`'s fields: its width, its penalty, its paths, its
solvers). A class that declares nothing is a plain scikit-learn regressor whose CV grid may span any
of its constructor's parameters. The rest of the package asks the method's kind
(:func:`kind_of`) and knows no estimator by name.

What the pipeline reads from a fitted estimator is a small protocol: ``predict`` (required),
``coef_`` and ``intercept_`` (the selection metrics and the stored coefficients; NaN without),
``n_iter_``, ``converged_`` and ``degenerate_`` (NaN and unknown without).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import itertools
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields

__all__ = ["AUTO_WIDTH", "ESTIMATOR_RE", "FLAT_PER_DECADE", "SPARSER_UPWARDS",
           "MethodKind", "NotAClass", "grid_edge", "kind_of"]

#: a width grid that is this string: each fit sets its own width (``models._width.AUTO``, which
#: this room does not import: the command line reads it without scikit-learn)
AUTO_WIDTH = "auto"
#: an estimator's import path, ``package.module:Class``
ESTIMATOR_RE = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*$")


def _load(ref: str | None):
    """The object ``"module:name"`` names, imported on first use (None for None)."""
    if ref is None:
        return None
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class MethodKind:
    """An estimator class and what it declares about its hyper-parameters (its class attribute
    ``mccard_method``, every field optional).

    Attributes
    ----------
    estimator : str
        The estimator class, as ``"module:Class"`` (:attr:`cls`: the class, imported on first
        use).
    label : str or None
        The estimator's name in reports (None: the method's name).
    width_param : str or None
        Its kernel width (or other robustness scale), chosen by CV over the grid of that name, or
        set inside each fit (``"auto"``) where ``auto_width``; None: it has none.
    penalty_name : str or None
        The grid name of its penalty ``alpha``: ``alpha_ratio`` (fractions of
        ``penalty_scale(X, y, width, fit_intercept, sample_weight)`` of the training data), or
        ``alpha`` itself; None: none.
    penalty_scale, path : str or None
        Functions, as ``"module:name"``: the penalty's scale (above); the fit of several
        estimators of the grid (decreasing penalties at one width, or decreasing widths) as one
        warm-started path, ``path(estimators, X, y, sample_weight)``, yielding the estimator
        refitted at each step; not with ``no_path_solvers`` (values of the first of its
        :attr:`solver_params`) or an auto width.
    alo : bool
        The estimator gives approximate leave-one-out residuals (``cv=alo`` can score it).
    solver_params : tuple of str
        Its parameters that only select (``solver``, first) or tune a solver: two methods that
        differ only in these fit the same model (the solver comparisons pair them).
    path_param : str or None
        The boolean parameter that must be true for :attr:`path` to be used (the estimator's
        ``warm_start``); None: paths whenever ``cv.paths`` asks.
    bounds : tuple of (str, float or None, float or None)
        ``(grid name, lowest, highest)``: the values a parameter can take (None: no bound), so
        that a CV choice at such a bound is no sign of a too narrow grid.
    width_unit : str
        The unit of the width, as the report's axes say it (``y²``: of the targets squared).
    sparser_upwards : tuple of str
        Grid names along which larger values give sparser models (a choice at the largest value
        that kept no feature is settled).
    requires : str or None
        A module the estimator needs that the package does not install (an optional extra's),
        checked when an experiment selects the method; None: nothing beyond the package.
    resolve_params : str or None
        A function, as ``"module:name"``, ``resolve_params(params, n_samples, n_features)``:
        the method's fixed parameters (completed with the class's defaults of its
        :attr:`solver_params`) as one cell's training data of that shape fits them, e.g. a solver
        ``"auto"`` replaced by the one chosen, so that every fold's fit and the final fit of a
        cell use one solver; None: the parameters as they are.
    label_params : tuple of (str, value, str)
        ``(parameter, value, words)``: where the method's parameter has that value, its label
        adds the words (MCC-ARD's ``("likelihood", "proper", "proper C'")``).
    defaults : tuple of (str, value)
        The class's defaults of its :attr:`solver_params`, read from its signature by
        :func:`kind_of` (so a kind read back from a store, :meth:`from_declared`, knows its
        solver without importing the class).
    """

    estimator: str
    label: str | None = None
    width_param: str | None = None
    penalty_name: str | None = None
    penalty_scale: str | None = None
    auto_width: bool = False
    path: str | None = None
    no_path_solvers: tuple[str, ...] = ()
    alo: bool = False
    solver_params: tuple[str, ...] = ()
    path_param: str | None = None
    bounds: tuple = ()
    width_unit: str = "y²"
    sparser_upwards: tuple[str, ...] = ()
    requires: str | None = None
    resolve_params: str | None = None
    label_params: tuple = ()
    defaults: tuple = ()

    @property
    def cls(self) -> type:
        return _load(self.estimator)

    def grid_names(self, grid: Mapping = ()) -> tuple[str, ...]:
        """The names of the CV grid ``grid``: the declared width first, the penalty second (each
        whether ``grid`` gives it or not), then ``grid``'s other names in its order."""
        declared = tuple(n for n in (self.width_param, self.penalty_name) if n is not None)
        return declared + tuple(n for n in grid if n not in declared)

    @property
    def version(self) -> str | None:
        """The ``__version__`` of the estimator's top package, None for this package's own
        estimators (the store's code fingerprint covers them) or a package without one."""
        top = self.estimator.partition(":")[0].split(".")[0]
        if top == __name__.split(".")[0]:
            return None
        return getattr(importlib.import_module(top), "__version__", None)

    @property
    def own_files(self) -> tuple[str, ...]:
        """The source files of the estimator class and of the functions it declares (penalty
        scale, path) that lie outside this package, e.g. a class of one's own folder (the
        store's fingerprint hashes this package's computing modules, and these per method)."""
        top = __name__.split(".")[0] + "."
        files = set()
        for obj in [self.cls] + [_load(ref) for ref in (self.penalty_scale, self.path) if ref]:
            if not obj.__module__.startswith(top):
                # none for a compiled class or one made without a file (exec, a notebook's
                # cell): its package's version stands for it
                try:
                    files.add(inspect.getsourcefile(obj))
                except (TypeError, OSError):
                    pass
        return tuple(sorted(f for f in files if f and os.path.isfile(f)))

    @property
    def penalty_is_ratio(self) -> bool:
        return self.penalty_name == "alpha_ratio"

    def param_names(self) -> dict[str, inspect.Parameter]:
        kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        return {name: p for name, p in inspect.signature(self.cls.__init__).parameters.items()
                if name != "self" and p.kind in kinds}

    def solver(self, params: Mapping) -> str | None:
        """The solver ``params`` select (the estimator's default when they do not say); None for
        an estimator with one solver."""
        if not self.solver_params:
            return None
        name = self.solver_params[0]
        if name in params:
            return params[name]
        defaults = dict(self.defaults)
        return defaults[name] if name in defaults else self.param_names()[name].default

    def label_for(self, params: Mapping, grid: Mapping) -> str | None:
        """The label of a method of this kind with ``params`` and the CV grid ``grid``: the
        class's :attr:`label`, the words of its :attr:`label_params` that ``params`` (or the
        class's defaults) match, and ``auto width`` for a width set inside the fit; None for a
        class without a label."""
        if self.label is None:
            return None
        values = {**dict(self.defaults), **params}
        words = [w for name, value, w in self.label_params if values.get(name) == value]
        if self.width_param is not None and grid.get(self.width_param) == AUTO_WIDTH:
            words.append("auto width")
        return ", ".join([self.label, *words])

    def declared(self) -> dict:
        """What the kind declares, as plain JSON values (a store records it, so that reading
        the store imports nothing: :meth:`from_declared`)."""
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_declared(cls, declared: Mapping) -> MethodKind:
        """The kind :meth:`declared` wrote (fields it does not know are left out: a store of a
        later version)."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: _tuples(v) if isinstance(v, list) else v
                      for k, v in declared.items() if k in known})

    def candidates(self, grid: Mapping) -> list[dict]:
        """The CV candidates, ``{name: value}`` for each combination of the grid's lists, the
        width varying slowest (none without a list: one fit per cell)."""
        listed = [n for n in self.grid_names(grid) if n in grid and not isinstance(grid[n], str)]
        if not listed:
            return []
        return [dict(zip(listed, values))
                for values in itertools.product(*(grid[n] for n in listed))]

    def build(self, params: Mapping, candidate: Mapping, X=None, y=None,
              cache: dict | None = None, sample_weight=None):
        """The estimator of ``candidate`` (a width ``"auto"`` when the grid says so) for the
        training data ``X, y`` (and ``sample_weight``), and its absolute ``alpha`` (None without
        a penalty). A ratio is scaled by ``penalty_scale`` as the estimator sees the data (its
        own ``fit_intercept``, the weights); ``cache`` keeps that scale per width across the
        penalties of one training set."""
        kwargs = dict(params)
        width = candidate.get(self.width_param, AUTO_WIDTH) if self.width_param else None
        if self.width_param:
            kwargs[self.width_param] = width if width == AUTO_WIDTH else float(width)
        for name, value in candidate.items():
            if name not in (self.width_param, self.penalty_name):
                kwargs[name] = value
        estimator = self.cls(**kwargs)
        alpha = None
        if self.penalty_name:
            alpha = float(candidate.get(self.penalty_name, 0.0))
            if self.penalty_is_ratio and alpha > 0 and X is not None:
                cache = {} if cache is None else cache
                if width not in cache:
                    fit_intercept = estimator.get_params().get("fit_intercept", True)
                    cache[width] = _load(self.penalty_scale)(X, y, width, fit_intercept,
                                                             sample_weight)
                alpha *= cache[width]
            estimator.set_params(alpha=alpha)
        return estimator, alpha

    def path_route(self, params: Mapping, grid: Mapping, route: str) -> str:
        """``route`` (``width``, ``penalty`` or ``none``) if the estimator can fit its candidates
        as paths that way with ``params``, else ``none``."""
        if (self.path is None or route not in ("width", "penalty")
                or self.path_name(route) is None
                or grid.get(self.width_param) == AUTO_WIDTH
                or (self.no_path_solvers and self.solver(params) in self.no_path_solvers)
                or (self.path_param is not None and not params.get(self.path_param, False))):
            return "none"
        return route

    def resolve(self, params: Mapping, n_samples: int, n_features: int) -> dict:
        """``params`` as the class's :attr:`resolve_params` hook settles them for training data
        of ``n_samples x n_features`` (unchanged without a hook)."""
        if self.resolve_params is None:
            return dict(params)
        return dict(_load(self.resolve_params)({**dict(self.defaults), **params}, n_samples,
                                               n_features))

    def path_name(self, route: str) -> str:
        """The grid name a path of ``route`` walks along, from its largest value."""
        return self.width_param if route == "width" else self.penalty_name

    def fit_members(self, params: Mapping, members, X, y, sample_weight=None,
                    cache: dict | None = None):
        """Fit the candidates ``members`` on ``X, y``, yielding the fitted estimator after each:
        one candidate from scratch, several as one warm-started path in their order
        (:attr:`path`; the estimator is one object, refitted, so copy what you keep). ``cache``
        keeps the penalty's scale per width for one training set (:meth:`build`)."""
        cache = {} if cache is None else cache
        built = [self.build(params, c, X, y, cache, sample_weight)[0] for c in members]
        if len(built) > 1:
            yield from _load(self.path)(built, X, y, sample_weight)
            return
        kw = {} if sample_weight is None else {"sample_weight": sample_weight}
        yield built[0].fit(X, y, **kw)


def _plain(value):
    """Tuples as lists, recursively: JSON's form."""
    return [_plain(v) for v in value] if isinstance(value, (tuple, list)) else value


def _tuples(value):
    """Lists as tuples, recursively: the dataclass's (hashable) form."""
    return tuple(_tuples(v) for v in value) if isinstance(value, (tuple, list)) else value


class NotAClass(TypeError):
    """An estimator path that imports, but names something other than a class (a factory
    function, an instance)."""


@functools.lru_cache(maxsize=None)
def kind_of(estimator: str) -> MethodKind:
    """The kind of the class ``estimator`` (``"module:Class"``), imported here, with what its
    ``mccard_method`` declares. Raises ImportError or AttributeError for a path that names
    nothing importable, :class:`NotAClass` for one that names no class, TypeError for a
    declaration that is not a mapping of known fields."""
    cls = _load(estimator)
    if not inspect.isclass(cls):
        raise NotAClass(f"{estimator} is a {type(cls).__name__}, not a class")
    declared = dict(getattr(cls, "mccard_method", None) or {})
    known = {f.name for f in fields(MethodKind)} - {"estimator", "defaults"}
    unknown = sorted(set(declared) - known)
    if unknown:
        raise TypeError(f"{estimator}.mccard_method declares {', '.join(unknown)}; it may declare "
                        f"{', '.join(sorted(known))}")
    for name in ("no_path_solvers", "solver_params", "bounds", "sparser_upwards",
                 "label_params"):
        declared[name] = _tuples(declared.get(name, ()))
    kind = MethodKind(estimator, **declared)
    signature = kind.param_names() if kind.solver_params else {}
    defaults = tuple((name, signature[name].default) for name in kind.solver_params
                     if name in signature and isinstance(signature[name].default,
                                                         (str, bool, int, float, type(None))))
    return MethodKind(estimator, **declared, defaults=defaults)


# -- where a CV choice lies on its grid: the rule of the pipeline's report and of MethodCV ------

#: grid names along which larger values give sparser models, whatever the estimator (a penalty as a
#: fraction of alpha_max); an estimator declares its own in ``sparser_upwards``
SPARSER_UPWARDS = ("alpha_ratio",)
#: relative change of the mean CV loss per decade below which the CV curve is flat at an edge
FLAT_PER_DECADE = 0.01


def grid_edge(kind: MethodKind | None, axis: str, grid, value: float,
              empty: bool | None = None, losses=None) -> str | None:
    """Where the CV's choice ``value`` lies on the grid ``grid`` (the values of ``axis``, three or
    more) of a method of ``kind`` (None: one that declares nothing): None inside it (or for a
    shorter grid); ``"low"`` or
    ``"high"`` at its smallest or largest value, where a wider grid might choose beyond it;
    ``"settled"`` at an edge no wider grid can change: the parameter's own bound
    (:attr:`MethodKind.bounds`), or the largest value of a grid along which models only get
    sparser (:data:`SPARSER_UPWARDS`, :attr:`MethodKind.sparser_upwards`) when the fit kept no
    feature (``empty``); ``"flat"`` at an edge
    where the mean CV loss differs from the next grid value's by less than
    :data:`FLAT_PER_DECADE` of it per decade (positive grids; ``losses(neighbour)``: the mean
    CV losses at the choice and at the grid value ``neighbour``, the other grid values as
    chosen, or None when unknown)."""
    steps = sorted({float(v) for v in grid})
    if len(grid) < 3 or len(steps) < 2 or not math.isfinite(value):
        return None
    if math.isclose(value, steps[0], rel_tol=1e-9):
        side, neighbour = "low", steps[1]
    elif math.isclose(value, steps[-1], rel_tol=1e-9):
        side, neighbour = "high", steps[-2]
    else:
        return None
    lowest, highest = next(((lo, hi) for name, lo, hi in (kind.bounds if kind else ())
                            if name == axis), (None, None))
    sparser = axis in SPARSER_UPWARDS or (kind is not None and axis in kind.sparser_upwards)
    if side == "low" and lowest is not None and steps[0] <= lowest:
        return "settled"
    if side == "high" and ((highest is not None and steps[-1] >= highest) or (sparser and empty)):
        return "settled"
    pair = losses(neighbour) if losses is not None and neighbour > 0 and value > 0 else None
    if pair is not None:
        mine, other = pair
        if abs(mine - other) <= FLAT_PER_DECADE * abs(other) * abs(math.log10(value / neighbour)):
            return "flat"
    return side
