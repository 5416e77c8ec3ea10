"""From a resolved config (plain Python, or a Hydra DictConfig) to an ExperimentSpec."""

from __future__ import annotations

import difflib
import math
import numbers
from collections.abc import Mapping
from pathlib import Path

from ..data import OUTLIERS, load_table
from ..data.real import DIABETES_SHAPE, split_sizes
from ..methods import KINDS, OLD_AXIS_KEYS
from ..models import AUTO_WIDTH
from .checks import (
    _EXPERIMENT_NAME_RE,
    _NAME_RE,
    ConfigError,
    FrozenMap,
    _at_least,
    _check_known,
    _check_unique,
    _fail,
    _finite,
    _float_list,
    _nonempty,
    to_plain,
)
from .cluster_rules import _parse_cluster
from .data_specs import DiabetesDataSpec, FileDataSpec
from .schema import typed_config
from .specs import (
    CV_PATHS,
    CV_SCHEMES,
    CV_SCORE_ALIASES,
    CV_SCORES,
    ESTIMATORS,
    RUN_UNITS,
    CVSpec,
    DataSpec,
    ExperimentSpec,
    MethodSpec,
    RunSpec,
    StoreSpec,
    _init_parameters,
)


def _parse_data(section: Mapping):
    """The typed data section, of the schema of its source."""
    if section.get("source") == "file":
        return _parse_file_data(section)
    if section.get("source") == "diabetes":
        return _parse_diabetes_data(section)
    n_train = _at_least("data.n_train", section["n_train"], 3)  # an estimator's minimum
    n_test = _at_least("data.n_test", section["n_test"], 1)
    n_features = _at_least("data.n_features", section["n_features"], 1)
    n_relevant = _at_least("data.n_relevant", section["n_relevant"], 0)
    if n_relevant > n_features:
        _fail("data.n_relevant", f"must be <= data.n_features ({n_features})", n_relevant)
    noise_var = _finite("data.noise_var", section["noise_var"])
    if noise_var < 0:
        _fail("data.noise_var", "must be >= 0", noise_var)
    outliers, df = _parse_outliers(section)
    rho = _finite("data.rho", section["rho"])
    if not 0.0 <= rho < 1.0:
        _fail("data.rho", "must be in [0, 1)", rho)
    return DataSpec(n_train, n_test, n_features, n_relevant, noise_var, outliers, df,
                    section["leverage"], rho)


def _parse_outliers(section: Mapping) -> tuple[str, float | None]:
    outliers = section.get("outliers") or "laplace"
    if outliers not in OUTLIERS:
        _fail("data.outliers", f"must be one of {', '.join(OUTLIERS)}", outliers)
    df = section.get("df")
    if df is not None:
        _finite("data.df", df)
    if outliers == "student_t":
        if df is None:
            _fail("data.df", "is required with data.outliers=student_t (degrees of freedom, > 0)",
                  None, show_value=False)
        if not df > 0:
            _fail("data.df", "must be > 0", df)
    elif df is not None:
        _fail("data.df", "is only used with data.outliers=student_t", df)
    return outliers, df


def _parse_file_data(section: Mapping) -> FileDataSpec:
    """``data.source=file``: the file is read and checked here, before any store or cluster."""
    path = _nonempty("data.path", section["path"])
    target = _nonempty("data.target", section["target"], allow_none=True)
    test_fraction = section["test_fraction"]
    if not 0.0 < test_fraction < 1.0:
        _fail("data.test_fraction", "must be in (0, 1)", test_fraction)
    standardize = section["standardize"]
    outliers, df = _parse_outliers(section)
    pinned = _nonempty("data.sha256", section["sha256"], allow_none=True)
    table = load_table(path, target)
    if pinned is not None and pinned != table.sha256:
        _fail("data.sha256", f"{path} holds other data than the experiment was set up with "
                             f"(its content hash is {table.sha256[:16]}...); remove data.sha256 "
                             "to use the file as it is now (a new grid)", pinned[:16] + "...")
    if table.X_test is None:
        if table.n_rows < 4:
            _fail("data.path", f"{Path(path).name} has {table.n_rows} rows: a random train/test "
                               "split needs at least 4 (or give X_test and y_test)", show_value=False)
        n_train, n_test = split_sizes(table.n_rows, test_fraction)
    else:
        n_train, n_test = table.n_rows, len(table.y_test)
    n_relevant = None if table.coef_true is None else int((table.coef_true != 0).sum())
    return FileDataSpec(path=path, target=target, test_fraction=test_fraction,
                        standardize=standardize, outliers=outliers, df=df, sha256=table.sha256,
                        n_train=n_train, n_test=n_test, n_features=table.n_features,
                        n_relevant=n_relevant)


