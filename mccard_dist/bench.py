"""Speed benchmarks that print figures and ratios against baselines measured in the same run.

Usage::

    python -m mccard_dist.bench estimators [--repeats 3] [--n-features 1000]
    python -m mccard_dist.bench pipeline [--seeds 8]
    python -m mccard_dist.bench paper [--seeds 1] [--workers 2] [--baseline-psi 0,0.5,1] [--auto]
    python -m mccard_dist.bench race STORE [--margin 0.1,0.25,0.5]
    python -m mccard_dist.bench floor [--repeats 2]

Timings are medians over datasets on one core (BLAS threads pinned to 1, reported).
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
import warnings

import numpy as np

__all__ = ["bench_estimators", "bench_floor", "bench_paper", "bench_pipeline", "main",
           "replay_race"]

#: The benchmark's baseline ("previous" in its output), as overrides of the current config: plain
#: K-fold CV (the paper's 5 folds, no racing) and MCC-L1's inner Lasso solves through
#: scikit-learn's Lasso estimator (``solver="lasso"``, with its own stopping rule).
PREVIOUS = ("cv=kfold", "cv.race=null", "methods.mcc_l1.params.solver=lasso")
#: The racing margin of the current configuration.
RACE = 0.25
#: The current configuration: the same K-fold CV with racing (README, "Speed"), current solvers.
CURRENT = ("cv=kfold", f"cv.race={RACE}")
#: The kernel width set inside each fit: the paper's grid as ``experiment=paper_auto``.
AUTO = ("experiment=paper_auto",)


def _blas_report() -> str:
    from threadpoolctl import threadpool_info

    infos = threadpool_info()
    return ", ".join(f"{i.get('internal_api')}={i.get('num_threads')}" for i in infos) or "none"


def _estimator_cases(alpha_ratio=0.05):
    from sklearn.linear_model import ARDRegression

    from .models import LSARDRegressor, MCCARDRegressor, MCCL1Regressor, mcc_l1_alpha_max

    h = 1.0

    def l1(solver, **kw):
        def build(X, y):
            return MCCL1Regressor(h, alpha_ratio * mcc_l1_alpha_max(X, y, h), solver=solver, **kw)
        return build

    return [
        ("LS-ARD (ours)", lambda X, y: LSARDRegressor()),
        ("sklearn ARD, paper settings", lambda X, y: ARDRegression(
            alpha_1=0.0, alpha_2=0.0, lambda_1=0.0, lambda_2=0.0, threshold_lambda=1e6,
            fit_intercept=True, max_iter=300)),
        ("sklearn ARD, defaults", lambda X, y: ARDRegression()),
        (f"MCC-ARD deviant h={h}", lambda X, y: MCCARDRegressor(h)),
        (f"MCC-ARD deviant h={h}, w_steps=1", lambda X, y: MCCARDRegressor(h, w_steps=1)),
        (f"MCC-ARD proper h={h}", lambda X, y: MCCARDRegressor(h, likelihood="proper")),
        ("MCC-ARD deviant h=auto", lambda X, y: MCCARDRegressor("auto")),
        ("MCC-ARD proper h=auto", lambda X, y: MCCARDRegressor("auto", likelihood="proper")),
        (f"MCC-L1 cd h={h} alpha={alpha_ratio}*max", l1("cd")),
        (f"MCC-L1 cd, full sweeps (previous) h={h}", l1("cd", working_set=False)),
        (f"MCC-L1 lasso (scikit-learn Lasso) h={h}", l1("lasso")),
        (f"MCC-L1 em h={h} alpha={alpha_ratio}*max", l1("em")),
        ("MCC-L1 cd h=auto alpha=0.15*max(auto)", lambda X, y: MCCL1Regressor(
            "auto", 0.15 * mcc_l1_alpha_max(X, y, "auto"))),
    ]


def bench_estimators(repeats=3, n_features=1000, psis=(0.0, 0.3), tau=10.0, out=sys.stdout):
    """Median fit time, test r and number of selected features per estimator.

    Returns a dict ``name -> {"time": median seconds, "r": mean r, "n_selected": mean}``.
    """
    from threadpoolctl import threadpool_limits

    from .data import make_paper_data
    from .metrics import correlation

    results = {}
    with threadpool_limits(limits=1):
        print(f"N=300, D={n_features}, tau={tau}, psi in {list(psis)}, {repeats} seed(s) each; "
              f"BLAS threads: {_blas_report()}", file=out)
        datasets = [make_paper_data(seed=s, psi=p, tau=tau, n_features=n_features)
                    for p in psis for s in range(repeats)]
        for name, build in _estimator_cases():
            times, rs, nsel = [], [], []
            for d in datasets:
                model = build(d.X_train, d.y_train)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    start = time.perf_counter()
                    model.fit(d.X_train, d.y_train)
                    times.append(time.perf_counter() - start)
                rs.append(correlation(d.y_test, model.predict(d.X_test)))
                nsel.append(int(np.count_nonzero(model.coef_)))
            results[name] = {"time": statistics.median(times), "r": float(np.nanmean(rs)),
                             "n_selected": float(np.mean(nsel))}
    base = results["sklearn ARD, paper settings"]["time"]
    print(f"{'estimator':42s} {'median fit s':>12s} {'vs sklearn':>10s} {'test r':>7s} "
          f"{'n_sel':>6s}", file=out)
    for name, res in results.items():
        print(f"{name:42s} {res['time']:12.3f} {base / res['time']:9.1f}x {res['r']:7.3f} "
              f"{res['n_selected']:6.0f}", file=out)
    print("('vs sklearn': sklearn ARDRegression with the paper's settings time / this time)",
          file=out)
    return results


def _compose_spec(overrides):
    """The validated spec of ``conf/`` composed with these Hydra overrides."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    from .config import CONFIG_DIR, spec_from_dict

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        cfg = compose("config", list(overrides))
    return spec_from_dict(OmegaConf.to_container(cfg, resolve=True))


