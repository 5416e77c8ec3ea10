"""The check of a ``mccard-run`` command line before Hydra's main sees it.

Hydra can be told on its command line to import and call code (``hydra.callbacks``, the factories of
its logging setup), to open files (a logging ``FileHandler``), to set the environment of the run and
of its Dask workers (``hydra.job.env_set``: a ``PYTHONPATH`` makes every worker import a
``sitecustomize.py``) or to load configs from other folders that do any of these. Rather than
recognise spellings, :func:`check_overrides` composes the config Hydra would compose, with and
without the command line's overrides, and refuses any change to those settings; a user who means it
sets ``MCCARD_TRUST_HYDRA_OVERRIDES=1``, or puts the settings in a config folder of their own
(``MCCARD_CONFIG_DIR``).

The command line is read with Hydra's own argument parser and the configs are composed from the
search path Hydra's main builds (``hydra._internal``, Hydra 1.3), so that what is checked is what
would run.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path

from .config import CONFIG_DIR, SCHEMAS, composition_message

__all__ = ["SENSITIVE", "TRUST_ENV", "check_overrides"]

#: Hydra settings that name code to import, files to open, the environment of the run and its
#: workers, or configs to load (key: why); the command line may not change them
SENSITIVE = {
    "hydra.callbacks": "Hydra would import and call what it names",
    "hydra.job_logging": "Hydra's logging setup can open any file and call any factory",
    "hydra.hydra_logging": "Hydra's logging setup can open any file and call any factory",
    "hydra.job.env_set": "it sets the environment of the run and its workers",
    "hydra.job.env_copy": "it sets the environment of the run and its workers",
    "hydra.searchpath": "it loads configs from outside the config folder",
    "hydra.sweeper.params": "it adds unchecked overrides to every job of a sweep",
}
#: set to 1 to let the command line change the settings above (and use other config folders)
TRUST_ENV = "MCCARD_TRUST_HYDRA_OVERRIDES"
#: why a sweep over any of them is refused outright (a value after the first would not be checked)
SWEEP_WHY = "a sweep over Hydra's callbacks, logging, environment, search path or sweeper"


def register_schemas() -> None:
    """Put the config's schemas (:data:`mccard_dist.config.SCHEMAS`) into Hydra's ConfigStore,
    under the names ``conf/`` gives them in its defaults lists: call before composing ``conf/``
    (the CLI and :func:`check_overrides` do)."""
    from hydra.core.config_store import ConfigStore

    for group, name, node in SCHEMAS:
        ConfigStore.instance().store(group=group, name=name, node=node)


def _refused(key: str, why: str) -> str:
    return f"{key}: not accepted on the command line ({why}); set {TRUST_ENV}=1 to allow it"


def _one_line(message: str) -> str:
    """Hydra's multi-line composition error as one line (its object types and search path out)."""
    lines, options = [], []
    in_options = False
    for line in str(message).splitlines():
        text = line.strip()
        if not text or text.startswith(("full_key:", "object_type", "Set the environment")):
            continue
        if text.startswith("Config search path"):
            break
        if text.startswith("Available options in"):
            in_options = True
            continue
        if in_options and line.startswith(("\t", "  ")):
            options.append(text)
            continue
        lines.append(text.rstrip("."))
    out = "; ".join(lines)
    return f"{out}; available: {', '.join(options)}" if options else out


def _trusted_dirs(config_dir: Path) -> set[Path]:
    """``config_dir`` (the shipped configs or $MCCARD_CONFIG_DIR) and the shipped configs."""
    package = Path(__file__).resolve().parent
    shipped = package / "conf"
    if not (shipped / "config.yaml").is_file():
        shipped = package.parent / "conf"
    return {Path(config_dir).resolve(), shipped.resolve()}


def _flag_problem(args, config_dir: Path) -> str | None:
    """Hydra's flags that name configs outside the trusted folders, or a pickle to load."""
    trusted = _trusted_dirs(config_dir)

    def why(value):
        return (f"{value} is not the config folder {config_dir}, and a config can name code to "
                "run; MCCARD_CONFIG_DIR=DIR sets the folder")

    if args.experimental_rerun is not None:
        return _refused("--experimental-rerun", "it unpickles a file, which can run any code")
    for flag, value in (("--config-dir", args.config_dir), ("--config-path", args.config_path)):
        if value is not None and not (os.path.isabs(value) and Path(value).resolve() in trusted):
            return _refused(flag, why(value))
    name = args.config_name
    if name is not None and not re.fullmatch(r"[\w-]+(\.yaml)?", name):  # no folder in it
        return _refused("--config-name", why(name).replace("not the config folder",
                                                           "not a config of the folder"))
    return None


def _dotted(name) -> str:
    """An override's key or package as a dotted path from the root (``hydra/job_logging`` ->
    ``hydra.job_logging``)."""
    return str(name or "").replace("/", ".").removeprefix("_global_.")


def _near(key: str, root: str) -> bool:
    """``key`` is ``root``, inside it, or one of its parents."""
    return key == root or key.startswith(root + ".") or root.startswith(key + ".")


def _sensitive(override) -> str | None:
    """The sensitive setting an override's key or package reaches, or None."""
    for name in (override.key_or_group, override.package):
        for root in SENSITIVE:
            if name and _near(_dotted(name), root):
                return root
    return None


def _values(override) -> list[str] | None:
    """The values of a swept override as override strings, None for glob() (which Hydra's
    sweeper expands to the group's own options only)."""
    key = override.get_key_element()
    try:
        return [f"{key}={v}" for v in override.sweep_string_iterator()]
    except Exception:  # noqa: BLE001 - glob(): expanded by Hydra's sweeper
        return None


