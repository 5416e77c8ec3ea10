"""The config's schema: OmegaConf structured configs (dataclasses) for every section.

Types, unknown keys and mandatory values (``???``) are OmegaConf's work; ranges and the rules
between keys are checked on the typed values by :mod:`.parse`. ``data`` has one schema per source
(:data:`DATA_SCHEMAS`), ``cluster`` one per kind (:data:`CLUSTER_SCHEMAS`).

:data:`SCHEMAS` names them as ``conf/`` does: :class:`Config` as ``mccard_schema`` (the first
entry of ``conf/config.yaml``'s defaults), the per-source and per-kind schemas as
``schema/data/<source>`` and ``schema/cluster/<kind>`` (named by the defaults of
``conf/data/*.yaml`` and ``conf/cluster/*.yaml``). Once they are in Hydra's ConfigStore
(:func:`mccard_dist.hydra_guard.register_schemas`, which the CLI calls), Hydra checks the config
files and the command-line overrides while composing; :func:`composition_message` turns its
errors into this package's one-line messages. :func:`typed_config` checks a plain config (a
store's, or a composed one) against the same schemas.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
from dataclasses import dataclass, field, fields, is_dataclass
from types import UnionType
from typing import Any, Union, get_args, get_origin, get_type_hints

from omegaconf import MISSING, OmegaConf
from omegaconf.errors import (
    ConfigAttributeError,
    ConfigKeyError,
    OmegaConfBaseException,
)

from ..methods import OLD_AXIS_KEYS
from .checks import ConfigError


@dataclass
class ExperimentConfig:
    name: str = MISSING
    methods: list[str] = MISSING
    tau: list[float] = MISSING
    psi: list[float] = MISSING
    seeds: Any = MISSING  # {start, count} or a list of seeds


#: where configs written before ``grid`` kept a method's grid (read, not offered in hints)
_OLD_GRID_KEYS = tuple(OLD_AXIS_KEYS)


@dataclass
class MethodConfig:
    estimator: str = MISSING
    params: dict[str, Any] | None = field(default_factory=dict)
    # the CV grid under the kind's names: {kernel_width: [...] or auto, alpha_ratio: [...]}
    grid: dict[str, Any] | None = field(default_factory=dict)
    # where configs written before ``grid`` kept its width and penalty axes (stores' configs)
    kernel_width: Any = None
    alpha_ratio: list[float] | None = None


@dataclass
class PaperDataConfig:
    source: str | None = "paper"
    n_train: int = MISSING
    n_test: int = MISSING
    n_features: int = MISSING
    n_relevant: int = MISSING
    noise_var: float = MISSING
    outliers: str | None = "laplace"
    df: float | None = None
    leverage: bool = False
    rho: float = 0.0


@dataclass
class FileDataConfig:
    source: str | None = "file"
    path: str = MISSING
    target: str | None = None
    test_fraction: float = 0.3
    standardize: bool = True
    outliers: str | None = "laplace"
    df: float | None = None
    sha256: str | None = None


@dataclass
class DiabetesDataConfig:
    source: str | None = "diabetes"
    n_train: int = MISSING
    n_noise_features: int = MISSING
    standardize: bool = True
    outliers: str | None = "laplace"
    df: float | None = None


#: the schema of each ``data.source``
DATA_SCHEMAS = {"paper": PaperDataConfig, "file": FileDataConfig, "diabetes": DiabetesDataConfig}


@dataclass
class CVConfig:
    n_folds: int = MISSING
    score: str = MISSING
    reference_width: float = MISSING
    scheme: str = "kfold"
    path_stop: float | None = None
    race: float | None = None
    paths: str | None = None  # None: width with kfold, none with alo


@dataclass
class RunConfig:
    fits_per_block: int = MISSING
    blocks_per_worker: int = MISSING
    retries: int = MISSING
    save_coef: bool = MISSING
    retry_failed: bool = MISSING
    progress: bool = MISSING
    unit: str | None = "auto"


@dataclass
class StoreConfig:
    root: str = MISSING
    path: str | None = None
    verify: str | None = "quick"


@dataclass
class _Cluster:
    """What every kind has: ``no_worker_timeout`` (a duration, kept as written) and the
    backend's further keyword arguments, ``options``."""

    kind: str = MISSING
    no_worker_timeout: Any = None
    options: dict[str, Any] | None = field(default_factory=dict)


