"""``bench converge``: the ARD estimators' default relevance update against MacKay's update capped
at 300 iterations (the paper's algorithm as printed), both judged against the converged
reference, the fixed point MacKay's update is near, on the same fits.

Arms, interleaved per fit (their order rotates from one fit to the next), on one BLAS thread:
``mackay`` (``relevance_update="mackay"``, ``max_iter=300``), ``default`` (the estimators'
defaults) and ``reference``: MacKay's update to ``max_iter=5000`` (run only where ``mackay``
stopped at its cap: elsewhere its iterations are ``mackay``'s, one for one, since ``max_iter``
only ends the loop), then for MCC-ARD the exact step (``"tail-exact"``) warm-started from that
fit at the width it ended with, to ``tol=1e-8``. MacKay's update creeps towards its fixed point
(a fit can meet ``tol=1e-4`` while its predictions still move); the exact step has the same
fixed points and reaches the one it starts near. LS-ARD has no warm start: its reference is
MacKay's 5,000. CPU seconds are ``time.process_time`` around ``fit``.

The question each (psi, tau) cell answers, per estimator (MCC-ARD deviant, MCC-ARD proper over
every width of the grid and ``"auto"``; LS-ARD): is the default's distance to the reference no
larger than MacKay's-at-300's, on every metric a user reads? Per seed, the mean over the
estimator's fits of ``|default - reference| - |mackay - reference|`` (r, RMSE, F1, features
kept); a cell passes when the paired 95% t-interval over seeds of that mean does not lie above
zero (the default is not shown to be further from the reference).
"""

from __future__ import annotations

import csv
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from scipy import stats

from mccard_dist.bench.common import blas_report, one_thread

#: arm -> estimator parameters over the defaults
ARMS = {"mackay": {"relevance_update": "mackay", "max_iter": 300}, "default": {},
        "reference": {"relevance_update": "mackay", "max_iter": 5000}}
#: the reference's polish: the exact step from MacKay's fit, to a tight tolerance
POLISH = {"relevance_update": "tail-exact", "tol": 1e-8, "max_iter": 5000}
ESTIMATORS = ("deviant", "proper", "ls")
METRICS = ("r", "rmse", "f1", "kept")
FIELDS = ("seed", "psi", "tau", "estimator", "width", "arm", "update", "n_iter", "at_cap",
          "cpu", "kept", "r", "rmse", "f1")


def seed_list(text):
    """``"30-39"`` or ``"30,31"`` as a list of ints."""
    if "-" in text:
        first, last = (int(v) for v in text.split("-"))
        return list(range(first, last + 1))
    return [int(v) for v in text.split(",")]


def _estimator(name, width, params):
    from mccard_dist.models import LSARDRegressor, MCCARDRegressor

    if name == "ls":
        return LSARDRegressor(solver="pruning", **params)
    return MCCARDRegressor(width, likelihood=name, solver="pruning", **params)


def _fit(estimator, data):
    """One fit's record: the update that ran, iterations, at the cap, CPU s, features kept, test
    r, RMSE and F1 of the selection."""
    from mccard_dist.metrics import correlation, rmse, selection_scores

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.process_time()
        estimator.fit(data.X_train, data.y_train)
        cpu = time.process_time() - start
    pred = estimator.predict(data.X_test)
    return {"update": estimator.relevance_update_, "n_iter": int(estimator.n_iter_),
            "at_cap": int(estimator.n_iter_) >= estimator.max_iter, "cpu": cpu,
            "kept": int(np.count_nonzero(estimator.coef_)),
            "r": correlation(data.y_test, pred), "rmse": rmse(data.y_test, pred),
            "f1": selection_scores(estimator.coef_, data.coef_true)["f1"]}


def _reference(name, width, data, mackay, record):
    """The converged reference of one fit, from the ``mackay`` arm's fitted estimator and its
    ``record``: MacKay's update to ``max_iter=5000`` where that arm stopped at its cap (elsewhere
    its fit: ``max_iter`` only ends the loop), then, for MCC-ARD, the exact step warm-started from
    there at the width the fit ended with, to ``tol=1e-8``: MacKay's update only creeps towards
    the fixed point it is near, the exact step reaches it. LS-ARD, which has no warm start, keeps
    MacKay's fit. The record's CPU is both fits'."""
    if record["at_cap"]:
        mackay = _estimator(name, width, ARMS["reference"])
        record = _fit(mackay, data)
    if name == "ls":
        return record
    mackay.set_params(kernel_width=mackay.kernel_width_, warm_start=True, **POLISH)
    polished = _fit(mackay, data)
    return {**polished, "cpu": polished["cpu"] + record["cpu"]}


def _draw(task):
    """Every arm on every fit of one (seed, psi, tau) draw: its rows."""
    from mccard_dist.data import make_paper_data

    seed, psi, tau, configs = task
    data = make_paper_data(seed=seed, psi=psi, tau=tau)
    rows = []
    with one_thread():
        for turn, (name, width) in enumerate(configs):
            order = ["mackay", "default"] if (turn + seed) % 2 else ["default", "mackay"]
            estimators = {a: _estimator(name, width, ARMS[a]) for a in order}
            fits = {a: _fit(estimators[a], data) for a in order}
            fits["reference"] = _reference(name, width, data, estimators["mackay"],
                                           fits["mackay"])
            rows += [{"seed": seed, "psi": psi, "tau": tau, "estimator": name,
                      "width": "" if width is None else str(width), "arm": a, **fits[a]}
                     for a in ARMS]
    return rows