def _pipeline_spec(root, name, seeds, fits_per_block=None):
    overrides = ["experiment=smoke", "experiment.methods=[mcc_ard,ls_ard]",
                 "data.n_train=100", "data.n_test=100", "data.n_features=300",
                 "data.n_relevant=10", "experiment.psi=[0.0,0.1,0.2,0.3]",
                 f"experiment.seeds.count={seeds}", "methods.mcc_ard.kernel_width=[0.1,1.0,10.0]",
                 "cv.n_folds=3", f"store.path={root}/{name}.zarr", "run.progress=false"]
    if fits_per_block:
        overrides.append(f"run.fits_per_block={fits_per_block}")
    return _compose_spec(overrides)


def bench_pipeline(seeds=8, out=sys.stdout):
    """Fits/s of the pipeline (LocalCluster, 1 and 2 workers) against an in-process serial loop
    over the same blocks, and the driver's peak memory for a grid and one 10x larger."""
    import tempfile
    import tracemalloc

    from .cluster import connect
    from .config import ClusterSpec
    from .grid import block_fits, cells, make_blocks
    from .runner import run_experiment, run_serial

    root = tempfile.mkdtemp(prefix="mccard-bench-")
    spec = _pipeline_spec(root, "serial", seeds)
    blocks = make_blocks(spec, cells(spec))
    n_fits = sum(block_fits(spec, b) for b in blocks)
    print(f"grid: {len(cells(spec))} cells, {len(blocks)} blocks, {n_fits} fits "
          f"(N=100, D=300, MCC-ARD 3 widths x 3 folds + LS-ARD)", file=out)
    rates = {}
    report = run_serial(spec)
    rates["serial (in process)"] = n_fits / report.seconds
    for n_workers in (1, 2):
        cluster = ClusterSpec(kind="local", n_workers=n_workers, threads_per_worker=1,
                              memory_limit="4GiB", host="127.0.0.1",
                              dashboard_address="127.0.0.1:0")
        with connect(cluster) as client:
            client.run(lambda: None)  # workers up before the clock starts
            run_spec = _pipeline_spec(root, f"dask{n_workers}", seeds)
            report = run_experiment(run_spec, client=client, progress=False)
            rates[f"LocalCluster, {n_workers} worker(s)"] = n_fits / report.seconds
    base = rates["serial (in process)"]
    print(f"{'run':32s} {'fits/s':>8s} {'vs serial':>9s}", file=out)
    for name, rate in rates.items():
        print(f"{name:32s} {rate:8.1f} {rate / base:8.2f}x", file=out)

    # driver memory: same number of blocks run, grid 10x larger (only the first blocks run)
    peaks = {}
    cluster = ClusterSpec(kind="local", n_workers=2, threads_per_worker=1, memory_limit="4GiB",
                          host="127.0.0.1", dashboard_address="127.0.0.1:0")
    with connect(cluster) as client:
        for factor in (1, 10):
            mem_spec = _pipeline_spec(root, f"mem{factor}", seeds * factor)
            tracemalloc.start()
            run_experiment(mem_spec, client=client, stop_after_blocks=len(blocks), progress=False)
            peaks[factor] = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
    print(f"driver peak memory (Python allocations, {len(blocks)} blocks run): "
          f"grid x1 {peaks[1] / 2**20:.1f} MiB, grid x10 {peaks[10] / 2**20:.1f} MiB "
          f"(ratio {peaks[10] / peaks[1]:.2f})", file=out)
    import shutil

    shutil.rmtree(root, ignore_errors=True)
    return rates, peaks


