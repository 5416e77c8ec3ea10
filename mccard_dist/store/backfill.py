"""Metrics a store does not hold (the package's, gained after it was written, or one's own added
to ``experiment.metrics``): their values for the store's finished cells, without a refit and
without a migration.

A metric that needs only the final coefficients (``needs="coef"``), or those and the cell's true
coefficients (``"selection"``, rebuilt from the data config as a worker does), is computed from
the stored ``coef``; one that needs the test predictions (``"prediction"``) is NaN, with a note
saying why (the store keeps no intercept and no prediction), as is one that needs the fitted
estimator (``"estimator"``: the store keeps none) and every one in a store without coefficients
(``run.save_coef=false``). The writer stores these values when it resumes the store;
the reader adds them in memory.
"""

from __future__ import annotations

import json
import logging

import numpy as np

from .. import grid, metrics
from ..records import STATUS_DONE

__all__ = ["fill_metrics", "metric_values", "new_metrics", "store_cells"]

log = logging.getLogger(__name__)


def new_metrics(held, table=None) -> list[metrics.Metric]:
    """The metrics of ``table`` (default: the built-in ones) a store does not hold (``held``:
    the names of its variables)."""
    return [m for m in (metrics.METRICS if table is None else table) if m.name not in set(held)]


def store_cells(axes) -> list[grid.Cell]:
    """The cells of a store whose coordinates are ``axes``: ``(models, taus, psis, seeds)``."""
    models, taus, psis, seeds = axes
    return [grid.Cell(str(m), float(t), float(p), int(s), (mi, ti, pi, si))
            for mi, m in enumerate(models) for ti, t in enumerate(taus)
            for pi, p in enumerate(psis) for si, s in enumerate(seeds)]


def metric_values(data, cells, metric: metrics.Metric, status: np.ndarray,
                  coef: np.ndarray | None, reading: bool = False) -> tuple[np.ndarray, str]:
    """``metric`` of every finished cell of ``cells`` (``status``, dims ``(model, tau, psi,
    seed)``) from its stored coefficients (``coef``, with ``feature`` last; None without them)
    and the cell's data (the data spec ``data`` rebuilds them), NaN for the others; and a note
    when the finished cells cannot have it (empty otherwise). ``reading``: for a store's reader,
    which rebuilds no data a generator of one's own makes (what a store names is never
    imported)."""
    values = np.full(status.shape, np.nan)
    if reading and metric.needs == "selection" and not data.rebuilt_when_read:
        return values, (f"{metric.name} needs the true coefficients of the data generator "
                        f"{data.generator}, which reading a store does not import: NaN "
                        "until a resume with it computes them")
    if metric.needs in ("prediction", "estimator"):
        what = "test predictions" if metric.needs == "prediction" else "fitted estimator"
        return values, (f"{metric.name} needs the {what}, which the store does not keep: "
                        "NaN for the cells finished before the metric was added (a rerun in a "
                        "new store computes it)")
    if coef is None:
        return values, (f"{metric.name} needs the final coefficients, which this store does not "
                        "keep (run.save_coef=false): NaN for the cells finished before the "
                        "metric was added")
    done = status == STATUS_DONE
    truth: dict = {}
    source = data.load_source() if metric.needs == "selection" and done.any() else None
    for cell in cells:
        if not done[cell.index]:
            continue
        coef_true = None
        if metric.needs == "selection":
            key = (cell.seed, cell.psi, cell.tau)
            if key not in truth:
                truth[key] = data.make_data(cell.seed, cell.psi, cell.tau, source).coef_true
            coef_true = truth[key]
            if coef_true is None:  # real data: the selection cannot be scored
                continue
        values[cell.index] = metric.of(metrics.Evaluation(coef=coef[cell.index],
                                                          coef_true=coef_true, cell=cell))
    return values, ""


def fill_metrics(path, spec, added, group) -> None:
    """Write every chunk of the metrics ``added`` to the store ``group`` (at ``path``), just
    created there: their values for the finished cells from the stored coefficients, NaN
    elsewhere, a note where they cannot be computed; and record the declarations of those of
    one's own (attribute ``metrics``), so that the report reads them."""
    import zarr

    from .version import own_metrics

    status = np.asarray(group["status"][...])
    coef = np.asarray(group["coef"][...]) if "coef" in group else None
    with zarr.config.set({"array.write_empty_chunks": True}):
        for metric in added:
            values, note = metric_values(spec.data, grid.cells(spec), metric, status, coef)
            group[metric.name][...] = values
            if note:
                group[metric.name].attrs["note"] = note
                log.warning("store %s: %s", path, note)
    recorded = {d["name"]: d for d in json.loads(group.attrs.get("metrics", "[]"))}
    recorded.update({m.name: m.declared() for m in added if m in own_metrics(spec)})
    group.attrs["metrics"] = json.dumps(list(recorded.values()))
