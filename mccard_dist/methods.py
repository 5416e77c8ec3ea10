"""What each registry estimator declares about its hyper-parameters.

A method in the config names one of these kinds (``estimator: mcc_l1``) and gives its CV grid,
keyed by the kind's :attr:`MethodKind.grid_names` (a width, a penalty and the estimator's other
tuned parameters); a CV candidate
is a mapping ``{name: value}`` that the kind turns into estimator parameters. The rest of the
package asks the method's kind and knows no estimator by name: a new estimator is one entry in
:data:`KINDS`.
"""

from __future__ import annotations

import importlib
import inspect
import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["AUTO_WIDTH", "BOUNDS", "FLAT_PER_DECADE", "KINDS", "SPARSER_UPWARDS", "MethodKind",
           "grid_edge"]

#: a width grid that is this string: each fit sets its own width (``models._width.AUTO``, which
#: this room does not import: the command line reads the registry without scikit-learn)
AUTO_WIDTH = "auto"


def _load(ref: str | None):
    """The object ``"module:name"`` names, imported on first use (None for None)."""
    if ref is None:
        return None
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)

@dataclass(frozen=True)
class MethodKind:
    """An estimator class and its hyper-parameters.

    Attributes
    ----------
    estimator : str
        The estimator class, as ``"module:Class"`` (:attr:`cls`: the class, imported on first
        use).
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
        refitted at each step; not with ``no_path_solvers`` or an auto width.
    alo : bool
        The estimator gives approximate leave-one-out residuals (``cv=alo`` can score it).
    solver_params : tuple of str
        Its parameters that only select (``solver``, first) or tune a solver: two methods that
        differ only in these fit the same model (the solver comparisons pair them).
    path_param : str or None
        The boolean parameter that must be true for :attr:`path` to be used (the estimator's
        ``warm_start``); None: paths whenever ``cv.paths`` asks.
    other_grid : tuple of str
        Further grid axes, each passed to the estimator under its own name (MCP's ``gamma``).
    requires : str or None
        A module the estimator needs that the package does not install (an optional extra's),
        checked when an experiment selects the method; None: nothing beyond the package.
    """

    estimator: str
    width_param: str | None = None
    penalty_name: str | None = None
    penalty_scale: str | None = None
    auto_width: bool = True
    path: str | None = None
    no_path_solvers: tuple[str, ...] = ()
    alo: bool = True
    solver_params: tuple[str, ...] = ()
    path_param: str | None = None
    other_grid: tuple[str, ...] = ()
    requires: str | None = None

    @property
    def cls(self) -> type:
        return _load(self.estimator)

    @property
    def grid_names(self) -> tuple[str, ...]:
        """The names of the CV grid, the width first, the penalty second."""
        return tuple(n for n in (self.width_param, self.penalty_name, *self.other_grid)
                     if n is not None)

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
        return params.get(name, self.param_names()[name].default)

    def candidates(self, grid: Mapping) -> list[dict]:
        """The CV candidates, ``{name: value}`` for each combination of the grid's lists, the
        width varying slowest (none without a list: one fit per cell)."""
        listed = [n for n in self.grid_names if not isinstance(grid.get(n), str)]
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
        for name in self.other_grid:
            if name in candidate:
                kwargs[name] = float(candidate[name])
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
                or params.get("solver") in self.no_path_solvers
                or (self.path_param is not None and not params.get(self.path_param, False))):
            return "none"
        return route

    def resolve_solver(self, params: Mapping, n_samples: int, n_features: int) -> dict:
        """``params`` with a solver ``"auto"`` (said, or the estimator's default) replaced by the
        one the training data's shape calls for, so that every fold's fit and the final fit of a
        cell use one solver."""
        if self.solver(params) != "auto":
            return dict(params)
        from .models import resolve_solver
        solver = resolve_solver("auto", n_samples, n_features, params.get("curvature", "fisher"))
        return {**params, self.solver_params[0]: solver}

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


