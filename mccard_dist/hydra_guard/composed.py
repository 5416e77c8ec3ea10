"""The composed config's check: the config a command line would run, composed with Hydra's compose
API (which imports and calls nothing it names), its ``hydra`` node compared with the shipped
configs', and, for a run of one job, the config validated before Hydra's main composes it again."""

from __future__ import annotations

import difflib
import re
import sys
from pathlib import Path

from .command_line import (ALLOWED, ESTIMATOR_WHY, _refused, _typed, _value_problem, _why,
                           register_schemas, search_folders)

#: the parts of the composed ``hydra`` node that only the shipped configs set: each can import
#: code, open files or set the environment of the run and its workers
SHIPPED_ONLY = ("callbacks", "job_logging", "hydra_logging", "job.env_set", "job.env_copy",
                "searchpath", "launcher", "sweeper")


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
        folders = [f / group for f in search_folders(config_dir) if (f / group).is_dir()]
        if "." in group or not folders:
            continue
        try:
            values = [str(v) for v in override.sweep_string_iterator()]
        except Exception:  # noqa: BLE001 - glob(): the group's own options
            values = override.value().filter(
                sorted({p.stem for folder in folders for p in folder.glob("*.yaml")}))
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


class initialize_config_path:  # noqa: N801 - a context manager, named as Hydra's are
    """Hydra's compose API over the config folders of ``config_dir`` (:func:`search_folders`),
    searched as ``mccard-run`` searches them: ``config_dir`` as Hydra's main folder, the shipped
    one after it (as ``--config-dir`` adds it). The schemas and method files are registered.

    Built on Hydra 1.3's search-path classes (``hydra-core<1.4`` is pinned): the public API has
    ``--config-dir`` for the main entry point only, and ``hydra.searchpath`` given to ``compose``
    is read after Hydra has looked for the primary config in the main folder alone, so a folder
    of one's own without ``config.yaml`` could not come first."""

    def __init__(self, config_dir: Path, job_name: str = "mccard_run"):
        from hydra._internal.hydra import Hydra
        from hydra._internal.utils import create_config_search_path
        from hydra import version
        from hydra.core.config_search_path import SearchPathQuery
        from hydra.core.global_hydra import GlobalHydra
        from hydra.initialize import get_gh_backup

        register_schemas(config_dir)
        first, *rest = [str(Path(f).resolve()) for f in search_folders(config_dir)]
        self._backup = get_gh_backup()
        version.setbase("1.3")
        path = create_config_search_path(first)
        for folder in rest:
            path.prepend(provider="command-line", path=f"file://{folder}",
                         anchor=SearchPathQuery(provider="schema"))
        GlobalHydra.instance().clear()
        Hydra.create_main_hydra2(task_name=job_name, config_search_path=path)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        from hydra.initialize import restore_gh_from_backup

        restore_gh_from_backup(self._backup)


def _composed(folder: Path, config_name: str, overrides: list[str]):
    from hydra import compose

    with initialize_config_path(folder):
        return compose(config_name, overrides=overrides, return_hydra_config=True)


def _composed_problem(args, parsed, config_dir: Path, warn) -> str | None:
    """Compose the config the command line would run and check its ``hydra`` node: the parts of
    :data:`SHIPPED_ONLY` as the shipped configs give them, and the :data:`ALLOWED` settings with
    values that keep Hydra's files in the run's folder, whichever file set them. A setting of a
    method that no composition runs is said to ``warn``."""
    from omegaconf import OmegaConf

    from ..config import config_dir as shipped_dir

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
            if (problem := _composed_estimator_problem(cfg, config_dir)) is not None:
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


def _composed_estimator_problem(cfg, config_dir: Path) -> str | None:
    """Each method's ``estimator`` in the composed config must be the one its method file (of the
    config folders, as Hydra chose it) names: no other config, key or package sets code to
    import. Read before anything is imported."""
    from omegaconf import OmegaConf

    from ..config import method_files

    files = method_files(search_folders(config_dir))
    choices = cfg.hydra.runtime.choices
    for name in list(_node_of(cfg, "methods") or {}):
        estimator = _node_of(cfg, f"methods.{name}.estimator")
        file = files.get(str(choices.get(f"method@methods.{name}")))
        named = OmegaConf.load(file).get("estimator") if file is not None else None
        if estimator in (None, "???") and named is None:
            continue  # no estimator at all: the spec says it is missing
        if estimator != named:
            where = (f"it differs from {file}'s" if file is not None
                     else "the method comes from no method file")
            return _refused(f"methods.{name}.estimator", f"{ESTIMATOR_WHY}; {where}",
                            f"from a config of {config_dir}")
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

    from ..config import from_dictconfig
    from ..errors import UsageError

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
    from ..config import from_dictconfig
    from ..errors import UsageError

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
    from ..config import composition_message

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


