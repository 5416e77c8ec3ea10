"""Typed, validated experiment configuration.

The Hydra config (``conf/``) is composed by the CLI, resolved to plain Python in the driver and turned
into an :class:`ExperimentSpec` here; nothing below this module sees a Hydra type. Every bad value is
refused with a :class:`ConfigError` whose message starts with the config key (``experiment.psi: ...``),
before any cluster starts.

Layout of the (resolved) config that :func:`spec_from_dict` reads; other top-level keys (``hydra``, keys
added by the CLI) are ignored::

    experiment: {name, methods: [names], tau: [..], psi: [..], seeds: {start, count} | [ints]}
    methods:    {<name>: {estimator, params: {..}, kernel_width: [..], alpha_ratio: [..]}, ...}
    data:       {n_train, n_test, n_features, n_relevant, noise_var}
    cv:         {scheme, n_folds, score, reference_width, path_stop, race}
    run:        {fits_per_block, blocks_per_worker, retries, save_coef, retry_failed, progress}
    store:      {root, path}
    cluster:    {kind, n_workers, threads_per_worker, memory_limit, host, dashboard_address, address,
                 scheduler_file, cores, processes, memory, walltime, queue, account, interface,
                 log_directory, job_extra_directives, job_script_prologue, resource_spec, n_jobs,
                 adaptive: {minimum, maximum} | null, worker_lifetime, lifetime_stagger, python,
                 options}   (each kind reads its own fields; the others must be unset)

:meth:`ExperimentSpec.to_dict` returns the same layout (with only the selected methods and the seeds as
an explicit list), as plain JSON-able Python: it is what goes to a store attribute and to Dask workers,
and ``spec_from_dict(spec.to_dict()) == spec``.

Estimators come from the fixed registry :data:`ESTIMATORS`; no config key can name an arbitrary class.
"""

from __future__ import annotations

import inspect
import math
import numbers
import os
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import MappingProxyType

from .data import PaperData, make_paper_data
from .models import AUTO_WIDTH, LSARDRegressor, MCCARDRegressor, MCCL1Regressor

__all__ = [
    "CLUSTER_KINDS",
    "CV_SCHEMES",
    "CV_SCORES",
    "ESTIMATORS",
    "AdaptiveSpec",
    "CVSpec",
    "ClusterSpec",
    "ConfigError",
    "DataSpec",
    "ExperimentSpec",
    "FrozenMap",
    "MethodSpec",
    "RunSpec",
    "StoreSpec",
    "CONFIG_DIR",
    "from_dictconfig",
    "spec_from_dict",
    "to_plain",
]

#: The fixed estimator registry: ``methods.<name>.estimator`` must be one of these keys.
ESTIMATORS = MappingProxyType(
    {"mcc_ard": MCCARDRegressor, "ls_ard": LSARDRegressor, "mcc_l1": MCCL1Regressor}
)

#: CV validation losses (lower is better). ``correntropy`` is ``1 - mean exp(-e^2 / 2 reference_width)``.
CV_SCORES = ("mae", "medae", "rmse", "correntropy")
CV_SCHEMES = ("kfold", "alo")

#: Cluster backends (``slurm`` and ``pbs`` through dask-jobqueue, see :class:`ClusterSpec`).
CLUSTER_KINDS = ("local", "address", "scheduler_file", "slurm", "pbs")

#: the config directory: $MCCARD_CONFIG_DIR, else conf/ next to the package (source checkout)
CONFIG_DIR = Path(os.environ.get("MCCARD_CONFIG_DIR",
                                 Path(__file__).resolve().parent.parent / "conf"))

_MISSING = "???"  # OmegaConf's mandatory-value marker, left as a string by to_container
_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_EXPERIMENT_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class ConfigError(ValueError):
    """A configuration value is missing or invalid; the message starts with the config key."""


class FrozenMap(Mapping):
    """A read-only, hashable, picklable mapping (used for estimator params and cluster options)."""

    def __init__(self, data=()):
        self._data = dict(data)

    def __getitem__(self, key):
        return self._data[key]

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)

    def __hash__(self):
        return hash(frozenset(self._data.items()))

    def __repr__(self):
        return f"FrozenMap({self._data!r})"


# -- small checkers: each returns the converted value or raises ConfigError naming the key -----------
def _fail(key: str, problem: str, value=None, show_value: bool = True):
    suffix = f", got {value!r}" if show_value else ""
    raise ConfigError(f"{key}: {problem}{suffix}")


def _section(d, key: str) -> Mapping:
    if key not in d:
        raise ConfigError(f"{key}: missing config section")
    value = d[key]
    if not isinstance(value, Mapping):
        _fail(key, "must be a mapping", value)
    return value


def _get(section: Mapping, key: str, name: str, default=inspect.Parameter.empty):
    """``section[name]``; missing (absent or Hydra's ``???``) is an error unless a default is given."""
    value = section.get(name, default)
    if value is inspect.Parameter.empty or (isinstance(value, str) and value == _MISSING):
        raise ConfigError(f"{key}.{name}: missing mandatory value")
    return value


def _check_known(section: Mapping, key: str, known, hint: str = ""):
    unknown = sorted(set(section) - set(known))
    if unknown:
        names = ", ".join(f"{key}.{u}" for u in unknown)
        raise ConfigError(
            f"{names}: unknown key(s); known keys are {', '.join(known)}{hint}"
        )