#: The fixed registry: ``methods.<name>.estimator`` must be one of these keys; no config key can
#: name an arbitrary class.
_M = "mccard_dist.models"
KINDS = MappingProxyType({
    # warm_start: one warm-started path over the widths per fold, widest first (cv.paths=width)
    "mcc_ard": MethodKind(f"{_M}:MCCARDRegressor", width_param="kernel_width",
                          path=f"{_M}.mcc_ard:fit_width_path", path_param="warm_start",
                          solver_params=("solver", "warm_start", "w_steps", "init", "form")),
    "ls_ard": MethodKind(f"{_M}:LSARDRegressor", solver_params=("solver", "form")),
    "mcc_l1": MethodKind(f"{_M}:MCCL1Regressor", width_param="kernel_width",
                         penalty_name="alpha_ratio", penalty_scale=f"{_M}:mcc_l1_alpha_max",
                         path=f"{_M}.mcc_l1_path:fit_path",
                         no_path_solvers=("em",)),
    # the authors' algorithm as published: no leave-one-out residuals
    "mcc_ard_authors": MethodKind(f"{_M}:AuthorsMCCARDRegressor", width_param="kernel_width",
                                  alo=False),
    "ls_ard_authors": MethodKind(f"{_M}:AuthorsLSARDRegressor", alo=False),
    # peer baselines (scikit-learn): the Lasso's alpha as a fraction of its alpha_max; Huber's
    # threshold epsilon and its L2 alpha, both under their own names
    "lasso": MethodKind(f"{_M}:LassoBaseline", penalty_name="alpha_ratio",
                        penalty_scale=f"{_M}:lasso_alpha_max", alo=False),
    "huber": MethodKind(f"{_M}:HuberBaseline", width_param="epsilon", penalty_name="alpha",
                        auto_width=False, alo=False),
    # the robust sparse peers: Huber's threshold epsilon (in units of the targets' normalised
    # MAD) and the penalty as a fraction of alpha_max at that epsilon; MCP's concavity gamma
    "huber_l1": MethodKind(f"{_M}:HuberL1Regressor", width_param="epsilon",
                           penalty_name="alpha_ratio", penalty_scale=f"{_M}:huber_alpha_max",
                           auto_width=False, alo=False, requires="skglm"),
    "huber_mcp": MethodKind(f"{_M}:HuberMCPRegressor", width_param="epsilon",
                            penalty_name="alpha_ratio", penalty_scale=f"{_M}:huber_alpha_max",
                            other_grid=("gamma",), auto_width=False, alo=False,
                            requires="skglm"),
    "lad_lasso": MethodKind(f"{_M}:LADLassoRegressor", penalty_name="alpha_ratio",
                            penalty_scale=f"{_M}:lad_alpha_max", alo=False),
})


# -- where a CV choice lies on its grid: the rule of the pipeline's report and of MethodCV ------

#: ``{(estimator, grid name): (lowest, highest)}``: the values a parameter can take (None: no bound)
BOUNDS = {("huber", "epsilon"): (1.0, None)}
#: (estimator or None for any, grid name) along which larger values give sparser models
SPARSER_UPWARDS = {(None, "alpha_ratio"), ("mcc_ard", "kernel_width")}
#: relative change of the mean CV loss per decade below which the CV curve is flat at an edge
FLAT_PER_DECADE = 0.01


def grid_edge(estimator: str | None, axis: str, grid, value: float, empty: bool | None = None,
              losses=None) -> str | None:
    """Where the CV's choice ``value`` lies on the grid ``grid`` (the values of ``axis``, three or
    more) of a method of ``estimator``: None inside it (or for a shorter grid); ``"low"`` or
    ``"high"`` at its smallest or largest value, where a wider grid might choose beyond it;
    ``"settled"`` at an edge no wider grid can change: the parameter's own bound
    (:data:`BOUNDS`), or the largest value of a grid along which models only get sparser
    (:data:`SPARSER_UPWARDS`) when the fit kept no feature (``empty``); ``"flat"`` at an edge
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
    lowest, highest = BOUNDS.get((estimator, axis), (None, None))
    sparser = {(None, axis), (estimator, axis)} & SPARSER_UPWARDS
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
