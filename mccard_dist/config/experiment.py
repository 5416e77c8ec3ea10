"""The whole experiment (:class:`ExperimentSpec`), built by OmegaConf from a resolved config into
the dataclasses of :mod:`.specs`, :mod:`.method`, :mod:`.data` and :mod:`.cluster`, OmegaConf's
errors said as this package's one-line messages (``key: what to change``)."""

from __future__ import annotations

import difflib
import functools
import importlib.util
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, is_dataclass
from operator import attrgetter
from typing import Any, get_args, get_origin, get_type_hints

from .checks import MISSING, NAME_RE, ConfigError, Sealed, fail, to_plain
from .cluster import CLUSTER_SCHEMAS
from .data import DATA_SCHEMAS
from .folders import config_path, method_files, register_resolvers
from .method import MethodSpec
from .specs import CVSpec, ExperimentSection, RunSpec, StoreSpec

#: the top-level keys of a resolved config (``hydra``: Hydra's own node, not read here)
TOP_LEVEL_KEYS = ("experiment", "methods", "data", "cv", "run", "store", "cluster", "hydra")


@dataclass(unsafe_hash=True)
class ExperimentSpec(Sealed):
    """The whole experiment: the grid (methods x tau x psi x seeds), data, CV, run, store and
    cluster, in the config's layout. The config gives every method under ``methods`` by name;
    the spec keeps the ones ``experiment.methods`` selects, in its order, as a tuple (every one
    is checked). :meth:`to_dict` gives the layout back as plain JSON-able Python, and
    ``spec_from_dict(spec.to_dict()) == spec``."""

    experiment: ExperimentSection = MISSING
    methods: dict[str, MethodSpec] = MISSING
    data: Any = MISSING
    cv: CVSpec = MISSING
    run: RunSpec = MISSING
    store: StoreSpec = MISSING
    cluster: Any = MISSING

    def check(self):
        if not isinstance(self.methods, tuple):  # a copy of a spec has them selected already
            checked = {name: method.checked(name) for name, method in self.methods.items()}
            self.methods = tuple(checked[name] for name in self.experiment.methods)
        lacking = {}  # module -> the methods that need it
        for method in self.methods:
            needs = method.kind.requires
            if needs is not None and importlib.util.find_spec(needs) is None:
                ours = method.estimator.startswith("mccard_dist.")  # an extra of the package's
                lacking.setdefault((needs, "'mccard-dist[peers]'" if ours else needs),
                                   []).append(method.name)
        for (needs, install), names in lacking.items():
            fail("experiment.methods", f"{', '.join(names)} need{'s' * (len(names) == 1)} "
                                       f"{needs}, which is not installed: pip install {install}",
                 list(self.experiment.methods))
        if self.data.source not in ("file", "generator"):  # known once read or called (check_data)
            self.cv.check_rows(self.data.n_train, f"data.n_train ({self.data.n_train})")
        if self.run.unit == "fit" and (self.cv.scheme != "kfold" or self.cv.race is not None):
            what = "cv.race" if self.cv.race is not None else "cv.scheme=alo"
            fail("run.unit", f"fit splits K-fold CV into one task per fit; {what} decides which "
                             "fits to run from the ones before, inside one cell's task: use "
                             "run.unit=cell (or auto)", "fit")
        lacking = [m.name for m in self.methods if m.has_cv and not m.kind.alo]
        if self.cv.scheme == "alo" and lacking:
            fail("cv.scheme", f"alo needs leave-one-out residuals, which {', '.join(lacking)} do "
                              "not give; use cv=kfold", "alo")

    def _check_metrics(self) -> None:
        """Import the metrics of one's own (the config is the user's) and refuse one that is not
        a Metric, repeats a name or takes a name the store uses for another value."""
        from ..metrics import table
        from ..records import SCALARS

        try:
            found = table(self.experiment.metrics)
        except ValueError as exc:
            fail("experiment.metrics", str(exc), list(self.experiment.metrics))
        taken = {*SCALARS, "status", "error", "coef", "cv_score"}
        for m in found:
            if m.name in taken or m.name.startswith("chosen_") or not NAME_RE.match(m.name):
                fail("experiment.metrics", f"a metric is named {m.name!r}, a name the store "
                                           "keeps for another value (or not a plain name); "
                                           "rename it", list(self.experiment.metrics))
        rule = self.experiment.stop
        names = [m.name for m in found]
        for key, pairs in (("precision", rule.precision if rule else ()),
                           ("claims.margin", rule.margin if rule else ())):
            for name, _ in pairs:
                if name not in names:
                    close = difflib.get_close_matches(name, names, n=1)
                    fail(f"experiment.stop.{key}", f"{name!r} is not a metric of this experiment"
                         + (f"; did you mean {close[0]!r}?" if close else
                            f" (they are {', '.join(names)})"), dict(pairs))

    @property
    def metric_table(self) -> tuple:
        """The metrics of every cell: the built-in ones, then those of ``experiment.metrics``
        (:func:`mccard_dist.metrics.table`)."""
        from ..metrics import table

        return table(tuple(self.experiment.metrics))

    name = property(attrgetter("experiment.name"))
    tau = property(attrgetter("experiment.tau"))
    psi = property(attrgetter("experiment.psi"))
    seeds = property(attrgetter("experiment.seeds"))
    stop = property(attrgetter("experiment.stop"))

    @property
    def method_names(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.methods)

    def method(self, name: str) -> MethodSpec:
        for m in self.methods:
            if m.name == name:
                return m
        raise KeyError(f"no method {name!r} in this experiment; methods are {self.method_names}")

    def check_data(self) -> None:
        """Import the metrics of one's own and read the data where they come from a file or a
        generator of one's own (which :func:`spec_from_dict` does not: it reads stores too), and
        check the folds against the training rows: call before anything is created."""
        self._check_metrics()
        if self.data.source == "generator":
            self.data.checked_generator()
            try:
                n = self.data.n_train
            except Exception as exc:  # noqa: BLE001 - the generator's code, said in one line
                said = " ".join(str(exc).split())[:300]
                fail("data.generator", f"its call at seed 0, psi 0, tau 1 failed: "
                                       f"{type(exc).__name__}: {said}", self.data.generator)
            self.cv.check_rows(n, f"the {n} training rows {self.data.generator} gives (too few "
                                  f"for {self.cv.n_folds} folds; lower cv.n_folds)")
        if self.data.source == "file":
            self.data.load_source()
            n = self.data.n_train
            self.cv.check_rows(n, f"the {n} training rows of {self.data.path} (too few rows for "
                                  f"{self.cv.n_folds} folds; lower cv.n_folds)")

    def to_dict(self) -> dict:
        exp = self.experiment
        return {"experiment": {"name": exp.name, "methods": list(self.method_names),
                               "tau": list(exp.tau), "psi": list(exp.psi),
                               "seeds": list(exp.seeds), "metrics": list(exp.metrics),
                               **({"stop": exp.stop.to_dict()} if exp.stop else {})},
                "methods": {m.name: m.to_dict() for m in self.methods},
                "data": self.data.to_dict(),
                **{name: to_plain(asdict(getattr(self, name))) for name in ("cv", "run", "store")},
                "cluster": self.cluster.to_dict()}


