"""Metrics the package gained after a store was written (:data:`mccard_dist.metrics.METRICS`):
their values for the store's finished cells, without a refit and without a migration.

A metric that needs only the final coefficients (``needs="coef"``), or those and the cell's true
coefficients (``"selection"``, rebuilt from the data config as a worker does), is computed from
the stored ``coef``; one that needs the test predictions (``"prediction"``) is NaN, with a note
saying why (the store keeps no intercept and no prediction), as is every one in a store without
coefficients (``run.save_coef=false``). The writer stores these values when it resumes the store;
the reader adds them in memory.
"""

from __future__ import annotations

import numpy as np

from .. import grid, metrics
from ..records import STATUS_DONE

__all__ = ["metric_values", "new_metrics"]


def new_metrics(held) -> list[metrics.Metric]:
    """The metrics a store does not hold (``held``: the names of its variables)."""
    return [m for m in metrics.METRICS if m.name not in set(held)]


def metric_values(spec, metric: metrics.Metric, status: np.ndarray,
                  coef: np.ndarray | None) -> tuple[np.ndarray, str]:
    """``metric`` of every finished cell (``status``, dims ``(model, tau, psi, seed)``) from its
    stored coefficients (``coef``, with ``feature`` last; None without them), NaN for the
    others; and a note when the finished cells cannot have it (empty otherwise)."""
    values = np.full(status.shape, np.nan)
    if metric.needs == "prediction":
        return values, (f"{metric.name} needs the test predictions, which the store does not keep: "
                        "NaN for the cells finished before the metric was added (a rerun in a "
                        "new store computes it)")
    if coef is None:
        return values, (f"{metric.name} needs the final coefficients, which this store does not "
                        "keep (run.save_coef=false): NaN for the cells finished before the "
                        "metric was added")
    done = status == STATUS_DONE
    truth: dict = {}
    source = spec.data.load_source() if metric.needs == "selection" and done.any() else None
    for cell in grid.cells(spec):
        if not done[cell.index]:
            continue
        coef_true = None
        if metric.needs == "selection":
            key = (cell.seed, cell.psi, cell.tau)
            if key not in truth:
                truth[key] = spec.data.make_data(cell.seed, cell.psi, cell.tau, source).coef_true
            coef_true = truth[key]
            if coef_true is None:  # real data: the selection cannot be scored
                continue
        values[cell.index] = metric.of(metrics.Evaluation(coef=coef[cell.index],
                                                          coef_true=coef_true))
    return values, ""