def _paper_spec(root, name, overrides):
    experiment = [o for o in overrides if o.startswith("experiment=")] or ["experiment=paper"]
    rest = [o for o in overrides if not o.startswith("experiment=")]
    return _compose_spec([*experiment, *rest, f"store.path={root}/{name}.zarr",
                          "run.progress=false"])


def _per_method(spec, ds, paper_cells):
    """method -> dict(cells, fits per cell (actually made: racing and path_stop skip some),
    seconds (sum of cell seconds), mean, per fit, projected core-hours)."""
    from .analysis import cell_values
    from .grid import cv_candidates

    seconds = cell_values(ds, "cell_seconds")
    out = {}
    for m in spec.methods:
        v = seconds.sel({"method": m.name}).values
        done = np.isfinite(v)
        if not done.any():
            continue
        if cv_candidates(m):
            scored = np.isfinite(ds["cv_score"].sel({"method": m.name}).values)
            per_cell = scored.reshape(done.shape + (-1,)).sum(axis=-1)[done]
            fits = float(per_cell.mean()) + (1.0 if spec.cv.scheme == "kfold" else 0.0)
        else:
            fits = 1.0
        mean = float(v[done].mean())
        out[m.name] = {"cells": int(done.sum()), "fits_per_cell": fits,
                       "seconds": float(v[done].sum()), "mean": mean, "per_fit": mean / fits,
                       "core_hours": mean * paper_cells / 3600.0}
    return out


