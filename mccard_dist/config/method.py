"""One method's section of the experiment's config (``methods.<name>``): the estimator class by
import path, its fixed ``params``, its CV ``grid`` and its ``style`` in the report, each checked
against what the estimator declares (:func:`mccard_dist.methods.kind_of`)."""

from __future__ import annotations

import difflib
import numbers
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..methods import AUTO_WIDTH, ESTIMATOR_RE, NotAClass, kind_of
from .checks import (MISSING, NAME_RE, ConfigError, Sealed, fail, freeze, real, real_list,
                     to_plain, unique)


@dataclass(unsafe_hash=True)
class MethodSpec(Sealed):
    """One method: an estimator class by import path (``estimator: package.module:Class``, which
    :func:`mccard_dist.methods.kind_of` reads), its fixed ``params`` and its CV ``grid``: a list of
    values for each of the class's declared width and penalty and for any other constructor
    parameter (``{kernel_width: [...] or "auto", alpha_ratio: [...]}``). ``name`` is the method's
    key in the config; :class:`ExperimentSpec` sets it and checks the rest (:meth:`checked`)."""

    estimator: str = MISSING
    params: dict[str, Any] | None = field(default_factory=dict)
    grid: dict[str, Any] | None = field(default_factory=dict)
    name: str | None = None
    style: dict[str, Any] | None = None

    RULES = {**dict.fromkeys(("params", "grid"), lambda key, value: freeze(value or {})),
             "style": lambda key, value: None if value is None else freeze(value)}

    @property
    def kind(self):
        """What the estimator declares about its hyper-parameters (:mod:`mccard_dist.methods`)."""
        return kind_of(self.estimator)

    @property
    def grid_names(self) -> tuple[str, ...]:
        """The names of the CV grid, the declared width first and the penalty second."""
        return self.kind.grid_names(self.grid)

    @property
    def has_width(self) -> bool:
        return self.kind.width_param is not None

    @property
    def auto_width(self) -> bool:
        """Whether every fit sets its own width (``grid: {kernel_width: auto}``)."""
        return self.has_width and self.grid.get(self.kind.width_param) == AUTO_WIDTH

    @property
    def has_cv(self) -> bool:
        """Whether the method selects hyper-parameters by CV (its grid has a list)."""
        return any(isinstance(v, tuple) for v in self.grid.values())

    def checked(self, name: str) -> MethodSpec:
        """This method named ``name``, its estimator imported, its grid and params checked
        (values converted)."""
        key = f"methods.{name}"
        if not NAME_RE.match(name):
            fail(key, "method names must start with a letter and contain only letters, digits "
                      "and _", name)
        if self.name not in (None, name):
            fail(f"{key}.name", "is the method's key in the config; leave it unset", self.name)
        _kind(f"{key}.estimator", self.estimator)
        grid = _grid(key, self.kind, self.grid)
        return replace(self, name=name, grid=grid,
                       params=_params(f"{key}.params", self.kind, self.params, grid),
                       style=_style(f"{key}.style", self.style))

    def to_dict(self) -> dict:
        return {"estimator": self.estimator, "params": to_plain(self.params),
                "grid": to_plain(self.grid),
                **({"style": to_plain(self.style)} if self.style else {})}


#: the markers a method's ``style`` may name (matplotlib's; report.html draws the colour)
MARKERS = ("o", "s", "^", "v", "<", ">", "D", "d", "p", "h", "H", "8", "*", "P", "X", "x", "+",
           "1", "2", "3", "4")


def _style(key: str, value):
    """A method's colour and marker in the report's figures: ``{color: "#rrggbb", marker: one
    of MARKERS}`` (either may be left out), or None (spare ones). It changes no result, so it
    is no part of the grid description."""
    if value is None:
        return None
    if not isinstance(value, Mapping) or set(value) - {"color", "marker"}:
        fail(key, "must be a mapping of color (#rrggbb) and marker", to_plain(value))
    color, marker = value.get("color"), value.get("marker")
    if color is not None and not re.fullmatch(r"#[0-9a-fA-F]{6}", str(color)):
        fail(f"{key}.color", "must be a CSS hex colour, #rrggbb", color)
    if marker is not None and marker not in MARKERS:
        fail(f"{key}.marker", f"must be one of {' '.join(MARKERS)}", marker)
    return freeze(dict(value))


def _kind(key: str, estimator):
    """The kind of ``estimator``, or a one-line error naming what is wrong with the path."""
    if not isinstance(estimator, str) or not ESTIMATOR_RE.match(estimator):
        fail(key, "must name an estimator class by import path, package.module:Class (e.g. "
                  "mccard_dist.models:MCCARDRegressor)", estimator)
    try:
        kind = kind_of(estimator)
        kind.param_names()
    except NotAClass as exc:
        fail(key, f"{exc}: name an estimator class, with fit(X, y) and predict(X) (to use what a "
                  "function builds, wrap it in a class whose fit builds it and fits it)",
             estimator)
    except Exception as exc:  # noqa: BLE001 - any failure to import is the user's path or package
        said = str(exc).splitlines()[0] if str(exc) else ""
        fail(key, f"cannot be used ({type(exc).__name__}: {said}); check the path and that its "
                  "package is installed", estimator)
    if not callable(getattr(kind.cls, "fit", None)) or not callable(getattr(kind.cls, "predict",
                                                                               None)):
        fail(key, "is not a regressor: it needs fit(X, y) and predict(X)", estimator)
    return kind


