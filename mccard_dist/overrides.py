"""A ``mccard-run`` command line read before Hydra gets it, for the mistakes a person makes: a
word that is no override (``mccard-run smoke``), Hydra's grammar (a value that needs quotes) and
an option a config group does not have, each said in one line with what was meant. Nothing is
composed here; what the command line names is the user's to run (Hydra's model: its configs may
name callbacks and launchers), and the rest is Hydra's.
"""

from __future__ import annotations

import argparse
import difflib
import re
from pathlib import Path

__all__ = ["args_parser", "hydra_argv", "method_of", "parse_args", "problem"]


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
    """The command line as Hydra's main reads it: the flags first, under their full names, then
    the overrides in order (Hydra takes no flag after an override)."""
    out = []
    for dest, value in vars(args).items():
        flag = "--" + dest.replace("_", "-")
        if value is True and dest != "help":
            out.append(flag)
        elif isinstance(value, str):
            out += [flag, value]
    return out + list(args.overrides)


def problem(args, folders: tuple[Path, ...]) -> str | None:
    """The first mistake of the parsed command line ``args`` (:func:`parse_args`) as one line,
    or None: a word without ``=``, Hydra's grammar error (with the quoting a value needs), an
    option of a config group that none of ``folders`` (the config folders, searched in order)
    has. Shell completion's own words are Hydra's."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    if args.shell_completion:
        return None
    for word in args.overrides:
        if "=" not in word and not word.startswith("~"):
            groups = [f.parent.name for folder in folders
                      for f in folder.glob(f"*/{word}.yaml") if f.parent.name != "method"]
            hint = (f"did you mean {groups[0]}={word}?" if groups else
                    "an override is KEY=VALUE or GROUP=OPTION, e.g. experiment=smoke")
            return f"{word}: not an override; {hint}"
    try:
        parsed = OverridesParser.create().parse_overrides(args.overrides)
    except (HydraException, OmegaConfBaseException, ValueError) as exc:
        return _grammar(str(exc), args.overrides)
    for override in parsed:
        said = _group_problem(override, folders)
        if said is not None:
            return said
    return _methods_problem(parsed, folders)


def _methods_problem(parsed, folders) -> str | None:
    """A method that ``experiment.methods`` lists on the command line (each value of a sweep)
    and that neither a method file of ``folders`` nor the command line (``+method@methods.X``)
    gives, as the spec says it."""
    from .config import method_files, unknown_method

    known = list(method_files(folders))
    known += [str(o.package).split(".", 1)[1] for o in parsed
              if str(o.package or "").startswith("methods.")]
    for override in parsed:
        if str(override.key_or_group) != "experiment.methods" or override.is_delete():
            continue
        try:
            values = (list(override.sweep_iterator()) if override.is_sweep_override()
                      else [override.value()])
        except Exception:  # noqa: BLE001 - a sweep Hydra expands itself: composition checks it
            return None
        for value in values:
            if isinstance(value, list):
                for name in value:
                    if isinstance(name, str) and name not in known:
                        return unknown_method(name, sorted(set(known)), value)
    return None


def _group_problem(override, folders) -> str | None:
    """An option of a config group (each value of a sweep) that no folder of the group has,
    with the group's options and the closest one."""
    group = str(override.key_or_group)
    inside = [f / group for f in folders if (f / group).is_dir()]
    if "." in group or "/" in group or override.is_delete():
        return None
    if not inside:
        return _misspelt_group(override, group, folders)
    try:
        values = ([str(v) for v in override.sweep_string_iterator()]
                  if override.is_sweep_override() else [str(override.value())])
    except Exception:  # noqa: BLE001 - glob(): Hydra expands it to the group's options
        return None
    options = sorted({p.stem for folder in inside for p in folder.glob("*.yaml")})
    for value in values:
        if value in options or any((folder / f"{value}.yaml").is_file() for folder in inside):
            continue
        close = difflib.get_close_matches(value, options, n=1)
        key = override.get_key_element().lstrip("+~")
        return (f"{key}={value}: no such option of {group}; available: {', '.join(options)}"
                + (f"; did you mean {group}={close[0]}?" if close else ""))
    return None


def _misspelt_group(override, word: str, folders) -> str | None:
    """A top-level word that is neither a key of the config nor a group of ``folders``, close to
    a group's name (``experment=smoke``): the override as it was meant."""
    from dataclasses import fields

    from .config import ExperimentSpec

    keys = {f.name for f in fields(ExperimentSpec)}
    groups = {d.name for f in folders if f.is_dir() for d in f.iterdir() if d.is_dir()}
    close = difflib.get_close_matches(word, sorted(keys | groups), n=1)
    if word in keys or not close or close[0] not in groups:
        return None  # a key of the config, or close to one: the config's check says so
    key = override.get_key_element().lstrip("+~")
    value = override.value() if not override.is_sweep_override() else None
    meant = f"{close[0]}={value}" if isinstance(value, str) else close[0]
    return f"{key}: no config group or key {word}; did you mean {meant}?"


def _grammar(message: str, overrides: list[str]) -> str:
    """Hydra's grammar error as one line, with the hint a user needs most: quoting."""
    text = "; ".join(line.strip() for line in message.splitlines() if line.strip())
    odd = [o for o in overrides if re.search(r"[\s$'\"\\]|[^\x00-\x7f]", o.partition("=")[2])]
    if odd:
        key, _, value = odd[0].partition("=")
        text += (f"; a value with spaces, $ or letters beyond ASCII must be quoted for Hydra, "
                 f"e.g. \"{key}='{value}'\"")
    return text


def method_of(override: str) -> str | None:
    """The method an override of a key under ``methods`` sets (``methods.lasso.grid.x=[1]`` ->
    ``lasso``), None for any other."""
    key = override.lstrip("+~").partition("=")[0].split("@")[0]
    parts = key.split(".")
    return parts[1] if len(parts) > 2 and parts[0] == "methods" else None
