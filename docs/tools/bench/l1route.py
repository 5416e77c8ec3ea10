"""``bench l1route``: MCC-L1's cross-validated cells by this tree's code against another version's,
side by side in one run, on the same cells.

Each version runs in a process of its own (the other version from a temporary ``git worktree``
of ``--baseline``), one BLAS thread each, both at once on the same list of cells of the
``paper`` experiment (``method=mcc_l1``, K-fold CV along the configured paths, the refit, the
test metrics: the pipeline's :func:`~mccard_dist.tasks.run_cell`). Per cell: the CPU seconds
(``time.process_time``), the chosen kernel width and penalty, and the test r, RMSE, F1 and
features kept; each process first runs the first cell untimed (its imports, and compiled code
loaded or compiled). Printed: seconds per cell of either and their ratio; the cells whose choices
are equal; on the cells whose choices differ, the paired differences of test RMSE; and on every
cell the paired 95% t-intervals of the differences of every metric; for a version with the
compiled step, its steps a cell, the share that spend the 50-sweep budget and the non-zero
coefficients after a step.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy import stats

from mccard_dist.bench.common import blas_report

ROOT = Path(__file__).resolve().parents[3]
METRICS = ("r", "rmse", "f1", "n_selected")

#: run in each version's process: the cells of ``argv[1]`` (JSON), one JSON line per cell
WORKER = r"""
import json, sys, time, warnings
from mccard_dist.bench.common import compose_spec
from mccard_dist.grid import cells
from mccard_dist.tasks import run_cell

job = json.loads(sys.argv[1])
spec = compose_spec(job["overrides"])
chosen = [f"chosen_{name}" for name in spec.method("mcc_l1").grid_names]
warnings.simplefilter("ignore")
steps = []  # (sweeps, non-zero coefficients) of each weighted Lasso step, where the tree says
try:
    from mccard_dist.models import _lasso_kernels as kernels
    inner = kernels.weighted_lasso_step

    def counted(*args):
        out = inner(*args)
        steps.append((out[2], int((out[0] != 0).sum())))
        return out

    kernels.weighted_lasso_step = counted
except ImportError:
    pass
todo = cells(spec)
start = time.process_time()
run_cell(spec, todo[0], save_coef=False)  # imports and compiled code loaded, untimed
print(json.dumps({"warm_up": time.process_time() - start}), flush=True)
for cell in todo:
    steps.clear()
    start = time.process_time()
    result = run_cell(spec, cell, save_coef=False)
    cpu = time.process_time() - start
    sweeps = [s for s, _ in steps]
    row = {"tau": cell.tau, "psi": cell.psi, "seed": cell.seed, "cpu": cpu,
           "status": int(result.status), "error": result.error[:200],
           "steps": len(steps), "capped": sum(s >= 50 for s in sweeps),
           "nonzero": [n for _, n in steps]}
    row.update({k: float(result.scalars.get(k, float("nan")))
                for k in [*chosen, "r", "rmse", "f1", "n_selected"]})
    print(json.dumps(row), flush=True)
