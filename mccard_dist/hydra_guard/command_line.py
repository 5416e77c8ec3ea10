"""The command line's own check: Hydra's flags, overrides of Hydra's settings and config groups'
options, read with Hydra's parser (nothing composed)."""

from __future__ import annotations

import argparse
import difflib
import os
import re
from pathlib import Path

#: set to 1 to let the command line change any of Hydra's settings (and use other config folders)
TRUST_ENV = "MCCARD_TRUST_HYDRA_OVERRIDES"

#: Hydra's settings the command line may set (key: what its value may be)
ALLOWED = {
    "hydra.run.dir": "path",
    "hydra.sweep.dir": "path",
    "hydra.sweep.subdir": "inside",
    "hydra.job.name": "name",
    "hydra.output_subdir": "name",
    "hydra.job.chdir": "any",
    "hydra.verbose": "any",
}

#: why a Hydra setting outside :data:`ALLOWED` is refused, by the part of ``hydra`` it is in
WHY = {
    "hydra.callbacks": "Hydra would import and call what it names",
    "hydra.job_logging": "Hydra's logging setup can open any file and call any factory",
    "hydra.hydra_logging": "Hydra's logging setup can open any file and call any factory",
    "hydra.job.env_set": "it sets the environment of the run and its workers",
    "hydra.job.env_copy": "it sets the environment of the run and its workers",
    "hydra.searchpath": "it loads configs from outside the config folder",
    "hydra.sweeper": "it adds unchecked overrides or code to every job of a sweep",
    "hydra.launcher": "it names the code that launches the jobs",
}
_NAME = re.compile(r"[\w.-]+")
#: interpolations a job's subfolder may use: Hydra's per-job values, which stay plain names
_JOB_VALUE = re.compile(r"\$\{(hydra\.job\.(num|id|name)|now:[^}]*)\}")

def register_schemas(config_dir: Path | None = None) -> None:
    """Put the config's schemas (:func:`mccard_dist.config.schemas`) into Hydra's ConfigStore,
    under the names ``conf/`` gives them in its defaults lists, and ``mccard_methods``: a defaults
    list of every method file of the config folders (:func:`search_folders` of ``config_dir``,
    by default the config path), each under ``methods.<name>``. Call before composing ``conf/``
    (the CLI does)."""
    from hydra.core.config_store import ConfigStore

    from ..config import config_dir as default_dir
    from ..config import method_files, register_resolvers, schemas

    register_resolvers()
    store = ConfigStore.instance()
    for group, name, node in schemas():
        store.store(group=group, name=name, node=node)
    names = method_files(search_folders(config_dir or default_dir()))
    store.store(name="mccard_methods", node={"defaults": [{f"method@methods.{n}": n}
                                                          for n in names]})


def search_folders(config_dir: Path) -> tuple[Path, ...]:
    """The config folders Hydra searches, in order: ``config_dir``, then the shipped one."""
    from ..config import config_path

    shipped = config_path(environ={})[0]
    same = Path(config_dir).resolve() == shipped.resolve()
    return (shipped,) if same else (Path(config_dir), shipped)


def _why(key: str) -> str:
    for root, why in WHY.items():
        if key == root or key.startswith(root + ".") or root.startswith(key + "."):
            return why
    return "of Hydra's settings, the command line sets only " + ", ".join(ALLOWED)


def _refused(key: str, why: str, where: str = "on the command line") -> str:
    return f"{key}: not accepted {where} ({why}); set {TRUST_ENV}=1 to allow it"


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line instead of argparse's usage and exit
        raise ValueError(message)