def schemas() -> list:
    """``(group, name, node)`` of every schema, as ``conf/`` names them in its defaults lists:
    the whole config ``mccard_schema``, and ``schema/data/<source>``, ``schema/cluster/<kind>``."""
    from omegaconf import OmegaConf

    return [(None, "mccard_schema", OmegaConf.structured(ExperimentSpec)),
            *(("schema/data", s, OmegaConf.structured(c)) for s, c in DATA_SCHEMAS.items()),
            *(("schema/cluster", k, OmegaConf.structured(c)) for k, c in CLUSTER_SCHEMAS.items())]


def _keys(cls) -> list[str]:
    return [f.name for f in fields(cls) if f.name != "name" or cls is not MethodSpec]


#: keys an earlier version of the schema had, and what took their place
RENAMED = {"run.fits_per_block": "run.block_seconds (tasks are sized by the seconds they take)"}


def _unknown(cls, parent: str, name: str) -> str:
    """The message for a key ``name`` that the dataclass ``cls`` (at ``parent``) lacks."""
    key = f"{parent}.{name}" if parent else name
    if key in RENAMED:
        return f"{key}: no longer a key; use {RENAMED[key]}"
    if cls in CLUSTER_SCHEMAS.values():
        kinds = [k for k, c in CLUSTER_SCHEMAS.items() if name in _keys(c)]
        if kinds:
            hint = f" ({cls.instead[name]})" if name in cls.instead else ""
            return (f"{key}: is not used by cluster.kind={cls.kind} (it is a setting of "
                    f"{', '.join(kinds)}){hint}")
    if name in getattr(cls, "aliases", {}):
        typed = cls.aliases[name]
        return (f"{key}: not a key; for cluster.kind={cls.kind} use cluster.{typed} "
                f"(cluster.{typed}=<{name}>)")
    known = _keys(cls)
    hint = ""
    if cls in CLUSTER_SCHEMAS.values():
        hint = "; other backend keyword arguments go under cluster.options"
    elif cls in DATA_SCHEMAS.values():
        sources = [s for s, c in DATA_SCHEMAS.items() if name in _keys(c)]
        hint = f" (a key of data.source={' or '.join(sources)})" if sources else ""
    close = difflib.get_close_matches(name, known, n=1)
    if not close and not parent:  # a section's key given at the top: psi=0.3
        sections = {"experiment": [ExperimentSection], "cv": [CVSpec], "run": [RunSpec],
                    "store": [StoreSpec], "data": DATA_SCHEMAS.values(),
                    "cluster": CLUSTER_SCHEMAS.values()}
        close = [f"{section}.{name}" for section, classes in sections.items()
                 if any(name in _keys(c) for c in classes)][:1]
        if close:
            return f"{key}: unknown key(s); known keys are {', '.join(known)}; did you mean " \
                   f"{close[0]}?"
    if not close and cls is MethodSpec:  # a grid name or an estimator parameter put here
        grid, params = _method_names()
        grid = difflib.get_close_matches(name, grid, n=1)
        params = difflib.get_close_matches(name, params, n=1)
        close = [f"grid.{grid[0]}"] if grid else [f"params.{params[0]}"] if params else []
    if close:
        hint += f"; did you mean {parent + '.' if parent else ''}{close[0]}?"
    return f"{key}: unknown key(s); known keys are {', '.join(known)}{hint}"


