"""What each registry estimator declares about its hyper-parameters.

A method in the config names one of these kinds (``estimator: mcc_l1``) and gives its CV grid,
keyed by the names the kind declares (:attr:`MethodKind.grid_names`: the estimator's own
parameter, such as Huber's ``epsilon``, or ``alpha_ratio`` for a penalty given as a fraction of
``alpha_max``). A kind has at most two axes, a width (or other robustness scale) and a penalty;
its CV candidates are ``(width, penalty)`` pairs, and the kind says how a candidate becomes
estimator parameters (``alpha = alpha_ratio * alpha_max``). The grid, the tasks and
the runner ask the method's kind and know no estimator by name; a new estimator is one entry in
:data:`KINDS`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from .models import (
    AUTO_WIDTH,
    AuthorsLSARDRegressor,
    AuthorsMCCARDRegressor,
    HuberBaseline,
    LassoBaseline,
    LSARDRegressor,
    MCCARDRegressor,
    MCCL1Regressor,
    lasso_alpha_max,
    mcc_l1_alpha_max,
)
from .models.mcc_l1_path import iter_path, iter_width_path

__all__ = ["AUTO_H", "KINDS", "PATH_AXIS", "MethodKind", "with_grid"]

#: The ``h`` of the candidates of a method whose fits set their own width (``kernel_width: auto``),
#: in the CV candidates and the store's ``h`` coordinate (real widths are > 0).
AUTO_H = 0.0


#: The position in a candidate ``(h, ratio)`` along which each path route walks (largest first);
#: the candidates of one path share the other position.
PATH_AXIS = MappingProxyType({"width": 0, "penalty": 1})


@dataclass(frozen=True)
class MethodKind:
    """An estimator class and its hyper-parameters.

    ``kernel_width``: it has a kernel width (or another robustness scale, the estimator parameter
    ``width_param``), chosen by CV over the grid of that name, or set inside each fit
    (``"auto"``) where ``auto_width``. ``penalty_scale``: it has a penalty ``alpha``, chosen by CV
    over the grid ``penalty_name``, fractions of ``penalty_scale(X, y, width)`` of the training
    data: ``alpha_ratio``, or ``alpha`` for the penalty itself (a scale of 1); None: no penalty.
    ``path``: fits the penalties of one numeric width as a warm-started path, ``path(estimator,
    X, y, alphas)`` yielding the estimator fitted at each of the decreasing ``alphas``;
    ``width_path(estimator, X, y, widths, alphas)`` likewise over decreasing widths, each with
    its penalty (None: one fit per candidate). Not used with ``no_path_solvers`` or an auto width.
    ``alo``: the estimator gives approximate leave-one-out residuals (``loo_residuals``), so
    ``cv=alo`` can score its candidates; the config refuses ``cv=alo`` for the others.
    """

    cls: type
    kernel_width: bool
    penalty_scale: Callable | None = None
    width_param: str = "kernel_width"
    penalty_name: str = "alpha_ratio"
    auto_width: bool = True
    path: Callable | None = None
    width_path: Callable | None = None
    no_path_solvers: tuple[str, ...] = ()
    alo: bool = True

    @property
    def alpha(self) -> bool:
        """Whether the estimator has a penalty ``alpha``."""
        return self.penalty_scale is not None

    @property
    def grid_names(self) -> dict[str, str]:
        """The names of the CV grid's axes, ``{name: "width" | "penalty"}`` (width first)."""
        names = {self.width_param: "width"} if self.kernel_width else {}
        if self.alpha:
            names[self.penalty_name] = "penalty"
        return names

    def candidates(self, kernel_width, alpha_ratio, auto_width) -> list[tuple[float, float]]:
        """The CV candidates ``(h, ratio)``, h varying slowest; ratio 0.0 without a penalty.

        No grid (LS-ARD), or an auto width without a penalty: no candidates, one fit per cell.
        An auto width, or no width at all, with a penalty: ``(AUTO_H, ratio)`` for each ratio.
        """
        if auto_width or not self.kernel_width:
            return [(AUTO_H, float(r)) for r in alpha_ratio]
        ratios = alpha_ratio or (0.0,)
        return [(float(h), float(r)) for h, r in itertools.product(kernel_width, ratios)]

    def build(self, params: Mapping, h: float, ratio: float, auto_width: bool, X, y,
              cache: dict | None = None):
        """The estimator of candidate ``(h, ratio)`` for the training data ``X, y``, and its
        absolute ``alpha`` (None without a penalty). ``cache`` keeps ``penalty_scale`` per
        width across the ratios of one training set."""
        kwargs = dict(params)
        width = None
        if self.kernel_width:
            width = AUTO_WIDTH if auto_width else float(h)
            kwargs[self.width_param] = width
        alpha = None
        if self.alpha:
            alpha = 0.0
            if ratio > 0:
                cache = {} if cache is None else cache
                if h not in cache:
                    cache[h] = self.penalty_scale(X, y, width)
                alpha = ratio * cache[h]
            kwargs["alpha"] = float(alpha)
        return self.cls(**kwargs), alpha

    def path_route(self, params: Mapping, auto_width: bool, route: str) -> str:
        """``route`` (``width``, ``penalty`` or ``none``) if this estimator can fit its
        candidates that way with ``params``, else ``none``."""
        able = {"width": self.width_path, "penalty": self.path}.get(route)
        if able is None or auto_width or params.get("solver") in self.no_path_solvers:
            return "none"
        return route

    def path_fits(self, params: Mapping, route: str, members, X, y, cache: dict | None = None):
        """Fit the candidates ``members`` (``(h, ratio)`` pairs sharing the width for route
        ``penalty``, the ratio for route ``width``) as one warm-started path, from the largest
        ratio (or width) down; yields ``(position in members, fitted estimator, alpha)``. The
        estimator is the same object, refitted at each step (copy what you keep)."""
        cache = {} if cache is None else cache
        built = [self.build(params, h, r, False, X, y, cache) for h, r in members]
        axis = PATH_AXIS[route]
        order = sorted(range(len(members)), key=lambda i: -members[i][axis])
        first = built[order[0]][0]
        alphas = [built[i][1] for i in order]
        if route == "penalty":
            fits = self.path(first, X, y, alphas)
        else:
            fits = self.width_path(first, X, y, [members[i][0] for i in order], alphas)
        for i, fitted in zip(order, fits):
            yield i, fitted, built[i][1]


