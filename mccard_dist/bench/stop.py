"""``bench stop``: an experiment with a stop rule against the same experiment's fixed seeds, and a
second fixed run on other seeds as the ceiling of agreement.

The rule's run comes first (its budget as ``experiment.seeds``); the fixed run's store is then made
beside it, so it takes the seeds the rule ran from it (the same cells, computed once) and computes
the others; the repeat runs the fixed count of seeds that follow. Both runs' cell seconds are the
cost of their cells, whichever run computed them. A claim's sign is *better* or *worse* where its
interval excludes 0 (the rule's sequence at its stop; a fixed run's t-interval), else none; two
runs agree on a cell when every claim's sign is the same in both."""

from __future__ import annotations

import json
import math
import sys
import tempfile

import numpy as np

from .common import compose_spec, local_client

#: the claims' margins of the benchmark's rule unless given
MARGINS = {"r": 0.05, "f1": 0.1}
NONE = "none"


def _rule(min_seeds, round_, margins, against, guarantee) -> str:
    margin = ", ".join(f"{k}: {v}" for k, v in margins.items())
    versus = f", against: {against}" if against else ""
    return (f"experiment.stop={{min_seeds: {min_seeds}, round: {round_}, guarantee: {guarantee}, "
            f"claims: {{margin: {{{margin}}}{versus}}}}}")


def fixed_sign(ds, metric, a, b, ti, pi, sign) -> tuple[str, float, float]:
    """A fixed run's sign of ``a - b`` (signed) in one cell: its 95% t-interval over the seeds
    both finished, "better" / "worse" where it excludes 0, else "none"."""
    from ..intervals import Intervals

    va = ds[metric].sel(model=a).values[ti, pi]
    vb = ds[metric].sel(model=b).values[ti, pi]
    _, low, high, _ = Intervals().of(sign * (va - vb))
    if low > 0:
        return "better", low, high
    if high < 0:
        return "worse", low, high
    return NONE, low, high