@functools.lru_cache(maxsize=1)
def _method_names() -> tuple[set, set]:
    """The declared grid names and the constructor parameters of the shipped methods' estimators
    (hints for a key put under a method where neither belongs)."""
    from omegaconf import OmegaConf

    from ..methods import kind_of

    grid, params = set(), set()
    for file in method_files(config_path(environ={})).values():
        kind = kind_of(OmegaConf.load(file).estimator)
        grid.update(n for n in (kind.width_param, kind.penalty_name) if n)
        params.update(kind.param_names())
    return grid, params


@functools.lru_cache(maxsize=None)
def _type_hints(cls) -> dict:
    """``get_type_hints(cls)``, evaluated once per class: each check of a config reads them
    for every key, and evaluating the annotations is costly."""
    return get_type_hints(cls)


def _wants(cls, name) -> str | None:
    """What the schema's field ``name`` of ``cls`` (or the element of a list) must be."""
    try:
        hint = _type_hints(cls)[name]
    except (KeyError, TypeError):
        return None
    while get_origin(hint) is not None and type(None) in get_args(hint):  # Optional
        hint = next(a for a in get_args(hint) if a is not type(None))
    if get_origin(hint) is list:
        return "must be a list"
    if get_origin(hint) is dict or is_dataclass(hint):
        return "must be a mapping"
    return {int: "must be an integer", float: "must be a real number", bool: "must be true or "
            "false", str: "must be a string"}.get(hint)


