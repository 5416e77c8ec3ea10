"""Speed benchmarks that print figures and ratios against baselines measured in the same run.

Usage::

    python -m mccard_dist.bench estimators [--repeats 3] [--n-features 1000]
    python -m mccard_dist.bench pipeline [--seeds 8] [--cells 10000]
    python -m mccard_dist.bench paper [--seeds 1] [--workers 2] [--baseline-psi 0,0.5,1] [--auto]
    python -m mccard_dist.bench race STORE [--margin 0.1,0.25,0.5]
    python -m mccard_dist.bench floor [--repeats 2]
    python -m mccard_dist.bench units [--n-train 2000] [--n-features 4000] [--widths 4] [--folds 5]
    python -m mccard_dist.bench scaling [--n 300,1000,3000] [--d 1000,3000,10000] [--seeds 0]
    python -m mccard_dist.bench solvers STORE
    python -m mccard_dist.bench widths STORE
    python -m mccard_dist.bench paths [--seeds 0] [--psi 0.1,0.5,0.9] [--tau 2,10] [--set K=V]
    python -m mccard_dist.bench paths --stores NONE_STORE PATHS_STORE
    python -m mccard_dist.bench evidence [--cells 0.1:2,0.3:5,0.9:10] [--seeds 300,301]
    python -m mccard_dist.bench startup [--repeats 5]

Timings are medians over datasets on one core (BLAS threads pinned to 1, reported).
"""

from __future__ import annotations

import argparse

from .common import AUTO, CURRENT, PLAIN_KFOLD, RACE
from .estimators import bench_estimators
from .floor import bench_floor
from .paper import bench_paper
from .paths import bench_paths, compare_stores
from .pipeline import bench_pipeline
from .race import replay_race
from .scaling import bench_scaling
from .solvers import compare_solvers, compare_widths, evidence_gap
from .startup import bench_startup
from .units import bench_units