def _parse_diabetes_data(section: Mapping) -> DiabetesDataSpec:
    n_rows = DIABETES_SHAPE[0]
    n_train = _at_least("data.n_train", section["n_train"], 3)
    if n_train > n_rows - 2:
        _fail("data.n_train", f"must leave at least 2 of the {n_rows} rows for testing", n_train)
    n_noise = _at_least("data.n_noise_features", section["n_noise_features"], 0)
    outliers, df = _parse_outliers(section)
    return DiabetesDataSpec(n_train=n_train, n_noise_features=n_noise,
                            standardize=section["standardize"], outliers=outliers, df=df)


def _cv_margin(section: Mapping, name: str, scheme: str, needs: str) -> float | None:
    """An optional margin of cv (``None``: off): a positive number, used by one scheme only."""
    value = section[name]
    if value is None:
        return None
    _finite(f"cv.{name}", value)
    if not value > 0:
        _fail(f"cv.{name}", "must be > 0 (or null: off)", value)
    if scheme != needs:
        _fail(f"cv.{name}", f"is only used with cv.scheme={needs}", value)
    return value


def _parse_cv(section: Mapping, data) -> CVSpec:
    scheme = section["scheme"]  # stores written before schemes existed: kfold
    if scheme not in CV_SCHEMES:
        _fail("cv.scheme", f"must be one of {', '.join(CV_SCHEMES)}", scheme)
    path_stop = _cv_margin(section, "path_stop", scheme, "alo")
    race = _cv_margin(section, "race", scheme, "kfold")
    # configs written before the key: kfold fits paths (the default), alo never does
    paths = section["paths"] or ("width" if scheme == "kfold" else "none")
    if paths not in CV_PATHS:
        _fail("cv.paths", f"must be one of {', '.join(CV_PATHS)}", paths)
    if scheme != "kfold" and paths != "none":
        _fail("cv.paths", "is only used with cv.scheme=kfold (set none)", paths)
    n_folds = _at_least("cv.n_folds", section["n_folds"], 2)
    if data.source == "file":  # the training rows come from the file, not from a key
        rows = f"the {data.n_train} training rows of {data.path}"
        fewer = f"{rows} (too few rows for {n_folds} folds; lower cv.n_folds)"
    else:
        rows = f"data.n_train ({data.n_train})"
        fewer = f"data.n_train={data.n_train}"
    if n_folds > data.n_train:
        _fail("cv.n_folds", f"must be <= {rows}", n_folds)
    if data.n_train - math.ceil(data.n_train / n_folds) < 3:  # an estimator's minimum
        _fail("cv.n_folds", f"leaves fewer than 3 training samples per fold with {fewer}",
              n_folds)
    score = CV_SCORE_ALIASES.get(section["score"], section["score"])
    if score not in CV_SCORES:
        _fail("cv.score", f"must be one of {', '.join(CV_SCORES)} (or scikit-learn's "
              f"{', '.join(CV_SCORE_ALIASES)})", score)
    reference_width = _finite("cv.reference_width", section["reference_width"])
    if reference_width <= 0:
        _fail("cv.reference_width", "must be > 0", reference_width)
    return CVSpec(n_folds, score, reference_width, scheme, path_stop, race, paths)


def _parse_params(key: str, estimator: str, params, widths, auto_width: bool) -> FrozenMap:
    kind = KINDS[estimator]
    cls = kind.cls
    accepted = _init_parameters(cls)
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        _fail(key, f"{', '.join(unknown)} not accepted by {cls.__name__} (estimator {estimator}); "
                   f"accepted: {', '.join(accepted)}", dict(params))
    grid_params = {kind.width_param} if kind.kernel_width else set()
    grid_params |= {"alpha"} if kind.alpha else set()
    from_grid = sorted(set(params) & grid_params)
    if from_grid:
        grid_key = key.rsplit(".", 1)[0] + ".grid"
        _fail(key, f"{', '.join(from_grid)} must not be set here: it comes from the CV grid "
                   f"({grid_key})", dict(params))
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
    if kind.kernel_width:
        extra[kind.width_param] = AUTO_WIDTH if auto_width else (widths[0] if widths else 1.0)
    if kind.alpha:
        extra["alpha"] = 0.0
    try:
        estimator_obj = cls(**converted, **extra)
        validate = getattr(estimator_obj, "_validate_params", None)
        if validate is not None:
            validate()
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{key}: {exc}") from exc
    return FrozenMap(converted)


