"""``bench tailexact``: the pruning solver's ``relevance_update="tail-exact"`` against MacKay's
update, paired on the same fits, with MacKay's update run to ``max_iter=5000`` as the reference.

Arms, interleaved per fit (their order rotates from one fit to the next), on one BLAS thread:
``today`` (``relevance_update="mackay"``, ``max_iter=300``), ``A`` (``"tail-exact"``, which
includes its stopping rule) and ``R`` (``"mackay"``, ``max_iter=5000``). CPU seconds are
``time.process_time`` around ``fit``, and from its start until the tail's gate first holds
(what no update of the tail alone can save). ``R`` runs only where ``today`` stopped at its cap:
elsewhere its iterations are ``today``'s, one for one (``max_iter`` only ends the loop), and its
record is ``today``'s.
"""

from __future__ import annotations

import csv
import sys
import time
import warnings
from contextlib import contextmanager
from unittest import mock

import numpy as np

from mccard_dist.bench.common import blas_report, one_thread

#: arm -> (relevance_update, max_iter)
ARMS = {"today": ("mackay", 300), "A": ("tail-exact", 300), "R": ("mackay", 5000)}
LIKELIHOODS = ("deviant", "proper", "ls")


def _seeds(text):
    """``"30-39"`` or ``"30,31"`` as a list of ints."""
    if "-" in text:
        first, last = (int(v) for v in text.split("-"))
        return list(range(first, last + 1))
    return [int(v) for v in text.split(",")]


@contextmanager
def watch_tail_gate():
    """Within it, the pruning fits record in the yielded dict, under ``"cpu"``, the process's CPU
    seconds (``time.process_time``) at the first iteration whose tail's gate
    (``_pruning_fits._gate_holds``) holds, whichever relevance update they run: a fit's CPU
    before that point is what no update of the tail alone can save. The solver's ``_in_tail`` is
    patched from outside, so the estimators carry no instrumentation."""
    from mccard_dist.models import _pruning_fits

    seen, in_tail = {}, _pruning_fits._in_tail

    def probe(model, n_iter, Xa, coef, coef_prev):
        if "cpu" not in seen and _pruning_fits._gate_holds(n_iter, Xa, coef, coef_prev):
            seen["cpu"] = time.process_time()
        return in_tail(model, n_iter, Xa, coef, coef_prev)

    with mock.patch.object(_pruning_fits, "_in_tail", probe):
        yield seen


def _fit(estimator, data):
    """One fit's record: iterations, convergence, CPU s (and the CPU s until the tail's gate
    first held: an update that changes only the tail cannot save those), active set, features
    kept, test r, RMSE, F1."""
    from mccard_dist.metrics import correlation, rmse, selection_scores

    with warnings.catch_warnings(), watch_tail_gate() as gate:
        warnings.simplefilter("ignore")
        start = time.process_time()
        estimator.fit(data.X_train, data.y_train)
        cpu = time.process_time() - start
    pred = estimator.predict(data.X_test)
    active = frozenset(np.flatnonzero(estimator.coef_).tolist())
    return {"n_iter": int(estimator.n_iter_), "converged": bool(estimator.converged_), "cpu": cpu,
            "cpu_pre": gate.get("cpu", start + cpu) - start, "active": active,
            "kept": len(active),
            "r": correlation(data.y_test, pred), "rmse": rmse(data.y_test, pred),
            "f1": selection_scores(estimator.coef_, data.coef_true)["f1"],
            "at_cap": int(estimator.n_iter_) >= estimator.max_iter}


def _estimator(likelihood, width, relevance_update, max_iter):
    from mccard_dist.models import LSARDRegressor, MCCARDRegressor

    if likelihood == "ls":
        return LSARDRegressor(solver="pruning", relevance_update=relevance_update,
                              max_iter=max_iter)
    return MCCARDRegressor(width, likelihood=likelihood, solver="pruning",
                           relevance_update=relevance_update, max_iter=max_iter)


