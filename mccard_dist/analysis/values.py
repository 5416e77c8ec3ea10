"""Per-cell values of a store, their summaries over seeds and the summary tables."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np

from .. import metrics
from ..records import STATUS_DONE, STATUS_FAILED, STATUS_PENDING
from .markup import Table, markdown

#: per-cell values summarised over seeds besides the metrics (:data:`mccard_dist.metrics.METRICS`)
SUMMARISED = ("chosen_kernel_width", "chosen_alpha_ratio", "fit_seconds")
#: value given to the undefined ``r`` of a finished cell with a constant prediction
UNDEFINED_R = 0.0


def _config(ds) -> dict:
    """The store's resolved config."""
    try:
        return json.loads(ds.attrs.get("config", "{}"))
    except (TypeError, ValueError):
        return {}


def _grid(config) -> dict:
    """A method's stored CV grid, ``{}`` without one."""
    grid = config.get("grid") if isinstance(config, dict) else None
    return grid if isinstance(grid, dict) else {}


def scenario(ds) -> str:
    """The store's data and contamination scenario in words, "" for the paper's problem (its
    synthetic data, Laplace outliers in y, no leverage points, independent features)."""
    data = _config(ds).get("data", {})
    parts = []
    source = data.get("source") or "paper"
    if source == "file":
        parts.append(f"data file {Path(str(data.get('path'))).name} (sha256 "
                     f"{str(data.get('sha256'))[:12]})")
    elif source == "diabetes":
        parts.append(f"scikit-learn's diabetes data with {data.get('n_noise_features')} noise "
                     "features")
    elif source == "generator":  # its contamination is its own
        params = ", ".join(f"{k}={v}" for k, v in (data.get("params") or {}).items())
        return f"data of the generator {data.get('generator')}" + (f" ({params})" if params
                                                                    else "")
    outliers = data.get("outliers") or "laplace"
    if source != "paper" or outliers != "laplace":
        parts.append(f"{outliers} outliers" + (f" (df = {data['df']:g})" if data.get("df") else ""))
    if data.get("leverage"):
        parts.append("leverage points")
    if data.get("rho"):
        parts.append(f"feature correlation rho = {data['rho']:g}")
    return ", ".join(parts)


def n_relevant(ds) -> int | None:
    """The true number of relevant features: ``data.n_relevant`` of the config, else ``tp + fn``
    of any finished cell (found or missed), else None."""
    k = _config(ds).get("data", {}).get("n_relevant")
    if k is not None:
        return int(k)
    if "tp" in ds and "fn" in ds:
        total = (cell_values(ds, "tp") + cell_values(ds, "fn")).values
        total = total[np.isfinite(total)]
        if total.size:
            return int(total[0])
    return None


def _done(ds):
    return ds["status"].load() == STATUS_DONE


def cell_values(ds, name):
    """Per-cell values of ``name`` (lazy where the store's are), NaN wherever the cell is not
    finished; the undefined ``r`` of a finished cell whose fit kept no feature (a constant
    prediction) is :data:`UNDEFINED_R`."""
    import xarray as xr

    done = _done(ds)
    values = ds[name].astype(float)
    if name == "r":
        values = xr.where(done & values.isnull() & _constant_prediction(ds), UNDEFINED_R,
                          values)
    return values.where(done)


def _constant_prediction(ds):
    """Cells whose fit kept no feature (so their prediction is the intercept, a constant)."""
    if "n_selected" not in ds:
        return True
    return ds["n_selected"] == 0


def summarize(ds):
    """Mean and standard deviation over the finished seeds of each per-cell metric, as a Dataset
    of dims ``(model, tau, psi)``: ``<metric>_mean``, ``<metric>_std`` (ddof=1, NaN with fewer
    than 2 seeds), ``n_done``, ``n_failed``, ``n_pending`` and ``n_r_undefined`` (finished cells
    with a constant prediction, whose ``r`` counts as 0)."""
    import xarray as xr

    status = ds["status"].load()
    out = {}
    with warnings.catch_warnings():  # all-NaN slices and single seeds: NaN is the answer
        warnings.simplefilter("ignore", RuntimeWarning)
        for name in (*(m.name for m in store_metrics(ds)), *SUMMARISED):
            if name not in ds:
                continue
            values = cell_values(ds, name)
            out[f"{name}_mean"] = values.mean("seed", skipna=True)
            out[f"{name}_std"] = values.std("seed", ddof=1, skipna=True)
        out["n_done"] = (status == STATUS_DONE).sum("seed")
        out["n_failed"] = (status == STATUS_FAILED).sum("seed")
        out["n_pending"] = (status == STATUS_PENDING).sum("seed")
        if "r" in ds:
            out["n_r_undefined"] = ((status == STATUS_DONE) & ds["r"].isnull()
                                    & _constant_prediction(ds)).sum("seed")
        return xr.Dataset(out).compute()  # every reduction in one pass over the chunks