def _method_grid(key: str, estimator: str, section: Mapping) -> dict:
    """The method's grid as ``{name: values}`` under the kind's names: ``grid``, or the axis keys
    ``kernel_width`` / ``alpha_ratio`` of a config written before ``grid`` (a store's)."""
    kind = KINDS[estimator]
    grid = section.get("grid")
    grid = dict(grid) if isinstance(grid, Mapping) else grid
    if grid is not None and not isinstance(grid, dict):
        _fail(f"{key}.grid", "must be a mapping of parameter names to lists", grid)
    grid = grid or {}
    names = kind.grid_names
    by_axis = {axis: name for name, axis in names.items()}
    old = {k: section.get(k) for k in OLD_AXIS_KEYS if section.get(k) not in (None, [], ())}
    if old and grid:
        old_key = next(iter(old))
        new = by_axis.get(OLD_AXIS_KEYS[old_key], old_key)
        _fail(f"{key}.{old_key}", f"is the old place of {key}.grid.{new}; set it there",
              old[old_key])
    for old_key, value in old.items():
        axis = OLD_AXIS_KEYS[old_key]
        if axis not in by_axis:
            what = "kernel width" if axis == "width" else "penalty"
            _fail(f"{key}.{old_key}", f"must be empty: {estimator} has no {what}", value)
        grid[by_axis[axis]] = value
    listed = ", ".join(names) if names else "nothing (it has no CV grid)"
    for name in grid:
        if name not in names:
            # the same axis under its name elsewhere (kernel_width: Huber's epsilon), or a typo
            hint = [by_axis[OLD_AXIS_KEYS[name]]] if OLD_AXIS_KEYS.get(name) in by_axis else \
                difflib.get_close_matches(str(name), list(names), n=1)
            _fail(f"{key}.grid.{name}", f"is not in {estimator}'s grid, which takes {listed}"
                  + (f"; did you mean {key}.grid.{hint[0]}?" if hint else ""), grid[name])
    return grid


def _parse_method(name: str, section: Mapping) -> MethodSpec:
    key = f"methods.{name}"
    if not _NAME_RE.match(name):
        _fail(key, "method names must start with a letter and contain only letters, digits and _",
              name)
    estimator = section["estimator"]
    if estimator not in ESTIMATORS:
        _fail(f"{key}.estimator", f"unknown estimator; known estimators are {', '.join(ESTIMATORS)}",
              estimator)
    kind = KINDS[estimator]
    grid = _method_grid(key, estimator, section)
    axes = " x ".join(kind.grid_names)
    widths: tuple[float, ...] = ()
    penalties: tuple[float, ...] = ()
    auto_width = False
    for pname, axis in kind.grid_names.items():
        gkey = f"{key}.grid.{pname}"
        value = grid.get(pname)
        if value is None or (isinstance(value, (list, tuple)) and not value):
            _fail(gkey, f"must not be empty: {estimator} is selected by CV over {axes}"
                  + (" (or set it to auto)" if axis == "width" and kind.auto_width else ""),
                  value if value is not None else [])
        if axis == "width" and isinstance(value, str):
            if value != AUTO_WIDTH:
                _fail(gkey, "must be a list of values > 0 or 'auto' (lower case)", value)
            if not kind.auto_width:
                _fail(gkey, f"cannot be auto: {estimator} has no width set inside its fit; "
                            "give a list", value)
            auto_width = True
        elif axis == "width":
            widths = _float_list(gkey, value, low=0.0, low_open=True, allow_empty=False)
        else:
            penalties = _float_list(gkey, value, low=0.0, low_open=False, allow_empty=False)
            empty = [v for v in penalties if v >= 1.0]
            if pname == "alpha_ratio" and empty:
                _fail(gkey, f"values must be < 1: alpha_ratio is a fraction of alpha_max, the "
                            f"smallest penalty that keeps no feature (bad value {empty[0]!r})",
                      list(penalties))
    params = _parse_params(f"{key}.params", estimator, section["params"] or {}, widths,
                           auto_width)
    return MethodSpec(name, estimator, params, widths, penalties, auto_width)


def _parse_seeds(value) -> tuple[int, ...]:
    key = "experiment.seeds"  # the schema cannot type a mapping-or-list: checked here

    if isinstance(value, Mapping):
        _check_known(value, key, ("start", "count"))
        if "count" not in value:
            raise ConfigError(f"{key}.count: missing mandatory value")
        start = _at_least(f"{key}.start", value.get("start", 0), 0)
        return tuple(range(start, start + _at_least(f"{key}.count", value["count"], 1)))
    if isinstance(value, (list, tuple)):
        seeds = tuple(int(_at_least(f"{key}[{i}]", s, 0)) for i, s in enumerate(value))
        if not seeds:
            _fail(key, "must not be empty", [])
        _check_unique(key, seeds)
        return seeds
    _fail(key, "must be {start, count} or a list of seeds", value)


def _parse_run(section: Mapping) -> RunSpec:
    section = {**section, "unit": section["unit"] or "auto"}
    if section["unit"] not in RUN_UNITS:
        _fail("run.unit", f"must be one of {', '.join(RUN_UNITS)}", section["unit"])
    for name, minimum in (("fits_per_block", 1), ("blocks_per_worker", 1), ("retries", 0)):
        _at_least(f"run.{name}", section[name], minimum)
    return RunSpec(**section)


