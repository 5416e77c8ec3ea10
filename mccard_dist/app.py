"""The plain functions under ``mccard-run``: :func:`compose` (the experiment a command line names,
validated) and :func:`run` (it, on a Dask client of the caller's or one built from its config).

The config is composed as ``mccard-run`` composes it, with Hydra's compose API: the config folder
(``$MCCARD_CONFIG_DIR`` or ``config_dir``) first, the shipped one after it, so that a file of
one's own adds to the shipped ones or replaces the one of its name. Example::

    import mccard_dist
    report = mccard_dist.run("smoke", overrides=["experiment.seeds.count=4"])
    ds = mccard_dist.open_results(report.store_path)
"""

from __future__ import annotations

import logging
from pathlib import Path

__all__ = ["compose", "compose_config", "hydra_error", "register_schemas", "run",
           "search_folders"]


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
    config describes (``cluster=...``), resuming what the store has; returns the
    :class:`~mccard_dist.runner.RunReport` (``store_path``, cells written, ``complete``, and
    ``methods_without_cells``: the methods whose every finished cell failed, each with its first
    cell's error, where ``mccard-run`` exits non-zero)."""
    from .runner import run_experiment

    return run_experiment(compose(experiment, overrides, config_dir), client=client,
                          progress=progress)


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