def summary_table(ds, metrics=None) -> str:
    """A plain-text table of mean metrics per method and tau (over psi and finished seeds);
    ``metrics``: names (default: the metrics the report shows)."""
    metrics = [m for m in shown_metrics(ds) if m in ds] if metrics is None else metrics
    status = ds["status"].load()
    values = {m: cell_values(ds, m) for m in metrics}
    header = f"{'method':16s} {'tau':>6s} " + " ".join(f"{m:>10s}" for m in metrics) + \
        f" {'done':>7s} {'failed':>6s}"
    lines = [header, "-" * len(header)]
    for method in ds["model"].values:
        for tau in ds["tau"].values:
            sel = {"model": method, "tau": tau}
            st = status.sel(sel).values
            cols = []
            for m in metrics:
                v = values[m].sel(sel).values
                v = v[np.isfinite(v)]
                cols.append(f"{np.mean(v):10.4f}" if v.size else f"{'-':>10s}")
            counts = f"{int((st == STATUS_DONE).sum()):7d} {int((st == STATUS_FAILED).sum()):6d}"
            lines.append(f"{str(method):16s} {tau:6g} " + " ".join(cols) + " " + counts)
    return "\n".join(lines)


def store_metrics(ds=None) -> tuple:
    """The metrics of the store ``ds``: the built-in ones (:data:`mccard_dist.metrics.METRICS`),
    then those of one's own it records (attribute ``metrics``: their declarations, read without
    importing their code); the built-in ones alone without a store."""
    table = list(metrics.METRICS)
    try:
        declared = json.loads(ds.attrs.get("metrics", "[]")) if ds is not None else []
    except (TypeError, ValueError):
        declared = []
    for d in declared if isinstance(declared, list) else []:
        try:
            found = metrics.Metric.from_declared(d)
        except (KeyError, TypeError, ValueError):
            continue
        if all(m.name != found.name for m in table):
            table.append(found)
    return tuple(table)


#: the built-in metric that is NaN where a metric of each ``needs`` is NaN by design: a method
#: without ``coef_`` (no ``n_selected``), data without true coefficients (no ``tp``)
_BY_DESIGN = {"coef": "n_selected", "selection": "tp"}


def nan_metric_warnings(ds) -> list[str]:
    """One line per metric of one's own that is NaN in every done cell of one or more methods,
    naming them (the tables show it as ``-``); not where that is by design (the metric needs
    coefficients the method or the data do not have) nor where the store's note says why (a
    metric added to a store, which its earlier cells cannot give)."""
    done = ds["status"] == STATUS_DONE
    lines = []
    for m in store_metrics(ds)[len(metrics.METRICS):]:
        if m.name not in ds or ds[m.name].attrs.get("note"):
            continue
        design = _BY_DESIGN.get(m.needs)
        empty = []
        for name in ds["model"].values:
            here = done.sel(model=name)
            if not bool(here.any()) or bool(ds[m.name].sel(model=name).where(here).notnull().any()):
                continue
            if design in ds and not bool(ds[design].sel(model=name).where(here).notnull().any()):
                continue
            empty.append(str(name))
        if empty:
            lines.append(f"metric {m.name} is NaN in every done cell of {', '.join(empty)} (shown "
                         "as -): check what its function returns")
    return lines


def shown_metrics(ds=None) -> tuple[str, ...]:
    """The metrics the report's tables, figures and ``--versus`` show, in the table's order
    (:func:`store_metrics`)."""
    return tuple(m.name for m in store_metrics(ds) if m.shown)


def metric_label(name: str, ds=None) -> str:
    """A metric's column title (its name for a value that is not a metric)."""
    m = metrics.metric(name, store_metrics(ds))
    return m.label if m is not None else name


def summary_markdown(ds, summary=None) -> str:
    """Markdown tables per tau and metric: mean ± std over finished seeds (rows psi, columns
    methods, then the finished seeds of the row: their range over methods when they differ)."""
    s = summarize(ds) if summary is None else summary
    methods = [str(m) for m in ds["model"].values]
    labels = [method_style(m, methods, ds)["label"] for m in methods]
    parts = []
    for tau in ds["tau"].values:
        parts.append(f"### tau = {tau:g}\n")
        for metric, heading, fmt in ((m.name, m.heading, m.fmt) for m in store_metrics(ds)
                                     if m.shown):
            if f"{metric}_mean" not in s or not has_values(s[f"{metric}_mean"]):
                continue  # e.g. F1 without true coefficients (real data)
            rows = []
            for psi in ds["psi"].values:
                row = [f"{psi:g}"]
                for m in methods:
                    sel = {"model": m, "tau": tau, "psi": psi}
                    mean = float(s[f"{metric}_mean"].sel(sel))
                    std = float(s[f"{metric}_std"].sel(sel))
                    if not math.isfinite(mean):
                        row.append("–")
                    elif math.isfinite(std):
                        row.append(mean_std(mean, std))
                    else:
                        row.append(f"{mean:{fmt}}")
                n = s["n_done"].sel({"tau": tau, "psi": psi}).values
                row.append(f"{n.min()}" if n.min() == n.max() else f"{n.min()}–{n.max()}")
                rows.append(row)
            table = Table(("psi", *labels, "seeds done"), rows, "r" * (len(labels) + 2))
            parts += [f"{heading}, mean ± std over seeds:\n", markdown([table]), ""]
    return "\n".join(parts)