def bench_converge(seeds="70-79", psi="0,0.3,0.6,0.9", tau="2,5,10", widths=None, jobs=1,
                   csv_path=None, out=sys.stdout):
    """Run every arm on every fit of the grid and print the paired figures; returns the rows
    (one per fit and arm). ``widths``: MCC-ARD's, comma-separated (``auto`` among them), default
    the paper experiment's grid and ``auto``; ``jobs``: draws fitted at once, each in a process
    of its own on one BLAS thread; ``csv_path``: the rows are also written there."""
    from mccard_dist.data import make_paper_data  # noqa: F401  (imported once, before the fork)
    from mccard_dist.defaults import DEFAULT_KERNEL_WIDTHS
    from mccard_dist.models import MCCARDRegressor  # noqa: F401

    widths = ([*DEFAULT_KERNEL_WIDTHS, "auto"] if widths is None else
              [v if v == "auto" else float(v) for v in widths.split(",")])
    configs = [(lik, h) for lik in ("deviant", "proper") for h in widths] + [("ls", None)]
    psis, taus = [float(v) for v in psi.split(",")], [float(v) for v in tau.split(",")]
    tasks = [(s, p, t, configs) for t in taus for p in psis for s in seed_list(seeds)]
    print(f"seeds {seeds}, psi {psis}, tau {taus}; MCC-ARD (deviant, proper) at widths "
          f"{widths}, and LS-ARD; pruning solver, N=300, D=1000; {len(tasks)} draws on {jobs} "
          f"process(es); BLAS threads: {blas_report()}", file=out, flush=True)
    start, rows = time.perf_counter(), []
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for k, draw in enumerate(pool.map(_draw, tasks), 1):
            rows += draw
            if k % len(seed_list(seeds)) == 0:
                print(f"  {k}/{len(tasks)} draws ({time.perf_counter() - start:.0f} s)",
                      file=out, flush=True)
    if csv_path:
        with open(csv_path, "w", newline="") as f:
            writer = csv.DictWriter(f, FIELDS, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)
    report(rows, out)
    return rows


def paired_t(values, level=0.95):
    """Mean and the two-sided ``level`` t-interval of the mean of ``values`` (0-width where
    they are all equal)."""
    values = np.asarray(values, dtype=float)
    mean = float(values.mean())
    if values.size < 2 or np.all(values == values[0]):
        return mean, mean, mean
    half = stats.t.ppf(0.5 + level / 2, values.size - 1) * values.std(ddof=1) / np.sqrt(
        values.size)
    return mean, mean - half, mean + half


def report(rows, out=sys.stdout):
    """Print the figures of ``rows`` (:func:`bench_converge`'s)."""
    by = {(r["seed"], r["psi"], r["tau"], r["estimator"], r["width"], r["arm"]): r for r in rows}
    fits = sorted({k[:5] for k in by})
    label = {"deviant": "MCC-ARD deviant", "proper": "MCC-ARD proper", "ls": "LS-ARD"}

    print("\n1. fits at max_iter, mean iterations and CPU (s, all fits), per arm", file=out)
    for name in ESTIMATORS:
        parts = []
        for arm in ARMS:
            own = [by[f + (arm,)] for f in fits if f[3] == name]
            parts.append(f"{arm} {sum(r['at_cap'] for r in own):4d}/{len(own)} "
                         f"(n_iter {np.mean([r['n_iter'] for r in own]):6.1f}, "
                         f"CPU {sum(r['cpu'] for r in own):7.1f})")
        updates = sorted({by[f + ("default",)]["update"] for f in fits if f[3] == name})
        print(f"  {label[name]:16s} " + "  ".join(parts) + f"  default ran {updates}", file=out)

    print("\n2. per (psi, tau) and estimator: mean over seeds of |default - reference| - "
          "|mackay - reference| (per seed the mean over the estimator's fits), 95% paired "
          "t-interval over seeds; pass: the interval does not lie above 0", file=out)
    head = "".join(f" {m:>27s}" for m in METRICS)
    print(f"  {'psi':>4s} {'tau':>4s} {'estimator':16s}{head}  pass", file=out)
    cells = sorted({(f[1], f[2]) for f in fits})
    passed = total = 0
    for p, t in cells:
        for name in ESTIMATORS:
            per_seed = {}
            for f in fits:
                if f[1:4] != (p, t, name):
                    continue
                ref, new, old = (by[f + (a,)] for a in ("reference", "default", "mackay"))
                per_seed.setdefault(f[0], []).append(
                    [abs(new[m] - ref[m]) - abs(old[m] - ref[m]) for m in METRICS])
            diffs = np.array([np.mean(v, axis=0) for _, v in sorted(per_seed.items())])
            intervals = [paired_t(diffs[:, i]) for i in range(len(METRICS))]
            ok = all(lo <= 0.0 for _, lo, _ in intervals)
            passed, total = passed + ok, total + 1
            text = "".join(f" {m:+9.2e} [{lo:+8.1e},{hi:+8.1e}]" for m, lo, hi in intervals)
            print(f"  {p:4g} {t:4g} {label[name]:16s}{text}  {'yes' if ok else 'NO'}", file=out)
    print(f"  passed: {passed} of {total} (cell, estimator) pairs", file=out)
