"""Analysis of a results store: tidy summaries (xarray in, tables out).

Everything here works on a partial store (a run still going, or interrupted): only finished cells
count, and the number missing is reported.
"""

from __future__ import annotations

import numpy as np

__all__ = ["METRICS", "summarize", "summary_table"]

#: per-cell metrics summarised over seeds
METRICS = ("r", "rmse", "n_selected", "precision", "recall", "f1", "chosen_h", "chosen_lam",
           "fit_seconds")


def summarize(ds):
    """Mean, standard deviation and count over seeds of each per-cell metric.

    Parameters
    ----------
    ds : xarray.Dataset
        A store opened with :func:`mccard_dist.open_results` (unfinished cells masked).

    Returns
    -------
    xarray.Dataset
        Dims ``(method, tau, psi)``; variables ``<metric>_mean``, ``<metric>_std`` (ddof=1) for
        every metric, ``n_done`` (finished cells), ``n_failed`` and ``n_pending``.
    """
    import xarray as xr

    status = ds["status"].load()
    out = {}
    for name in METRICS:
        if name not in ds:
            continue
        values = ds[name].load()
        out[f"{name}_mean"] = values.mean("seed", skipna=True)
        out[f"{name}_std"] = values.std("seed", ddof=1, skipna=True)
    out["n_done"] = (status == 1).sum("seed")
    out["n_failed"] = (status == 2).sum("seed")
    out["n_pending"] = (status == 0).sum("seed")
    return xr.Dataset(out)


def summary_table(ds, metrics=("r", "rmse", "f1", "n_selected")) -> str:
    """A plain-text table of mean metrics per method and tau (over psi and seeds, finished cells)."""
    status = ds["status"].load()
    header = f"{'method':16s} {'tau':>6s} " + " ".join(f"{m:>10s}" for m in metrics) + \
        f" {'done':>7s} {'failed':>6s}"
    lines = [header, "-" * len(header)]
    for method in ds["method"].values:
        for tau in ds["tau"].values:
            sel = dict(method=method, tau=tau)
            st = status.sel(sel).values
            row = f"{str(method):16s} {tau:6g} "
            cols = []
            for m in metrics:
                v = ds[m].sel(sel).values
                v = v[st == 1]
                cols.append(f"{np.nanmean(v):10.4f}" if v.size and np.isfinite(v).any()
                            else f"{'-':>10s}")
            row += " ".join(cols) + f" {int((st == 1).sum()):7d} {int((st == 2).sum()):6d}"
            lines.append(row)
    return "\n".join(lines)