def bench_paper(seeds=1, workers=2, baseline_psi=(0.0, 0.5, 1.0), baseline=True, overrides=(),
                auto=False, out=sys.stdout):
    """Projected core-hours of the ``paper`` experiment from a measured slice.

    The slice is every method, tau and psi of ``paper`` for ``seeds`` seed(s), run with the
    current configuration (:data:`CURRENT`) through the pipeline on a LocalCluster of
    ``workers`` one-thread workers. The projection is, per method, the mean cell time (one core,
    measured inside the worker) times the paper's number of cells. The previous implementation
    (:data:`PREVIOUS`) is run in the same session on the cells of ``baseline_psi`` (every tau, the
    first seed), and the current one is reported on those same cells for a like-for-like ratio.
    With ``auto``, the slice runs the kernel width set inside each fit (:data:`AUTO`) and the
    baseline is the current K-fold CV with racing (:data:`CURRENT`), again on the same cells.
    ``overrides`` (Hydra overrides, e.g. ``data.n_features=2000``) apply to every run.
    """
    import shutil
    import tempfile

    from .cluster import connect
    from .config import ClusterSpec
    from .grid import block_fits, cells, make_blocks
    from .runner import run_experiment
    from .store import open_results, store_path

    root = tempfile.mkdtemp(prefix="mccard-bench-paper-")
    cluster = ClusterSpec(kind="local", n_workers=workers, threads_per_worker=1,
                          memory_limit="6GiB", host="127.0.0.1", dashboard_address="127.0.0.1:0")
    overrides = tuple(overrides)
    reference = _paper_spec(root, "ref", overrides)
    paper_cells = len(reference.tau) * len(reference.psi) * len(reference.seeds)
    runs = {}
    main_name, main, base_name, base = (("auto", AUTO, "K-fold (racing)", CURRENT) if auto else
                                        ("current", CURRENT, "previous", PREVIOUS))
    with connect(cluster) as client:
        client.run(lambda: None)
        plan = [(main_name, main + overrides + (f"experiment.seeds.count={seeds}",))]
        if baseline:
            psi = "[" + ",".join(str(float(p)) for p in baseline_psi) + "]"
            sub = (f"experiment.psi={psi}", "experiment.seeds.count=1")
            plan += [(f"{base_name}, baseline cells", base + overrides + sub),
                     (f"{main_name}, baseline cells", main + overrides + sub)]
        for name, overrides in plan:
            spec = _paper_spec(root, re.sub(r"[^A-Za-z0-9]+", "_", name), overrides)
            n_fits = sum(block_fits(spec, b) for b in make_blocks(spec, cells(spec)))
            print(f"[{name}] {len(cells(spec))} cells, at most {n_fits} fits "
                  f"({' '.join(overrides)}) ...", file=out, flush=True)
            report = run_experiment(spec, client=client, progress=False)
            ds = open_results(store_path(spec))
            methods = _per_method(spec, ds, paper_cells)
            made = sum(m["fits_per_cell"] * m["cells"] for m in methods.values())
            runs[name] = {"methods": methods, "wall": report.seconds, "fits": made,
                          "planned": n_fits}
            if name.startswith("previous"):  # plain K-fold scores: would racing choose the same?
                runs[name]["race"] = replay_race(ds, RACE)
    shutil.rmtree(root, ignore_errors=True)

    print(f"\npaper experiment: {paper_cells} cells per method "
          f"({len(reference.tau)} tau x {len(reference.psi)} psi x {len(reference.seeds)} seeds); "
          f"{workers} LocalCluster worker(s), one BLAS thread each", file=out)
    for name, run in runs.items():
        total = sum(m["core_hours"] for m in run["methods"].values())
        print(f"\n{name}: {run['fits']:.0f} fits (of {run['planned']} planned) in "
              f"{run['wall']:.0f} s wall ({run['fits'] / run['wall']:.1f} fits/s)", file=out)
        print(f"  {'method':16s} {'cells':>5s} {'fits/cell':>9s} {'s/cell':>8s} {'s/fit':>7s} "
              f"{'paper core-h':>12s}", file=out)
        for method, m in run["methods"].items():
            print(f"  {method:16s} {m['cells']:5d} {m['fits_per_cell']:9.1f} {m['mean']:8.2f} "
                  f"{m['per_fit']:7.3f} {m['core_hours']:12.1f}", file=out)
        print(f"  {'projected paper core-hours':43s} {total:12.1f}", file=out)
    if baseline:
        prev, cur = runs[f"{base_name}, baseline cells"], runs[f"{main_name}, baseline cells"]
        print(f"\nsame cells, {base_name} / {main_name} time per cell:", file=out)
        for (pm, p), (cm, c) in zip(prev["methods"].items(), cur["methods"].items()):
            p, c = p["mean"], c["mean"]
            label = pm if pm == cm else f"{pm} / {cm}"
            print(f"  {label:36s} {p:8.2f} s / {c:8.2f} s = {p / c:6.1f}x", file=out)
        p = sum(m["core_hours"] for m in prev["methods"].values())
        c = sum(m["core_hours"] for m in cur["methods"].values())
        print(f"  projected from these cells: {p:.1f} / {c:.1f} core-hours = {p / c:.1f}x",
              file=out)
        if "race" in prev:
            print(f"racing (margin {RACE}) replayed on the previous run's plain K-fold scores:",
                  file=out)
            for method, r in prev["race"].items():
                print(f"  {method:16s} same choice in {r['same']}/{r['cells']} cells, "
                      f"{r['fits']}/{r['full']} CV fits", file=out)
    return runs