def _parse_store(section: Mapping) -> StoreSpec:
    section = {**section, "verify": section["verify"] or "quick"}
    _nonempty("store.root", section["root"])
    _nonempty("store.path", section["path"], allow_none=True)
    if section["verify"] not in ("quick", "full"):
        _fail("store.verify", "must be quick or full", section["verify"])
    return StoreSpec(**section)


#: the top-level keys of a resolved config (``hydra``: Hydra's own node, not read here)
TOP_LEVEL_KEYS = ("experiment", "methods", "data", "cv", "run", "store", "cluster", "hydra")


def _check_top_level(d: Mapping) -> None:
    """Refuse a top-level key that is none of :data:`TOP_LEVEL_KEYS` (``+psi=0.5`` on the command
    line), suggesting the section that has a key of that name."""
    for key in d:
        if key in TOP_LEVEL_KEYS:
            continue
        within = [f"{s}.{key}" for s in TOP_LEVEL_KEYS[:-1]
                  if isinstance(d.get(s), Mapping) and key in d[s]]
        close = difflib.get_close_matches(str(key), TOP_LEVEL_KEYS, n=1)
        hint = within[:1] or close
        raise ConfigError(f"{key}: unknown key; known top-level keys are "
                          f"{', '.join(TOP_LEVEL_KEYS)}"
                          + (f"; did you mean {hint[0]}?" if hint else ""))


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
    _check_top_level(d)
    given = {k: v for k, v in to_plain(d).items() if k != "hydra"}
    for section in ("experiment", "methods", "data", "cv", "run", "store", "cluster"):
        if section not in given:
            raise ConfigError(f"{section}: missing config section")
    # Every method of the config is checked, selected or not; experiment.methods picks among them.
    selected = given["experiment"].get("methods") if isinstance(given["experiment"], Mapping) \
        else None
    available = given["methods"]
    if isinstance(selected, list) and isinstance(available, Mapping):
        if not selected:
            _fail("experiment.methods", "must not be empty", selected)
        _check_unique("experiment.methods", selected)
        for m in selected:
            if m not in available:
                close = difflib.get_close_matches(str(m), list(map(str, available)), n=1)
                _fail("experiment.methods", f"unknown method {m!r}; known methods are "
                                            f"{', '.join(map(str, available))}"
                      + (f"; did you mean {close[0]}?" if close else ""), selected)
    typed = typed_config(given)
    exp = typed["experiment"]
    name = exp["name"]
    if not _EXPERIMENT_NAME_RE.match(name):
        _fail("experiment.name", "must be usable in a file name (letters, digits, _ . -)", name)
    parsed = {m: _parse_method(m, section) for m, section in typed["methods"].items()}
    methods = tuple(parsed[m] for m in exp["methods"])

    tau = _float_list("experiment.tau", exp["tau"], low=0.0, low_open=True, allow_empty=False)
    psi = _float_list("experiment.psi", exp["psi"], low=0.0, low_open=False, high=1.0,
                      allow_empty=False)
    seeds = _parse_seeds(exp["seeds"])

    data = _parse_data(typed["data"])
    cv = _parse_cv(typed["cv"], data)
    run = _parse_run(typed["run"])
    if run.unit == "fit" and (cv.scheme != "kfold" or cv.race is not None):
        what = "cv.race" if cv.race is not None else "cv.scheme=alo"
        _fail("run.unit", f"fit splits K-fold CV into one task per fit; {what} decides which fits "
                          "to run from the ones before, inside one cell's task: use run.unit=cell "
                          "(or auto)", "fit")
    if cv.scheme == "alo":
        lacking = [m.name for m in methods if m.has_cv and not m.kind.alo]
        if lacking:
            _fail("cv.scheme", f"alo needs leave-one-out residuals, which {', '.join(lacking)} "
                               "do not give; use cv=kfold", "alo")
    return ExperimentSpec(
        name=name,
        methods=methods,
        tau=tau,
        psi=psi,
        seeds=seeds,
        data=data,
        cv=cv,
        run=run,
        store=_parse_store(typed["store"]),
        cluster=_parse_cluster(typed["cluster"]),
    )


def from_dictconfig(cfg) -> ExperimentSpec:
    """Resolve a composed Hydra config to plain Python (in the driver) and validate it.

    The ``hydra`` node, if present, is ignored. Mandatory values left unset (``???``) and keys
    that are not part of the layout are reported by :func:`spec_from_dict` with their key.
    """
    from omegaconf import OmegaConf

    # Leave out Hydra's own node (present with return_hydra_config=True; it only resolves in a job).
    cfg = OmegaConf.masked_copy(cfg, [k for k in cfg if k != "hydra"])
    d = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=False)
    return spec_from_dict(d)
