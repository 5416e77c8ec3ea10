"""The check of a ``mccard-run`` command line before Hydra's main sees it.

Hydra's command line can make it import and call code, open or write files, set the environment
of the run and its workers, or load configs from other folders. The command line is parsed
(Hydra's public ``OverridesParser``, and :func:`args_parser` for Hydra's flags) and only this
reaches Hydra: overrides of the config's own keys (the schema checks them); a config group's
option naming a config file of that group's folder in the config folder (every value of a sweep
too; a group with no folder there, such as the schemas' groups in Hydra's ConfigStore, takes no
option); of Hydra's settings, those of :data:`ALLOWED`; Hydra's flags, but ``--config-dir``,
``--config-path`` and ``--config-name`` only naming the config folder, and no
``--experimental-rerun``. The config that would run is then composed (Hydra's compose API, which
imports and calls nothing it names) and the parts of ``hydra`` that can run code or change the
environment (:data:`SHIPPED_ONLY`) must equal what the shipped configs give, whichever file set
them (a config with ``# @package _global_`` included). Anything else is refused in one line; a
user who means it sets ``MCCARD_TRUST_HYDRA_OVERRIDES=1``.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys
from pathlib import Path

__all__ = ["ALLOWED", "SHIPPED_ONLY", "TRUST_ENV", "args_parser", "check_overrides", "hydra_argv",
           "hydra_error", "register_schemas"]

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

#: the parts of the composed ``hydra`` node that only the shipped configs set: each can import
#: code, open files or set the environment of the run and its workers
SHIPPED_ONLY = ("callbacks", "job_logging", "hydra_logging", "job.env_set", "job.env_copy",
                "searchpath", "launcher", "sweeper")


def register_schemas() -> None:
    """Put the config's schemas (:func:`mccard_dist.config.schemas`) into Hydra's ConfigStore,
    under the names ``conf/`` gives them in its defaults lists: call before composing ``conf/``
    (the CLI does)."""
    from hydra.core.config_store import ConfigStore

    from .config import schemas

    for group, name, node in schemas():
        ConfigStore.instance().store(group=group, name=name, node=node)


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
    from .config import config_dir as default_dir

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
    folder = config_dir / group
    if "." in group or (override.is_delete() and folder.is_dir()):
        return None
    try:
        values = ([str(v) for v in override.sweep_string_iterator()]
                  if override.is_sweep_override() else [override.value()])
    except Exception:  # glob(): Hydra expands it to the group's options, if it has a folder
        values = None
    pathlike = values is not None and any(
        isinstance(v, str) and ("/" in v or ".." in v or v.startswith(("~", "$")))
        for v in values)
    values = None if values is None else [str(v) for v in values]
    if not folder.is_dir():
        if "/" not in group and not pathlike:
            return None  # a key of the config, or an option of a group installed with code
        shown = f"{_typed(override)}={values[0]}" if values else (
            override.input_line or _typed(override)).lstrip("+~")
        return _refused(shown, f"{group} is not a config group of {config_dir}, and only a "
                               "config of that folder may be named")
    if values is None:
        return None
    options = sorted(p.stem for p in folder.glob("*.yaml"))
    for value in values:
        if value in options:
            continue
        file = (folder / f"{value}.yaml").resolve()
        if file.is_relative_to(folder.resolve()) and file.is_file():
            continue  # a config in a subfolder of the group
        if "/" in value or value.startswith(("~", "$")) or ".." in value:
            return _refused(f"{_typed(override)}={value}",
                            f"a group option names a config of {folder}, and a config from "
                            "elsewhere can name code to run")
        close = difflib.get_close_matches(value, options, n=1)
        return (f"{_typed(override)}={value}: no such option of {group}; available: "
                f"{', '.join(options)}" + (f"; did you mean {group}={close[0]}?" if close else ""))
    return None


def _compositions(overrides: list[str], parsed, config_dir: Path):
    """The override lists whose compositions cover every config file a command line can load:
    each sweep over a group at each of its values (the others at their first), sweeps over keys
    left out (a key's value loads no file)."""
    plain, sweeps = [], []
    for text, override in zip(overrides, parsed):
        if not override.is_sweep_override():
            plain.append(text)
            continue
        group = str(override.key_or_group)
        if "." in group or not (config_dir / group).is_dir():
            continue
        try:
            values = [str(v) for v in override.sweep_string_iterator()]
        except Exception:  # glob(): the group's own options
            values = override.value().filter(
                sorted(p.stem for p in (config_dir / group).glob("*.yaml")))
        sweeps.append([f"{override.get_key_element()}={v}" for v in values])
    firsts = [values[0] for values in sweeps if values]
    yield plain + firsts
    for i, values in enumerate(sweeps):
        for value in values[1:]:
            yield plain + firsts[:i] + [value] + firsts[i + 1:]


def _hydra_parts(cfg) -> dict:
    from omegaconf import OmegaConf

    return {part: OmegaConf.to_container(OmegaConf.create({"x": OmegaConf.select(
        cfg.hydra, part, default=None)}), resolve=False)["x"] for part in SHIPPED_ONLY}


_SHIPPED_PARTS: dict = {}


def _composed(folder: Path, config_name: str, overrides: list[str]):
    from hydra import compose, initialize_config_dir

    register_schemas()
    with initialize_config_dir(str(folder), version_base="1.3", job_name="mccard_run"):
        return compose(config_name, overrides=overrides, return_hydra_config=True)


def _composed_problem(args, parsed, config_dir: Path, warn) -> str | None:
    """Compose the config the command line would run and check its ``hydra`` node: the parts of
    :data:`SHIPPED_ONLY` as the shipped configs give them, and the :data:`ALLOWED` settings with
    values that keep Hydra's files in the run's folder, whichever file set them. A setting of a
    method that no composition runs is said to ``warn``."""
    from omegaconf import OmegaConf

    from .config import config_dir as shipped_dir

    if not _SHIPPED_PARTS:
        _SHIPPED_PARTS.update(_hydra_parts(_composed(shipped_dir(environ={}), "config", [])))
    name = (args.config_name or "config").removesuffix(".yaml")
    selected: set[str] = set()
    try:
        for overrides in _compositions(args.overrides, parsed, config_dir):
            try:
                cfg = _composed(config_dir, name, overrides)
            except Exception as exc:  # noqa: BLE001 - said below in one line
                return _method_problem(exc, overrides, config_dir, name) or hydra_error(exc)
            for part, value in _hydra_parts(cfg).items():
                if value != _SHIPPED_PARTS[part]:
                    return _refused(f"hydra.{part}", f"a config sets it otherwise than the "
                                    f"shipped configs do: {_why('hydra.' + part)}",
                                    f"from a config of {config_dir}")
            node = {"hydra": OmegaConf.to_container(cfg.hydra, resolve=False)}
            for key in ALLOWED:
                value = node
                for part in key.split("."):
                    value = value.get(part) if isinstance(value, dict) else None
                where = f"from a config of {config_dir}"
                if value != "???" and (problem := _value_problem(key, value, where)) is not None:
                    return problem
            methods = _node_of(cfg, "experiment.methods")
            selected.update(methods if isinstance(methods, list) else ())
            if _runs_one_job(args) and (problem := _spec_problem(cfg)) is not None:
                return problem
    except Exception as exc:  # noqa: BLE001 - Hydra's composition errors, said in one line
        return hydra_error(exc)
    for override in parsed:
        method = _method_of(_typed(override))
        if method is not None and selected and method not in selected:
            warn(f"warning: {override.input_line or _typed(override)} has no effect: "
                 f"{method} is not in experiment.methods ({', '.join(sorted(selected))}); add "
                 "it there to run it")
    return None


def _node_of(cfg, key: str):
    """The plain value at ``key`` of a composed config, None where it is missing or unset."""
    from omegaconf import OmegaConf

    try:
        value = OmegaConf.select(cfg, key, default=None, throw_on_missing=False)
        return OmegaConf.to_container(value) if OmegaConf.is_config(value) else value
    except Exception:  # noqa: BLE001 - a section a config left unset
        return None


def _runs_one_job(args) -> bool:
    """Whether Hydra's main would run the task once (not a sweep, not a page it prints)."""
    return not (args.multirun or args.cfg or args.info or args.hydra_help or args.resolve
                or args.shell_completion or args.version)


def _spec_problem(cfg) -> str | None:
    """The one-line message the task would end with for this composed config (a bad value, an
    unknown method), said before Hydra's main composes it again and makes the run's folder."""
    from omegaconf import OmegaConf

    from .config import from_dictconfig
    from .errors import UsageError

    try:
        from_dictconfig(OmegaConf.masked_copy(cfg, [k for k in cfg if k != "hydra"]))
    except UsageError as exc:
        return str(exc)
    return None


def _method_of(key: str) -> str | None:
    """The method a key under ``methods`` sets (``methods.lasso.grid.x`` -> ``lasso``)."""
    parts = key.split("@")[0].split(".")
    return parts[1] if len(parts) > 2 and parts[0] == "methods" else None


def _method_problem(exc, overrides: list[str], config_dir: Path, name: str) -> str | None:
    """A key under ``methods`` that Hydra could not set, said as the spec says it: a method the
    config does not have (and how a method is added), or a name its grid does not have."""
    from .config import from_dictconfig
    from .errors import UsageError

    found = re.search(r"override '?\+{0,2}(methods\.[^=' ]+)", str(exc))
    method = _method_of(found.group(1)) if found else None
    if method is None:
        return None
    failing = [o for o in overrides if o.lstrip("+~").partition("=")[0] == found.group(1)]
    rest = [o for o in overrides if o not in failing]
    try:
        methods = list(_composed(config_dir, name, rest).methods)
        if method not in methods:
            close = difflib.get_close_matches(method, methods, n=1)
            return (f"methods.{method}: no such method in the config" +
                    (f" (did you mean methods.{close[0]}?)" if close else "") + "; a method is "
                    f"added from a method file of {config_dir / 'method'}: "
                    f"+method@methods.{method}=FILE, then experiment.methods lists it")
        from_dictconfig(_composed(config_dir, name, rest + ["+" + failing[0].lstrip("+")]))
    except UsageError as problem:
        return str(problem)
    except Exception:  # noqa: BLE001 - Hydra's own message is said instead
        return None
    return None


def _stderr(line: str) -> None:
    print(line, file=sys.stderr)


def hydra_error(exc: BaseException) -> str:
    """An error Hydra raised while composing or launching, as one line: the schema's message,
    else Hydra's own text without its object types and search path."""
    from .config import composition_message

    message = composition_message(exc)
    if message is not None:
        return message
    lines = []
    for line in str(exc).splitlines():
        text = line.strip()
        if text.startswith("Config search path"):
            break
        if text and not text.startswith(("full_key:", "object_type", "Set the environment")):
            lines.append(text.rstrip("."))
    return "; ".join(lines) or type(exc).__name__


def _parse_problem(message: str, overrides: list[str]) -> str:
    """Hydra's grammar error as one line, with the hint a user needs most: quoting."""
    text = "; ".join(line.strip() for line in message.splitlines() if line.strip())
    odd = [o for o in overrides if re.search(r"[\s$'\"\\]|[^\x00-\x7f]", o.partition("=")[2])]
    if odd:
        key, _, value = odd[0].partition("=")
        text += (f"; a value with spaces, $ or letters beyond ASCII must be quoted for Hydra, "
                 f"e.g. \"{key}='{value}'\"")
    return text


def check_overrides(argv: list[str], config_dir: Path, warn=None) -> str | None:
    """The first problem of a ``mccard-run`` command line as one line, or None.

    The overrides are parsed and checked, then the config is composed and its ``hydra`` node
    checked, as the module says (unless $MCCARD_TRUST_HYDRA_OVERRIDES is 1); Hydra's grammar and
    composition errors and unknown options of a config group are returned as one line too; a
    warning (a method's setting that has no effect) goes to ``warn`` (standard error by default).
    """
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    try:
        args = parse_args(argv)
    except ValueError as exc:
        return str(exc)
    trusted = os.environ.get(TRUST_ENV) == "1"
    if not trusted and (problem := _flag_problem(args, config_dir)) is not None:
        return problem
    try:
        parsed = OverridesParser.create().parse_overrides(args.overrides)
    except (HydraException, OmegaConfBaseException, ValueError) as exc:
        return _parse_problem(str(exc), args.overrides)
    if trusted:
        return None
    for override in parsed:
        problem = _hydra_problem(override) or _group_problem(override, config_dir)
        if problem is not None:
            return problem
    return _composed_problem(args, parsed, config_dir, warn or _stderr)
