"""Speed benchmarks a user runs (``mccard-bench``): the estimators against scikit-learn's, the
pipeline's throughput and the paper's projected core-hours; each prints its figures with ratios
against baselines measured in the same run (the research benchmarks behind the measurement pages
are scripts under ``docs/tools/bench/``, whose command line :func:`parser` builds too).
``mccard-bench --help`` lists every command with its options (built from :data:`SUBCOMMANDS`);
``mccard-bench COMMAND --help`` says what each option does.
"""

from __future__ import annotations

import argparse
import re
import textwrap

from .common import AUTO, CURRENT, PLAIN_KFOLD, RACE, floats
from .estimators import bench_estimators
from .paper import bench_paper
from .pipeline import bench_pipeline
from .stop import bench_stop

__all__ = ["AUTO", "CURRENT", "PLAIN_KFOLD", "RACE", "bench_estimators", "bench_paper",
           "bench_pipeline", "bench_stop", "main", "parser"]


def _paper(baseline_psi, **kwargs):
    bench_paper(baseline_psi=tuple(floats(baseline_psi)), **kwargs)


def _stop(margins, **kwargs):
    pairs = (item.split("=", 1) for item in margins.split(","))
    bench_stop(margins={k.strip(): float(v) for k, v in pairs}, **kwargs)


_OVERRIDES = {"action": "append", "default": [], "metavar": "KEY=VALUE", "dest": "overrides"}
#: subcommand -> (help, how it runs given the parsed arguments as keywords, its arguments)
SUBCOMMANDS = {
    "estimators": ("per-estimator fit time on the paper's data", bench_estimators, {
        "--repeats": {"type": int, "default": 3, "help": "seeds per psi value"},
        "--n-features": {"type": int, "default": 1000, "help": "D of the paper's data"}}),
    "pipeline": ("cells/s of the framework on a grid of an estimator that costs nothing, with "
                 "each cell's CPU in the workers and the driver, the driver's memory and the "
                 "store's files; this tree against another checkout", bench_pipeline, {
        "--cells": {"type": int, "default": 20_000, "help": "cells of the grid (1 tau x 2 psi)"},
        "--workers": {"type": int, "default": 2, "help": "one-thread LocalCluster workers"},
        "--baseline": {"default": None, "metavar": "TREE",
                       "help": "a checkout of another version (e.g. git worktree add TREE "
                               "COMMIT), run the same way side by side"},
        "--baseline-cells": {"type": int, "default": None,
                             "help": "cells of the baseline's grid (default: --cells)"}}),
    "paper": ("projected core-hours of the paper experiment, current configuration against "
              "plain K-fold", _paper, {
        "--seeds": {"type": int, "default": 1, "help": "seeds of the slice (every psi, tau)"},
        "--workers": {"type": int, "default": 2, "help": "one-thread LocalCluster workers"},
        "--baseline-psi": {"default": "0,0.5,1",
                           "help": "psi values of the plain K-fold cells (every tau, seed 0)"},
        "--no-baseline": {"action": "store_false", "dest": "baseline",
                          "help": "skip the plain K-fold cells (they are slow)"},
        "--auto": {"action": "store_true",
                   "help": "the kernel width set inside each fit (experiment=paper_auto), "
                           "against K-fold CV with racing on the baseline cells"},
        "--set": {**_OVERRIDES, "help": "Hydra override for every run, e.g. --set "
                                        "data.n_features=2000 (repeatable)"}}),
    "stop": ("the paper experiment under a stop rule against its fixed seeds and a repeat of "
             "the fixed run on other seeds: seeds and core-hours used, claims settled, signs "
             "against the fixed run's and the repeat's agreement", _stop, {
        "--budget": {"type": int, "default": 100, "help": "seeds a cell may run at most"},
        "--fixed": {"type": int, "default": 100, "help": "seeds of the fixed run"},
        "--min-seeds": {"type": int, "default": 10, "help": "seeds of a cell's first round"},
        "--round": {"type": int, "default": 10, "dest": "round_", "metavar": "N",
                    "help": "seeds added to an open cell at a time"},
        "--margins": {"default": "r=0.05,f1=0.1",
                      "help": "the claims' margins, metric=margin,..."},
        "--against": {"default": None, "metavar": "METHOD",
                      "help": "claims of this method against every other (default: every pair)"},
        "--guarantee": {"default": "normal", "choices": ("normal", "bounded"),
                        "help": "the rule's intervals (experiment.stop.guarantee)"},
        "--workers": {"type": int, "default": 2, "help": "one-thread LocalCluster workers"},
        "--set": {**_OVERRIDES, "help": "Hydra override for every run, e.g. --set "
                                        "experiment=paper_auto (repeatable)"}}),
}

#: the width of ``mccard-bench --help``'s list of commands
WIDTH = 100


def _usage_lines(prog, name, command) -> list[str]:
    """``PROG NAME [options]`` for the list of commands, wrapped within :data:`WIDTH` without
    splitting an option from its value."""
    usage = " ".join(command.format_usage().split()[1:])  # "PROG NAME [-h] ..."
    parts = [p for p in re.findall(r"\[[^][]*(?:\[[^][]*\][^][]*)*\]|\S+", usage) if p != "[-h]"]
    lines, line = [], "  "
    for part in parts:
        if len(line) + len(part) + 1 > WIDTH and line.strip():
            lines.append(line.rstrip())
            line = " " * (len(f"  {prog} {name} "))
        line += part + " "
    return lines + [line.rstrip()]


#: what ``mccard-bench --help`` says first
ABOUT = ("Speed benchmarks: each command prints its figures with ratios against baselines measured "
         "in the same run. Timings are medians over datasets on one core (BLAS threads pinned to "
         "1, reported).")


def parser(subcommands=None, prog: str = "mccard-bench",
           about: str = ABOUT) -> argparse.ArgumentParser:
    """The command line of ``prog``: one command per entry of ``subcommands`` (default
    :data:`SUBCOMMANDS`: name -> (summary, function, its arguments)), listed in the help with
    its options and summary."""
    main = argparse.ArgumentParser(prog=prog, description=textwrap.fill(about, WIDTH),
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = main.add_subparsers(dest="command", required=True, metavar="COMMAND",
                              help=f"one of the commands below; {prog} COMMAND --help says what "
                                   "each option does")
    listing = ["commands:"]
    for name, (summary, run, arguments) in (subcommands or SUBCOMMANDS).items():
        command = sub.add_parser(name, description=summary)
        command.set_defaults(run=run)
        for flag, options in arguments.items():
            default = options.get("default")
            if default is not None and not isinstance(default, (bool, list)):
                options = {**options, "help": f"{options['help']} (default: %(default)s)"}
            command.add_argument(flag, **options)
        listing += _usage_lines(prog, name, command)
        listing += textwrap.wrap(summary, WIDTH, initial_indent=" " * 6, subsequent_indent=" " * 6)
    main.epilog = "\n".join(listing)
    return main


def main(argv=None, subcommands=None, prog: str = "mccard-bench", about: str = ABOUT) -> int:
    """Run the command of ``argv`` (:func:`parser`'s arguments)."""
    args = vars(parser(subcommands, prog, about).parse_args(argv))
    del args["command"]
    args.pop("run")(**args)
    return 0