def _compositions(parsed) -> list[list[str]]:
    """The override lists to compose: the first value of each sweep, and every further value of
    a sweep over a key without a dot (which may be a config group: its options are files)."""
    first, alternatives = [], []
    for o in parsed:
        values = _values(o) if o.is_sweep_override() else [o.input_line]
        if not values:
            continue
        first.append(values[0])
        if "." not in o.key_or_group or o.package is not None:
            alternatives += [(len(first) - 1, v) for v in values[1:]]
    return [first] + [first[:i] + [value] + first[i + 1:] for i, value in alternatives]


def _compose(config_dir, extra_dir, config_name, overrides):
    """The config Hydra's main would compose (with the ``hydra`` node), from the same folders."""
    from hydra import compose, version
    from hydra._internal.hydra import Hydra
    from hydra._internal.utils import create_config_search_path
    from hydra.core.config_search_path import SearchPathQuery
    from hydra.core.global_hydra import GlobalHydra

    register_schemas()
    version.setbase("1.3")
    GlobalHydra.instance().clear()
    search_path = create_config_search_path(str(config_dir))
    if extra_dir is not None:  # where Hydra's main puts --config-dir
        search_path.prepend(provider="command-line", path=f"file://{os.path.abspath(extra_dir)}",
                            anchor=SearchPathQuery(provider="schema"))
    try:
        Hydra.create_main_hydra2(task_name="mccard-run", config_search_path=search_path)
        return compose(config_name, overrides=list(overrides), return_hydra_config=True)
    finally:
        GlobalHydra.instance().clear()


def _settings(cfg) -> dict:
    from omegaconf import OmegaConf

    out = {}
    for root in SENSITIVE:
        node = OmegaConf.select(cfg, root, default=None)
        out[root] = OmegaConf.to_container(node) if OmegaConf.is_config(node) else node
    return out


@functools.lru_cache(maxsize=8)
def _shipped_settings(config_dir, extra_dir, config_name) -> dict:
    return _settings(_compose(config_dir, extra_dir, config_name, []))


def _differences(base, new, path):
    """Dotted paths where ``new`` differs from ``base`` (added, changed or removed)."""
    if isinstance(base, dict) and isinstance(new, dict):
        out = []
        for key in [*new, *(k for k in base if k not in new)]:
            out += _differences(base.get(key, ...), new.get(key, ...), f"{path}.{key}")
        return out
    if isinstance(new, dict) and new and not isinstance(base, dict):
        return _differences({}, new, path)
    return [] if base == new else [path]


def _typed(override) -> str:
    """An override's key as written, without its ``+``/``++``/``~``."""
    return override.get_key_element().lstrip("+~")


def _inside(key: str, root: str) -> bool:
    return key == root or key.startswith(root + ".")


def _named(parsed, path: str, root: str) -> str:
    """The key of the override that changed ``path`` as the user wrote it when it lies inside
    ``root`` (``hydra/job_logging``); else ``path`` itself (a dict value, a group option)."""
    for o in parsed:
        key = _dotted(o.key_or_group)
        if _inside(key, root) and _near(key, path):
            return _typed(o)
    return path


def check_overrides(args, config_dir: Path = CONFIG_DIR) -> str | None:
    """The first problem of a ``mccard-run`` command line as one line, or None.

    Unless $MCCARD_TRUST_HYDRA_OVERRIDES is 1, the settings of :data:`SENSITIVE` of the config
    Hydra would compose must equal those of the config composed without the command line's
    overrides, for every value of a swept config group; sweeps over them, other config
    folders and ``--experimental-rerun`` are refused. Hydra's own composition errors are
    returned as one line too.
    """
    from hydra._internal.utils import get_args_parser
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    # as Hydra's main reads it (abbreviations too), flags also after the overrides
    cli_args = get_args_parser().parse_intermixed_args(args)
    trusted = os.environ.get(TRUST_ENV) == "1"
    other_configs = (cli_args.config_dir, cli_args.config_path, cli_args.config_name,
                     cli_args.experimental_rerun)
    if trusted and any(v is not None for v in other_configs):
        return None  # Hydra reports its own errors with configs named here
    if not trusted and (problem := _flag_problem(cli_args, config_dir)) is not None:
        return problem
    try:
        parsed = OverridesParser.create().parse_overrides(cli_args.overrides)
    except (HydraException, OmegaConfBaseException, ValueError) as exc:
        return _one_line(str(exc))
    for o in parsed if not trusted else ():
        if o.is_sweep_override() and _sensitive(o) is not None:
            return _refused(_typed(o), SWEEP_WHY)
        if _inside(_dotted(o.key_or_group), "hydra.searchpath"):  # composing would import it
            return _refused(_typed(o), SENSITIVE["hydra.searchpath"])
    keys = {_typed(o) for o in parsed}
    primary = Path(cli_args.config_path or config_dir)
    where = (primary, cli_args.config_dir, cli_args.config_name or "config")
    for overrides in _compositions(parsed):
        try:
            cfg = _compose(*where, overrides)
            if trusted:
                return None
            shipped = _shipped_settings(*where)
        except (HydraException, OmegaConfBaseException, ValueError) as exc:
            return composition_message(exc) or _one_line(str(exc))
        except Exception as exc:  # noqa: BLE001 - e.g. hydra.job.env_copy of an unset variable
            return f"the config does not compose ({type(exc).__name__}: {_one_line(str(exc))})"
        new = _settings(cfg)
        changed = [(_named(parsed, path, root), root) for root in SENSITIVE
                   for path in _differences(shipped[root], new[root], root)]
        # name an override the user wrote if there is one (hydra.job.env_copy fills env_set too)
        for key, root in sorted(changed, key=lambda c: c[0] not in keys):
            return _refused(key, SENSITIVE[root])
    return None
