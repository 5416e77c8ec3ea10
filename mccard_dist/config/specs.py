"""The validated experiment: frozen dataclasses (they pickle, and hold no Hydra type), the
estimator registry and the cluster kinds."""

from __future__ import annotations

import inspect
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from types import MappingProxyType

from ..methods import KINDS, MethodKind
from ..models import AUTO_WIDTH
from .checks import FrozenMap, _duration_seconds, _walltime_seconds, to_plain
from .data_specs import DataSpec, DiabetesDataSpec, FileDataSpec
from .schema import CLUSTER_SCHEMAS, SlurmClusterConfig

#: The fixed estimator registry (:data:`mccard_dist.methods.KINDS`): key -> estimator class.
ESTIMATORS = MappingProxyType({name: kind.cls for name, kind in KINDS.items()})

#: CV validation losses (lower is better). ``correntropy`` is ``1 - mean exp(-e^2 / 2 reference_width)``.
CV_SCORES = ("mae", "medae", "rmse", "correntropy")
#: scikit-learn's scorer names accepted for the same losses (the config keeps the short name, so
#: either spelling gives the same grid hash and store)
CV_SCORE_ALIASES = MappingProxyType({"neg_mean_absolute_error": "mae",
                                     "neg_median_absolute_error": "medae",
                                     "neg_root_mean_squared_error": "rmse"})
CV_SCHEMES = ("kfold", "alo")
#: How K-fold CV fits the candidates of a method that can fit them as warm-started paths
#: (MCC-L1): ``width``, one path per L1 ratio over the kernel widths, widest first; ``penalty``,
#: one path per kernel width over the L1 ratios, largest first; ``none``, every candidate alone.
CV_PATHS = ("width", "penalty", "none")

#: Cluster backends (``slurm`` and ``pbs`` through dask-jobqueue, see :class:`ClusterSpec`).
CLUSTER_KINDS = tuple(CLUSTER_SCHEMAS)



def _config_dir() -> Path:
    """$MCCARD_CONFIG_DIR; else the configs installed with the package (``mccard_dist/conf`` of a
    wheel); else ``conf/`` beside the package (a source checkout or an editable install)."""
    if os.environ.get("MCCARD_CONFIG_DIR"):
        return Path(os.environ["MCCARD_CONFIG_DIR"])
    package = Path(__file__).resolve().parents[1]
    installed = package / "conf"
    if (installed / "config.yaml").is_file():
        return installed
    return package.parent / "conf"