def _as_int(key: str, value, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        _fail(key, "must be an integer", value)
    if minimum is not None and value < minimum:
        _fail(key, f"must be >= {minimum}", value)
    return int(value)


def _as_float(key: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        _fail(key, "must be a real number", value)
    value = float(value)
    if not math.isfinite(value):
        _fail(key, "must be finite", value)
    return value


def _as_bool(key: str, value) -> bool:
    if not isinstance(value, bool):
        _fail(key, "must be true or false", value)
    return value


def _as_str(key: str, value, allow_none: bool = False) -> str | None:
    if value is None and allow_none:
        return None
    if not isinstance(value, str) or not value:
        _fail(key, "must be a non-empty string", value)
    return value


def _as_list(key: str, value) -> list:
    if not isinstance(value, (list, tuple)):
        _fail(key, "must be a list", value)
    return list(value)


def _float_list(key: str, value, *, low: float, low_open: bool, high: float | None = None,
                allow_empty: bool) -> tuple[float, ...]:
    values = tuple(_as_float(f"{key}[{i}]", v) for i, v in enumerate(_as_list(key, value)))
    if not values and not allow_empty:
        _fail(key, "must not be empty", list(values))
    for v in values:
        if v < low or (low_open and v == low) or (high is not None and v > high):
            if high is not None:
                problem = f"values must be in [{low:g}, {high:g}]"
            else:
                problem = f"values must be {'>' if low_open else '>='} {low:g}"
            _fail(key, problem + f" (bad value {v!r})", list(values))
    _check_unique(key, values)
    return values


def _check_unique(key: str, values) -> None:
    seen, dupes = set(), []
    for v in values:
        if v in seen and v not in dupes:
            dupes.append(v)
        seen.add(v)
    if dupes:
        _fail(key, f"duplicate values {dupes}", list(values))


# -- the spec dataclasses --------------------------------------------------------------------------
@dataclass(frozen=True)
class DataSpec:
    """Size and noise of the paper's synthetic problem (:func:`mccard_dist.make_paper_data`)."""

    n_train: int
    n_test: int
    n_features: int
    n_relevant: int
    noise_var: float

    def make_data(self, seed: int, psi: float, tau: float) -> PaperData:
        """The dataset of one cell: a pure function of ``(seed, psi, tau)`` and this spec."""
        return make_paper_data(seed, psi, tau, **asdict(self))


@dataclass(frozen=True)
class CVSpec:
    """Model selection: scheme (one of :data:`CV_SCHEMES`), number of folds, validation loss (one of
    :data:`CV_SCORES`), correntropy width.

    ``scheme="kfold"``: K-fold CV (``n_folds`` fits per candidate, then a refit on all the training
    data). ``scheme="alo"``: one fit per candidate on all the training data, scored on its
    approximate leave-one-out residuals (``loo_residuals`` of the estimators); the chosen
    candidate's fit is the final fit and ``n_folds`` is not used.

    ``path_stop`` (alo only, ``None``: off): along each kernel width's path of L1 penalties,
    largest penalty first, the candidates after one whose score exceeds ``(1 + path_stop)`` times
    the best score so far on that path are not fitted (their score stays NaN).

    ``race`` (kfold only, ``None``: off): after each fold but the last, a candidate whose mean
    validation loss so far exceeds ``(1 + race)`` times the lowest one among the candidates still
    in the race is not fitted on the remaining folds (its later scores stay NaN, so it cannot be
    chosen). The candidates that finish have exactly their plain K-fold scores.
    """

    n_folds: int
    score: str
    reference_width: float
    scheme: str = "kfold"
    path_stop: float | None = None
    race: float | None = None

    @property
    def n_columns(self) -> int:
        """Columns of the ``cv_score`` record: ``n_folds`` (kfold) or 1 (alo)."""
        return 1 if self.scheme == "alo" else self.n_folds


@dataclass(frozen=True)
class MethodSpec:
    """One method: a registry estimator, its fixed params and its CV grid.

    ``kernel_width`` is the grid of h (empty for estimators without one, e.g. LS-ARD, and for
    ``auto_width``); ``alpha_ratio`` the grid of L1 penalties as fractions of ``alpha_max`` (empty
    for the ARD estimators, which have no L1 penalty). ``auto_width`` (config
    ``kernel_width: auto``): every fit sets its own width (``kernel_width="auto"``), so there is
    no CV over h.
    """

    name: str
    estimator: str
    params: Mapping = field(default_factory=FrozenMap)
    kernel_width: tuple[float, ...] = ()
    alpha_ratio: tuple[float, ...] = ()
    auto_width: bool = False

    @property
    def estimator_class(self) -> type:
        return ESTIMATORS[self.estimator]

    @property
    def takes_kernel_width(self) -> bool:
        """Whether the estimator has a ``kernel_width`` parameter (set from the CV grid)."""
        return "kernel_width" in _init_parameters(self.estimator_class)

    @property
    def takes_alpha(self) -> bool:
        """Whether the estimator has an ``alpha`` (L1) parameter (set from ``alpha_ratio``)."""
        return "alpha" in _init_parameters(self.estimator_class)

    @property
    def has_cv(self) -> bool:
        """Whether the method selects hyper-parameters by CV (it has a non-empty grid)."""
        return bool(self.kernel_width or self.alpha_ratio)

    def make_estimator(self, kernel_width: float | str | None = None,
                       alpha: float | None = None):
        """A new, unfitted estimator with ``params`` plus ``kernel_width`` / ``alpha``.

        ``kernel_width`` (a number, or ``"auto"``) is required exactly when the estimator takes
        one, likewise ``alpha`` (the absolute penalty, i.e. ``alpha_ratio * alpha_max`` of the
        training data).
        """
        kwargs = dict(self.params)
        for pname, value, takes in (("kernel_width", kernel_width, self.takes_kernel_width),
                                    ("alpha", alpha, self.takes_alpha)):
            if takes and value is None:
                raise ValueError(f"method {self.name!r} ({self.estimator}) needs {pname}")
            if not takes and value is not None:
                raise ValueError(f"method {self.name!r} ({self.estimator}) takes no {pname}")
            if takes:
                kwargs[pname] = value if value == AUTO_WIDTH else float(value)
        return self.estimator_class(**kwargs)

    def to_dict(self) -> dict:
        return {
            "estimator": self.estimator,
            "params": dict(self.params),
            "kernel_width": AUTO_WIDTH if self.auto_width else list(self.kernel_width),
            "alpha_ratio": list(self.alpha_ratio),
        }


@dataclass(frozen=True)
class RunSpec:
    """How the runner distributes and records the work (does not change results)."""

    fits_per_block: int
    blocks_per_worker: int
    retries: int
    save_coef: bool
    retry_failed: bool
    progress: bool


@dataclass(frozen=True)
class StoreSpec:
    """Where results go: ``path``, or (``path`` None) a name derived from the grid under ``root``."""

    root: str
    path: str | None = None


@dataclass(frozen=True)
class AdaptiveSpec:
    """Bounds, in batch jobs, between which a SLURM/PBS cluster follows the load (``cluster.adaptive``)."""

    minimum: int
    maximum: int


@dataclass(frozen=True)
class ClusterSpec:
    """Which Dask cluster to use; fields a kind does not use are None (or empty).

    - ``local``: ``n_workers``, ``threads_per_worker``, ``memory_limit``, ``host``,
      ``dashboard_address``.
    - ``address``: ``address``. ``scheduler_file``: ``scheduler_file``.
    - ``slurm`` / ``pbs`` (dask-jobqueue): per batch job ``cores``, ``processes`` (single-threaded
      workers; None means one per core), ``memory``, ``walltime``, ``queue``, ``account``; the
      workers' network ``interface``; ``log_directory`` for job output; ``job_extra_directives``
      (more ``#SBATCH`` / ``#PBS`` options) and ``job_script_prologue`` (shell lines run before the
      worker); ``n_jobs`` fixed jobs, or ``adaptive`` bounds in jobs; ``worker_lifetime`` and
      ``lifetime_stagger`` so that workers retire before the walltime; ``python`` on the compute
      nodes (None: the driver's interpreter); the scheduler's ``dashboard_address``; ``pbs`` also
      ``resource_spec`` (the ``-l`` resource string, None: dask-jobqueue's ``select=1:ncpus=..:mem=..``).

    ``options`` holds any further keyword arguments for the backend. Durations are kept as written
    (``"55m"``, ``"01:00:00"``); the ``*_seconds`` properties convert them.
    """

    kind: str
    n_workers: int | None = None
    threads_per_worker: int | None = None
    memory_limit: str | float | None = None
    host: str | None = None
    dashboard_address: str | None = None
    address: str | None = None
    scheduler_file: str | None = None
    options: Mapping = field(default_factory=FrozenMap)
    cores: int | None = None
    processes: int | None = None
    memory: str | None = None
    walltime: str | None = None
    queue: str | None = None
    account: str | None = None
    interface: str | None = None
    log_directory: str | None = None
    job_extra_directives: tuple[str, ...] = ()
    job_script_prologue: tuple[str, ...] = ()
    resource_spec: str | None = None
    n_jobs: int | None = None
    adaptive: AdaptiveSpec | None = None
    worker_lifetime: str | None = None
    lifetime_stagger: str | None = None
    python: str | None = None

    @property
    def workers_per_job(self) -> int | None:
        """Single-threaded workers in one batch job (``processes``, else ``cores``)."""
        return self.processes if self.processes is not None else self.cores

    @property
    def target_workers(self) -> int | None:
        """Workers the cluster is meant to reach (None where unknown: address, scheduler_file)."""
        if self.kind == "local":
            return self.n_workers
        if self.kind in ("slurm", "pbs"):
            jobs = self.adaptive.maximum if self.adaptive is not None else self.n_jobs
            return jobs * self.workers_per_job
        return None

    @property
    def walltime_seconds(self) -> int | None:
        return None if self.walltime is None else _walltime_seconds(self.walltime)

    @property
    def worker_lifetime_seconds(self) -> float | None:
        return None if self.worker_lifetime is None else _duration_seconds(self.worker_lifetime)

    @property
    def lifetime_stagger_seconds(self) -> float | None:
        return None if self.lifetime_stagger is None else _duration_seconds(self.lifetime_stagger)

    def to_dict(self) -> dict:
        d = {name: to_plain(getattr(self, name)) for name in _CLUSTER_FIELDS}
        d["adaptive"] = None if self.adaptive is None else asdict(self.adaptive)
        return d


_CLUSTER_FIELDS = ("kind", "n_workers", "threads_per_worker", "memory_limit", "host",
                   "dashboard_address", "address", "scheduler_file", "cores", "processes",
                   "memory", "walltime", "queue", "account", "interface", "log_directory",
                   "job_extra_directives", "job_script_prologue", "resource_spec", "n_jobs",
                   "adaptive", "worker_lifetime", "lifetime_stagger", "python", "options")

#: settings of the dask-jobqueue kinds (slurm, pbs)
_JOBQUEUE_FIELDS = ("cores", "processes", "memory", "walltime", "queue", "account", "interface",
                    "log_directory", "job_extra_directives", "job_script_prologue", "n_jobs",
                    "adaptive", "worker_lifetime", "lifetime_stagger", "python",
                    "dashboard_address")

#: the fields each cluster kind reads (besides kind and options); others must stay unset
_KIND_FIELDS = {
    "local": ("n_workers", "threads_per_worker", "memory_limit", "host", "dashboard_address"),
    "address": ("address",),
    "scheduler_file": ("scheduler_file",),
    "slurm": _JOBQUEUE_FIELDS,
    "pbs": _JOBQUEUE_FIELDS + ("resource_spec",),
}

#: keyword arguments the cluster backend gets from typed fields (or sets itself): not in options
_RESERVED_OPTIONS = {
    "local": ("n_workers", "threads_per_worker", "processes", "memory_limit", "host",
              "dashboard_address", "env"),
    "slurm": _JOBQUEUE_FIELDS + ("resource_spec", "project", "job_extra", "env_extra", "extra",
                                 "n_workers", "host"),
}
_RESERVED_OPTIONS["pbs"] = _RESERVED_OPTIONS["slurm"]


@dataclass(frozen=True)
class ExperimentSpec:
    """The whole experiment: the grid (methods x tau x psi x seeds), data, CV, run, store, cluster.

    ``methods`` holds only the selected methods, in the order of ``experiment.methods``.
    """

    name: str
    methods: tuple[MethodSpec, ...]
    tau: tuple[float, ...]
    psi: tuple[float, ...]
    seeds: tuple[int, ...]
    data: DataSpec
    cv: CVSpec
    run: RunSpec
    store: StoreSpec
    cluster: ClusterSpec

    @property
    def method_names(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.methods)

    def method(self, name: str) -> MethodSpec:
        for m in self.methods:
            if m.name == name:
                return m
        raise KeyError(f"no method {name!r} in this experiment; methods are {self.method_names}")

    def to_dict(self) -> dict:
        """Plain JSON-able Python in the config layout; ``spec_from_dict`` inverts it."""
        return {
            "experiment": {
                "name": self.name,
                "methods": list(self.method_names),
                "tau": list(self.tau),
                "psi": list(self.psi),
                "seeds": list(self.seeds),
            },
            "methods": {m.name: m.to_dict() for m in self.methods},
            "data": asdict(self.data),
            "cv": asdict(self.cv),
            "run": asdict(self.run),
            "store": asdict(self.store),
            "cluster": self.cluster.to_dict(),
        }


def to_plain(value):
    """Mappings and tuples to dicts and lists, recursively (e.g. ``cluster.options`` for the
    Dask backends)."""
    if isinstance(value, Mapping):
        return {k: to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    return value


# -- parsing and validation ------------------------------------------------------------------------
def _init_parameters(cls) -> dict[str, inspect.Parameter]:
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return {
        name: p
        for name, p in inspect.signature(cls.__init__).parameters.items()
        if name != "self" and p.kind in kinds
    }


def _parse_data(d: Mapping) -> DataSpec:
    key = "data"
    section = _section(d, key)
    _check_known(section, key, ("n_train", "n_test", "n_features", "n_relevant", "noise_var"))
    n_train = _as_int("data.n_train", _get(section, key, "n_train"), 2)
    n_test = _as_int("data.n_test", _get(section, key, "n_test"), 1)
    n_features = _as_int("data.n_features", _get(section, key, "n_features"), 1)
    n_relevant = _as_int("data.n_relevant", _get(section, key, "n_relevant"), 0)
    if n_relevant > n_features:
        _fail("data.n_relevant", f"must be <= data.n_features ({n_features})", n_relevant)
    noise_var = _as_float("data.noise_var", _get(section, key, "noise_var"))
    if noise_var < 0:
        _fail("data.noise_var", "must be >= 0", noise_var)
    return DataSpec(n_train, n_test, n_features, n_relevant, noise_var)


def _cv_margin(section: Mapping, name: str, scheme: str, needs: str) -> float | None:
    """An optional margin of cv (``None``: off): a positive number, used by one scheme only."""
    value = section.get(name, None)
    if value is None:
        return None
    value = _as_float(f"cv.{name}", value)
    if not value > 0:
        _fail(f"cv.{name}", "must be > 0 (or null: off)", value)
    if scheme != needs:
        _fail(f"cv.{name}", f"is only used with cv.scheme={needs}", value)
    return value


def _parse_cv(d: Mapping, data: DataSpec) -> CVSpec:
    key = "cv"
    section = _section(d, key)
    _check_known(section, key, ("scheme", "n_folds", "score", "reference_width", "path_stop",
                                "race"))
    scheme = section.get("scheme", "kfold")  # stores written before schemes existed: kfold
    if scheme not in CV_SCHEMES:
        _fail("cv.scheme", f"must be one of {', '.join(CV_SCHEMES)}", scheme)
    path_stop = _cv_margin(section, "path_stop", scheme, "alo")
    race = _cv_margin(section, "race", scheme, "kfold")
    n_folds = _as_int("cv.n_folds", _get(section, key, "n_folds"), 2)
    if n_folds > data.n_train:
        _fail("cv.n_folds", f"must be <= data.n_train ({data.n_train})", n_folds)
    if data.n_train - math.ceil(data.n_train / n_folds) < 2:
        _fail("cv.n_folds", f"leaves fewer than 2 training samples per fold with data.n_train="
                            f"{data.n_train}", n_folds)
    score = _get(section, key, "score")
    if score not in CV_SCORES:
        _fail("cv.score", f"must be one of {', '.join(CV_SCORES)}", score)
    reference_width = _as_float("cv.reference_width", _get(section, key, "reference_width"))
    if reference_width <= 0:
        _fail("cv.reference_width", "must be > 0", reference_width)
    return CVSpec(n_folds, score, reference_width, scheme, path_stop, race)


def _parse_params(key: str, estimator: str, params, kernel_width, alpha_ratio) -> FrozenMap:
    if not isinstance(params, Mapping):
        _fail(key, "must be a mapping of estimator keyword arguments", params)
    cls = ESTIMATORS[estimator]
    accepted = _init_parameters(cls)
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        _fail(key, f"{', '.join(unknown)} not accepted by {cls.__name__} (estimator {estimator}); "
                   f"accepted: {', '.join(accepted)}", dict(params))
    from_grid = sorted(set(params) & {"kernel_width", "alpha"})
    if from_grid:
        _fail(key, f"{', '.join(from_grid)} must not be set here: it comes from the CV grid "
                   "(kernel_width / alpha_ratio of the method)", dict(params))
    converted = {}
    for pname, value in params.items():
        if not (value is None or isinstance(value, (str, bool, numbers.Real))):
            _fail(f"{key}.{pname}", "must be a number, string, boolean or null", value)
        default = accepted[pname].default
        if (isinstance(default, float) and isinstance(value, numbers.Integral)
                and not isinstance(value, bool)):
            value = float(value)  # e.g. tol: 1 -> 1.0
        converted[str(pname)] = value
    # The estimator's own validation, on an instance with a placeholder grid point.
    extra = {}
    if "kernel_width" in accepted:
        if kernel_width == AUTO_WIDTH:
            extra["kernel_width"] = AUTO_WIDTH
        else:
            extra["kernel_width"] = kernel_width[0] if kernel_width else 1.0
    if "alpha" in accepted:
        extra["alpha"] = 0.0
    try:
        estimator_obj = cls(**converted, **extra)
        validate = getattr(estimator_obj, "_validate_params", None)
        if validate is not None:
            validate()
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{key}: {exc}") from exc
    return FrozenMap(converted)


def _parse_method(name: str, section) -> MethodSpec:
    key = f"methods.{name}"
    if not _NAME_RE.match(name):
        _fail(key, "method names must start with a letter and contain only letters, digits and _",
              name)
    if not isinstance(section, Mapping):
        _fail(key, "must be a mapping", section)
    _check_known(section, key, ("estimator", "params", "kernel_width", "alpha_ratio"))
    estimator = _get(section, key, "estimator")
    if estimator not in ESTIMATORS:
        _fail(f"{key}.estimator", f"unknown estimator; known estimators are {', '.join(ESTIMATORS)}",
              estimator)
    accepted = _init_parameters(ESTIMATORS[estimator])
    kernel_width = section.get("kernel_width", [])
    auto_width = isinstance(kernel_width, str)
    if auto_width:
        if kernel_width != AUTO_WIDTH:
            _fail(f"{key}.kernel_width", "must be a list of widths > 0 or 'auto' (lower case)",
                  kernel_width)
        if "kernel_width" not in accepted:
            _fail(f"{key}.kernel_width", f"must be empty: {estimator} has no kernel width",
                  kernel_width)
        kernel_width = ()
    else:
        kernel_width = _float_list(f"{key}.kernel_width", kernel_width,
                                   low=0.0, low_open=True, allow_empty=True)
    alpha_ratio = _float_list(f"{key}.alpha_ratio", section.get("alpha_ratio", []),
                              low=0.0, low_open=False, allow_empty=True)
    if "kernel_width" in accepted and not kernel_width and not auto_width:
        _fail(f"{key}.kernel_width", f"must not be empty: {estimator} is selected by CV over h "
                                     "(or set it to auto)", [])
    if "kernel_width" not in accepted and kernel_width:
        _fail(f"{key}.kernel_width", f"must be empty: {estimator} has no kernel width",
              list(kernel_width))
    if "alpha" in accepted and not alpha_ratio:
        _fail(f"{key}.alpha_ratio", f"must not be empty: {estimator} is selected by CV over lambda",
              [])
    if "alpha" not in accepted and alpha_ratio:
        _fail(f"{key}.alpha_ratio", f"must be empty: {estimator} has no L1 penalty",
              list(alpha_ratio))
    params = _parse_params(f"{key}.params", estimator, section.get("params") or {},
                           AUTO_WIDTH if auto_width else kernel_width, alpha_ratio)
    return MethodSpec(name, estimator, params, kernel_width, alpha_ratio, auto_width)


def _parse_seeds(value) -> tuple[int, ...]:
    key = "experiment.seeds"
    if isinstance(value, Mapping):
        _check_known(value, key, ("start", "count"))
        start = _as_int(f"{key}.start", _get(value, key, "start"), 0)
        count = _as_int(f"{key}.count", _get(value, key, "count"), 1)
        return tuple(range(start, start + count))
    if isinstance(value, (list, tuple)):
        seeds = tuple(_as_int(f"{key}[{i}]", s, 0) for i, s in enumerate(value))
        if not seeds:
            _fail(key, "must not be empty", [])
        _check_unique(key, seeds)
        return seeds
    _fail(key, "must be {start, count} or a list of seeds", value)


def _parse_run(d: Mapping) -> RunSpec:
    key = "run"
    section = _section(d, key)
    _check_known(section, key, ("fits_per_block", "blocks_per_worker", "retries", "save_coef",
                                "retry_failed", "progress"))
    return RunSpec(
        fits_per_block=_as_int("run.fits_per_block", _get(section, key, "fits_per_block"), 1),
        blocks_per_worker=_as_int("run.blocks_per_worker",
                                  _get(section, key, "blocks_per_worker"), 1),
        retries=_as_int("run.retries", _get(section, key, "retries"), 0),
        save_coef=_as_bool("run.save_coef", _get(section, key, "save_coef")),
        retry_failed=_as_bool("run.retry_failed", _get(section, key, "retry_failed")),
        progress=_as_bool("run.progress", _get(section, key, "progress")),
    )


def _parse_store(d: Mapping) -> StoreSpec:
    key = "store"
    section = _section(d, key)
    _check_known(section, key, ("root", "path"))
    root = _as_str("store.root", _get(section, key, "root"))
    path = _as_str("store.path", _get(section, key, "path", None), allow_none=True)
    return StoreSpec(root, path)


_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([kKMGTP]i?B?|B)?\s*$")
_WALLTIME_RE = re.compile(r"^(?:(\d+)-)?(\d+):([0-5]\d):([0-5]\d)$")
_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d*)?)\s*(s|m|min|h)?\s*$")
_DURATION_UNITS = {None: 1, "s": 1, "m": 60, "min": 60, "h": 3600}


def _walltime_seconds(text: str) -> int:
    """``"[D-]HH:MM:SS"`` in seconds (the caller has validated the format)."""
    days, hours, minutes, seconds = _WALLTIME_RE.match(text).groups()
    return ((int(days or 0) * 24 + int(hours)) * 60 + int(minutes)) * 60 + int(seconds)


def _duration_seconds(text: str) -> float:
    """``"55m"``, ``"90s"``, ``"1.5h"`` or ``"3300"`` in seconds (format validated by the caller)."""
    number, unit = _DURATION_RE.match(str(text)).groups()
    return float(number) * _DURATION_UNITS[unit]


def _as_size(key: str, value) -> str:
    """A memory size such as ``"16GB"`` or ``"512MiB"`` (dask's units); returned as written."""
    if isinstance(value, bool) or not isinstance(value, str):
        _fail(key, 'must be a size such as "16GB" or "512MiB"', value)
    match = _SIZE_RE.match(value)
    if match is None:
        _fail(key, 'must be a size such as "16GB" or "512MiB"', value)
    if float(match.group(1)) <= 0:
        _fail(key, "must be > 0", value)
    return value


def _as_walltime(key: str, value, allow_days: bool) -> str:
    form = '"HH:MM:SS" or "D-HH:MM:SS"' if allow_days else '"HH:MM:SS"'
    if not isinstance(value, str):
        # e.g. an unquoted 01:00:00 that a YAML 1.1 reader turned into a number
        _fail(key, f"must be a quoted string {form}", value)
    match = _WALLTIME_RE.match(value)
    if match is None or (match.group(1) is not None and not allow_days):
        _fail(key, f"must be {form}", value)
    if _walltime_seconds(value) <= 0:
        _fail(key, "must be > 0", value)
    return value


def _as_duration(key: str, value) -> str:
    """A duration such as ``"55m"``, ``"90s"``, ``"1.5h"`` or a number of seconds; kept as text."""
    if isinstance(value, bool) or not isinstance(value, (str, numbers.Real)):
        _fail(key, 'must be a duration such as "55m", "90s" or "1.5h"', value)
    text = str(value)
    if _DURATION_RE.match(text) is None:
        _fail(key, 'must be a duration such as "55m", "90s" or "1.5h"', value)
    return text


def _str_list(key: str, value) -> tuple[str, ...]:
    items = _as_list(key, [] if value is None else value)
    return tuple(_as_str(f"{key}[{i}]", v) for i, v in enumerate(items))


def _freeze(value):
    """Nested mappings/lists to FrozenMap/tuples, so a spec holding them stays hashable."""
    if isinstance(value, Mapping):
        return FrozenMap({k: _freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


def _parse_adaptive(value) -> AdaptiveSpec | None:
    key = "cluster.adaptive"
    if value is None:
        return None
    if not isinstance(value, Mapping):
        _fail(key, "must be null or {minimum: jobs, maximum: jobs}", value)
    _check_known(value, key, ("minimum", "maximum"))
    minimum = _as_int(f"{key}.minimum", value.get("minimum", 0), 0)
    maximum = _as_int(f"{key}.maximum", _get(value, key, "maximum"), 1)
    if maximum < minimum:
        _fail(f"{key}.maximum", f"must be >= cluster.adaptive.minimum ({minimum})", maximum)
    return AdaptiveSpec(minimum, maximum)


def _parse_jobqueue(kind: str, section: Mapping, required) -> dict:
    """The dask-jobqueue settings of a ``slurm`` / ``pbs`` cluster, validated."""
    directive = "#SBATCH" if kind == "slurm" else "#PBS"
    cores = _as_int("cluster.cores", required("cores"), 1)
    processes = section.get("processes")
    if processes is not None:
        processes = _as_int("cluster.processes", processes, 1)
        if processes > cores:
            _fail("cluster.processes", f"must be <= cluster.cores ({cores}): every worker has one "
                                       "thread and needs a core", processes)
    memory = _as_size("cluster.memory", required("memory"))
    walltime = _as_walltime("cluster.walltime", required("walltime"), allow_days=kind == "slurm")

    def optional_str(name):
        return _as_str(f"cluster.{name}", section.get(name), allow_none=True)

    example = "--qos=normal" if kind == "slurm" else "-l place=scatter"
    directives = _str_list("cluster.job_extra_directives", section.get("job_extra_directives"))
    for i, line in enumerate(directives):
        if line.lstrip().startswith("#"):
            _fail(f"cluster.job_extra_directives[{i}]",
                  f"give the option only (e.g. {example}); '{directive}' is added", line)
    prologue = _str_list("cluster.job_script_prologue", section.get("job_script_prologue"))

    adaptive = _parse_adaptive(section.get("adaptive"))
    n_jobs = section.get("n_jobs")
    if adaptive is None:
        n_jobs = _as_int("cluster.n_jobs", required("n_jobs"), 1)
    elif n_jobs is not None:
        n_jobs = _as_int("cluster.n_jobs", n_jobs, 1)

    lifetime = section.get("worker_lifetime")
    stagger = section.get("lifetime_stagger")
    if lifetime is None:
        stagger = None  # retirement switched off: the stagger has nothing to spread
    else:
        lifetime = _as_duration("cluster.worker_lifetime", lifetime)
        if stagger is not None:
            stagger = _as_duration("cluster.lifetime_stagger", stagger)
        life_s = _duration_seconds(lifetime)
        stagger_s = _duration_seconds(stagger) if stagger is not None else 0.0
        wall_s = _walltime_seconds(walltime)
        if life_s <= 0:
            _fail("cluster.worker_lifetime", "must be > 0", lifetime)
        if stagger_s >= life_s:
            _fail("cluster.lifetime_stagger", f"must be shorter than cluster.worker_lifetime "
                                              f"({lifetime})", stagger)
        if life_s + stagger_s >= wall_s:
            _fail("cluster.worker_lifetime", f"plus cluster.lifetime_stagger ({stagger or '0s'}) "
                                             f"must be shorter than cluster.walltime ({walltime}) "
                                             "so that workers retire before the job is killed",
                  lifetime)
    return dict(
        cores=cores,
        processes=processes,
        memory=memory,
        walltime=walltime,
        queue=optional_str("queue"),
        account=optional_str("account"),
        interface=optional_str("interface"),
        log_directory=optional_str("log_directory"),
        job_extra_directives=directives,
        job_script_prologue=prologue,
        resource_spec=optional_str("resource_spec"),
        n_jobs=n_jobs,
        adaptive=adaptive,
        worker_lifetime=lifetime,
        lifetime_stagger=stagger,
        python=optional_str("python"),
    )


def _is_unset(value) -> bool:
    return value is None or value == _MISSING or (isinstance(value, (list, tuple, Mapping))
                                                  and not value)


def _parse_cluster(d: Mapping) -> ClusterSpec:
    key = "cluster"
    section = _section(d, key)
    _check_known(section, key, _CLUSTER_FIELDS,
                 hint="; other backend keyword arguments go under cluster.options")
    kind = _get(section, key, "kind")
    if kind not in CLUSTER_KINDS:
        _fail("cluster.kind", f"unknown cluster kind; known kinds are {', '.join(CLUSTER_KINDS)}",
              kind)
    used = _KIND_FIELDS[kind]
    for name in _CLUSTER_FIELDS:
        if name not in ("kind", "options") and name not in used and not _is_unset(
                section.get(name)):
            users = [k for k, fields in _KIND_FIELDS.items() if name in fields]
            hint = " (use cluster.n_jobs: workers = n_jobs x processes)" if (
                name == "n_workers" and kind in ("slurm", "pbs")) else ""
            _fail(f"cluster.{name}", f"is not used by cluster.kind={kind} (it is a setting of "
                                     f"{', '.join(users)}){hint}", section.get(name))

    def required(name: str):
        value = section.get(name)
        if value is None or value == "" or value == _MISSING:
            raise ConfigError(f"cluster.{name}: required when cluster.kind={kind} (set it on the "
                              f"command line, e.g. {_EXAMPLES[name]})")
        return value

    def optional_int(name: str, minimum: int):
        value = section.get(name)
        return None if value is None else _as_int(f"cluster.{name}", value, minimum)

    n_workers = optional_int("n_workers", 1)
    threads_per_worker = optional_int("threads_per_worker", 1)
    if kind == "local":
        n_workers = _as_int("cluster.n_workers", required("n_workers"), 1)
        threads_per_worker = _as_int("cluster.threads_per_worker", required("threads_per_worker"),
                                     1)
    address = _as_str("cluster.address", section.get("address"), allow_none=True)
    if kind == "address":
        address = _as_str("cluster.address", required("address"))
    scheduler_file = _as_str("cluster.scheduler_file", section.get("scheduler_file"),
                             allow_none=True)
    if kind == "scheduler_file":
        scheduler_file = _as_str("cluster.scheduler_file", required("scheduler_file"))
    memory_limit = section.get("memory_limit")
    if memory_limit is not None:
        if isinstance(memory_limit, bool) or not isinstance(memory_limit, (str, numbers.Real)):
            _fail("cluster.memory_limit", 'must be "auto", a size such as "4GB", or bytes',
                  memory_limit)
        if isinstance(memory_limit, numbers.Real) and memory_limit < 0:
            _fail("cluster.memory_limit", "must be >= 0", memory_limit)
    options = section.get("options") or {}
    if not isinstance(options, Mapping):
        _fail("cluster.options", "must be a mapping", options)
    for name in options:
        if name in _RESERVED_OPTIONS.get(kind, ()):
            typed = f"cluster.{name}" if name in _CLUSTER_FIELDS else None
            _fail(f"cluster.options.{name}",
                  f"set {typed} instead" if typed else f"is set by mccard-dist for cluster.kind="
                                                       f"{kind}; remove it", options[name])
    jobqueue = _parse_jobqueue(kind, section, required) if kind in ("slurm", "pbs") else {}
    return ClusterSpec(
        kind=kind,
        n_workers=n_workers,
        threads_per_worker=threads_per_worker,
        memory_limit=memory_limit,
        host=_as_str("cluster.host", section.get("host"), allow_none=True),
        dashboard_address=_as_str("cluster.dashboard_address", section.get("dashboard_address"),
                                  allow_none=True),
        address=address,
        scheduler_file=scheduler_file,
        options=_freeze(options),
        **jobqueue,
    )


_EXAMPLES = {
    "address": "cluster.address=tcp://host:8786",
    "scheduler_file": "cluster.scheduler_file=/path/to/scheduler.json",
    "n_workers": "cluster.n_workers=2",
    "threads_per_worker": "cluster.threads_per_worker=1",
    "cores": "cluster.cores=8",
    "memory": "cluster.memory=16GB",
    "walltime": "cluster.walltime=01:00:00",
    "n_jobs": "cluster.n_jobs=2, or cluster.adaptive={minimum:0,maximum:8}",
}


def spec_from_dict(d: Mapping) -> ExperimentSpec:
    """Validate a resolved config (plain Python) and build the :class:`ExperimentSpec`.

    Parameters
    ----------
    d : mapping
        The config layout described in the module docstring, e.g.
        ``OmegaConf.to_container(cfg, resolve=True)`` or :meth:`ExperimentSpec.to_dict`.

    Raises
    ------
    ConfigError
        For the first missing or invalid value; the message starts with its key.
    """
    if not isinstance(d, Mapping):
        raise ConfigError(f"config: must be a mapping, got {type(d).__name__}")
    exp = _section(d, "experiment")
    _check_known(exp, "experiment", ("name", "methods", "tau", "psi", "seeds"))
    name = _as_str("experiment.name", _get(exp, "experiment", "name"))
    if not _EXPERIMENT_NAME_RE.match(name):
        _fail("experiment.name", "must be usable in a file name (letters, digits, _ . -)", name)

    available = _section(d, "methods")
    selected = _as_list("experiment.methods", _get(exp, "experiment", "methods"))
    if not selected:
        _fail("experiment.methods", "must not be empty", selected)
    _check_unique("experiment.methods", selected)
    for m in selected:
        if m not in available:
            _fail("experiment.methods", f"unknown method {m!r}; known methods are "
                                        f"{', '.join(map(str, available))}", selected)
    methods = tuple(_parse_method(m, available[m]) for m in selected)

    tau = _float_list("experiment.tau", _get(exp, "experiment", "tau"), low=0.0, low_open=True,
                      allow_empty=False)
    psi = _float_list("experiment.psi", _get(exp, "experiment", "psi"), low=0.0, low_open=False,
                      high=1.0, allow_empty=False)
    seeds = _parse_seeds(_get(exp, "experiment", "seeds"))

    data = _parse_data(d)
    cv = _parse_cv(d, data)
    return ExperimentSpec(
        name=name,
        methods=methods,
        tau=tau,
        psi=psi,
        seeds=seeds,
        data=data,
        cv=cv,
        run=_parse_run(d),
        store=_parse_store(d),
        cluster=_parse_cluster(d),
    )


def from_dictconfig(cfg) -> ExperimentSpec:
    """Resolve a composed Hydra config to plain Python (in the driver) and validate it.

    The ``hydra`` node, if present, is ignored. Mandatory values left unset (``???``) are reported by :func:`spec_from_dict` with their key.
    """
    from omegaconf import OmegaConf

    # Leave out Hydra's own node (present with return_hydra_config=True; it only resolves in a job).
    cfg = OmegaConf.masked_copy(cfg, [k for k in cfg if k != "hydra"])
    d = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=False)
    return spec_from_dict(d)
