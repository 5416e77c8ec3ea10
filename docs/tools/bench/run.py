"""The research benchmarks behind the measurement pages of ``docs/measurements/`` (the commands a
user runs are ``mccard-bench``'s): ``python docs/tools/bench/run.py COMMAND ...`` runs one, and
``docs/tools/record.py NAME -- python docs/tools/bench/run.py COMMAND ...`` records its output.
``--help`` lists every command with its options (built from :data:`SUBCOMMANDS`); ``COMMAND
--help`` says what each option does. Each prints its figures with ratios against baselines
measured in the same run.
"""

from __future__ import annotations

import sys

from converge import bench_converge
from converge import seed_list as _seeds
from default import bench_default
from floor import bench_floor
from l1route import bench_l1route
from paths import bench_paths, compare_stores
from scaling import bench_scaling
from solvers import compare_solvers, compare_widths, evidence_gap
from startup import bench_startup
from stopcover import bench_stopcover
from threads import bench_threads
from units import bench_units

from mccard_dist.bench import main
from mccard_dist.bench.common import floats, ints
from mccard_dist.bench.race import replay_race


def _store(path):
    from mccard_dist.store import open_results

    return open_results(path)


def _race(store, margin):
    ds = _store(store)
    print(f"{'margin':>6s} {'method':16s} {'same choice':>13s} {'CV fits':>17s}")
    for m in floats(margin):
        for method, r in replay_race(ds, m).items():
            print(f"{m:6g} {method:16s} {r['same']:6d}/{r['cells']:<6d} "
                  f"{r['fits']:7d}/{r['full']:<7d} ({r['fits'] / r['full']:.0%})")


def _paths(seeds, psi, tau, overrides, stores, method):
    if stores:
        compare_stores(*(_store(path) for path in stores), method=method)
    else:
        bench_paths(seeds=ints(seeds), psi=floats(psi), tau=floats(tau), overrides=overrides,
                    method=method)


def _scaling(n, d, seeds, cap, plot):
    bench_scaling(ns=ints(n), ds=ints(d), seeds=ints(seeds), cap=cap, plot=plot)


def _evidence(cells, seeds, widths):
    evidence_gap(cells=[tuple(float(v) for v in c.split(":")) for c in cells.split(",")],
                 seeds=ints(seeds), widths=floats(widths))


def _l1route(baseline, seeds, psi, tau):
    psi = floats(psi) if psi else [round(0.05 * k, 2) for k in range(21)]
    bench_l1route(baseline, seeds=_seeds(seeds), psi=psi, tau=floats(tau))


def _store_arg(what):
    return {"store": {"metavar": "STORE",
                      "help": f"a results store (<experiment>-<hash>.zarr) {what}"}}


_REPEATS = {"type": int, "help": "seeds per psi value"}
_OVERRIDES = {"action": "append", "default": [], "metavar": "KEY=VALUE", "dest": "overrides"}

#: subcommand -> (help, how it runs given the parsed arguments as keywords, its arguments)
SUBCOMMANDS = {
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
    "startup": ("seconds of mccard-run --help and of a refusal, against the interpreter's start; "
                "this tree against another checkout", bench_startup, {
        "--repeats": {"type": int, "default": 5, "help": "runs of each command"},
        "--tree": {"default": None, "metavar": "TREE",
                   "help": "a checkout of another version, run side by side"}}),
    "default": ("MCCARDRegressor() as shipped against the pruning solver with MacKay's update, "
                "paired on the same fits at shapes beyond the paper's", bench_default, {
        "--shapes": {"default": "300x5000,300x10000,1000x10000,1000x3000,3000x1000",
                     "help": "NxD training shapes, comma-separated"},
        "--cells": {"default": "0.2:5,0.1:2", "help": "psi:tau cells, comma-separated"},
        "--seeds": {"default": "40-44", "help": "seeds, FIRST-LAST or comma-separated"},
        "--csv": {"default": None, "dest": "csv_path", "metavar": "CSV",
                  "help": "also write one row per fit and arm to this file, as they are made"}}),
    "converge": ("the ARD estimators' default relevance update against MacKay's capped at 300 "
                 "iterations, both against MacKay's run to 5000 iterations, paired on the same "
                 "fits",
                 bench_converge, {
        "--seeds": {"default": "70-79", "help": "seeds, FIRST-LAST or comma-separated"},
        "--psi": {"default": "0,0.3,0.6,0.9", "help": "comma-separated psi values"},
        "--tau": {"default": "2,5,10", "help": "comma-separated tau values"},
        "--widths": {"default": None,
                     "help": "MCC-ARD kernel widths, comma-separated, 'auto' among them (default: "
                             "the paper experiment's grid and auto; both likelihoods each)"},
        "--jobs": {"type": int, "default": 1, "help": "draws fitted at once, one process each"},
        "--csv": {"default": None, "dest": "csv_path", "metavar": "CSV",
                  "help": "also write one row per fit and arm to this file"}}),
    "stopcover": ("the stop rule's coverage at its stop, by simulation: normal-like and "
                  "long-tailed streams, claims and precision rules, budgets 100 and 1,000, "
                  "beside the fixed 100-seed t-interval", bench_stopcover, {
        "--streams": {"type": int, "default": 1000, "help": "streams of each kind"},
        "--seed": {"type": int, "default": 0, "help": "the simulation's first seed"}}),
    "l1route": ("MCC-L1's cross-validated paper cells by this tree against another version, side "
                "by side in one run, on the same cells", _l1route, {
        "--baseline": {"required": True, "metavar": "REV",
                       "help": "the git revision to compare with (run from a worktree of it)"},
        "--seeds": {"default": "80-81", "help": "seeds, FIRST-LAST or comma-separated"},
        "--psi": {"default": None,
                  "help": "comma-separated psi values (default: the paper experiment's 21)"},
        "--tau": {"default": "2,5,10", "help": "comma-separated tau values"}}),
    "threads": ("the README's estimator example under the fits' BLAS-thread rule against the "
                "process's default threads and one thread, idle and beside one busy process per "
                "core; one fit at N = D = LARGE with and without the rule", bench_threads, {
        "--repeats": {"type": int, "default": 3, "help": "runs of each arm (median)"},
        "--large": {"type": int, "default": 3000,
                    "help": "N = D of the large fit (0: none)"}}),
}

ABOUT = ("Research benchmarks of mccard-dist: each command prints its figures with ratios against "
         "baselines measured in the same run. Timings are medians over datasets on one core (BLAS "
         "threads pinned to 1, reported).")

if __name__ == "__main__":
    sys.exit(main(subcommands=SUBCOMMANDS, prog="docs/tools/bench/run.py", about=ABOUT))