def bench_stop(budget=100, fixed=100, min_seeds=10, round_=10, margins=None, against=None,
               guarantee="normal", workers=2, overrides=(), out=sys.stdout):
    """Run ``experiment=paper`` (with ``overrides``) under a stop rule (``budget`` seeds per cell,
    ``min_seeds``, ``round_``, the claims settled within ``margins`` (default :data:`MARGINS`),
    ``against`` one method or every pair, intervals of ``guarantee``), then with ``fixed`` seeds,
    then with the ``fixed`` seeds after those (the repeat); print per cell the seeds the rule
    used, its signs beside the fixed run's and the repeat's, the seeds and core-hours against the
    fixed run, and how often each agrees with the fixed run on every sign of a cell."""
    from ..analysis.stops import stop_record
    from ..metrics import METRICS
    from ..runner import run_experiment
    from ..stopping import BETTER, WORSE, Part
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
                              _rule(min_seeds, round_, margins, against, guarantee)],
                             root, "ruled")
        plain = compose_spec([*base, f"experiment.seeds.count={fixed}"], root, "fixed")
        repeat = compose_spec([*base, f"experiment.seeds.start={fixed}",
                               f"experiment.seeds.count={fixed}"], root, "repeat")
        runs = {}
        with local_client(workers, "6GiB") as client:
            for name, spec in (("rule", ruled), ("fixed", plain), ("repeat", repeat)):
                print(f"[{name}] {len(spec.methods)} methods x {len(spec.tau)} tau x "
                      f"{len(spec.psi)} psi, {len(spec.seeds)} seeds"
                      f"{' at most' if name == 'rule' else ''} ...", file=out, flush=True)
                report = run_experiment(spec, client=client, progress=False)
                runs[name] = (report, open_results(store_path(spec)).load())
        rds, fds, pds = (runs[k][1] for k in ("rule", "fixed", "repeat"))
        record = stop_record(rds)
    n_cells = len(ruled.tau) * len(ruled.psi)
    methods = list(ruled.method_names)
    print(f"\nrule: {json.dumps(record['rule'], sort_keys=True)}; budget {budget} seeds a cell, "
          f"against {fixed} fixed seeds and a repeat on the {fixed} after them; {workers} "
          "LocalCluster worker(s)", file=out)
    print(f"{'tau':>5s} {'psi':>5s} {'seeds':>5s}  {'stopped':13s} claims (rule at its stop | "
          f"fixed run's 95% t-interval | repeat's sign)", file=out)
    counts = {"parts": 0, "settled": 0, "same": 0, "contradict": 0, "open": 0,
              "fixed_signed": 0, "cells": 0, "cells_same": 0, "cells_repeat_same": 0}
    open_cells = []
    for ti, tau in enumerate(ruled.tau):
        for pi, psi in enumerate(ruled.psi):
            cell = record["cells"].get(f"{ti}/{pi}")
            if cell is None:
                print(f"{tau:5g} {psi:5g}  not stopped (the run did not finish it)", file=out)
                continue
            said, every, every_repeat = [], True, True
            for part in map(Part.from_list, cell["parts"]):
                if part.versus is None:
                    continue
                rule_sign = part.outcome if part.outcome in (BETTER, WORSE) else NONE
                verdict, f_low, f_high = fixed_sign(fds, part.metric, part.method, part.versus,
                                                    ti, pi, better[part.metric])
                again, _, _ = fixed_sign(pds, part.metric, part.method, part.versus, ti, pi,
                                         better[part.metric])
                counts["parts"] += 1
                counts["settled"] += part.outcome != "open"
                counts["open"] += part.outcome == "open"
                counts["fixed_signed"] += verdict != NONE
                counts["same"] += rule_sign == verdict
                counts["contradict"] += {rule_sign, verdict} == {BETTER, WORSE}
                every &= rule_sign == verdict
                every_repeat &= again == verdict
                if part.outcome == "open":
                    open_cells.append(f"tau={tau:g} psi={psi:g} {part.metric} {part.method}-"
                                      f"{part.versus}: [{_g(part.low)}, {_g(part.high)}] at "
                                      f"{part.n} seeds, margin {margins[part.metric]:g}")
                said.append(f"{part.metric} {part.method} {part.label} {part.versus} "
                            f"[{_g(part.low)}, {_g(part.high)}] | {verdict} [{f_low:.3g}, "
                            f"{f_high:.3g}] | {again}")
            counts["cells"] += 1
            counts["cells_same"] += every
            counts["cells_repeat_same"] += every_repeat
            print(f"{tau:5g} {psi:5g} {cell['seeds']:5d}  {cell['why']:13s} "
                  + "; ".join(said), file=out)

    def seconds(ds):
        return float(np.nansum(ds["cell_seconds"].values))

    rule_seeds = int((rds["status"] == 1).any("model").sum())
    rule_s, fixed_s = seconds(rds), seconds(fds)
    scale = paper_cells / n_cells / 3600.0
    cells = max(counts["cells"], 1)
    print(f"\nseeds run: rule {rule_seeds} of {budget * n_cells} budgeted, fixed "
          f"{fixed * n_cells}: {rule_seeds / (fixed * n_cells):.2f} of the fixed run's", file=out)
    print(f"core-hours of these {n_cells} cells: rule {rule_s / 3600:.2f}, fixed "
          f"{fixed_s / 3600:.2f} ({rule_s / fixed_s:.2f} of the fixed run's); projected to the "
          f"paper's {paper_cells} cells: rule {rule_s * scale:.1f}, fixed {fixed_s * scale:.1f}",
          file=out)
    print(f"claims ({len(methods)} methods): {counts['parts']}; settled by the rule "
          f"{counts['settled']}, open at the budget {counts['open']}; the fixed run's interval "
          f"excludes 0 in {counts['fixed_signed']}; the rule's sign the same as the fixed run's "
          f"in {counts['same']}, contradicting it (better against worse) in "
          f"{counts['contradict']}", file=out)
    print(f"cells with every sign the fixed run's: rule {counts['cells_same']} of "
          f"{counts['cells']} ({counts['cells_same'] / cells:.2f}), repeat "
          f"{counts['cells_repeat_same']} of {counts['cells']} "
          f"({counts['cells_repeat_same'] / cells:.2f})", file=out)
    if open_cells:
        print(f"open at the budget ({len(open_cells)}):", file=out)
        for line in open_cells:
            print(f"  {line}", file=out)
    return {"rule_seeds": rule_seeds, "fixed_seeds": fixed * n_cells, "rule_seconds": rule_s,
            "fixed_seconds": fixed_s, **counts, "open_parts": open_cells,
            "wall": tuple(runs[k][0].seconds for k in ("rule", "fixed", "repeat"))}


def _g(value) -> str:
    return "—" if value is None or not math.isfinite(value) else f"{value:.3g}"