def has_values(values) -> bool:
    """Whether a summary holds any finite value (F1 of real data, whose true coefficients are
    unknown, has none)."""
    return bool(np.isfinite(np.asarray(values, dtype=float)).any())


def outlier_scale_title(ds, tau) -> str:
    """A panel's title: the value of tau and what it scales (the store's outlier law)."""
    data = _config(ds).get("data", {})
    if data.get("source") == "generator":  # tau means what the generator makes it mean
        return f"τ = {tau:g}"
    outliers = data.get("outliers") or "laplace"
    law = "Laplace" if outliers == "laplace" else outliers.replace("_", "-")
    return f"τ = {tau:g} ({law} scale of the outliers)"


def _auto_width_methods(ds) -> set[str]:
    """Methods whose fits set their own width (their class's width parameter ``auto`` in the
    grid)."""
    methods = _config(ds).get("methods", {})
    out = set()
    for m, c in methods.items():
        kind = stored_kind(ds, m)
        if kind is not None and kind.width_param and _grid(c).get(kind.width_param) == "auto":
            out.add(m)
    return out


def mean_std(mean: float, std: float) -> str:
    """``mean ± std`` with the spread to two significant digits and the mean rounded to the same
    decimal place (``5.00 ± 0.78``, ``0.151 ± 0.075``, ``33 ± 12``)."""
    if std <= 0:  # no spread: the mean as it is (a count stays a whole number)
        return f"{mean:.4g} ± 0"
    decimals = min(6, max(0, 1 - math.floor(math.log10(std))))
    return f"{mean:.{decimals}f} ± {std:.{decimals}f}"


def _num(x: float) -> str:
    return "–" if not math.isfinite(x) else f"{x:.3g}"


#: the methods the claims are about (roles), in the paper's order
ROLES = ("mcc_ard", "mcc_ard_proper", "ls_ard", "mcc_l1")
#: their names in the claims' text, as the paper names them
_NAMES = {"mcc_ard": "MCC-ARD", "mcc_ard_proper": "MCC-ARD, proper C'", "ls_ard": "LS-ARD",
          "mcc_l1": "MCC-L1"}
#: colours and markers of methods without a style of their own: hues that no shipped method's
#: colour has (raspberry, dark teal, moss, sea green; each at least 16 degrees of CIELAB hue and
#: a CIELAB distance of 30 from every shipped colour and from each other: not a lighter tint of
#: one, as a light blue beside MCC-ARD's blue would be), and markers no shipped method file takes
_SPARE_COLORS = ("#c2185b", "#137e6d", "#698339", "#23c48b")
_SPARE_MARKERS = ("d", "H", "8", "x", "+", "1", "2", "3", "4")


def _shipped_methods() -> dict[str, dict]:
    from ..config import shipped_methods

    return shipped_methods()


def _fixed_style(method: str, ds=None) -> dict | None:
    """The colour and marker a method's file declares (``style``), as the store's config
    records it; for a store made before method files declared styles, or without a store, the
    shipped method file's where the method is a shipped one (:func:`is_shipped`)."""
    stored = _config(ds).get("methods", {}).get(method) if ds is not None else None
    if isinstance(stored, dict) and "style" in stored:
        return stored["style"] or None
    if not is_shipped(method, ds):
        return None
    return _shipped_methods().get(method, {}).get("style")


def stored_kind(ds, method: str):
    """The :class:`~mccard_dist.methods.MethodKind` the store ``ds`` records for ``method`` (its
    attribute ``kinds``, written when the store was made; a store made before: the package's own
    classes' declarations): labels, bounds, units and solvers without importing anything. None
    where the store records none for the estimator its config names."""
    from ..methods import MethodKind
    from ..store.migrate import declared_kinds

    config = _config(ds)
    try:
        kinds = json.loads(ds.attrs["kinds"]) if "kinds" in ds.attrs else declared_kinds(config)
    except (TypeError, ValueError):
        return None
    declared = kinds.get(method) if isinstance(kinds, dict) else None
    estimator = (config.get("methods", {}).get(method) or {}).get("estimator")
    if not isinstance(declared, dict) or declared.get("estimator") != estimator:
        return None
    try:
        return MethodKind.from_declared(declared)
    except (TypeError, ValueError):
        return None


