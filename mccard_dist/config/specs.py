"""The sections of the experiment's config but data and cluster (:mod:`.data`, :mod:`.cluster`):
the schema Hydra checks the config against, and the validated spec the rest of the package reads.
Fields typed ``Any`` take more than one form and are checked here."""

from __future__ import annotations

import difflib
import math
import numbers
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from ..methods import AUTO_WIDTH, ESTIMATOR_RE, kind_of
from ..stopping import StopRule
from .checks import (MISSING, NAME_RE, ConfigError, Sealed, duration, fail, freeze, integer,
                     known, one_of, present, real, real_list, text, to_plain, unique)
from .data import MIN_SAMPLES

CV_SCORES = ("mae", "medae", "rmse", "correntropy")
#: scikit-learn's scorer names for the same losses (the spec keeps the short name, so either
#: spelling gives the same grid hash and store)
CV_SCORE_ALIASES = {"neg_mean_absolute_error": "mae", "neg_median_absolute_error": "medae",
                    "neg_root_mean_squared_error": "rmse"}
CV_SCHEMES = ("kfold", "alo")
#: how K-fold CV fits the candidates of a method that fits warm-started paths (MCC-L1): one path
#: per L1 ratio over the kernel widths, widest first (``width``); one per width over the ratios,
#: largest first (``penalty``); every candidate alone (``none``)
CV_PATHS = ("width", "penalty", "none")
RUN_UNITS = ("auto", "cell", "fit")
#: ``run.unit=auto`` picks ``fit`` below this many cells per worker
FIT_UNIT_CELLS_PER_WORKER = 4
EXPERIMENT_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def _name(key: str, value) -> str:
    if not EXPERIMENT_NAME_RE.match(str(text(key, value))):
        fail(key, "must be usable in a file name (letters, digits, _ . -)", value)
    return value


def _seeds(key: str, value) -> range | tuple[int, ...]:
    """``{start, count}`` or a list of seeds, as a ``range`` where they are consecutive (either
    form: a spec and its ``to_dict`` give the same; a million seeds travel to a worker in a few
    bytes), else the tuple of seeds."""
    present(key, value)
    if isinstance(value, range):
        return value
    if isinstance(value, dict):
        known(value, key, ("start", "count"))
        if "count" not in value:
            raise ConfigError(f"{key}.count: missing mandatory value")
        start = integer(f"{key}.start", value.get("start", 0), 0)
        return range(start, start + integer(f"{key}.count", value["count"], 1))
    if isinstance(value, (list, tuple)):
        seeds = unique(key, tuple(integer(f"{key}[{i}]", s, 0) for i, s in enumerate(value)))
        consecutive = range(seeds[0], seeds[0] + len(seeds)) if seeds else None
        return consecutive if consecutive is not None and tuple(consecutive) == seeds else seeds
    fail(key, "must be {start, count} or a list of seeds", value)


def _metric_paths(key: str, value) -> tuple[str, ...]:
    """Import paths of metrics of one's own (``module:name``), none repeated."""
    paths = tuple(text(f"{key}[{i}]", v) for i, v in enumerate(value or ()))
    for i, path in enumerate(paths):
        if not ESTIMATOR_RE.match(path):
            fail(f"{key}[{i}]", "must be a metric's import path, module:name (a "
                                "mccard_dist.metrics.Metric of one's own module)", path)
    return unique(key, paths) if paths else ()


STOP_KEYS = ("min_seeds", "round", "precision", "claims", "level", "tuned_for")


def _per_metric(key: str, value) -> tuple[tuple[str, float], ...]:
    """``{metric: positive number}`` as pairs (metric names are checked against the metric table
    with the data, :meth:`ExperimentSpec.check_data`)."""
    if not isinstance(value, Mapping) or not value:
        fail(key, "must map metric names to positive numbers, e.g. {r: 0.002, f1: 0.02}", value)
    return tuple((str(name), real(f"{key}.{name}", v, low=0.0, low_open=True))
                 for name, v in value.items())


def _known_keys(section: Mapping, key: str, names) -> None:
    """:func:`known`, with a "did you mean" for a misspelt key."""
    for name in section:
        close = difflib.get_close_matches(str(name), names, n=1)
        if name not in names and close:
            fail(f"{key}.{name}", f"unknown key; did you mean {key}.{close[0]}? (known keys are "
                                  f"{', '.join(names)})", show_value=False)
    known(section, key, names)