def _bootstrap(values, rng, draws=10_000):
    """Mean and 95% percentile interval of the mean of ``values`` resampled with replacement."""
    values = np.asarray(values, dtype=float)
    means = values[rng.integers(0, values.size, (draws, values.size))].mean(axis=1)
    return float(values.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


FIELDS = ("seed", "psi", "tau", "likelihood", "width", "arm", "n_iter", "converged", "cpu",
          "cpu_pre", "kept", "r", "rmse", "f1", "at_cap", "vs_R", "vs_today")


def _cell_order(psis, taus):
    """The (psi, tau) cells, each psi and tau early, so that a run stopped part-way has whole
    cells (every seed) spread over the grid."""
    taus = taus[len(taus) // 2:] + taus[:len(taus) // 2][::-1]
    psis = psis[0::2] + psis[1::2]
    return [(p, t) for t in taus for p in psis]


def _read_csv(path):
    types = {"seed": int, "psi": float, "tau": float, "width": lambda v: float(v) if v else None,
             "n_iter": int, "converged": lambda v: v == "True", "cpu": float,
             "cpu_pre": float, "kept": int, "r": float,
             "rmse": float, "f1": float, "at_cap": lambda v: v == "True", "vs_R": int,
             "vs_today": int}
    with open(path, newline="") as f:
        return [{k: types.get(k, str)(v) for k, v in row.items()} for row in csv.DictReader(f)]


def bench_tailexact(seeds="30-39", psi="0,0.3,0.6,0.9", tau="2,5,10", widths="0.27,1.5,7.9",
                    csv_path=None, report=None, out=sys.stdout):
    """Run every arm on every fit of the grid and print the paired figures; returns the rows
    (one per fit and arm). ``csv_path``: each row is also written there as it is made;
    ``report``: print the figures of such a file (its complete cells) instead of fitting."""
    from mccard_dist.data import make_paper_data

    if report:
        rows = _read_csv(report)
        per_cell = {}
        for r in rows:
            per_cell[r["psi"], r["tau"]] = per_cell.get((r["psi"], r["tau"]), 0) + 1
        full = max(per_cell.values())
        rows = [r for r in rows if per_cell[r["psi"], r["tau"]] == full]
        cells = sorted(c for c in per_cell if per_cell[c] == full)
        print(f"{report}: complete (psi, tau) cells {cells}, seeds "
              f"{sorted({r['seed'] for r in rows})} ({full} rows a cell)", file=out)
        _report(rows, out)
        return rows

    seeds, psis, taus = _seeds(seeds), [float(v) for v in psi.split(",")], \
        [float(v) for v in tau.split(",")]
    widths = [float(v) for v in widths.split(",")]
    configs = [(lik, h) for lik in ("deviant", "proper") for h in widths] + [("ls", None)]
    rows, turn = [], 0
    sink = open(csv_path, "w", newline="") if csv_path else None
    writer = csv.DictWriter(sink, FIELDS, extrasaction="ignore") if sink else None
    if writer:
        writer.writeheader()
    with one_thread():
        print(f"seeds {seeds[0]}-{seeds[-1]}, psi {psis}, tau {taus}, widths {widths} (both "
              f"likelihoods) + LS-ARD; N=300, D=1000; BLAS threads: {blas_report()}", file=out,
              flush=True)
        warm = make_paper_data(seed=seeds[0], psi=psis[0], tau=taus[0], n_features=50)
        for lik, h in configs:  # imports and first calls before any clock
            _fit(_estimator(lik, h, "tail-exact", 300), warm)
        for p, t in _cell_order(psis, taus):
            start = time.perf_counter()
            for seed in seeds:
                data = make_paper_data(seed=seed, psi=p, tau=t)
                for lik, h in configs:
                    names = ["today", "A"] if turn % 2 else ["A", "today"]
                    turn += 1
                    fits = {a: _fit(_estimator(lik, h, *ARMS[a]), data) for a in names}
                    fits["R"] = (_fit(_estimator(lik, h, *ARMS["R"]), data)
                                 if fits["today"]["at_cap"] else fits["today"])
                    for a in ARMS:
                        rows.append({"seed": seed, "psi": p, "tau": t, "likelihood": lik,
                                     "width": h, "arm": a, **fits[a],
                                     "vs_R": len(fits[a]["active"] ^ fits["R"]["active"]),
                                     "vs_today": len(fits[a]["active"]
                                                     ^ fits["today"]["active"])})
                        if writer:
                            writer.writerow(rows[-1])
                if sink:
                    sink.flush()
            print(f"psi={p:g}, tau={t:g} done ({time.perf_counter() - start:.0f} s)", file=out,
                  flush=True)
    if sink:
        sink.close()
    _report(rows, out)
    return rows


def _report(rows, out):
    def pick(arm, **where):
        return [r for r in rows if r["arm"] == arm and all(r[k] == v for k, v in where.items())]

    def key(r):
        return (r["seed"], r["psi"], r["tau"], r["likelihood"], r["width"])

    print("\n1. CPU (s, all fits) today / A, and median per-fit ratio; today's CPU before the "
          "tail's gate first held, and the most an update of the tail alone could gain",
          file=out)
    groups = [("deviant",), ("proper",), ("deviant", "proper"), ("ls",)]
    for group in groups:
        today = [r for lik in group for r in pick("today", likelihood=lik)]
        a = {key(r): r for lik in group for r in pick("A", likelihood=lik)}
        ratio = [r["cpu"] / a[key(r)]["cpu"] for r in today]
        total_t, total_a = sum(r["cpu"] for r in today), sum(r["cpu"] for r in a.values())
        name = "MCC-ARD both" if len(group) == 2 else {"ls": "LS-ARD"}.get(group[0], group[0])
        pre = sum(r.get("cpu_pre", np.nan) for r in today)  # absent from older CSV files
        print(f"  {name:13s} fits {len(today):4d}  today {total_t:8.1f}  A {total_a:8.1f}  "
              f"today/A {total_t / total_a:5.2f}  median {np.median(ratio):5.2f}  before the "
              f"gate {pre / total_t:4.0%} (a free tail: {total_t / pre:4.2f}x)", file=out)

    print("\n2. fits where R converged: A's set == R's (and today's, for reference); |dF1| "
          "(A - R) where A's differs", file=out)
    for lik in LIKELIHOODS:
        ref = {key(r): r for r in pick("R", likelihood=lik) if r["converged"]}
        a = [r for r in pick("A", likelihood=lik) if key(r) in ref]
        t = [r for r in pick("today", likelihood=lik) if key(r) in ref]
        diff = [abs(r["f1"] - ref[key(r)]["f1"]) for r in a if r["vs_R"]]
        print(f"  {lik:8s} R converged {len(ref):4d}  A == R {sum(not r['vs_R'] for r in a):4d} "
              f"({np.mean([not r['vs_R'] for r in a]):.1%})  today == R "
              f"{np.mean([not r['vs_R'] for r in t]):.1%}  max |dF1| "
              f"{max(diff, default=0.0):.3f}  mean sym. diff. "
              f"{np.mean([r['vs_R'] for r in a]):.2f}", file=out)
    converged = {key(r) for r in pick("R") if r["converged"]}
    both = [r for lik in ("deviant", "proper") for r in pick("A", likelihood=lik)
            if key(r) in converged]
    print(f"  MCC-ARD  A == R in {np.mean([not r['vs_R'] for r in both]):.1%} of {len(both)}",
          file=out)

    rng = np.random.default_rng(0)
    for label, liks in (("MCC-ARD (both likelihoods, every width)", ("deviant", "proper")),
                        ("LS-ARD", ("ls",))):
        print(f"\n3. {label}: paired mean A - today per (psi, tau), 95% paired bootstrap over "
              "seeds", file=out)
        print(f"  {'psi':>4s} {'tau':>4s} {'dF1':>8s} {'[lo, hi]':>19s} {'dr':>10s} "
              f"{'[lo, hi]':>23s} {'dkept':>6s} {'[lo, hi]':>15s}", file=out)
        for p, t in sorted({(r["psi"], r["tau"]) for r in rows}):
            cell = {}
            for lik in liks:
                a = {key(r): r for r in pick("A", psi=p, tau=t, likelihood=lik)}
                for r in pick("today", psi=p, tau=t, likelihood=lik):
                    d = cell.setdefault(r["seed"], ([], [], []))
                    for i, name in enumerate(("f1", "r", "kept")):
                        d[i].append(a[key(r)].get(name, np.nan) - r.get(name, np.nan))
            f1, dr, kept = (_bootstrap([np.mean(v[i]) for v in cell.values()], rng)
                            for i in range(3))
            print(f"  {p:4g} {t:4g} {f1[0]:+8.4f} [{f1[1]:+8.4f}, {f1[2]:+8.4f}] "
                  f"{dr[0]:+10.2e} [{dr[1]:+10.2e}, {dr[2]:+10.2e}] {kept[0]:+6.2f} "
                  f"[{kept[1]:+6.2f}, {kept[2]:+6.2f}]", file=out)

    print("\n4. fits stopping at max_iter, and mean n_iter_, per arm", file=out)
    for lik in LIKELIHOODS:
        parts = []
        for arm in ARMS:
            fits = pick(arm, likelihood=lik)
            parts.append(f"{arm} {sum(r['at_cap'] for r in fits):3d}/{len(fits)} "
                         f"(n_iter {np.mean([r['n_iter'] for r in fits]):6.1f})")
        print(f"  {lik:8s} " + "  ".join(parts), file=out)
    if pick("today", likelihood="ls", psi=0.0):
        ls0 = {arm: np.mean([r["n_iter"] for r in pick(arm, likelihood="ls", psi=0.0)])
               for arm in ("today", "A")}
        print(f"  LS-ARD psi=0: mean n_iter_ today {ls0['today']:.1f}, A {ls0['A']:.1f} "
              f"({ls0['today'] / ls0['A']:.1f}x)", file=out)