def _one_line(exc) -> str | None:
    """OmegaConf's error as this package's one-line message, or None for another error."""
    from omegaconf.errors import (ConfigAttributeError, ConfigKeyError, MissingMandatoryValue,
                                  OmegaConfBaseException, ReadonlyConfigError)

    if not isinstance(exc, OmegaConfBaseException):
        return None
    key = str(exc.full_key or "").replace(".[", "[")
    parent, _, name = key.rpartition(".")
    first = (str(exc).splitlines() or [""])[0]
    cls = exc.object_type
    if isinstance(exc, (ConfigKeyError, ConfigAttributeError)) and is_dataclass(cls) and name:
        return _unknown(cls, parent, name)
    if isinstance(exc, MissingMandatoryValue):
        if parent == "cluster" and name in getattr(cls, "examples", ()):
            return cls.unset_message(name)
        return f"{key}: missing mandatory value"
    if isinstance(exc, ReadonlyConfigError) or "does not support deletion" in first:
        return f"{key}: cannot be removed (set it instead)"
    if not key:
        return None
    if getattr(exc, "value", None) is None and ("None" in first or "Optional" in first):
        return f"{key}: must not be null"
    field_name = name.split("[")[0]
    wants = _wants(cls, field_name) if is_dataclass(cls) else None
    if "[" in name or "ListConfig" in first and "with ListConfig" not in first:
        element = cls if is_dataclass(cls) else None
        hint = (_type_hints(element).get(field_name) if element
                else getattr(exc, "ref_type", None))
        args = get_args(hint) if hint is not None else ()
        wants = {int: "must be an integer", float: "must be a real number"}.get(
            args[0] if args else None, wants)
    if "is not a ListConfig" in first:  # one value given for a list
        value = getattr(exc, "value", None)
        return f"{key}: must be a list" + (f", e.g. {key}=[{value}]" if value is not None else "")
    if "with ListConfig" in first:
        wants = "must be a list"
    elif "with DictConfig" in first or "to Dict" in first:
        wants = "must be a mapping"
    if wants is None:
        return None
    shown = wants.endswith(("list", "mapping")) or getattr(exc, "value", None) is None
    return f"{key}: {wants}" + ("" if shown else f", got {exc.value!r}")


def composition_message(exc: BaseException) -> str | None:
    """The one-line message for a Hydra composition error the schema raised (a value of the wrong
    type, a key the schema does not have), or None for other errors. A name a method's grid does
    not have (its names are the estimator's, which the schema leaves open) is said so."""
    from omegaconf.errors import OmegaConfBaseException

    grid_key = re.match(r"Could not override '(methods\.([^.']+)\.grid\.([^']+))'", str(exc))
    if grid_key:
        key, method, name = grid_key.groups()
        return (f"{key}: no such key: is {method} one of the config's methods, and {name} a "
                "name of its grid (its method config lists them under grid)?")
    while exc is not None and not isinstance(exc, OmegaConfBaseException):
        exc = exc.__cause__
    return None if exc is None else _one_line(exc)


def _shape(cls, d: Mapping, prefix: str) -> None:
    """Refuse, naming the key, what a merge into the schema ``cls`` would not: ``???`` where
    the schema has a default (the merge keeps the default), and a list or mapping of the wrong
    shape (the merge fails without a key)."""
    hints = _type_hints(cls)
    for name, value in d.items():
        key = f"{prefix}.{name}"
        if isinstance(value, str) and value == MISSING:
            raise ConfigError(f"{key}: missing mandatory value")
        if name not in hints or value is None:
            continue
        wants = _wants(cls, name)
        if wants == "must be a list" and not isinstance(value, list) or (
                wants == "must be a mapping" and not isinstance(value, Mapping)):
            raise ConfigError(f"{key}: {wants}")
        hint = hints[name]
        if get_origin(hint) is not None:
            hint = next((a for a in get_args(hint) if is_dataclass(a)), None)
        if is_dataclass(hint) and isinstance(value, Mapping):
            _shape(hint, value, key)


def _schema_of(section: str, value) -> type:
    """The class of ``data`` (by its source) or ``cluster`` (by its kind)."""
    if section == "data":
        source = value.get("source") or "paper"
        if not isinstance(source, str) or source not in DATA_SCHEMAS:
            fail("data.source", f"must be one of {', '.join(DATA_SCHEMAS)}", source)
        return DATA_SCHEMAS[source]
    kind = value.get("kind")
    if kind is None or kind == MISSING:
        raise ConfigError("cluster.kind: missing mandatory value")
    if not isinstance(kind, str) or kind not in CLUSTER_SCHEMAS:
        fail("cluster.kind", f"unknown cluster kind; known kinds are "
                             f"{', '.join(CLUSTER_SCHEMAS)}", kind)
    return CLUSTER_SCHEMAS[kind]