def args_parser() -> argparse.ArgumentParser:
    """Hydra 1.3's command-line flags (as its main reads them: abbreviations too)."""
    parser = _Parser(add_help=False, prog="mccard-run")
    for flags in (("--help", "-h"), ("--hydra-help",), ("--version",), ("--resolve",),
                  ("--run", "-r"), ("--multirun", "-m"), ("--shell-completion", "-sc")):
        parser.add_argument(*flags, action="store_true")
    parser.add_argument("--cfg", "-c", choices=["job", "hydra", "all"])
    for flags in (("--package", "-p"), ("--config-path", "-cp"), ("--config-name", "-cn"),
                  ("--config-dir", "-cd"), ("--experimental-rerun",)):
        parser.add_argument(*flags)
    parser.add_argument("--info", "-i", const="all", nargs="?",
                        choices=["all", "config", "defaults", "defaults-tree", "plugins",
                                 "searchpath"])
    parser.add_argument("overrides", nargs="*")
    return parser


def parse_args(argv: list[str]):
    """``argv`` read as Hydra's main reads it (flags also after the overrides); raises
    :class:`ValueError` with argparse's one-line message."""
    return args_parser().parse_intermixed_args(argv)


def hydra_argv(args) -> list[str]:
    """The command line Hydra's main gets: the checked flags under their full names (an
    abbreviation is expanded, so Hydra reads what was checked), then the overrides in order."""
    out = []
    for dest, value in vars(args).items():  # the switches, then the flags with a value
        flag = "--" + dest.replace("_", "-")
        if value is True and dest != "help":
            out.append(flag)
        elif isinstance(value, str):
            out += [flag, value]
    return out + list(args.overrides)


def _flag_problem(args, config_dir: Path) -> str | None:
    """Hydra's flags that name configs outside the config folder (``config_dir`` or the shipped
    one), or a pickle to load."""
    from ..config import config_dir as default_dir

    trusted = {Path(config_dir).resolve(), default_dir(environ={}).resolve()}

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


def _in_hydra(name) -> bool:
    return _dotted(name).partition(".")[0] == "hydra"


def _typed(override) -> str:
    """An override's key as written, without its ``+``/``++``/``~``."""
    return override.get_key_element().lstrip("+~")


def _leaves(value, prefix: str):
    """``(dotted key, value)`` of every leaf of a mapping given as an override's value."""
    if isinstance(value, dict) and value:
        for key, inner in value.items():
            yield from _leaves(inner, f"{prefix}.{key}")
    else:
        yield prefix, value


def _hydra_problem(override) -> str | None:
    """Why an override that reaches Hydra's settings is refused, or None when it sets only
    :data:`ALLOWED` keys to accepted values."""
    typed = _typed(override)
    if _in_hydra(override.package):
        return _refused(typed, _why(_dotted(override.package)))
    if not _in_hydra(override.key_or_group):
        return None
    key = _dotted(override.key_or_group)
    if override.is_sweep_override():
        return _refused(typed, "a sweep over Hydra's own settings")
    if "/" in str(override.key_or_group):  # a group of Hydra's (hydra/job_logging=...)
        return _refused(typed, _why(key))
    value = None if override.is_delete() else override.value()
    for leaf, leaf_value in _leaves(value, key):
        if ALLOWED.get(leaf) is None:
            return _refused(typed if leaf == key else leaf, _why(leaf))
        if (problem := _value_problem(leaf, leaf_value)) is not None:
            return problem
    return None


#: why a method's estimator is set only by a method file
ESTIMATOR_WHY = ("it names code to import: a method's estimator is named only in a method file of "
                 "the config folders, method/NAME.yaml")


def _estimator_problem(override) -> str | None:
    """An override that would set a method's ``estimator`` (an import path) is refused: the key
    itself, a mapping given to ``methods`` or a method, each value of a sweep."""
    if override.is_delete() or override.package is not None:
        return None
    key = _dotted(override.key_or_group)
    if key != "methods" and not key.startswith("methods."):
        return None
    try:
        values = (list(override.sweep_string_iterator()) if override.is_sweep_override()
                  else [override.value()])
    except Exception:  # noqa: BLE001 - a sweep Hydra expands itself: its key is what counts
        values = [None]
    for value in values:
        for leaf, _ in _leaves(value, key):
            if leaf.endswith(".estimator") or leaf == "estimator":
                return _refused(leaf if leaf == key else f"{leaf} (in {_typed(override)})",
                                ESTIMATOR_WHY)
    return None


