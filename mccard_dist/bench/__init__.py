"""Speed benchmarks (``mccard-bench``): each prints its figures with ratios against baselines
measured in the same run. ``mccard-bench --help`` lists every command with its options (built
from :data:`SUBCOMMANDS`); ``mccard-bench COMMAND --help`` says what each option does.
"""

from __future__ import annotations

import argparse
import re
import textwrap

from .common import AUTO, CURRENT, PLAIN_KFOLD, RACE, _floats, _ints
from .default import bench_default
from .estimators import bench_estimators
from .floor import bench_floor
from .paper import bench_paper
from .paths import bench_paths, compare_stores
from .pipeline import bench_pipeline
from .race import replay_race
from .scaling import bench_scaling
from .solvers import compare_solvers, compare_widths, evidence_gap
from .startup import bench_startup
from .tailexact import bench_tailexact
from .threads import bench_threads
from .units import bench_units

__all__ = ["AUTO", "CURRENT", "PLAIN_KFOLD", "RACE", "bench_default", "bench_estimators", "bench_floor",
           "bench_paper", "bench_paths", "bench_pipeline", "bench_scaling", "bench_startup",
           "bench_tailexact", "bench_threads", "bench_units", "compare_solvers", "compare_stores",
           "compare_widths", "evidence_gap", "main", "parser", "replay_race"]


def _store(path):
    from ..store import open_results

    return open_results(path)


def _race(store, margin):
    ds = _store(store)
    print(f"{'margin':>6s} {'method':16s} {'same choice':>13s} {'CV fits':>17s}")
    for m in _floats(margin):
        for method, r in replay_race(ds, m).items():
            print(f"{m:6g} {method:16s} {r['same']:6d}/{r['cells']:<6d} "
                  f"{r['fits']:7d}/{r['full']:<7d} ({r['fits'] / r['full']:.0%})")


def _paths(seeds, psi, tau, overrides, stores, method):
    if stores:
        compare_stores(*(_store(path) for path in stores), method=method)
    else:
        bench_paths(seeds=_ints(seeds), psi=_floats(psi), tau=_floats(tau), overrides=overrides,
                    method=method)


def _paper(baseline_psi, **kwargs):
    bench_paper(baseline_psi=tuple(_floats(baseline_psi)), **kwargs)


def _scaling(n, d, seeds, cap, plot):
    bench_scaling(ns=_ints(n), ds=_ints(d), seeds=_ints(seeds), cap=cap, plot=plot)


def _evidence(cells, seeds, widths):
    evidence_gap(cells=[tuple(float(v) for v in c.split(":")) for c in cells.split(",")],
                 seeds=_ints(seeds), widths=_floats(widths))


def _store_arg(what):
    return {"store": {"metavar": "STORE",
                      "help": f"a results store (<experiment>-<hash>.zarr) {what}"}}


_REPEATS = {"type": int, "help": "seeds per psi value"}
_OVERRIDES = {"action": "append", "default": [], "metavar": "KEY=VALUE", "dest": "overrides"}