def _stop(key: str, value) -> StopRule | None:
    """``experiment.stop``: a stop rule (:class:`mccard_dist.stopping.StopRule`), or None (every
    seed runs)."""
    if value is None or isinstance(value, StopRule):
        return value
    if not isinstance(value, Mapping):
        fail(key, "must be a mapping such as {min_seeds: 10, round: 10, precision: {f1: 0.02}}",
             value)
    _known_keys(value, key, STOP_KEYS)
    claims = value.get("claims") or {}
    if not isinstance(claims, Mapping):
        fail(f"{key}.claims", "must be a mapping {margin: {metric: margin}, against: method}",
             claims)
    _known_keys(claims, f"{key}.claims", ("margin", "against"))
    if claims and "margin" not in claims:
        raise ConfigError(f"{key}.claims.margin: missing; give the margin within which two "
                          "methods count as equivalent, per metric, e.g. {f1: 0.02}")
    rule = StopRule(
        min_seeds=integer(f"{key}.min_seeds", value.get("min_seeds", 10), 2),
        round=integer(f"{key}.round", value.get("round", 10), 1),
        precision=(_per_metric(f"{key}.precision", value["precision"])
                   if value.get("precision") is not None else ()),
        margin=_per_metric(f"{key}.claims.margin", claims["margin"]) if claims else (),
        against=text(f"{key}.claims.against", claims.get("against"), allow_none=True),
        level=real(f"{key}.level", value.get("level", 0.95), low=0.5, high=1.0, high_open=True),
        tuned_for=integer(f"{key}.tuned_for", value.get("tuned_for", 100), 2))
    if not rule.precision and not rule.margin:
        raise ConfigError(f"{key}: says nothing to stop on; give precision (e.g. {{f1: 0.02}}) "
                          "or claims.margin (e.g. {f1: 0.02}), or remove experiment.stop")
    return rule


@dataclass(unsafe_hash=True)
class ExperimentSection(Sealed):
    """The grid: the methods (by name, in order), tau, psi, and the seeds; the metrics of one's
    own computed beside the built-in ones (by import path), which change no cell's fits; and a
    stop rule (``stop``, :func:`_stop`), with which ``seeds`` is the budget of each (tau, psi)
    cell: neither is part of the grid's hash."""

    name: str = MISSING
    methods: list[str] = MISSING
    tau: list[float] = MISSING
    psi: list[float] = MISSING
    seeds: Any = MISSING
    metrics: list[str] = field(default_factory=list)
    stop: Any = None

    SECTION = "experiment"
    RULES = {"name": _name, "methods": lambda key, value: unique(key, tuple(value)),
             "tau": partial(real_list, low=0.0, low_open=True),
             "psi": partial(real_list, low=0.0, low_open=False, high=1.0), "seeds": _seeds,
             "metrics": _metric_paths, "stop": _stop}

    def check(self):
        against = self.stop.against if self.stop is not None else None
        if against is not None and against not in self.methods:
            close = difflib.get_close_matches(against, self.methods, n=1)
            fail("experiment.stop.claims.against", "must be one of experiment.methods ("
                 + ", ".join(self.methods) + ")"
                 + (f"; did you mean {close[0]!r}?" if close else ""), against)


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


def _margin(key: str, value) -> float | None:
    """An optional margin of cv (None: off), > 0."""
    if value is None:
        return None
    value = real(key, value)
    if not value > 0:
        fail(key, "must be > 0 (or null: off)", value)
    return value


def _score(key: str, value) -> str:
    score = CV_SCORE_ALIASES.get(value, value)
    if score not in CV_SCORES:
        fail(key, f"must be one of {', '.join(CV_SCORES)} (or scikit-learn's "
                  f"{', '.join(CV_SCORE_ALIASES)})", score)
    return score