#: the config directory (see :func:`_config_dir`)
CONFIG_DIR = _config_dir()


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

    ``paths`` (kfold only; one of :data:`CV_PATHS`): how the candidates of a method that can fit
    them as warm-started paths (MCC-L1 at numeric widths) are fitted on each fold, and the final
    fit made (the same path on all the training data, down to the choice). The objective is not
    convex, so the routes can end at different fits at small widths; ``none`` gives the fits from
    ``w = 0`` of every candidate.
    """

    n_folds: int
    score: str
    reference_width: float
    scheme: str = "kfold"
    path_stop: float | None = None
    race: float | None = None
    paths: str = "width"

    @property
    def n_columns(self) -> int:
        """Columns of the ``cv_score`` record: ``n_folds`` (kfold) or 1 (alo)."""
        return 1 if self.scheme == "alo" else self.n_folds


@dataclass(frozen=True)
class MethodSpec:
    """One method: a registry estimator, its fixed params and its CV grid.

    The grid has up to two axes, named by the kind (:attr:`MethodKind.grid_names`, e.g.
    ``kernel_width`` and ``alpha_ratio`` for MCC-L1, ``epsilon`` and ``alpha`` for Huber):
    ``widths`` holds the width axis (empty for estimators without one, e.g. LS-ARD, and for
    ``auto_width``), ``penalties`` the penalty axis (empty without a penalty). ``auto_width``
    (config ``grid: {kernel_width: auto}``): every fit sets its own width
    (``kernel_width="auto"``), so there is no CV over the width.
    """

    name: str
    estimator: str
    params: Mapping = field(default_factory=FrozenMap)
    widths: tuple[float, ...] = ()
    penalties: tuple[float, ...] = ()
    auto_width: bool = False

    @property
    def kind(self) -> MethodKind:
        """What the estimator declares about its hyper-parameters (:mod:`mccard_dist.methods`)."""
        return KINDS[self.estimator]

    @property
    def estimator_class(self) -> type:
        return self.kind.cls

    @property
    def takes_kernel_width(self) -> bool:
        """Whether the estimator has a kernel width (from the CV grid, or ``auto``)."""
        return self.kind.kernel_width

    @property
    def takes_alpha(self) -> bool:
        """Whether the estimator has a penalty ``alpha`` (set from its grid's penalty axis)."""
        return self.kind.alpha

    @property
    def grid(self) -> dict:
        """The CV grid under its names, ``{name: list of values, or "auto"}``."""
        axes = {"width": AUTO_WIDTH if self.auto_width else list(self.widths),
                "penalty": list(self.penalties)}
        return {name: axes[axis] for name, axis in self.kind.grid_names.items()}

    def candidates(self) -> list[tuple[float, float]]:
        """The CV candidates ``(width, penalty)`` (:meth:`MethodKind.candidates`)."""
        return self.kind.candidates(self.widths, self.penalties, self.auto_width)

    def build(self, X, y, h: float, ratio: float, cache: dict | None = None):
        """The estimator of candidate ``(h, ratio)`` for training data ``X, y`` and its absolute
        ``alpha`` (:meth:`MethodKind.build`)."""
        return self.kind.build(self.params, h, ratio, self.auto_width, X, y, cache)

    def path_route(self, cv: CVSpec) -> str:
        """The route (one of :data:`CV_PATHS`) by which K-fold CV under ``cv`` fits this
        method's candidates: ``cv.paths`` where the method can fit paths, else ``none``."""
        if cv.scheme != "kfold":
            return "none"
        return self.kind.path_route(self.params, self.auto_width, cv.paths)

    def path_fits(self, route: str, members, X, y, cache: dict | None = None):
        """The candidates ``members`` (``(h, ratio)`` pairs) fitted as one path
        (:meth:`MethodKind.path_fits`)."""
        return self.kind.path_fits(self.params, route, members, X, y, cache)

    @property
    def has_cv(self) -> bool:
        """Whether the method selects hyper-parameters by CV (it has a non-empty grid)."""
        return bool(self.widths or self.penalties)

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
                name = self.kind.width_param if pname == "kernel_width" else pname
                kwargs[name] = value if value == AUTO_WIDTH else float(value)
        return self.estimator_class(**kwargs)

    def to_dict(self) -> dict:
        return {"estimator": self.estimator, "params": dict(self.params), "grid": self.grid}

    def axes_dict(self) -> dict:
        """The grid by axis, as the grid hash has always described it: the width axis under
        ``kernel_width`` (``"auto"``, or ``[]`` without a width), the penalty axis under
        ``alpha_ratio`` (whatever the kind calls them), so a store keeps its hash."""
        return {"estimator": self.estimator, "params": dict(self.params),
                "kernel_width": AUTO_WIDTH if self.auto_width else list(self.widths),
                "alpha_ratio": list(self.penalties)}


@dataclass(frozen=True)
class RunSpec:
    """How the runner distributes and records the work (does not change results).

    ``unit`` (one of :data:`RUN_UNITS`): what one Dask task does. ``cell``: a block of whole cells
    (CV, choice, final fit) of about ``fits_per_block`` fits; ``fit``: one (cell, candidate, fold)
    CV fit, the cell's choice and final fit following as one more task once its fits are in
    (K-fold CV without racing only); ``auto``: ``fit`` when the cells to run are fewer than
    :data:`FIT_UNIT_CELLS_PER_WORKER` times the workers and the CV allows it, else ``cell``.
    In-flight tasks are bounded by ``blocks_per_worker`` per worker either way.
    """

    fits_per_block: int
    blocks_per_worker: int
    retries: int
    save_coef: bool
    retry_failed: bool
    progress: bool
    unit: str = "auto"


#: values of ``run.unit``
RUN_UNITS = ("auto", "cell", "fit")
#: ``run.unit=auto`` picks ``fit`` below this many cells per worker
FIT_UNIT_CELLS_PER_WORKER = 4


@dataclass(frozen=True)
class StoreSpec:
    """Where results go: ``path``, or (``path`` None) a name derived from the grid under ``root``.

    ``verify``: how an existing store is checked before a run resumes it: ``quick`` reads every
    per-cell chunk and checks that the chunks of ``cv_score`` and ``coef`` exist and are as long
    as their headers say; ``full`` also decompresses those (:mod:`mccard_dist.store.integrity`)."""

    root: str
    path: str | None = None
    verify: str = "quick"


@dataclass(frozen=True)
class AdaptiveSpec:
    """Bounds, in batch jobs, between which a SLURM/PBS cluster follows the load (``cluster.adaptive``)."""

    minimum: int
    maximum: int


@dataclass(frozen=True)
class ClusterSpec:
    """Which Dask cluster to use; fields a kind does not use are None (or empty).

    - ``local``: ``n_workers``, ``threads_per_worker``, ``memory_limit``, ``host``,
      ``dashboard_address``, ``tls`` (None or True: the scheduler, nannies and workers talk TLS
      with temporary certificates, so that only this run's processes can connect).
    - ``address``: ``address``. ``scheduler_file``: ``scheduler_file``. Both: ``connect_timeout``,
      how long to try to reach the scheduler (or wait for its file) before giving up, and for a
      scheduler that requires TLS (``tls://`` addresses) ``tls_ca_file``, ``tls_cert`` and
      ``tls_key``: the certificate authority and this client's certificate and key (PEM files).
    - ``slurm`` / ``pbs`` (dask-jobqueue): per batch job ``cores``, ``processes`` (single-threaded
      workers; None means one per core), ``memory``, ``walltime``, ``queue``, ``account``; the
      workers' network ``interface``; ``log_directory`` for job output; ``job_extra_directives``
      (more ``#SBATCH`` / ``#PBS`` options) and ``job_script_prologue`` (shell lines run before the
      worker); ``n_jobs`` fixed jobs, or ``adaptive`` bounds in jobs; ``worker_lifetime`` and
      ``lifetime_stagger`` so that workers retire before the walltime; ``python`` on the compute
      nodes (None: the driver's interpreter); the scheduler's ``dashboard_address``; ``pbs`` also
      ``resource_spec`` (the ``-l`` resource string, None: dask-jobqueue's ``select=1:ncpus=..:mem=..``).

    Every kind: ``no_worker_timeout``, how long the run may go on with no worker while tasks wait
    before it ends as failed (None: :data:`NO_WORKER_TIMEOUTS` of the kind, filled in on creation).

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
    connect_timeout: str | None = None
    tls: bool | None = None
    tls_ca_file: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    no_worker_timeout: str | None = None

    def __post_init__(self):
        if self.no_worker_timeout is None:
            object.__setattr__(self, "no_worker_timeout", NO_WORKER_TIMEOUTS.get(self.kind, "5m"))

    @property
    def no_worker_timeout_seconds(self) -> float:
        """How long the run may have no worker while tasks wait before it fails."""
        return _duration_seconds(self.no_worker_timeout)

    @property
    def connect_timeout_seconds(self) -> float:
        """How long to try to reach a running scheduler (address, scheduler_file; default 10 s)."""
        return 10.0 if self.connect_timeout is None else _duration_seconds(self.connect_timeout)

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
                   "adaptive", "worker_lifetime", "lifetime_stagger", "python", "connect_timeout",
                   "tls", "tls_ca_file", "tls_cert", "tls_key", "no_worker_timeout", "options")

#: ``no_worker_timeout`` by kind when not given. Local and self-started workers connect within
#: seconds, so minutes without any mean they are gone; batch-job workers first wait in the queue
#: (at the start, and when retired or adaptive workers' new jobs are submitted): an hour.
NO_WORKER_TIMEOUTS = {"local": "5m", "address": "5m", "scheduler_file": "5m", "slurm": "1h",
                      "pbs": "1h"}

#: settings of the dask-jobqueue kinds (slurm, pbs), from their schema
_JOBQUEUE_FIELDS = tuple(f.name for f in fields(SlurmClusterConfig)
                         if f.name not in ("kind", "options"))

#: option names that make Dask import or run code given as a value (a file, a module, a class),
#: refused at any depth of ``cluster.options``. (The batch-job settings ``job_script_prologue``
#: and ``python`` run what they say on the compute nodes, by design: they are the user's jobs.)
CODE_OPTIONS = ("preload", "preload_argv", "preload_nanny", "preload_nanny_argv", "plugins",
                "worker_class", "scheduler_cls", "scheduler_class", "worker_cls", "job_cls",
                "security", "extra_plugins")

#: ``cluster.options`` each kind accepts (passed on to LocalCluster, Client or SLURMCluster /
#: PBSCluster): settings of paths, ports, names and timeouts, none that names code to run. Where
#: the scheduler and workers listen comes from the typed keys (``cluster.host``,
#: ``cluster.dashboard_address``, ``cluster.interface``), which are checked and warned about.
ACCEPTED_OPTIONS = {
    "local": ("local_directory", "worker_dashboard_address", "scheduler_port", "silence_logs",
              "lifetime", "lifetime_stagger", "lifetime_restart", "death_timeout",
              "resources", "scheduler_sync_interval", "scheduler_kwargs"),
    "address": ("name", "direct_to_workers", "heartbeat_interval", "set_as_default"),
    "slurm": ("job_name", "local_directory", "worker_extra_args", "scheduler_options",
              "death_timeout", "job_directives_skip", "silence_logs", "submit_command_extra",
              "cancel_command_extra", "nanny", "protocol", "shared_temp_directory"),
}
ACCEPTED_OPTIONS["scheduler_file"] = ACCEPTED_OPTIONS["address"]
ACCEPTED_OPTIONS["pbs"] = ACCEPTED_OPTIONS["slurm"]

#: the keys the scheduler's own keyword arguments may hold (``cluster.options.scheduler_kwargs`` of
#: local, ``cluster.options.scheduler_options`` of slurm / pbs): task retries and timeouts, and the
#: scheduler's port where workers on other nodes must find it
SCHEDULER_OPTIONS = {
    "scheduler_kwargs": ("allowed_failures", "worker_ttl", "http_prefix"),
    "scheduler_options": ("port", "allowed_failures", "worker_ttl", "http_prefix"),
}

#: scheduler options refused with the typed key to set instead: where the scheduler listens
_SCHEDULER_BINDING = {
    "scheduler_kwargs": {"host": "cluster.host", "interface": "cluster.host",
                         "dashboard_address": "cluster.dashboard_address",
                         "port": "cluster.options.scheduler_port"},
    "scheduler_options": {"host": "cluster.interface", "interface": "cluster.interface",
                          "dashboard_address": "cluster.dashboard_address"},
}

#: keyword arguments the cluster backend gets from typed fields (or sets itself): not in options
_RESERVED_OPTIONS = {
    "local": ("n_workers", "threads_per_worker", "processes", "memory_limit", "host",
              "dashboard_address", "env", "security", "protocol"),
    "slurm": _JOBQUEUE_FIELDS + ("resource_spec", "project", "job_extra", "env_extra", "extra",
                                 "n_workers", "host"),
}
_RESERVED_OPTIONS["pbs"] = _RESERVED_OPTIONS["slurm"]
_RESERVED_OPTIONS["address"] = ("address", "timeout", "scheduler_file")
_RESERVED_OPTIONS["scheduler_file"] = _RESERVED_OPTIONS["address"]


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
    data: DataSpec | FileDataSpec | DiabetesDataSpec
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
            "data": self.data.to_dict(),
            "cv": asdict(self.cv),
            "run": asdict(self.run),
            "store": asdict(self.store),
            "cluster": self.cluster.to_dict(),
        }



def _init_parameters(cls) -> dict[str, inspect.Parameter]:
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return {
        name: p
        for name, p in inspect.signature(cls.__init__).parameters.items()
        if name != "self" and p.kind in kinds
    }