__all__ = ["AUTO", "CURRENT", "PLAIN_KFOLD", "RACE", "bench_estimators", "bench_floor",
           "bench_paper", "bench_paths", "bench_pipeline", "bench_scaling", "bench_startup",
           "bench_units", "compare_solvers",
           "compare_stores", "compare_widths", "evidence_gap", "main", "replay_race"]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="mccard-bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    est = sub.add_parser("estimators", help="per-estimator fit time on the paper's data")
    est.add_argument("--repeats", type=int, default=3, help="seeds per psi value")
    est.add_argument("--n-features", type=int, default=1000)
    pipe = sub.add_parser("pipeline", help="fits/s of the pipeline and the driver's memory per "
                                           "cell")
    pipe.add_argument("--seeds", type=int, default=8)
    pipe.add_argument("--cells", type=int, default=10_000,
                      help="cells of the driver-memory grid (0: skip it)")
    paper = sub.add_parser("paper", help="projected core-hours of the paper experiment, current "
                                         "configuration against plain K-fold")
    paper.add_argument("--seeds", type=int, default=1, help="seeds of the slice (every psi, tau)")
    paper.add_argument("--workers", type=int, default=2)
    paper.add_argument("--baseline-psi", default="0,0.5,1",
                       help="psi values of the plain K-fold cells (every tau, seed 0)")
    paper.add_argument("--no-baseline", action="store_true",
                       help="skip the plain K-fold cells (they are slow)")
    paper.add_argument("--auto", action="store_true",
                       help="the kernel width set inside each fit (experiment=paper_auto), "
                            "against K-fold CV with racing on the baseline cells")
    paper.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="Hydra override for every run, e.g. --set data.n_features=2000 "
                            "(repeatable)")
    floor = sub.add_parser("floor", help="MCC-ARD fit time against its linear-algebra floor")
    floor.add_argument("--repeats", type=int, default=2, help="seeds per psi value")
    race = sub.add_parser("race", help="replay cv.race on a store made with plain K-fold CV")
    race.add_argument("store")
    race.add_argument("--margin", default="0.1,0.25,0.5", help="comma-separated margins")
    units = sub.add_parser("units", help="one large cell: one task per CV fit against blocks of "
                                         "cells, on 1 and 2 workers")
    units.add_argument("--n-train", type=int, default=2000)
    units.add_argument("--n-features", type=int, default=4000)
    units.add_argument("--widths", type=int, default=4)
    units.add_argument("--folds", type=int, default=5)
    scaling = sub.add_parser("scaling", help="fit time, memory and quality of the pruning and "
                                             "sequential solvers over N and D")
    scaling.add_argument("--n", default="300,1000,3000", help="training sizes, comma-separated")
    scaling.add_argument("--d", default="1000,3000,10000", help="feature counts, comma-separated")
    scaling.add_argument("--seeds", default="0", help="datasets per size, comma-separated seeds")
    scaling.add_argument("--cap", type=float, default=120.0,
                         help="skip a solver at a size where its time, projected from a smaller "
                              "size, exceeds this (s)")
    scaling.add_argument("--plot", default=None, metavar="PNG", help="log-log plot of fit time")
    solvers = sub.add_parser("solvers", help="the sequential solver against the pruning one, "
                                             "paired on the cells of a store holding both")
    solvers.add_argument("store")
    widths = sub.add_parser("widths", help="the kernel width set inside the fit against K-fold "
                                           "CV, paired on the cells of a store holding both")
    widths.add_argument("store")
    paths = sub.add_parser("paths", help="MCC-L1's CV by warm-started paths against one fit "
                                         "per candidate, on the same cells or two stores")
    paths.add_argument("--seeds", default="0", help="comma-separated seeds")
    paths.add_argument("--psi", default="0.1,0.5,0.9", help="comma-separated psi values")
    paths.add_argument("--tau", default="2,10", help="comma-separated tau values")
    paths.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="Hydra override (default experiment=reproduce), repeatable")
    paths.add_argument("--stores", nargs=2, metavar=("NONE_STORE", "PATHS_STORE"),
                       help="compare two stores instead (the first made with cv.paths=none)")
    evid = sub.add_parser("evidence", help="the ARD evidence of either solver's MCC-ARD fit, at "
                                           "the same noise precisions")
    evid.add_argument("--cells", default="0.1:2,0.3:5,0.9:10", help="psi:tau pairs")
    evid.add_argument("--seeds", default="300,301", help="comma-separated seeds")
    evid.add_argument("--widths", default="0.1,0.3,1,3", help="comma-separated kernel widths")
    start = sub.add_parser("startup", help="seconds of mccard-run --help and of two refusals, "
                                           "against the interpreter's start")
    start.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    if args.command == "estimators":
        bench_estimators(repeats=args.repeats, n_features=args.n_features)
    elif args.command == "pipeline":
        bench_pipeline(seeds=args.seeds, cells=args.cells)
    elif args.command == "units":
        bench_units(n_train=args.n_train, n_features=args.n_features, widths=args.widths,
                    folds=args.folds)
    elif args.command == "scaling":
        bench_scaling(ns=[int(v) for v in args.n.split(",")],
                      ds=[int(v) for v in args.d.split(",")],
                      seeds=[int(v) for v in args.seeds.split(",")], cap=args.cap,
                      plot=args.plot)
    elif args.command == "solvers":
        from ..store import open_results

        compare_solvers(open_results(args.store))
    elif args.command == "widths":
        from ..store import open_results

        compare_widths(open_results(args.store))
    elif args.command == "paths":
        if args.stores:
            from ..store import open_results

            compare_stores(*(open_results(path) for path in args.stores))
        else:
            bench_paths(seeds=[int(v) for v in args.seeds.split(",")],
                        psi=[float(v) for v in args.psi.split(",")],
                        tau=[float(v) for v in args.tau.split(",")], overrides=args.set)
    elif args.command == "evidence":
        cells = [tuple(float(v) for v in c.split(":")) for c in args.cells.split(",")]
        evidence_gap(cells=cells, seeds=[int(v) for v in args.seeds.split(",")],
                     widths=[float(v) for v in args.widths.split(",")])
    elif args.command == "startup":
        bench_startup(repeats=args.repeats)
    elif args.command == "floor":
        bench_floor(repeats=args.repeats)
    elif args.command == "race":
        from ..store import open_results

        ds = open_results(args.store)
        print(f"{'margin':>6s} {'method':16s} {'same choice':>13s} {'CV fits':>17s}")
        for margin in (float(m) for m in args.margin.split(",")):
            for method, r in replay_race(ds, margin).items():
                print(f"{margin:6g} {method:16s} {r['same']:6d}/{r['cells']:<6d} "
                      f"{r['fits']:7d}/{r['full']:<7d} ({r['fits'] / r['full']:.0%})")
    elif args.command == "paper":
        psis = tuple(float(p) for p in args.baseline_psi.split(","))
        bench_paper(seeds=args.seeds, workers=args.workers, baseline_psi=psis,
                    baseline=not args.no_baseline, overrides=args.set, auto=args.auto)
    return 0