#: The fixed registry: ``methods.<name>.estimator`` must be one of these keys; no config key can
#: name an arbitrary class.
KINDS = MappingProxyType({
    "mcc_ard": MethodKind(MCCARDRegressor, kernel_width=True),
    "ls_ard": MethodKind(LSARDRegressor, kernel_width=False),
    "mcc_l1": MethodKind(MCCL1Regressor, kernel_width=True, penalty_scale=mcc_l1_alpha_max,
                         path=iter_path, width_path=iter_width_path,
                         no_path_solvers=("em",)),
    # the authors' algorithm as published: no leave-one-out residuals
    "mcc_ard_authors": MethodKind(AuthorsMCCARDRegressor, kernel_width=True, alo=False),
    "ls_ard_authors": MethodKind(AuthorsLSARDRegressor, kernel_width=False, alo=False),
    # peer baselines (scikit-learn): the Lasso's alpha as a fraction of its alpha_max; Huber's
    # threshold epsilon and its L2 alpha, both under their own names
    "lasso": MethodKind(LassoBaseline, kernel_width=False, penalty_scale=lasso_alpha_max,
                        alo=False),
    "huber": MethodKind(HuberBaseline, kernel_width=True, penalty_scale=lambda X, y, w: 1.0,
                        width_param="epsilon", penalty_name="alpha", auto_width=False, alo=False),
})


#: where configs written before ``grid`` kept a method's width and penalty axes
OLD_AXIS_KEYS = MappingProxyType({"kernel_width": "width", "alpha_ratio": "penalty"})


def with_grid(config):
    """A method's stored config with its CV grid under ``grid``, keyed by its kind's names.

    Configs written before ``grid`` (stores made then) kept the width axis under
    ``kernel_width`` and the penalty axis under ``alpha_ratio``, whatever the estimator calls
    them (Huber's epsilon and alpha); they are moved to the kind's names. Anything else is
    returned as it is."""
    if not isinstance(config, Mapping) or "grid" in config:
        return config
    kind = KINDS.get(config.get("estimator"))
    if kind is None:
        return config
    out = {k: v for k, v in config.items() if k not in OLD_AXIS_KEYS}
    axes = {axis: config.get(key) for key, axis in OLD_AXIS_KEYS.items()}
    out["grid"] = {name: axes[axis] for name, axis in kind.grid_names.items()
                   if axes[axis] not in (None, [])}
    return out
