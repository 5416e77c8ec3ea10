"""``bench stop``: an experiment with a stop rule against the same experiment's fixed seeds.

The rule's run comes first (its budget as ``experiment.seeds``); the fixed run's store is then made
beside it, so it takes the seeds the rule ran from it (the same cells, computed once) and computes
the others. Both runs' cell seconds are the cost of their cells, whichever run computed them."""

from __future__ import annotations

import json
import math
import sys
import tempfile

import numpy as np

from .common import compose_spec, local_client

#: the claims' margins of the benchmark's rule unless given
MARGINS = {"r": 0.05, "f1": 0.1}


def _rule(min_seeds, round_, margins, against) -> str:
    margin = ", ".join(f"{k}: {v}" for k, v in margins.items())
    versus = f", against: {against}" if against else ""
    return (f"experiment.stop={{min_seeds: {min_seeds}, round: {round_}, "
            f"claims: {{margin: {{{margin}}}{versus}}}}}")


def _fixed_direction(ds, metric, a, b, ti, pi, sign) -> tuple[str, float, float]:
    """The fixed run's verdict on ``a - b`` (signed) in one cell: its 95% t-interval over the
    seeds both finished, "better" / "worse" where it excludes 0, else "unclear"."""
    from ..intervals import Intervals

    va = ds[metric].sel(model=a).values[ti, pi]
    vb = ds[metric].sel(model=b).values[ti, pi]
    _, low, high, _ = Intervals().of(sign * (va - vb))
    if low > 0:
        return "better", low, high
    if high < 0:
        return "worse", low, high
    return "unclear", low, high


def replay_unbounded(spec, ds) -> dict:
    """Where each (tau, psi) cell of a rule's store would have stopped had every metric the
    asymptotic sequence (its bounds ignored), on the seeds the run made: ``"ti/pi"`` -> seeds,
    or None where those seeds did not decide it."""
    from dataclasses import replace

    from ..metrics import METRICS
    from ..stopping import decide

    unbounded = {m.name: replace(m, bounds=None) for m in METRICS}
    methods, budget, out = list(spec.method_names), len(spec.seeds), {}
    done = (ds["status"] == 1).all("model").values
    values = {m: ds[m].transpose("model", "tau", "psi", "seed").values for m in spec.stop.metrics}
    for ti in range(len(spec.tau)):
        for pi in range(len(spec.psi)):
            ran = int(done[ti, pi].sum())
            out[f"{ti}/{pi}"] = next(
                (n for n in spec.stop.rounds(budget) if n <= ran and decide(
                    spec.stop, methods, {m: v[:, ti, pi, :n] for m, v in values.items()},
                    unbounded).holds), None)
    return out