def _grid(key: str, kind, grid) -> dict:
    """A method's grid checked against its kind: each name a declared width or penalty or a
    constructor parameter, each a non-empty list of numbers (widths > 0, penalties >= 0 and
    ratios < 1), the width ``auto`` where the kind sets it inside the fit."""
    declared = [n for n in (kind.width_param, kind.penalty_name) if n is not None]
    # a penalty given as a ratio sets alpha itself: alpha is no axis of its own then
    replaced = {"alpha"} if kind.penalty_name not in (None, "alpha") else set()
    accepted = declared + sorted(set(kind.param_names()) - replaced - set(declared))
    names = kind.grid_names(grid)
    estimator = kind.cls.__name__
    for name in grid:
        if name not in accepted:
            hint = difflib.get_close_matches(str(name), accepted, n=1)
            if name == "kernel_width" and kind.width_param:
                hint = [kind.width_param]  # the same axis under the estimator's own name
            fail(f"{key}.grid.{name}", f"is not a grid name of {estimator}, which takes "
                 f"{', '.join(accepted) or 'none'}"
                 + (f"; did you mean {key}.grid.{hint[0]}?" if hint else ""), show_value=False)
    out = {}
    for name in names:
        gkey, value = f"{key}.grid.{name}", grid.get(name)
        is_width = name == kind.width_param
        if value in (None, ()) or value == []:
            fail(gkey, f"must not be empty: {estimator} is selected by CV over "
                       f"{' x '.join(names)}" + (" (or set it to auto)" if is_width and
                                                 kind.auto_width else ""), value or [])
        if is_width and isinstance(value, str):
            if value != AUTO_WIDTH:
                fail(gkey, "must be a list of values > 0 or 'auto' (lower case)", value)
            if not kind.auto_width:
                fail(gkey, f"cannot be auto: {estimator} has no width set inside its fit; "
                           "give a list", value)
            out[name] = value
            continue
        if name not in (kind.width_param, kind.penalty_name):
            out[name] = _axis(gkey, value)
            continue
        out[name] = real_list(gkey, value, low=0.0, low_open=is_width)
        empty = [v for v in out[name] if v >= 1.0]
        if kind.penalty_is_ratio and name == kind.penalty_name and empty:
            fail(gkey, f"values must be < 1: {name} is a fraction of alpha_max, the smallest "
                       f"penalty that keeps no feature (bad value {empty[0]!r})", list(out[name]))
    return out


def _axis(key: str, value) -> tuple:
    """The values of a grid axis the class does not declare: a list of distinct numbers, whole
    numbers kept as integers (a tree's depth), so the estimator gets them as written."""
    if not isinstance(value, (list, tuple)):
        fail(key, "must be a list", value)
    out = []
    for i, v in enumerate(value):
        number = real(f"{key}[{i}]", v)
        out.append(int(v) if isinstance(v, numbers.Integral) and not isinstance(v, bool)
                   else number)
    return unique(key, tuple(out))


def _params(key: str, kind, params, grid) -> dict:
    """``params`` checked as the estimator checks them (an integer given for a float parameter
    becomes a float); the grid's parameters are refused here."""
    accepted = kind.param_names()
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        fail(key, f"{', '.join(unknown)} not accepted by {kind.cls.__name__}; accepted: "
                  f"{', '.join(accepted)}", dict(params))
    from_grid = sorted(set(params) & {*kind.grid_names(grid),
                                      *("alpha",) * bool(kind.penalty_name)})
    if from_grid:
        fail(key, f"{', '.join(from_grid)} must not be set here: it comes from the CV grid "
                  f"({key.rsplit('.', 1)[0]}.grid)", dict(params))
    out = {}
    for name, value in params.items():
        if not (value is None or isinstance(value, (str, bool, numbers.Real))):
            fail(f"{key}.{name}", "must be a number, string, boolean or null", value)
        if isinstance(accepted[name].default, float) and isinstance(
                value, numbers.Integral) and not isinstance(value, bool):
            value = float(value)
        out[str(name)] = value
    for candidate in kind.candidates(grid) or [{}]:  # the estimator's own check of each
        try:
            estimator, _ = kind.build(out, candidate)
            if hasattr(estimator, "_parameter_constraints"):  # scikit-learn's own check
                estimator._validate_params()
        except (TypeError, ValueError) as exc:
            axis = next((n for n in candidate if f"'{n}'" in str(exc)), None)
            where = key if axis is None else f"{key.rsplit('.', 1)[0]}.grid.{axis}"
            raise ConfigError(f"{where}: {exc}") from None
    return out