#: subcommand -> (help, how it runs given the parsed arguments as keywords, its arguments)
SUBCOMMANDS = {
    "estimators": ("per-estimator fit time on the paper's data", bench_estimators, {
        "--repeats": {**_REPEATS, "default": 3},
        "--n-features": {"type": int, "default": 1000, "help": "D of the paper's data"}}),
    "pipeline": ("fits/s of the pipeline and the driver's memory per cell", bench_pipeline, {
        "--seeds": {"type": int, "default": 8, "help": "seeds of the timed grid (x 4 psi)"},
        "--cells": {"type": int, "default": 10_000,
                    "help": "cells of the driver-memory grid (0: skip it)"}}),
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
    "floor": ("MCC-ARD fit time against its linear-algebra floor", bench_floor,
              {"--repeats": {**_REPEATS, "default": 2}}),
    "race": ("replay cv.race on a store made with plain K-fold CV", _race, {
        **_store_arg("made with plain K-fold CV (no cv.race)"),
        "--margin": {"default": "0.1,0.25,0.5", "help": "comma-separated margins"}}),
    "units": ("one large cell: one task per CV fit against blocks of cells, on 1 and 2 workers",
              bench_units, {"--n-train": {"type": int, "default": 2000, "help": "N of the cell"},
                            "--n-features": {"type": int, "default": 4000, "help": "D of the cell"},
                            "--widths": {"type": int, "default": 4,
                                         "help": "kernel widths of MCC-ARD's CV grid"},
                            "--folds": {"type": int, "default": 5, "help": "CV folds"}}),
    "scaling": ("fit time, memory and quality of the pruning and sequential solvers over N and D",
                _scaling, {
        "--n": {"default": "300,1000,3000", "help": "training sizes, comma-separated"},
        "--d": {"default": "1000,3000,10000", "help": "feature counts, comma-separated"},
        "--seeds": {"default": "0", "help": "datasets per size, comma-separated seeds"},
        "--cap": {"type": float, "default": 120.0,
                  "help": "skip a solver at a size where its time, projected from a smaller "
                          "size, exceeds this (s)"},
        "--plot": {"default": None, "metavar": "PNG", "help": "log-log plot of fit time"}}),
    "solvers": ("the sequential solver against the pruning one, paired on the cells of a store "
                "holding both", lambda store: compare_solvers(_store(store)),
                _store_arg("holding methods that differ only in their solver")),
    "widths": ("the kernel width set inside the fit against K-fold CV, paired on the cells of a "
               "store holding both", lambda store: compare_widths(_store(store)),
               _store_arg("holding methods that differ only in how the width is chosen")),
    "paths": ("K-fold CV by warm-started paths against one fit per candidate, on the same cells "
              "or two stores", _paths, {
        "--method": {"default": "mcc_l1", "help": "the method (mcc_l1, or an MCC-ARD method "
                                                   "with warm_start)"},
        "--seeds": {"default": "0", "help": "comma-separated seeds"},
        "--psi": {"default": "0.1,0.5,0.9", "help": "comma-separated psi values"},
        "--tau": {"default": "2,10", "help": "comma-separated tau values"},
        "--set": {**_OVERRIDES, "help": "Hydra override (default experiment=reproduce), "
                                        "repeatable"},
        "--stores": {"nargs": 2, "metavar": ("NONE_STORE", "PATHS_STORE"),
                     "help": "compare two stores instead (the first made with cv.paths=none)"}}),
    "evidence": ("the ARD evidence of either solver's MCC-ARD fit, at the same noise precisions",
                 _evidence, {
        "--cells": {"default": "0.1:2,0.3:5,0.9:10", "help": "psi:tau pairs"},
        "--seeds": {"default": "300,301", "help": "comma-separated seeds"},
        "--widths": {"default": "0.1,0.3,1,3", "help": "comma-separated kernel widths"}}),
    "threads": ("the README's estimator example with the fits' BLAS-thread rule against the default "
                "threads and one thread, as the machine is and beside one busy process per core",
                bench_threads, {"--repeats": {"type": int, "default": 1,
                                              "help": "runs of each arm (median)"}}),
    "startup": ("seconds of mccard-run --help and of two refusals, against the interpreter's "
                "start", bench_startup, {"--repeats": {"type": int, "default": 5,
                                                       "help": "runs of each command"}}),
    "default": ("MCCARDRegressor() as shipped against the pruning solver with MacKay's update, "
                "paired on the same fits at shapes beyond the paper's", bench_default, {
        "--shapes": {"default": "300x5000,300x10000,1000x10000,1000x3000,3000x1000",
                     "help": "NxD training shapes, comma-separated"},
        "--cells": {"default": "0.2:5,0.1:2", "help": "psi:tau cells, comma-separated"},
        "--seeds": {"default": "40-44", "help": "seeds, FIRST-LAST or comma-separated"},
        "--csv": {"default": None, "dest": "csv_path", "metavar": "CSV",
                  "help": "also write one row per fit and arm to this file, as they are made"}}),
    "tailexact": ("the pruning solver's tail-exact relevance update against MacKay's, paired on "
                  "the same fits, MacKay's run to 5000 iterations as the reference",
                  bench_tailexact, {
        "--seeds": {"default": "30-39", "help": "seeds, FIRST-LAST or comma-separated"},
        "--psi": {"default": "0,0.3,0.6,0.9", "help": "comma-separated psi values"},
        "--tau": {"default": "2,5,10", "help": "comma-separated tau values"},
        "--widths": {"default": "0.27,1.5,7.9",
                     "help": "MCC-ARD kernel widths, comma-separated (both likelihoods each)"},
        "--csv": {"default": None, "dest": "csv_path", "metavar": "CSV",
                  "help": "also write one row per fit and arm to this file, as they are made"},
        "--report": {"default": None, "metavar": "CSV",
                     "help": "print the figures of a file written by --csv (its complete cells) "
                             "instead of fitting"}}),
}

#: the width of ``mccard-bench --help``'s list of commands
WIDTH = 100


def _usage_lines(name, command) -> list[str]:
    """``mccard-bench NAME [options]`` for the list of commands, wrapped within :data:`WIDTH`
    without splitting an option from its value."""
    usage = " ".join(command.format_usage().split()[1:])  # "mccard-bench NAME [-h] ..."
    parts = [p for p in re.findall(r"\[[^][]*(?:\[[^][]*\][^][]*)*\]|\S+", usage) if p != "[-h]"]
    lines, line = [], "  "
    for part in parts:
        if len(line) + len(part) + 1 > WIDTH and line.strip():
            lines.append(line.rstrip())
            line = " " * (len(f"  mccard-bench {name} "))
        line += part + " "
    return lines + [line.rstrip()]


def parser() -> argparse.ArgumentParser:
    """The command line of ``mccard-bench``: one command per entry of :data:`SUBCOMMANDS`, listed
    in the help with its options and summary."""
    about = ("Speed benchmarks: each command prints its figures with ratios against baselines "
             "measured in the same run. Timings are medians over datasets on one core (BLAS "
             "threads pinned to 1, reported).")
    main = argparse.ArgumentParser(prog="mccard-bench", description=textwrap.fill(about, WIDTH),
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = main.add_subparsers(dest="command", required=True, metavar="COMMAND",
                              help="one of the commands below; mccard-bench COMMAND --help says "
                                   "what each option does")
    listing = ["commands:"]
    for name, (summary, run, arguments) in SUBCOMMANDS.items():
        command = sub.add_parser(name, description=summary)
        command.set_defaults(run=run)
        for flag, options in arguments.items():
            default = options.get("default")
            if default is not None and not isinstance(default, (bool, list)):
                options = {**options, "help": f"{options['help']} (default: %(default)s)"}
            command.add_argument(flag, **options)
        listing += _usage_lines(name, command)
        listing += textwrap.wrap(summary, WIDTH, initial_indent=" " * 6, subsequent_indent=" " * 6)
    main.epilog = "\n".join(listing)
    return main


def main(argv=None):
    args = vars(parser().parse_args(argv))
    del args["command"]
    args.pop("run")(**args)
    return 0
