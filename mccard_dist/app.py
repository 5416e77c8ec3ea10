"""The plain functions under ``mccard-run``: :func:`compose` (the experiment a command line names,
validated) and :func:`run` (it, on a Dask client of the caller's or one built from its config).

The config is composed as ``mccard-run`` composes it, with Hydra's compose API: the config folder
(``$MCCARD_CONFIG_DIR`` or ``config_dir``) first, the shipped one after it, so that a file of
one's own adds to the shipped ones or replaces the one of its name. Example::

    import mccard_dist
    report = mccard_dist.run("smoke", overrides=["experiment.seeds.count=4"])
    ds = mccard_dist.open_results(report.store_path)

:func:`run` says what ``mccard-run`` says, through :mod:`logging` under the ``mccard_dist``
logger (``logging.basicConfig(level=logging.INFO)`` shows it in a notebook).
"""

from __future__ import annotations

import logging
from pathlib import Path

__all__ = ["RESULTS_LOGGER", "compose", "compose_config", "hydra_error", "register_schemas", "run",
           "run_from_spec", "search_folders"]

log = logging.getLogger("mccard_dist")

#: the logger of what a run says as its outcome (the results table, the store's line, a plan):
#: ``mccard-run`` shows it without a prefix (``hydra.job_logging`` in ``conf/config.yaml``)
RESULTS_LOGGER = "mccard_dist.results"


def search_folders(config_dir: Path) -> tuple[Path, ...]:
    """The config folders Hydra searches, in order: ``config_dir``, then the shipped one."""
    from .config import config_path

    shipped = config_path(environ={})[0]
    same = Path(config_dir).resolve() == shipped.resolve()
    return (shipped,) if same else (Path(config_dir), shipped)


#: the name under which the shipped ``config.yaml`` is in Hydra's ConfigStore (a name of its own:
#: one a config file has would make the node that file's schema)
SHIPPED_PRIMARY = "mccard_config"


#: the method files of one's own already said to replace a shipped one (once a process)
_SAID: set = set()


def register_schemas(config_dir: Path | None = None) -> None:
    """Put into Hydra's ConfigStore the config's schemas (:func:`mccard_dist.config.schemas`),
    under the names ``conf/`` gives them in its defaults lists; ``mccard_methods``, a defaults
    list of every method file of the config folders (:func:`search_folders` of ``config_dir``,
    by default the config path), each under ``methods.<name>``; and the shipped
    ``config.yaml`` as :data:`SHIPPED_PRIMARY`, the primary config :func:`compose_config`
    composes from a folder of one's own that has none. Call before composing (:func:`compose`
    and the CLI do)."""
    from hydra.core.config_store import ConfigStore
    from omegaconf import OmegaConf

    from .config import config_dir as default_dir
    from .config import method_files, register_resolvers, schemas

    register_resolvers()
    store = ConfigStore.instance()
    for group, name, node in schemas():
        store.store(group=group, name=name, node=node)
    folders = search_folders(config_dir or default_dir())
    files = method_files(folders)
    store.store(name="mccard_methods", node={"defaults": [{f"method@methods.{n}": n}
                                                          for n in files]})
    shipped = method_files(folders[-1:])
    for name, file in files.items():
        if name in shipped and file != shipped[name] and file not in _SAID:
            _SAID.add(file)
            logging.getLogger("mccard_dist").warning(
                "%s replaces the shipped method %s (%s): its results are labelled %s, not as "
                "the paper's", file, name, shipped[name], name)
    store.store(name=SHIPPED_PRIMARY, node=OmegaConf.load(folders[-1] / "config.yaml"))


def compose(experiment: str | None = None, overrides=(), config_dir=None):
    """The experiment ``experiment`` (an option of ``conf/experiment``; None: the default) with
    Hydra ``overrides``, validated into an :class:`~mccard_dist.config.ExperimentSpec`, as
    ``mccard-run experiment=EXPERIMENT OVERRIDES...`` would run it (``config_dir``: one's own
    config folder, by default ``$MCCARD_CONFIG_DIR``).

    Raises
    ------
    mccard_dist.errors.UsageError
        For a config that cannot be composed or a bad value, in one line that names the key.
    """
    from .config import from_dictconfig

    return from_dictconfig(compose_config(experiment, overrides, config_dir))