@dataclass
class LocalClusterConfig(_Cluster):
    kind: str = "local"
    n_workers: int | None = None
    threads_per_worker: int | None = None
    memory_limit: Any = None  # "auto", a size, or bytes
    host: str | None = None
    dashboard_address: str | None = None
    tls: bool | None = None


@dataclass
class _RunningScheduler(_Cluster):
    """A scheduler that is already running: how long to try to reach it, and the TLS files of a
    scheduler that requires TLS."""

    connect_timeout: Any = None
    tls_ca_file: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None


@dataclass
class AddressClusterConfig(_RunningScheduler):
    kind: str = "address"
    address: str | None = None


@dataclass
class SchedulerFileClusterConfig(_RunningScheduler):
    kind: str = "scheduler_file"
    scheduler_file: str | None = None


@dataclass
class SlurmClusterConfig(_Cluster):
    """Sizes, walltimes and durations stay as written (``Any``) for their own checks, which tell
    a quoted "01:00:00" from a number; the job script's lines likewise, so that a number is
    refused rather than written into the script."""

    kind: str = "slurm"
    cores: int | None = None
    processes: int | None = None
    memory: Any = None
    walltime: Any = None
    queue: str | None = None
    account: str | None = None
    interface: str | None = None
    log_directory: str | None = None
    job_extra_directives: list[Any] = field(default_factory=list)
    job_script_prologue: list[Any] = field(default_factory=list)
    n_jobs: int | None = None
    adaptive: Any = None  # {minimum, maximum}; Hydra cannot set a typed node that is null
    worker_lifetime: Any = None
    lifetime_stagger: Any = None
    python: str | None = None
    dashboard_address: str | None = None


@dataclass
class PBSClusterConfig(SlurmClusterConfig):
    kind: str = "pbs"
    resource_spec: str | None = None


#: the schema of each ``cluster.kind``
CLUSTER_SCHEMAS = {"local": LocalClusterConfig, "address": AddressClusterConfig,
                   "scheduler_file": SchedulerFileClusterConfig, "slurm": SlurmClusterConfig,
                   "pbs": PBSClusterConfig}


@dataclass
class Config:
    experiment: ExperimentConfig = field(default_factory=ExperimentConfig)
    methods: dict[str, MethodConfig] = field(default_factory=dict)
    data: Any = MISSING  # one of DATA_SCHEMAS, by data.source
    cv: CVConfig = field(default_factory=CVConfig)
    run: RunConfig = field(default_factory=RunConfig)
    store: StoreConfig = field(default_factory=StoreConfig)
    cluster: Any = MISSING  # one of CLUSTER_SCHEMAS, by cluster.kind


def _plain_type(hint):
    while get_origin(hint) in (Union, UnionType):
        hint = next(a for a in get_args(hint) if a is not type(None))
    return hint


def _keys(cls) -> list[str]:
    return [f.name for f in fields(cls)]


def _unknown(cls, prefix: str, name: str) -> str:
    """The message for the key ``name`` that the dataclass ``cls`` (at ``prefix``) lacks."""
    key = f"{prefix}.{name}" if prefix else name
    kinds = [k for k, c in CLUSTER_SCHEMAS.items() if name in _keys(c)]
    if cls in CLUSTER_SCHEMAS.values() and kinds:
        kind = next(k for k, c in CLUSTER_SCHEMAS.items() if c is cls)
        hint = " (use cluster.n_jobs: workers = n_jobs x processes)" if (
            name == "n_workers" and kind in ("slurm", "pbs")) else ""
        return (f"{key}: is not used by cluster.kind={kind} (it is a setting of "
                f"{', '.join(kinds)}){hint}")
    hint = ""
    if cls in CLUSTER_SCHEMAS.values():
        hint = "; other backend keyword arguments go under cluster.options"
    elif cls in DATA_SCHEMAS.values():
        sources = [k for k, c in DATA_SCHEMAS.items() if name in _keys(c)]
        hint = f" (a key of data.source={' or '.join(sources)})" if sources else ""
    known = _keys(cls)
    if cls is MethodConfig:  # the grid's old places are read, not offered
        known = [k for k in known if k not in _OLD_GRID_KEYS]
    close = difflib.get_close_matches(name, known, n=1)
    if not close and cls is MethodConfig:
        close = _method_key_hint(name)
    hint += f"; did you mean {prefix}.{close[0]}?" if close else ""
    return f"{key}: unknown key(s); known keys are {', '.join(known)}{hint}"