def bench_stop(budget=1000, fixed=100, min_seeds=10, round_=10, margins=None, against=None,
               workers=2, overrides=(), out=sys.stdout):
    """Run ``experiment=paper`` (with ``overrides``) under a stop rule (``budget`` seeds per cell,
    ``min_seeds``, ``round_``, the claims decided within ``margins`` (default :data:`MARGINS`),
    ``against`` one method or every pair), then with ``fixed`` seeds; print per cell the seeds
    the rule used, its decisions beside the fixed run's, and both runs' core-hours, projected to
    every cell of the paper's grid."""
    from ..analysis.stops import stop_record
    from ..metrics import METRICS
    from ..runner import run_experiment
    from ..store import open_results, store_path

    margins = dict(MARGINS if margins is None else margins)
    overrides = tuple(overrides)
    better = {m.name: m.better or 1 for m in METRICS}
    with tempfile.TemporaryDirectory(prefix="mccard-bench-stop-",
                                     ignore_cleanup_errors=True) as root:
        reference = compose_spec(["experiment=paper"])
        paper_cells = len(reference.tau) * len(reference.psi)
        base = ("experiment=paper", *overrides)
        ruled = compose_spec([*base, f"experiment.seeds.count={budget}",
                              _rule(min_seeds, round_, margins, against)], root, "ruled")
        plain = compose_spec([*base, f"experiment.seeds.count={fixed}"], root, "fixed")
        runs = {}
        with local_client(workers, "6GiB") as client:
            for name, spec in (("rule", ruled), ("fixed", plain)):
                print(f"[{name}] {len(spec.methods)} methods x {len(spec.tau)} tau x "
                      f"{len(spec.psi)} psi, {len(spec.seeds)} seeds"
                      f"{' at most' if name == 'rule' else ''} ...", file=out, flush=True)
                report = run_experiment(spec, client=client, progress=False)
                runs[name] = (report, open_results(store_path(spec)).load())
        (rule_report, rds), (fixed_report, fds) = runs["rule"], runs["fixed"]
        record = stop_record(rds)
    n_cells = len(ruled.tau) * len(ruled.psi)
    methods = list(ruled.method_names)
    print(f"\nrule: {json.dumps(record['rule'], sort_keys=True)}; budget {budget} seeds a cell, "
          f"against {fixed} fixed seeds; {workers} LocalCluster worker(s)", file=out)
    print(f"{'tau':>5s} {'psi':>5s} {'seeds':>5s}  {'stopped':13s} decisions (rule | fixed "
          f"{fixed} seeds' 95% t-interval)", file=out)
    counts = {"parts": 0, "decided": 0, "contradict": 0, "fixed_clear": 0, "agree": 0}
    open_cells = []
    for ti, tau in enumerate(ruled.tau):
        for pi, psi in enumerate(ruled.psi):
            cell = record["cells"].get(f"{ti}/{pi}")
            if cell is None:
                print(f"{tau:5g} {psi:5g}  not stopped (the run did not finish it)", file=out)
                continue
            said = []
            for metric, a, b, mean, low, high, n, outcome in cell["parts"]:
                if b is None:
                    continue
                verdict, f_low, f_high = _fixed_direction(fds, metric, a, b, ti, pi,
                                                          better[metric])
                counts["parts"] += 1
                counts["decided"] += outcome != "open"
                counts["fixed_clear"] += verdict != "unclear"
                counts["contradict"] += {outcome, verdict} == {"better", "worse"}
                counts["agree"] += outcome == verdict
                if outcome == "open":
                    open_cells.append(f"tau={tau:g} psi={psi:g} {metric} {a}-{b}: "
                                      f"[{_g(low)}, {_g(high)}] at {n} seeds, margin "
                                      f"{margins[metric]:g}")
                said.append(f"{metric} {a}-{b} {outcome} | {verdict} [{f_low:.3g}, "
                            f"{f_high:.3g}]")
            print(f"{tau:5g} {psi:5g} {cell['seeds']:5d}  {cell['why']:13s} "
                  + "; ".join(said), file=out)

    def seconds(ds):
        v = ds["cell_seconds"].values
        return float(np.nansum(v))

    rule_seeds = int((rds["status"] == 1).any("model").sum())
    rule_s, fixed_s = seconds(rds), seconds(fds)
    scale = paper_cells / n_cells / 3600.0
    print(f"\nseeds run: rule {rule_seeds} of {budget * n_cells} budgeted, fixed "
          f"{fixed * n_cells}: {rule_seeds / (fixed * n_cells):.2f} of the fixed run's", file=out)
    print(f"core-hours of these {n_cells} cells: rule {rule_s / 3600:.2f}, fixed "
          f"{fixed_s / 3600:.2f} ({rule_s / fixed_s:.2f} of the fixed run's); projected to the "
          f"paper's {paper_cells} cells: rule {rule_s * scale:.1f}, fixed {fixed_s * scale:.1f}",
          file=out)
    print(f"claims ({len(methods)} methods): {counts['decided']} of {counts['parts']} decided; "
          f"the fixed run's interval excludes 0 in {counts['fixed_clear']}; the same verdict in "
          f"{counts['agree']}; contradicting it (better against worse): {counts['contradict']}",
          file=out)
    if open_cells:
        print(f"open at the budget ({len(open_cells)}):", file=out)
        for line in open_cells:
            print(f"  {line}", file=out)
    asymptotic = replay_unbounded(ruled, rds)
    decided = [n for n in asymptotic.values() if n is not None]
    print(f"with the asymptotic sequence for every metric (bounds ignored; its coverage is "
          f"asymptotic only), replayed on these seeds: {len(decided)} of {n_cells} cells "
          f"decided, at {sum(decided)} seeds "
          f"({sum(decided) / (fixed * max(len(decided), 1)):.2f} of {fixed} a cell); per cell: "
          + ", ".join(f"{key} {n if n is not None else '-'}" for key, n in asymptotic.items()),
          file=out)
    return {"rule_seeds": rule_seeds, "fixed_seeds": fixed * n_cells, "rule_seconds": rule_s,
            "fixed_seconds": fixed_s, **counts, "open": open_cells,
            "wall": (rule_report.seconds, fixed_report.seconds)}


def _g(value) -> str:
    return "—" if value is None or not math.isfinite(value) else f"{value:.3g}"