def method_label(ds, method: str) -> str | None:
    """What a method is, from the store: its class's label with the words its parameters call
    for (``proper C'``, ``sequential solver``: the class's ``label_params``) and ``auto width``
    for a width set inside the fit; None for a class that declares no label."""
    kind = stored_kind(ds, method)
    if kind is None:
        return None
    config = _config(ds).get("methods", {}).get(method) or {}
    return kind.label_for(config.get("params") or {}, _grid(config))


def is_shipped(method: str, ds=None) -> bool:
    """Whether ``method`` is a shipped method file's and, in the store ``ds``, computed by that
    file's estimator (a method file of one's own with a shipped name is another method)."""
    shipped = _shipped_methods().get(method)
    if shipped is None:
        return False
    stored = _config(ds).get("methods", {}).get(method) if ds is not None else None
    return stored is None or stored.get("estimator") == shipped.get("estimator")


def method_style(method: str, methods=(), ds=None) -> dict:
    """``{"label", "color", "marker"}`` of a method: the colour and marker its method file
    declares (``style``; the shipped methods' are fixed so), else spare ones, none a style of
    another method of ``methods``, in the order they appear there. With ``ds`` (the store), the
    label says what the method is from its stored config (:func:`method_label`), so
    ``methods.mcc_ard.grid.kernel_width=auto`` is not labelled as the K-fold MCC-ARD; where it
    says nothing, a shipped method's label is its file's."""
    label = ((method_label(ds, method) if ds is not None else None)
             or (_shipped_label(method) if is_shipped(method, ds) else None))
    fixed = _fixed_style(method, ds)
    if fixed is not None:
        return {"label": label or method, "color": fixed.get("color", "#000000"),
                "marker": fixed.get("marker", "o")}
    styled = {m: _fixed_style(m, ds) for m in methods}
    taken = {st.get("color") for st in styled.values() if st}
    colors = [c for c in _SPARE_COLORS if c not in taken] or list(_SPARE_COLORS)
    others = [m for m in methods if not styled[m]]
    i = others.index(method) if method in others else 0
    # the marker moves on each round of the colours: with the 4 spare colours and 9 markers,
    # the first 36 never share both
    n = len(colors)
    return {"label": label or method, "color": colors[i % n],
            "marker": _SPARE_MARKERS[(i + i // n) % len(_SPARE_MARKERS)]}


def _shipped_label(method: str) -> str | None:
    """A shipped method's label from its file and its class's declarations."""
    from ..config import shipped_kind

    file = _shipped_methods().get(method)
    kind = shipped_kind(str(file.get("estimator"))) if file else None
    if kind is None:
        return None
    return kind.label_for(file.get("params") or {}, file.get("grid") or {})


class MissingCells(Exception):
    """The store lacks a method, tau or psi that a comparison needs."""


class StoreCells:
    """Finished per-cell values of a store, indexed by real coordinate values (cached)."""

    def __init__(self, ds):
        self.ds = ds
        self._values = {}
        self.methods = [str(m) for m in ds["model"].values]
        self.taus = ds["tau"].values.astype(float)
        self.psis = ds["psi"].values.astype(float)
        self.n_seed = ds.sizes["seed"]

    def metric(self, name):
        if name not in self._values:
            if name not in self.ds:
                raise MissingCells(f"the store has no variable {name!r}")
            self._values[name] = cell_values(self.ds, name).transpose(
                "model", "tau", "psi", "seed").values
        return self._values[name]

    def _index(self, coords, value, dim):
        hit = np.flatnonzero(np.isclose(coords, value, rtol=0, atol=1e-9))
        if not hit.size:
            raise MissingCells(f"{dim} = {value:g} is not in the store")
        return int(hit[0])

    def psi_positive(self):
        psis = [float(p) for p in self.psis if p > 0]
        if not psis:
            raise MissingCells("the store has no psi > 0")
        return psis

    def values(self, name, method, tau, psis):
        """``(n_psi, n_seed)`` values; NaN where a cell is not finished."""
        if method not in self.methods:
            raise MissingCells(f"method {method} is not in the store")
        mi = self.methods.index(method)
        ti = self._index(self.taus, tau, "tau")
        pi = [self._index(self.psis, p, "psi") for p in psis]
        return self.metric(name)[mi, ti][pi]

    def psi_mean(self, name, method, tau, psis, distance_to=None):
        """Per-seed mean over ``psis`` of the values (of their distance to ``distance_to`` if
        given); NaN for a seed with any unfinished cell."""
        v = self.values(name, method, tau, psis)
        if distance_to is not None:
            v = np.abs(v - distance_to)
        return v.mean(axis=0)