def _method_key_hint(name: str) -> list[str]:
    """Where a key put directly under a method belongs: its grid (a name some estimator's grid
    has, such as Huber's ``epsilon``) or its params (an estimator's parameter)."""
    from ..methods import KINDS
    from .specs import _init_parameters

    if any(name in kind.grid_names for kind in KINDS.values()):
        return [f"grid.{name}"]
    if any(name in _init_parameters(kind.cls) for kind in KINDS.values()):
        return [f"params.{name}"]
    old = difflib.get_close_matches(name, _OLD_GRID_KEYS, n=1)
    return [f"grid.{old[0]}"] if old else []


#: OmegaConf's words for a value it cannot take -> what the key asks for
_CONVERSIONS = (("with ListConfig", "must be a list"), ("does not support deletion",
                                                         "cannot be removed (set it instead)"),
                ("to Integer", "must be an integer"), ("to Float", "must be a real number"),
                ("valid bool", "must be true or false"), ("to string", "must be a string"),
                ("not a ListConfig", "must be a list"), ("to Dict", "must be a mapping"),
                ("Incompatible value 'None'", "must not be null"),
                ("is not Optional", "must not be null"),
                ("NoneType is not a subclass", "must not be null"))


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0]


def _one_line(cause: OmegaConfBaseException, prefix: str = "") -> str | None:
    """OmegaConf's error (in the section at ``prefix``) as this package's one-line message:
    a key the schema does not have, or a value it cannot take; None for other errors."""
    key = ".".join(p for p in (prefix, str(cause.full_key or "")) if p).replace(".[", "[")
    parent, _, name = key.rpartition(".")
    if isinstance(cause, (ConfigKeyError, ConfigAttributeError)) and is_dataclass(
            cause.object_type) and name:
        return _unknown(cause.object_type, parent, name)
    text = _first_line(cause)
    wants = next((w for words, w in _CONVERSIONS if words in text), None)
    if not key or wants is None:
        return None
    shown = wants.endswith(("null", "instead)")) or getattr(cause, "value", None) is None
    return f"{key}: {wants}" + ("" if shown else f", got {cause.value!r}")


def composition_message(exc: BaseException) -> str | None:
    """The one-line message for a Hydra composition error that the schema raised (a value of
    the wrong type, or a key the schema does not have), or None for other errors. A name a
    method's grid does not have (its names are the estimator's, not the schema's) is said so."""
    grid_key = re.match(r"Could not override '(methods\.([^.']+)\.grid\.([^']+))'", str(exc))
    if grid_key:
        key, method, name = grid_key.groups()
        return (f"{key}: no such key: is {method} one of the config's methods, and {name} a "
                "name of its grid (its method config lists them under grid)?")
    while exc is not None and not isinstance(exc, OmegaConfBaseException):
        exc = exc.__cause__
    return None if exc is None else _one_line(exc)


def _check_shapes(value, wanted, key: str) -> None:
    """Refuse a non-mapping where the schema has a section or a mapping, and a mapping where it
    has a list (OmegaConf's merge reports both without the key)."""
    wanted = _plain_type(wanted)
    if value is None:
        return
    if get_origin(wanted) is list and isinstance(value, dict):
        raise ConfigError(f"{key}: must be a list, got {value!r}")
    if not (is_dataclass(wanted) or get_origin(wanted) is dict):
        return
    if not isinstance(value, dict):
        raise ConfigError(f"{key}: must be a mapping, got {value!r}")
    hints = get_type_hints(wanted) if is_dataclass(wanted) else {}
    for name, inner in value.items():
        inner_type = hints.get(name) if hints else get_args(wanted)[1]
        _check_shapes(inner, inner_type, f"{key}.{name}")


@functools.cache
def _structured(cls):
    return OmegaConf.structured(cls)