"""


def _overrides(seeds, psi, tau):
    return ["experiment=paper", "experiment.methods=[mcc_l1]",
            f"experiment.psi=[{','.join(str(p) for p in psi)}]",
            f"experiment.tau=[{','.join(str(t) for t in tau)}]",
            f"experiment.seeds.start={seeds[0]}", f"experiment.seeds.count={len(seeds)}"]


def _start(root, job):
    env = {**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, "-c", WORKER, json.dumps(job)], cwd=root, env=env,
                            stdout=subprocess.PIPE, text=True)


def _interval(d):
    d = np.asarray(d, dtype=float)
    if d.size < 2 or np.all(d == d[0]):
        return float(d.mean()), float(d.mean()), float(d.mean())
    half = stats.t.ppf(0.975, d.size - 1) * d.std(ddof=1) / np.sqrt(d.size)
    return float(d.mean()), float(d.mean() - half), float(d.mean() + half)


def bench_l1route(baseline, seeds, psi, tau, out=sys.stdout):
    """Run the cells under ``baseline`` (a git revision) and this tree, compare, print."""
    job = {"overrides": _overrides(seeds, psi, tau)}
    n_cells = len(seeds) * len(psi) * len(tau)
    rev = subprocess.run(["git", "rev-parse", "--short=10", baseline], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout.strip()
    print(f"MCC-L1 cells of the paper experiment (seeds {seeds[0]}-{seeds[-1]}, psi {psi}, tau "
          f"{tau}: {n_cells} cells), baseline {rev} against this tree, one process each, at "
          f"once; {blas_report()}", file=out, flush=True)
    with tempfile.TemporaryDirectory(prefix="mccard-l1route-") as tmp:
        other = Path(tmp) / "baseline"
        subprocess.run(["git", "worktree", "add", "--detach", str(other), baseline], cwd=ROOT,
                       check=True, capture_output=True)
        try:
            start = time.perf_counter()
            procs = {"baseline": _start(other, job), "this tree": _start(ROOT, job)}
            rows = {name: [json.loads(line) for line in p.stdout] for name, p in procs.items()}
            warm = {name: r.pop(0)["warm_up"] for name, r in rows.items()}
            for name, p in procs.items():
                if p.wait() != 0:
                    raise SystemExit(f"l1route: the {name} process failed (exit {p.returncode})")
            wall = time.perf_counter() - start
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(other)], cwd=ROOT,
                           check=False, capture_output=True)
    print(f"first cell, untimed (imports, compiled code loaded or compiled): baseline "
          f"{warm['baseline']:.1f} s, this tree {warm['this tree']:.1f} s CPU", file=out)
    _report(rows["baseline"], rows["this tree"], wall, out)


def _report(old, new, wall, out):
    key = lambda r: (r["tau"], r["psi"], r["seed"])  # noqa: E731
    old = {key(r): r for r in old}
    new = {key(r): r for r in new}
    keys = sorted(old)
    failed = [k for k in keys if old[k]["status"] != 1 or new[k]["status"] != 1]
    keys = [k for k in keys if k not in failed]
    chosen = [c for c in old[keys[0]] if c.startswith("chosen_")]
    cpu_old = np.array([old[k]["cpu"] for k in keys])
    cpu_new = np.array([new[k]["cpu"] for k in keys])
    print(f"\n{len(keys)} cells scored by both ({len(failed)} failed in either), {wall:.0f} s "
          f"wall", file=out)
    print(f"  CPU s/cell: baseline {cpu_old.mean():.3f}, this tree {cpu_new.mean():.3f}: "
          f"{cpu_new.mean() / cpu_old.mean():.3f} of the baseline's (per cell: median "
          f"{np.median(cpu_new / cpu_old):.3f}, range {np.min(cpu_new / cpu_old):.3f}-"
          f"{np.max(cpu_new / cpu_old):.3f})", file=out)
    for name, rows in (("baseline", old), ("this tree", new)):
        steps = sum(rows[k]["steps"] for k in keys)
        if steps:
            nonzero = np.concatenate([rows[k]["nonzero"] for k in keys])
            capped = sum(rows[k]["capped"] for k in keys)
            print(f"  {name}: {steps / len(keys):.0f} weighted Lasso steps a cell, "
                  f"{capped / steps:.0%} of them spending the 50-sweep budget; non-zero "
                  f"coefficients after a step: "
                  f"median {np.median(nonzero):.0f}, 90th percentile "
                  f"{np.percentile(nonzero, 90):.0f}", file=out)
    same = [k for k in keys if all(old[k][c] == new[k][c] for c in chosen)]
    differ = [k for k in keys if k not in same]
    print(f"  choices ({', '.join(c[7:] for c in chosen)}) equal in {len(same)}/{len(keys)} "
          f"cells ({len(same) / len(keys):.1%})", file=out)
    if differ:
        d = [new[k]["rmse"] - old[k]["rmse"] for k in differ]
        mean, lo, hi = _interval(d)
        print(f"  cells whose choices differ: test RMSE this tree - baseline, mean {mean:+.4f} "
              f"[{lo:+.4f}, {hi:+.4f}] (95% t), lower in {sum(v < 0 for v in d)}, higher in "
              f"{sum(v > 0 for v in d)}", file=out)
        for k in differ:
            print(f"    tau {k[0]:g} psi {k[1]:g} seed {k[2]}: "
                  + ", ".join(f"{c[7:]} {old[k][c]:g} -> {new[k][c]:g}" for c in chosen)
                  + f"; RMSE {old[k]['rmse']:.4f} -> {new[k]['rmse']:.4f}", file=out)
    print("  every cell, this tree - baseline (mean [95% paired t-interval]):", file=out)
    for m in METRICS:
        mean, lo, hi = _interval([new[k][m] - old[k][m] for k in keys])
        print(f"    {m:10s} {mean:+.2e} [{lo:+.2e}, {hi:+.2e}]", file=out)
    for k in failed:
        print(f"  failed: tau {k[0]:g} psi {k[1]:g} seed {k[2]}: baseline "
              f"{old[k]['error'] or 'ok'} / this tree {new[k]['error'] or 'ok'}", file=out)