@dataclass(unsafe_hash=True)
class CVSpec(Sealed):
    """Model selection. ``scheme``: ``kfold`` (``n_folds`` fits per candidate, then a refit on all
    the training data) or ``alo`` (one fit per candidate on all of it, scored on its approximate
    leave-one-out residuals; the chosen fit is the final fit). ``score``: the validation loss
    (lower is better; ``correntropy`` is ``1 - mean exp(-e^2 / 2 reference_width)``).
    ``race`` (kfold): after each fold but the last, a candidate whose mean loss so far exceeds
    ``(1 + race)`` times the lowest is not fitted on the remaining folds. ``path_stop`` (alo):
    along each width's penalties, the candidates after one scoring above ``(1 + path_stop)``
    times the best so far are not fitted. ``paths`` (kfold, one of :data:`CV_PATHS`): how a
    method that fits warm-started paths fits its candidates, and its final fit."""

    n_folds: int = MISSING
    score: str = MISSING
    reference_width: float = MISSING
    scheme: str = "kfold"
    path_stop: float | None = None
    race: float | None = None
    paths: str | None = None  # None: width with kfold, none with alo

    SECTION = "cv"
    RULES = {"scheme": partial(one_of, options=CV_SCHEMES), "score": _score,
             "n_folds": partial(integer, minimum=2),
             "reference_width": partial(real, low=0.0, low_open=True),
             "path_stop": _margin, "race": _margin}

    def check(self):
        self.paths = one_of("cv.paths", self.paths or ("width" if self.scheme == "kfold" else
                                                       "none"), CV_PATHS)
        if self.scheme != "kfold" and self.paths != "none":
            fail("cv.paths", "is only used with cv.scheme=kfold (set none)", self.paths)
        for name, needs in (("path_stop", "alo"), ("race", "kfold")):
            if getattr(self, name) is not None and self.scheme != needs:
                fail(f"cv.{name}", f"is only used with cv.scheme={needs}", getattr(self, name))

    @property
    def n_columns(self) -> int:
        """Columns of the ``cv_score`` record: ``n_folds`` (kfold) or 1 (alo)."""
        return 1 if self.scheme == "alo" else self.n_folds

    def check_rows(self, n_train: int, rows: str) -> None:
        """Refuse folds that leave a fit fewer than the samples it needs (``rows`` names the
        training rows for the message)."""
        if self.n_folds > n_train:
            fail("cv.n_folds", f"must be <= {rows}", self.n_folds)
        if n_train - math.ceil(n_train / self.n_folds) < MIN_SAMPLES:
            fail("cv.n_folds", f"leaves fewer than {MIN_SAMPLES} training samples per fold with "
                               f"{rows}", self.n_folds)


@dataclass(unsafe_hash=True)
class RunSpec(Sealed):
    """How the runner distributes and records the work (it does not change results).

    ``unit`` (one of :data:`RUN_UNITS`): what one Dask task does. ``cell``: a block of whole cells
    carrying about ``block_seconds`` of a worker's time (one cell until a block of the method
    has finished and said what a cell costs; 0: one cell each); ``fit``: one CV fit, the cell's
    choice and final fit following as one more task (K-fold CV without racing); ``auto``:
    ``fit`` when the cells to run are fewer than :data:`FIT_UNIT_CELLS_PER_WORKER` per worker
    and the CV allows it. ``blocks_per_worker`` bounds the tasks in flight either way.
    ``cell_timeout`` (a duration, None: off): a task that has run longer than that, plus twice
    what its cells were expected to take, is stopped (its worker restarted) and its cells tried
    one at a time; a cell that alone runs longer is recorded as failed.
    ``allow_mixed_versions``: resume a store whose cells were computed by other code or
    numerical libraries (refused otherwise, :mod:`mccard_dist.store.version`); the run record
    notes what differs."""

    block_seconds: float = MISSING
    blocks_per_worker: int = MISSING
    retries: int = MISSING
    save_coef: bool = MISSING
    retry_failed: bool = MISSING
    progress: bool = MISSING
    unit: str | None = "auto"
    allow_mixed_versions: bool = False
    cell_timeout: Any = None

    SECTION = "run"
    RULES = {"unit": partial(one_of, options=RUN_UNITS, default="auto"),
             "cell_timeout": partial(duration, minimum=1.0),
             "block_seconds": partial(real, low=0.0),
             "blocks_per_worker": partial(integer, minimum=1),
             "retries": partial(integer, minimum=0)}

    @property
    def cell_timeout_seconds(self) -> float | None:
        """``cell_timeout`` in seconds (None: off)."""
        from .checks import duration_seconds

        return None if self.cell_timeout is None else duration_seconds(self.cell_timeout)


@dataclass(unsafe_hash=True)
class StoreSpec(Sealed):
    """Where results go: ``path``, or (None) ``<root>/<experiment>-<grid hash>.zarr``.
    ``verify``: how an existing store is checked before a run resumes it (``quick`` reads every
    per-cell chunk and the headers of the others; ``full`` decompresses every chunk)."""

    root: str = MISSING
    path: str | None = None
    verify: str | None = "quick"

    SECTION = "store"
    RULES = {"root": text, "path": partial(text, allow_none=True),
             "verify": partial(one_of, options=("quick", "full"), default="quick")}