def _value_problem(key: str, value, where: str = "on the command line") -> str | None:
    """Why ``value`` of the :data:`ALLOWED` setting ``key`` would make Hydra write outside the
    run's folder, or None. A file Hydra writes (``name``) is a plain name that is not only dots;
    a job's subfolder (``inside``) is relative, without ``..``, and interpolates only Hydra's
    per-job values (anything else is read when the job starts, after this check)."""
    kind, text = ALLOWED.get(key), str(value)
    if value is None:
        return None
    if kind == "name" and (not _NAME.fullmatch(text) or not text.strip(".")):
        return _refused(key, f"{text!r} names a file Hydra writes, which must stay in a folder "
                             "of the run's own: give a plain name (letters, digits, _ . -) that "
                             "is not only dots", where)
    plain = _JOB_VALUE.sub("job", text)
    if kind == "inside" and ("${" in plain or os.path.isabs(plain) or ".." in Path(plain).parts):
        return _refused(key, f"{text!r} would put a job's folder outside hydra.sweep.dir: "
                             "give a relative path without .., interpolating only "
                             "${hydra.job.num}, ${hydra.job.id}, ${hydra.job.name} or ${now:...}",
                        where)
    return None


def _group_problem(override, config_dir: Path) -> str | None:
    """A config group's option must name a config file of the group's folder (each value of a
    sweep too; ``glob(...)`` expands to the group's own options). An override is a group's when
    its key has a ``/`` (Hydra would look the group up in every config source, the ConfigStore
    included, and resolve ``..`` in the option after a missing folder), when the config folder
    has a folder of its name, or when its value looks like a path."""
    group = str(override.key_or_group)
    folders = [f / group for f in search_folders(config_dir) if (f / group).is_dir()]
    if "." in group or (override.is_delete() and folders):
        return None
    try:
        values = ([str(v) for v in override.sweep_string_iterator()]
                  if override.is_sweep_override() else [override.value()])
    except Exception:  # noqa: BLE001 - glob(): Hydra expands it to the group's options
        values = None
    pathlike = values is not None and any(
        isinstance(v, str) and ("/" in v or ".." in v or v.startswith(("~", "$")))
        for v in values)
    values = None if values is None else [str(v) for v in values]
    if not folders:
        if "/" not in group and not pathlike:
            return None  # a key of the config, or an option of a group installed with code
        shown = f"{_typed(override)}={values[0]}" if values else (
            override.input_line or _typed(override)).lstrip("+~")
        return _refused(shown, f"{group} is not a config group of {config_dir}, and only a "
                               "config of that folder may be named")
    if values is None:
        return None
    options = sorted({p.stem for folder in folders for p in folder.glob("*.yaml")})
    for value in values:
        if value in options:
            continue
        if any((file := (folder / f"{value}.yaml").resolve()).is_relative_to(folder.resolve())
               and file.is_file() for folder in folders):
            continue  # a config in a subfolder of the group
        if "/" in value or value.startswith(("~", "$")) or ".." in value:
            return _refused(f"{_typed(override)}={value}",
                            f"a group option names a config of {folders[0]}, and a config from "
                            "elsewhere can name code to run")
        close = difflib.get_close_matches(value, options, n=1)
        return (f"{_typed(override)}={value}: no such option of {group}; available: "
                f"{', '.join(options)}" + (f"; did you mean {group}={close[0]}?" if close else ""))
    return None


def _parse_problem(message: str, overrides: list[str]) -> str:
    """Hydra's grammar error as one line, with the hint a user needs most: quoting."""
    text = "; ".join(line.strip() for line in message.splitlines() if line.strip())
    odd = [o for o in overrides if re.search(r"[\s$'\"\\]|[^\x00-\x7f]", o.partition("=")[2])]
    if odd:
        key, _, value = odd[0].partition("=")
        text += (f"; a value with spaces, $ or letters beyond ASCII must be quoted for Hydra, "
                 f"e.g. \"{key}='{value}'\"")
    return text