def spec_from_dict(d: Mapping) -> ExperimentSpec:
    """Check a resolved config (plain Python: ``OmegaConf.to_container(cfg, resolve=True)``, or
    :meth:`ExperimentSpec.to_dict`) and build the :class:`ExperimentSpec`.

    Raises
    ------
    ConfigError
        For the first missing or invalid value; the message starts with its key.
    """
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    if not isinstance(d, Mapping):
        raise ConfigError(f"config: must be a mapping, got {type(d).__name__}")
    d = {k: v for k, v in to_plain(d).items() if k != "hydra"}
    for key in d:
        if key not in TOP_LEVEL_KEYS:
            within = [f"{s}.{key}" for s in TOP_LEVEL_KEYS[:-1]
                      if isinstance(d.get(s), Mapping) and key in d[s]]
            hint = within[:1] or difflib.get_close_matches(str(key), TOP_LEVEL_KEYS, n=1)
            raise ConfigError(f"{key}: unknown key; known top-level keys are "
                              f"{', '.join(TOP_LEVEL_KEYS)}"
                              + (f"; did you mean {hint[0]}?" if hint else ""))
    for section in TOP_LEVEL_KEYS[:-1]:
        if section not in d:
            raise ConfigError(f"{section}: missing config section")
        if not isinstance(d[section], Mapping):
            fail(section, "must be a mapping", d[section])
    for name, method in d["methods"].items():
        if not isinstance(method, Mapping):
            fail(f"methods.{name}", "must be a mapping", method)
        _shape(MethodSpec, method, f"methods.{name}")
    listed, methods = d["experiment"].get("methods"), d["methods"]
    for name in listed if isinstance(listed, list) else []:  # else the section refuses it
        if not isinstance(name, str):
            fail("experiment.methods", f"must be a list of method names, got {name!r} in it",
                 listed)
        if name not in methods:  # a misspelt name, refused at once
            raise ConfigError(unknown_method(name, list(methods), listed))
    selected = set(listed) if isinstance(listed, list) else set()
    d = {**d, "methods": {name: m for name, m in methods.items() if name in selected}}
    schemas = {"experiment": ExperimentSection, "cv": CVSpec, "run": RunSpec,
               "store": StoreSpec, "data": _schema_of("data", d["data"]),
               "cluster": _schema_of("cluster", d["cluster"])}
    for section, cls in schemas.items():
        _shape(cls, d[section], section)
    try:
        root = OmegaConf.structured(ExperimentSpec)
        root.data = OmegaConf.structured(schemas["data"])
        root.cluster = OmegaConf.structured(schemas["cluster"])
        return OmegaConf.to_object(OmegaConf.merge(root, d))
    except OmegaConfBaseException as exc:
        raise ConfigError(_one_line(exc) or (str(exc).splitlines() or ["config"])[0]) from None


def data_spec_from_dict(d: Mapping):
    """The data section of a config alone (a store's, to rebuild its cells' data), checked as
    :func:`spec_from_dict` checks it: no method is built, so nothing a store names is
    imported."""
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    if not isinstance(d, Mapping):
        fail("data", "must be a mapping", d)
    cls = _schema_of("data", d)
    _shape(cls, d, "data")
    try:
        return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(cls), to_plain(d)))
    except OmegaConfBaseException as exc:
        raise ConfigError(_one_line(exc) or (str(exc).splitlines() or ["data"])[0]) from None


def unknown_method(name: str, known: list[str], listed) -> str:
    """The message for ``experiment.methods`` (``listed``) naming a method ``name`` that the
    config's ``known`` methods do not include."""
    close = difflib.get_close_matches(name, known, n=1)
    return (f"experiment.methods: unknown method {name!r}; known methods are {', '.join(known)}"
            + (f"; did you mean {close[0]}?" if close else "") + f", got {listed!r}")


def from_dictconfig(cfg) -> ExperimentSpec:
    """Resolve a composed Hydra config to plain Python (Hydra's own node left out) and build the
    spec (:func:`spec_from_dict`)."""
    from omegaconf import OmegaConf

    register_resolvers()
    if "hydra" in cfg:
        cfg = OmegaConf.masked_copy(cfg, [k for k in cfg if k != "hydra"])
    return spec_from_dict(OmegaConf.to_container(cfg, resolve=True, throw_on_missing=False))
