"""What each registry estimator declares about its hyper-parameters.

A method in the config names one of these kinds (``estimator: mcc_l1``) and gives its CV grid,
keyed by the names the kind declares (:attr:`MethodKind.grid_names`: the estimator's own
parameter, such as Huber's ``epsilon``, or ``alpha_ratio`` for a penalty given as a fraction of
``alpha_max``). A kind has at most two names, a width (or other robustness scale) and a penalty;
a CV candidate is a mapping ``{name: value}``, and the kind says how it becomes estimator
parameters (``alpha = alpha_ratio * alpha_max``). The grid, the tasks and the runner ask the
method's kind and know no estimator by name; a new estimator is one entry in :data:`KINDS`.
"""

from __future__ import annotations

import importlib
import inspect
import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

__all__ = ["AUTO_WIDTH", "KINDS", "MethodKind"]

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
        ``penalty_scale(X, y, width)`` of the training data), or ``alpha`` itself; None: none.
    penalty_scale, path, width_path : str or None
        Functions, as ``"module:name"``: the penalty's scale (above); the fit of the penalties
        of one numeric width (``path(estimator, X, y, alphas)``), or the
        decreasing widths with their penalties (``width_path(estimator, X, y, widths, alphas)``),
        as warm-started paths yielding the estimator refitted at each step; not with
        ``no_path_solvers`` or an auto width.
    alo : bool
        The estimator gives approximate leave-one-out residuals (``cv=alo`` can score it).
    """

    estimator: str
    width_param: str | None = None
    penalty_name: str | None = None
    penalty_scale: str | None = None
    auto_width: bool = True
    path: str | None = None
    width_path: str | None = None
    no_path_solvers: tuple[str, ...] = ()
    alo: bool = True

    @property
    def cls(self) -> type:
        return _load(self.estimator)

    @property
    def grid_names(self) -> tuple[str, ...]:
        """The names of the CV grid, the width first."""
        return tuple(n for n in (self.width_param, self.penalty_name) if n is not None)

    @property
    def penalty_is_ratio(self) -> bool:
        return self.penalty_name == "alpha_ratio"

    def param_names(self) -> dict[str, inspect.Parameter]:
        kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        return {name: p for name, p in inspect.signature(self.cls.__init__).parameters.items()
                if name != "self" and p.kind in kinds}

    def candidates(self, grid: Mapping) -> list[dict]:
        """The CV candidates, ``{name: value}`` for each combination of the grid's lists, the
        width varying slowest (none without a list: one fit per cell)."""
        listed = [n for n in self.grid_names if not isinstance(grid.get(n), str)]
        if not listed:
            return []
        return [dict(zip(listed, values))
                for values in itertools.product(*(grid[n] for n in listed))]

    def build(self, params: Mapping, candidate: Mapping, X=None, y=None,
              cache: dict | None = None):
        """The estimator of ``candidate`` (a width ``"auto"`` when the grid says so) for the
        training data ``X, y``, and its absolute ``alpha`` (None without a penalty). ``cache``
        keeps ``penalty_scale`` per width across the penalties of one training set."""
        kwargs = dict(params)
        width = candidate.get(self.width_param, AUTO_WIDTH) if self.width_param else None
        if self.width_param:
            kwargs[self.width_param] = width if width == AUTO_WIDTH else float(width)
        alpha = None
        if self.penalty_name:
            alpha = float(candidate.get(self.penalty_name, 0.0))
            if self.penalty_is_ratio and alpha > 0 and X is not None:
                cache = {} if cache is None else cache
                if width not in cache:
                    cache[width] = _load(self.penalty_scale)(X, y, width)
                alpha *= cache[width]
            kwargs["alpha"] = alpha
        return self.cls(**kwargs), alpha

    def path_route(self, params: Mapping, grid: Mapping, route: str) -> str:
        """``route`` (``width``, ``penalty`` or ``none``) if the estimator can fit its candidates
        that way with ``params``, else ``none``."""
        able = {"width": self.width_path, "penalty": self.path}.get(route)
        if (able is None or grid.get(self.width_param) == AUTO_WIDTH
                or params.get("solver") in self.no_path_solvers):
            return "none"
        return route

    def path_name(self, route: str) -> str:
        """The grid name a path of ``route`` walks along, from its largest value."""
        return self.width_param if route == "width" else self.penalty_name

    def path_fits(self, params: Mapping, route: str, members, X, y, cache: dict | None = None):
        """Fit the candidates ``members`` (sharing all but the path's name) as one warm-started
        path from its largest value down; yields ``(position in members, fitted estimator,
        alpha)``. The estimator is one object, refitted at each step (copy what you keep)."""
        cache = {} if cache is None else cache
        built = [self.build(params, c, X, y, cache) for c in members]
        name = self.path_name(route)
        order = sorted(range(len(members)), key=lambda i: -members[i][name])
        first, alphas = built[order[0]][0], [built[i][1] for i in order]
        if route == "penalty":
            fits = _load(self.path)(first, X, y, alphas)
        else:
            fits = _load(self.width_path)(first, X, y, [members[i][name] for i in order],
                                          alphas)
        for i, fitted in zip(order, fits):
            yield i, fitted, built[i][1]


#: The fixed registry: ``methods.<name>.estimator`` must be one of these keys; no config key can
#: name an arbitrary class.
_M = "mccard_dist.models"
KINDS = MappingProxyType({
    "mcc_ard": MethodKind(f"{_M}:MCCARDRegressor", width_param="kernel_width"),
    "ls_ard": MethodKind(f"{_M}:LSARDRegressor"),
    "mcc_l1": MethodKind(f"{_M}:MCCL1Regressor", width_param="kernel_width",
                         penalty_name="alpha_ratio", penalty_scale=f"{_M}:mcc_l1_alpha_max",
                         path=f"{_M}.mcc_l1_path:iter_path",
                         width_path=f"{_M}.mcc_l1_path:iter_width_path",
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
})