def compose_config(experiment: str | None = None, overrides=(), config_dir=None,
                   return_hydra_config: bool = False):
    """The config :func:`compose` validates, as Hydra composes it (a DictConfig, with Hydra's
    own node where ``return_hydra_config``); raises :class:`~mccard_dist.errors.UsageError` for
    one that cannot be composed."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from .config import config_dir as default_dir
    from .errors import UsageError

    folders = search_folders(Path(config_dir) if config_dir is not None else default_dir())
    register_schemas(folders[0])
    listed = [*([f"experiment={experiment}"] if experiment else []), *overrides]
    searched = [f"hydra.searchpath=[{','.join(f'file://{f.resolve()}' for f in folders[1:])}]"]
    # Hydra's compose API looks for the primary config in the main folder before it reads the
    # search path: a folder of one's own without config.yaml composes the shipped one as stored
    primary = "config" if (folders[0] / "config.yaml").is_file() else SHIPPED_PRIMARY
    try:
        with initialize_config_dir(config_dir=str(folders[0].resolve()), version_base="1.3",
                                   job_name="mccard_run"):
            return hydra_compose(primary, overrides=listed + searched * (len(folders) > 1),
                                 return_hydra_config=return_hydra_config)
    except Exception as exc:  # noqa: BLE001 - Hydra's composition errors, said in one line
        raise UsageError(hydra_error(exc, folders)) from None


def run(experiment: str | None = None, overrides=(), *, client=None, config_dir=None,
        progress: bool | None = None):
    """Run the experiment :func:`compose` gives into its store, on ``client`` (a
    :class:`distributed.Client`: a notebook's, a dask-jobqueue cluster's) or on the cluster its
    config describes (``cluster=...``), resuming what the store has, and log what ``mccard-run``
    says (:func:`run_from_spec`); returns the :class:`~mccard_dist.runner.RunReport`
    (``store_path``, cells written, ``complete``, and ``methods_without_cells``: the methods
    whose every finished cell failed, each with its first cell's error, where ``mccard-run``
    exits non-zero), or with ``run.plan=true`` the :class:`~mccard_dist.runner.RunPlan` of what
    it would do."""
    return run_from_spec(compose(experiment, overrides, config_dir), client=client,
                         progress=progress)


def run_from_spec(spec, *, client=None, progress: bool | None = None, stop_after_blocks=None):
    """Run ``spec`` into its store (:func:`~mccard_dist.runner.run_experiment`) and log what the
    run did: the grid, the store's cells, the results table and the store's path (the last
    three, and a plan, under :data:`RESULTS_LOGGER`), warnings of CV grid edges and failed
    fits; returns the run report (with ``run.plan``, the plan)."""
    from .analysis.edges import cv_failure_warnings, edge_warnings, grid_edges
    from .analysis.values import nan_metric_warnings, summary_table
    from .records import STATUS_DONE, STATUS_FAILED, STATUS_UNNEEDED
    from .runner import RunPlan, run_experiment
    from .store import open_results, store_path

    said = logging.getLogger(RESULTS_LOGGER)
    log.info("experiment %s: %d method(s) x %d tau x %d psi x %d seed(s) -> %s", spec.name,
             len(spec.methods), len(spec.tau), len(spec.psi), len(spec.seeds), store_path(spec))
    if spec.cv.scheme == "alo":
        ard = [m.name for m in spec.methods if m.has_cv and m.kind.penalty_name is None]
        if ard:
            log.warning("cv.scheme=alo with %s: approximate leave-one-out holds the ARD "
                        "relevances fixed although they were tuned on every sample, so it favours "
                        "the smallest kernel widths (docs/results/model_selection.md); use "
                        "cv=kfold, optionally with cv.race, for results comparable with the paper",
                        ", ".join(ard))
    report = run_experiment(spec, client=client, progress=progress,
                            stop_after_blocks=stop_after_blocks)
    if isinstance(report, RunPlan):  # run.plan: nothing ran
        said.info("%s", report)
        return report
    ds = open_results(report.store_path)
    statuses = ds["status"].values
    unneeded = int((statuses == STATUS_UNNEEDED).sum())
    said.info("store %s: %d of %d cells done, %d failed%s; this run: %d blocks in %.1f s",
              report.store_path, int((statuses == STATUS_DONE).sum()), report.n_cells,
              int((statuses == STATUS_FAILED).sum()),
              f", {unneeded} not needed (the stop rule held)" if unneeded else "",
              report.n_blocks_written, report.seconds)
    said.info("%s", summary_table(ds))
    for line in (edge_warnings(grid_edges(ds)) + cv_failure_warnings(ds, report.cv_errors)
                 + nan_metric_warnings(ds)):
        log.warning(line)
    said.info("results: %s  (xarray.open_zarr or mccard_dist.open_results)", report.store_path)
    return report


def hydra_error(exc: BaseException, folders: tuple[Path, ...] = ()) -> str:
    """An error Hydra raised while composing or launching, as one line: for a name a method's
    grid does not have, the closest of its method file's (``folders``: the config folders);
    the schema's message; for an option a config group does not have, the options and the
    closest one; else Hydra's own text without its object types and search path."""
    import difflib
    import re

    from .config import composition_message, method_files

    grid_key = re.match(r"Could not override '(methods\.([^.']+)\.grid\.([^']+))'", str(exc))
    file = method_files(folders).get(grid_key.group(2)) if grid_key else None
    if file is not None:
        from omegaconf import OmegaConf

        key, method, name = grid_key.groups()
        names = [str(n) for n in (OmegaConf.load(file).get("grid") or {})]
        close = difflib.get_close_matches(name, names, n=1)
        return (f"{key}: {file} gives {method} no grid axis {name}" + (
            f"; did you mean methods.{method}.grid.{close[0]}?" if close else
            f"; add one with +{key}=[...]"))
    message = composition_message(exc)
    if message is not None:
        return message
    text = str(exc)
    missing = re.search(r"Could not find '([^']+)/([^']+)'", text)
    if missing:
        group, option = missing.groups()
        options = re.findall(r"^\t(\S+)$", text.split("Available options", 1)[-1], re.M)
        close = difflib.get_close_matches(option, options, n=1)
        return (f"{group}={option}: no such option of {group}"
                + (f"; available: {', '.join(options)}" if options else "")
                + (f"; did you mean {group}={close[0]}?" if close else ""))
    lines = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("Config search path"):
            break
        if line and not line.startswith(("full_key:", "object_type", "Set the environment")):
            lines.append(line.rstrip("."))
    return "; ".join(lines) or type(exc).__name__