def _typed_section(cls, value, prefix: str) -> dict:
    """One section merged into its schema, as plain Python; ``???`` is left in."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):  # a value JSON cannot hold: OmegaConf reports it
        return json.loads(_typed_text.__wrapped__(cls, value, prefix))
    return json.loads(_typed_text(cls, text, prefix))


@functools.lru_cache(maxsize=1024)
def _typed_text(cls, value: str | dict, prefix: str) -> str:
    """:func:`_typed_section` on JSON text (or a dict), as JSON text; cached, since OmegaConf's
    merge takes a millisecond a section and the same sections are checked again and again."""
    value = json.loads(value) if isinstance(value, str) else value
    if not isinstance(value, dict):
        raise ConfigError(f"{prefix}: must be a mapping, got {value!r}")
    _check_shapes(value, cls, prefix)
    try:
        return json.dumps(OmegaConf.to_container(OmegaConf.merge(_structured(cls), value)))
    except (OmegaConfBaseException, ValueError) as exc:
        message = _one_line(exc, prefix) if isinstance(exc, OmegaConfBaseException) else None
        raise ConfigError(message or f"{prefix}: {_first_line(exc)}") from None


def _first_missing(value, key: str) -> str | None:
    if value == "???":
        return key
    items = value.items() if isinstance(value, dict) else enumerate(
        value if isinstance(value, list) else ())
    for name, inner in items:
        inner_key = f"{key}[{name}]" if isinstance(value, list) else f"{key}.{name}"
        found = _first_missing(inner, inner_key)
        if found:
            return found
    return None


def _schema_of(section: str, value: dict):
    """The schema of ``data`` (by its source) or ``cluster`` (by its kind)."""
    if section == "data":
        source = value.get("source") or "paper"
        if not isinstance(source, str) or source not in DATA_SCHEMAS:
            raise ConfigError(f"data.source: must be one of {', '.join(DATA_SCHEMAS)}, "
                              f"got {source!r}")
        return DATA_SCHEMAS[source]
    kind = value.get("kind")
    if kind is None or kind == "???":
        raise ConfigError("cluster.kind: missing mandatory value")
    if not isinstance(kind, str) or kind not in CLUSTER_SCHEMAS:
        raise ConfigError(f"cluster.kind: unknown cluster kind; known kinds are "
                          f"{', '.join(CLUSTER_SCHEMAS)}, got {kind!r}")
    return CLUSTER_SCHEMAS[kind]


def typed_config(d: dict) -> dict:
    """``d`` (a resolved config without Hydra's node) merged section by section into the
    schema, as plain Python with every value of its declared type. The cluster section keeps
    ``???`` (its required keys depend on the kind and are reported with it) and leaves out keys
    of other kinds that are unset (:meth:`ClusterSpec.to_dict` writes every kind's keys)."""
    typed = {}
    for name, hint in get_type_hints(Config).items():
        value = d[name]
        if not isinstance(value, dict):
            raise ConfigError(f"{name}: must be a mapping, got {value!r}")
        if name == "methods":
            typed[name] = {m: _typed_section(MethodConfig, v, f"methods.{m}")
                           for m, v in value.items()}
        else:
            cls = _schema_of(name, value) if name in ("data", "cluster") else hint
            if name == "cluster":  # to_dict writes every kind's keys, those of others unset
                others = {k for c in CLUSTER_SCHEMAS.values() for k in _keys(c)} - set(_keys(cls))
                value = {k: v for k, v in value.items()
                         if k not in others or v not in (None, [], {}, "")}
            typed[name] = _typed_section(cls, value, name)
            if name == "cluster":  # kept: checked with the kind (mccard_dist.config.cluster_rules)
                typed[name].update({k: v for k, v in value.items() if v == "???"})
        # ``???`` given (a merge keeps the default under it) or left unset; the cluster's
        # required keys depend on its kind and are reported with it
        missing = None if name == "cluster" else (_first_missing(value, name)
                                                  or _first_missing(typed[name], name))
        if missing:
            raise ConfigError(f"{missing}: missing mandatory value")
    return typed


#: ``(group, name, schema)``: how ``conf/`` names the schemas in its defaults lists
#: (:func:`mccard_dist.hydra_guard.register_schemas` puts them into Hydra's ConfigStore)
SCHEMAS = ((None, "mccard_schema", Config),
           *(("schema/data", source, cls) for source, cls in DATA_SCHEMAS.items()),
           *(("schema/cluster", kind, cls) for kind, cls in CLUSTER_SCHEMAS.items()))