def _product_rate(n_samples, n_features, repeats=10):
    """Best single-thread rate (flop/s) of the paper-size matrix products: the symmetric
    ``X X^T`` (``N^2 D`` flops) and a general ``(N x N) (N x D)`` product (``2 N^2 D``)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n_samples, n_features))
    S = rng.standard_normal((n_samples, n_samples))
    best = 0.0
    for op, flops in ((lambda: X @ X.T, n_samples**2 * n_features),
                      (lambda: S @ X, 2.0 * n_samples**2 * n_features)):
        op()
        for _ in range(repeats):
            start = time.perf_counter()
            op()
            best = max(best, flops / (time.perf_counter() - start))
    return best


def bench_floor(repeats=2, psis=(0.0, 0.3, 0.6, 1.0), tau=10.0, out=sys.stdout):
    """MCC-ARD fit time against the linear-algebra floor of the same fits.

    Every kernel width of the ``paper`` configuration's MCC-ARD grids is fitted (with the
    configuration's parameters) on a training fold's worth of rows (N=240 of 300) of the paper's
    data for each ``psi`` and ``repeats`` seeds. The ridge solves of each fit are traced
    (:func:`mccard_dist.models._linalg.trace_solves`) and charged their textbook flop minimum
    (:func:`~mccard_dist.models._linalg.floor_flops`); divided by this machine's best measured
    single-thread matrix-product rate, that is the time the fit cannot go below without fewer
    iterations or fewer solves. Returns ``method -> dict`` of the printed figures.
    """
    from threadpoolctl import threadpool_limits

    from .models import floor_flops, trace_solves

    spec = _compose_spec(["experiment=paper"])
    methods = [m for m in spec.methods if m.estimator == "mcc_ard"]
    n_fit = spec.data.n_train - spec.data.n_train // spec.cv.n_folds
    results = {}
    with threadpool_limits(limits=1):
        rate = _product_rate(n_fit, spec.data.n_features)
        print(f"N={n_fit} (a training fold), D={spec.data.n_features}, tau={tau}, "
              f"psi in {list(psis)}, {repeats} seed(s) each, every width of the paper grid; "
              f"BLAS threads: {_blas_report()}", file=out)
        print(f"best single-thread matrix-product rate: {rate / 1e9:.1f} GFlop/s", file=out)
        datasets = [spec.data.make_data(s, p, tau) for p in psis for s in range(repeats)]
        for m in methods:
            rows = []
            for d in datasets:
                X, y = d.X_train[:n_fit], d.y_train[:n_fit]
                for h in m.kernel_width:
                    model = m.make_estimator(kernel_width=h)
                    with warnings.catch_warnings(), trace_solves() as events:
                        warnings.simplefilter("ignore")
                        start = time.perf_counter()
                        model.fit(X, y)
                        seconds = time.perf_counter() - start
                    solves = [e for e in events if e[0] == "solve"]
                    rows.append((seconds, floor_flops(events), model.n_iter_, len(solves),
                                 sum(e[1] == "dual" for e in solves),
                                 model.n_iter_ >= model.max_iter))
            a = np.array(rows, dtype=float)
            results[m.name] = {
                "fits": len(rows), "seconds": float(a[:, 0].mean()),
                "gflop": float(a[:, 1].mean() / 1e9),
                "floor": float(a[:, 1].mean() / rate), "ratio": float(a[:, 0].sum() * rate
                                                                      / a[:, 1].sum()),
                "iterations": float(a[:, 2].mean()), "cap": int(a[:, 5].sum()),
                "solves": float(a[:, 3].mean()), "dual": float(a[:, 4].mean()),
            }
    print(f"{'method':16s} {'fits':>4s} {'s/fit':>6s} {'floor s':>7s} {'x floor':>7s} "
          f"{'GFlop':>6s} {'iters':>5s} {'at cap':>6s} {'solves':>6s} {'dual':>5s}", file=out)
    for name, r in results.items():
        print(f"{name:16s} {r['fits']:4d} {r['seconds']:6.3f} {r['floor']:7.3f} "
              f"{r['ratio']:6.1f}x {r['gflop']:6.2f} {r['iterations']:5.0f} {r['cap']:6d} "
              f"{r['solves']:6.0f} {r['dual']:5.0f}", file=out)
    print("(per fit, means: 'floor s' = floor flops / the rate above; 'x floor' = time / floor; "
          "'iters' outer iterations, 'at cap' fits that reached max_iter, 'solves' ridge "
          "solves, 'dual' of them in the N x N form)", file=out)
    return results


def replay_race(ds, margin: float) -> dict:
    """Replay ``cv.race`` on the full K-fold scores of a store made without racing.

    The candidates that finish a race keep their plain K-fold scores, so the choice a racing run
    would make follows from the stored scores: per method, the number of finished cells where
    it equals plain K-fold's choice, and the CV fits the race would make against plain K-fold's.
    """
    from .records import STATUS_DONE
    from .tasks import race_survivors

    out = {}
    for method in ds["method"].values:
        cv = ds["cv_score"].sel({"method": method}).values
        status = ds["status"].sel({"method": method}).values
        n = same = fits = full = 0
        for index in zip(*np.nonzero(status == STATUS_DONE)):
            scores = cv[index].reshape(-1, cv.shape[-1])
            scores = scores[~np.isnan(scores).any(axis=1)]  # the method's candidates
            if not scores.size:
                continue
            n_cand, n_folds = scores.shape
            alive = np.ones(n_cand, dtype=bool)
            for f in range(n_folds):
                fits += int(alive.sum())
                if f < n_folds - 1:
                    alive = race_survivors(scores[:, : f + 1], alive, margin)
            mean = scores.mean(axis=1)
            pick = np.flatnonzero(alive)[np.argmin(mean[alive])]
            n += 1
            same += int(pick == np.argmin(mean))
            full += scores.size
        if n:
            out[str(method)] = {"cells": n, "same": same, "fits": fits, "full": full}
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(prog="mccard-bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    est = sub.add_parser("estimators", help="per-estimator fit time on the paper's data")
    est.add_argument("--repeats", type=int, default=3, help="seeds per psi value")
    est.add_argument("--n-features", type=int, default=1000)
    pipe = sub.add_parser("pipeline", help="fits/s of the pipeline and driver memory")
    pipe.add_argument("--seeds", type=int, default=8)
    paper = sub.add_parser("paper", help="projected core-hours of the paper experiment, current "
                                         "against previous implementation")
    paper.add_argument("--seeds", type=int, default=1, help="seeds of the slice (every psi, tau)")
    paper.add_argument("--workers", type=int, default=2)
    paper.add_argument("--baseline-psi", default="0,0.5,1",
                       help="psi values of the previous-implementation cells (every tau, seed 0)")
    paper.add_argument("--no-baseline", action="store_true",
                       help="skip the previous implementation (it is slow)")
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
    args = parser.parse_args(argv)
    if args.command == "estimators":
        bench_estimators(repeats=args.repeats, n_features=args.n_features)
    elif args.command == "pipeline":
        bench_pipeline(seeds=args.seeds)
    elif args.command == "floor":
        bench_floor(repeats=args.repeats)
    elif args.command == "race":
        from .store import open_results

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


if __name__ == "__main__":
    sys.exit(main())
