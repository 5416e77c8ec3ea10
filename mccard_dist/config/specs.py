"""The sections of the experiment's config but data, cluster and methods (:mod:`.data`,
:mod:`.cluster`, :mod:`.method`): the schema Hydra checks the config against, and the validated
spec the rest of the package reads. Fields typed ``Any`` take more than one form and are checked
here."""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from ..intervals import GUARANTEES, NORMAL
from ..methods import ESTIMATOR_RE
from ..stopping import StopRule
from .checks import (MISSING, ConfigError, Sealed, duration, fail, integer, known, one_of, present,
                     real, real_list, text, unique)
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


STOP_KEYS = ("min_seeds", "round", "precision", "claims", "level", "guarantee", "fixed_seeds",
             "audit")


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
    if "tuned_for" in value:
        fail(f"{key}.tuned_for", "no longer a key: the anytime-valid t sequence needs no tuning; "
                                 "remove it", show_value=False)
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
        guarantee=one_of(f"{key}.guarantee", value.get("guarantee"), GUARANTEES, NORMAL),
        fixed_seeds=(integer(f"{key}.fixed_seeds", value["fixed_seeds"], 2)
                     if value.get("fixed_seeds") is not None else None),
        audit=real(f"{key}.audit", value.get("audit", 0.0), low=0.0, high=1.0))
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
        if self.stop is not None and self.stop.fixed_seeds is None:  # the budget it replaces
            self.stop = replace(self.stop, fixed_seeds=len(self.seeds))
        against = self.stop.against if self.stop is not None else None
        if against is not None and against not in self.methods:
            close = difflib.get_close_matches(against, self.methods, n=1)
            fail("experiment.stop.claims.against", "must be one of experiment.methods ("
                 + ", ".join(self.methods) + ")"
                 + (f"; did you mean {close[0]!r}?" if close else ""), against)


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
    notes what differs. ``plan``: say what the run would do (:mod:`mccard_dist.runner.plan`)
    and stop, with no cluster started and no store created."""

    block_seconds: float = MISSING
    blocks_per_worker: int = MISSING
    retries: int = MISSING
    save_coef: bool = MISSING
    retry_failed: bool = MISSING
    progress: bool = MISSING
    unit: str | None = "auto"
    allow_mixed_versions: bool = False
    cell_timeout: Any = None
    plan: bool = False

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
