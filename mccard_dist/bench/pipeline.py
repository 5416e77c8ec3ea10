"""``bench pipeline``: the framework's own cost per cell. A grid of an estimator that costs nothing
(fitted in microseconds on 20 x 10 data) runs through ``run_experiment`` on a LocalCluster of
one-thread workers, so what it measures is the pipeline: each cell's data and evaluation, the
tasks, the driver's writes. Each tree (this package, and another checkout given as a baseline,
e.g. a worktree of an earlier commit) runs in a process of its own: cells per second, the CPU a
cell costs in the workers and in the driver (the scheduler runs there too), the driver's memory
and the store's files."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

__all__ = ["bench_pipeline"]

#: the estimator that costs nothing, as a user's package
INSTANT = '''
import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
__version__ = "1.0"
class Instant(RegressorMixin, BaseEstimator):
    """A regressor that costs nothing: its first feature, and the mean of y."""
    def __init__(self, alpha=1.0):
        self.alpha = alpha
    def fit(self, X, y):
        self.coef_ = np.zeros(np.shape(X)[1]); self.coef_[0] = 1.0
        self.intercept_ = float(np.mean(y))
        return self
    def predict(self, X):
        return np.asarray(X, float) @ self.coef_ + self.intercept_
'''

#: run in a process of its own with the tree to measure first on its path; prints one JSON line
CHILD = '''
import json, resource, sys, threading, time
from pathlib import Path

def rss_kib():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])

def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime

import mccard_dist
from mccard_dist.cluster import connect
from mccard_dist.runner import run_experiment
overrides = json.loads(sys.argv[1])
if hasattr(mccard_dist, "compose"):
    spec = mccard_dist.compose(overrides=overrides)
else:  # a tree from before mccard_dist.compose
    from mccard_dist.bench.common import _compose_spec
    spec = _compose_spec(overrides)
with connect(spec.cluster) as client:
    client.run(lambda: None)  # workers up before the clock starts
    workers0 = sum(client.run(cpu).values())
    samples, done = [], threading.Event()
    def sample():
        while not done.wait(0.25):
            samples.append((time.perf_counter(), rss_kib()))
    sampler = threading.Thread(target=sample, daemon=True)
    rss0, cpu0, t0 = rss_kib(), cpu(), time.perf_counter()
    sampler.start()
    report = run_experiment(spec, client=client, progress=False)
    wall, driver = time.perf_counter() - t0, cpu() - cpu0
    done.set()
    sampler.join()
    workers = sum(client.run(cpu).values()) - workers0
later = [(t, kib) for t, kib in samples if t - t0 > 0.2 * wall]
growth = ((later[-1][1] - later[0][1]) / max(report.n_cells_written * (later[-1][0] - later[0][0])
                                              / wall, 1) if len(later) > 1 else float("nan"))
store = Path(report.store_path)
print(json.dumps({"cells": report.n_cells_written, "wall": wall, "driver": driver,
                  "workers": workers, "rss0": rss0,
                  "rss_max": max([k for _, k in samples] + [rss0]),
                  "rss_end": (samples or [(0, rss0)])[-1][1], "growth": growth,
                  "files": sum(1 for p in store.rglob("*") if p.is_file()),
                  "complete": report.complete}))
'''


def _measure(tree: Path | None, cells: int, workers: int, root: Path, name: str) -> dict:
    """One tree's run of ``cells`` no-cost cells (1 tau x 2 psi), in a process of its own."""
    import os

    pkg, conf = root / "pkg", root / "conf"
    (pkg / "mccard_bench_instant").mkdir(parents=True, exist_ok=True)
    (pkg / "mccard_bench_instant" / "__init__.py").write_text(INSTANT)
    (conf / "method").mkdir(parents=True, exist_ok=True)
    (conf / "method" / "instant.yaml").write_text("estimator: mccard_bench_instant:Instant\n")
    overrides = ["experiment=smoke", "experiment.methods=[instant]", "data.n_train=20",
                 "data.n_test=10", "data.n_features=10", "data.n_relevant=2",
                 f"experiment.seeds.count={-(-cells // 2)}", f"cluster.n_workers={workers}",
                 "run.progress=false", f"store.path={root / name}.zarr"]
    path = [str(pkg), *([str(tree)] if tree is not None else []),
            os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in path if p),
           "MCCARD_CONFIG_DIR": str(conf), "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(CHILD), json.dumps(overrides)],
                          env=env, capture_output=True, text=True, check=False, cwd=root)
    if done.returncode:
        raise RuntimeError(f"the run of {tree or 'this tree'} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def bench_pipeline(cells: int = 20_000, workers: int = 2, baseline: str | None = None,
                   baseline_cells: int | None = None, out=sys.stdout) -> dict:
    """Cells per second of the no-cost estimator over ``cells`` cells on ``workers`` one-thread
    LocalCluster workers, with each cell's CPU in the workers and the driver, the driver's memory
    (at the start, at most, at the end, and its growth per cell after the first fifth of the run)
    and the store's files; for this package and, with ``baseline``, the checkout at that path
    (over ``baseline_cells``, by default as many), side by side."""
    trees = {"this tree": None}
    if baseline is not None:
        trees[f"baseline {baseline}"] = Path(baseline).resolve()
    rows = {}
    with tempfile.TemporaryDirectory(prefix="mccard-bench-", ignore_cleanup_errors=True) as tmp:
        for i, (label, tree) in enumerate(trees.items()):
            n = cells if tree is None or baseline_cells is None else baseline_cells
            rows[label] = _measure(tree, n, workers, Path(tmp), f"tree{i}")
    print(f"the no-cost estimator on 20 x 10 data, 1 tau x 2 psi, {workers} one-thread "
          "LocalCluster workers (started before the clock); CPU per cell in the workers and in "
          "the driver (its scheduler included)", file=out)
    print(f"{'tree':<44} {'cells':>8} {'wall s':>8} {'cells/s':>8} {'worker ms':>9} "
          f"{'driver ms':>9} {'RSS MiB start/max/end':>22} {'kB/cell':>8} {'files':>6}", file=out)
    for label, r in rows.items():
        n = max(r["cells"], 1)
        rss = f"{r['rss0'] / 1024:.0f}/{r['rss_max'] / 1024:.0f}/{r['rss_end'] / 1024:.0f}"
        print(f"{label[:44]:<44} {r['cells']:>8} {r['wall']:>8.1f} {r['cells'] / r['wall']:>8.0f} "
              f"{1000 * r['workers'] / n:>9.3f} {1000 * r['driver'] / n:>9.3f} {rss:>22} "
              f"{r['growth']:>8.3f} {r['files']:>6}", file=out)
    if len(rows) == 2:
        ours, base = rows.values()
        print(f"cells/s, this tree / baseline: "
              f"{(ours['cells'] / ours['wall']) / (base['cells'] / base['wall']):.1f}x", file=out)
    return rows
