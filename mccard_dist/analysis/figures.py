"""The paper-style figures of a store (matplotlib)."""

from __future__ import annotations

import logging
import math
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..methods import KINDS
from ..records import STATUS_DONE, STATUS_NAMES
from .cells import resolve_cell
from .values import (
    _auto_width_methods,
    _config,
    _done,
    cell_values,
    has_values,
    method_style,
    n_relevant,
    outlier_scale_title,
    scenario,
    summarize,
)

log = logging.getLogger("mccard_dist.analysis")

# ------------------------------------------------------------------------------------------------
# figures
# ------------------------------------------------------------------------------------------------
class FigureUnavailable(ValueError):
    """The store lacks what a figure needs (the message says what)."""


def _figure(nrows: int, ncols: int, width: float, height: float):
    """A pyplot-free Figure (no global state; PNG through the Agg canvas) and its axes grid."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    return fig, axes


def _plain_log_ticks(axis, ticks=None) -> None:
    """Plain numbers (``30``, not ``3 x 10^1``) on a log axis; ticks at ``ticks`` if given,
    else at 1, 2, 5 x 10^k."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter

    if ticks is None:
        axis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    else:
        axis.set_major_locator(FixedLocator(ticks))
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def _thin_log(ticks, keep=(), min_decades: float = 0.15) -> list[float]:
    """Ticks of a log axis with no two closer than ``min_decades`` (their labels would overlap);
    the values in ``keep`` (e.g. the true count, the CV pick) always stay."""
    kept = sorted({float(t) for t in keep if t > 0})
    for t in sorted({float(t) for t in ticks if t > 0}):
        if all(abs(math.log10(t) - math.log10(k)) >= min_decades for k in kept):
            kept.append(t)
    return sorted(kept)


def _log_ticks_125(low: float, high: float) -> list[float]:
    """1, 2, 5 x 10^k between ``low`` and ``high``."""
    if not (low > 0 and high > low):
        return []
    out = []
    for e in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1):
        out += [m * 10.0 ** e for m in (1, 2, 5) if low <= m * 10.0 ** e <= high]
    return out


def _dodge(psi: np.ndarray, n: int) -> np.ndarray:
    """Small horizontal offsets so that error bars of n methods at the same psi do not overlap."""
    if n <= 1 or psi.size < 2:
        return np.zeros(max(n, 1))
    step = float(np.min(np.diff(np.sort(psi))))
    # the whole spread stays within a sixth of the psi step: the points still read as one psi
    return (np.arange(n) - (n - 1) / 2) * (step / 6 / max(n - 1, 1))


_PSI_LABEL = "outlier proportion ψ"


def _metric_panels(ds, methods, rows, title, *, hline=None, reference=()):
    """Rows of metrics against psi, one column per tau, mean ± std over seeds per method (the
    bars clipped to the seeds' smallest and largest values: ``r`` of no-feature fits, counted as
    0, and counts cannot push a bar past what any seed reached).

    ``rows``: (metric, y label, log scale: True, False or ``"auto"``, log where the means of a
    panel lie more than 10x apart); ``hline``: (y, label) drawn in every panel of the
    first row; ``reference``: methods drawn thinner and dashed, for comparison.
    """
    import textwrap

    if not bool(_done(ds).sel({"model": list(methods)}).any()):
        raise FigureUnavailable(f"{title.lower()} needs finished cells; the store has none for "
                                f"{', '.join(methods)} yet")
    s = summarize(ds)
    values = {metric: cell_values(ds, metric) for metric, _, _ in rows}
    taus = ds["tau"].values
    psi = ds["psi"].values.astype(float)
    all_methods = [str(m) for m in ds["model"].values]
    shown = list(methods) + [m for m in reference if m not in methods]
    offsets = _dodge(psi, len(shown))
    width = max(4.3 * len(taus) + 0.4, 7.5)  # room for the title and legend with one tau
    fig, axes = _figure(len(rows), len(taus), width, 3.0 * len(rows) + 1.2)
    for j, tau in enumerate(taus):
        for i, (metric, ylabel, log) in enumerate(rows):
            ax = axes[i, j]
            for k, m in enumerate(shown):
                style = method_style(m, all_methods, ds)
                sel = {"model": m, "tau": tau}
                mean = s[f"{metric}_mean"].sel(sel).values
                std = np.nan_to_num(s[f"{metric}_std"].sel(sel).values, nan=0.0)
                seeds = values[metric].sel(sel)
                with np.errstate(invalid="ignore"):
                    low = np.nan_to_num(mean - seeds.min("seed").values, nan=0.0)
                    high = np.nan_to_num(seeds.max("seed").values - mean, nan=0.0)
                yerr = np.vstack([np.clip(std, 0.0, np.maximum(low, 0.0)),
                                  np.clip(std, 0.0, np.maximum(high, 0.0))])
                ref = m in reference and m not in methods
                ax.errorbar(psi + offsets[k], mean, yerr=yerr,
                            color=style["color"], marker=style["marker"], ms=3.5 if ref else 4.5,
                            lw=1.0 if ref else 1.6, ls="--" if ref else "-", capsize=2,
                            elinewidth=0.8, label=style["label"] + (" (reference)" if ref else ""))
            if hline is not None and i == 0:
                ax.axhline(hline[0], color="black", ls=":", lw=1.2, label=hline[1])
            if log:
                finite = s[f"{metric}_mean"].sel({"tau": tau}).values
                finite = finite[np.isfinite(finite)]
                # "auto": log only when one method's level would squeeze the others (10x apart)
                wide = log != "auto" or (finite.size and finite.min() > 0
                                         and finite.max() > 10 * finite.min())
                if finite.size and np.all(finite > 0) and wide:
                    ax.set_yscale("log")
                    low, high = ax.get_ylim()
                    marks = [hline[0]] if hline is not None and i == 0 else []
                    ticks = _thin_log(_log_ticks_125(low, high), keep=marks)
                    if metric == "n_selected":  # a count: no "0.2 features"
                        ticks = [t for t in ticks if t >= 1]
                    _plain_log_ticks(ax.yaxis, ticks or None)
            ax.set_ylabel(ylabel)
            ax.grid(True, alpha=0.3)
            if i == 0:
                ax.set_title(outlier_scale_title(ds, tau), fontsize=10)
            if i == len(rows) - 1:
                ax.set_xlabel(_PSI_LABEL)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center",
               ncol=min(len(labels), max(2, int(width // 2.6))), frameon=False)
    n_seeds = ds.sizes["seed"]
    text = (f"{title}: mean ± std over seeds, within the seeds' range ({n_seeds} seed(s) in the "
            "grid, finished cells only)")
    if scenario(ds):
        text += f"; data: {scenario(ds)}"
    fig.suptitle("\n".join(textwrap.wrap(text, int(width * 11))), fontsize=11)
    return fig


def fig_prediction(ds):
    """Figure 1: test r and RMSE against psi, one panel per tau, every method (mean ± std)."""
    methods = [str(m) for m in ds["model"].values]
    return _metric_panels(ds, methods, [("r", "test r (Pearson, unitless)", False),
                                        ("rmse", "test RMSE (units of y)", "auto")],
                          "Prediction performance")


def fig_selection(ds):
    """Figure 2: number of selected features (true count as a dotted line, log scale when all
    means are positive) and F1 against psi, one panel per tau, every method."""
    methods = [str(m) for m in ds["model"].values]
    k = n_relevant(ds)
    hline = (k, f"true count ({k} relevant features)") if k is not None else None
    rows = [("n_selected", "selected features (count)", True),
            ("f1", "F1 of the selection (unitless)", False)]
    if not has_values(cell_values(ds, "f1")):  # real data: the true coefficients are unknown
        rows = rows[:1]
    return _metric_panels(ds, methods, rows, "Feature selection", hline=hline)


def fig_deviant_vs_proper(ds):
    """Figure 3: deviant (``mcc_ard``) vs proper (``mcc_ard_proper``) MCC-ARD, test r and RMSE
    against psi per tau; LS-ARD dashed for reference when present.

    Raises
    ------
    FigureUnavailable
        If either method is not in the store.
    """
    methods = [str(m) for m in ds["model"].values]
    missing = [m for m in ("mcc_ard", "mcc_ard_proper") if m not in methods]
    if missing:
        raise FigureUnavailable(f"figure 3 (deviant vs proper likelihood) needs the methods "
                                f"mcc_ard and mcc_ard_proper; the store lacks {missing} "
                                f"(it has {methods})")
    reference = ("ls_ard",) if "ls_ard" in methods else ()
    return _metric_panels(ds, ["mcc_ard", "mcc_ard_proper"],
                          [("r", "test r (Pearson, unitless)", False),
                           ("rmse", "test RMSE (units of y)", "auto")],
                          "Deviant C vs proper C' likelihood", reference=reference)


def fig_densities(h_values=(0.25, 1.0, 4.0), h_compare=1.0):
    """Figure 4: the correntropy noise "densities" (no store needed).

    Left: ``C(e|0,h) = exp(exp(-e^2/2h))`` for several kernel widths h. Right: ``C`` against the
    proper ``C'(e|0,h) = exp(exp(-e^2/2h)) - 1`` at one h. ``C`` tends to 1 far from 0 (it cannot
    be normalised); ``C'`` tends to 0 (its integral is about 3.697 sqrt(h)).
    """
    from matplotlib import colormaps

    from ..models import log_density

    h_values = tuple(float(h) for h in h_values)
    e_max = 4.0 * math.sqrt(max(h_values + (float(h_compare),)))
    e = np.linspace(-e_max, e_max, 801)
    fig, axes = _figure(1, 2, 10.5, 4.0)
    left, right = axes[0]
    colors = colormaps["viridis"](np.linspace(0.0, 0.85, len(h_values)))
    for h, color in zip(h_values, colors):
        left.plot(e, np.exp(log_density(e, h, "deviant")), color=color, lw=1.8, label=f"h = {h:g}")
    left.set_title("deviant C(e | 0, h) = exp(exp(−e²/2h))", fontsize=10)
    left.legend(title="kernel width (units of y²)", fontsize=8, title_fontsize=8)
    h = float(h_compare)
    right.plot(e, np.exp(log_density(e, h, "deviant")), color="tab:blue", lw=1.8,
               label="deviant C = exp(exp(−e²/2h))")
    right.plot(e, np.exp(log_density(e, h, "proper")), color="tab:purple", lw=1.8, ls="--",
               label="proper C' = exp(exp(−e²/2h)) − 1")
    right.axhline(1.0, color="gray", lw=0.8, ls=":")
    right.axhline(0.0, color="gray", lw=0.8, ls=":")
    right.set_title(f"C vs C' at h = {h:g}: C → 1 (not normalisable), C' → 0", fontsize=10)
    right.legend(fontsize=8, loc="upper right")
    for ax in (left, right):
        ax.set_xlabel("residual e (units of y)")
        ax.set_ylabel("unnormalised density value")
        ax.grid(True, alpha=0.3)
    fig.suptitle("Correntropy noise models", fontsize=11)
    return fig


def _cv_methods(ds) -> list[str]:
    """Methods with a kernel width (a chosen h in at least one finished cell), in the store's
    order: chosen by CV, or set inside the fit (``kernel_width: auto``). A method whose width axis
    sets another parameter (Huber's epsilon) is left out: it is not a kernel width in units of
    y²."""
    if "chosen_h" not in ds:
        return []
    config = _config(ds).get("methods", {})
    has_h = cell_values(ds, "chosen_h").notnull().any(("tau", "psi", "seed"))
    out = []
    for m, ok in zip(ds["model"].values, has_h.values):
        kind = KINDS.get(config.get(str(m), {}).get("estimator", ""))
        if ok and (kind is None or kind.width_param == "kernel_width"):
            out.append(str(m))
    return out


def _method_grid(ds, method) -> list[float]:
    """A method's kernel-width grid from its stored config ([] for ``auto`` or none)."""
    widths = (_config(ds).get("methods", {}).get(method) or {}).get("kernel_width")
    return [float(h) for h in widths] if isinstance(widths, list) else []


def _default_cell(ds, methods):
    """Middle tau, the psi > 0 closest to 0.3 (a moderately contaminated cell), and the first seed
    where every shown method's cell is finished (else the first seed)."""
    taus = np.sort(ds["tau"].values)
    tau = taus[len(taus) // 2]
    psi = ds["psi"].values
    positive = psi[psi > 0]
    psi0 = positive[np.argmin(np.abs(positive - 0.3))] if positive.size else psi[0]
    done = _done(ds).sel({"model": methods, "tau": tau, "psi": psi0}).all("model").values
    seeds = ds["seed"].values
    seed = seeds[np.argmax(done)] if done.any() else seeds[0]
    return tau, psi0, seed


def fig_cv_curves(ds, cell=None):
    """Figure 5: CV curves of one cell: mean validation loss over the folds against h, one line
    per lambda (MCC-L1; ARD methods have no L1 penalty, alpha_ratio = 0), with the CV pick marked.

    Parameters
    ----------
    ds : xarray.Dataset
        A results store.
    cell : tuple or str, optional
        ``(method, tau, psi, seed)`` or ``"method,tau,psi,seed"``; ``method`` None (or ``"all"``)
        shows every method with CV side by side. Default: every method with CV at the middle
        tau, the psi > 0 closest to 0.3 and the first seed where they are all finished.

    Raises
    ------
    FigureUnavailable
        If no method in the store has CV candidates.
    ValueError
        If a coordinate of ``cell`` is not in the store (the message lists the store's values).
    """
    from matplotlib import colormaps

    auto = _auto_width_methods(ds)
    cv_methods = [m for m in _cv_methods(ds) if m not in auto]
    if "cv_score" not in ds or not cv_methods:
        raise FigureUnavailable("figure 5 (CV curves) needs a method with CV candidates "
                                "(kernel width / lambda grid) with finished cells in the store")
    if cell is None:
        methods = cv_methods
        tau, psi, seed = _default_cell(ds, methods)
    else:
        method, tau, psi, seed = resolve_cell(ds, cell)
        methods = cv_methods if method is None else [method]
    cv = _config(ds).get("cv", {})
    score = cv.get("score", "loss")
    unit = " (unitless)" if score == "correntropy" else " (units of y)"
    all_methods = [str(m) for m in ds["model"].values]
    status = ds["status"].load()
    fig, axes = _figure(1, len(methods), 4.8 * len(methods) + 0.3, 4.2)
    for ax, m in zip(axes[0], methods):
        sel = {"model": m, "tau": tau, "psi": psi, "seed": seed}
        style = method_style(m, all_methods, ds)
        ax.set_title(f"{style['label']}: τ = {tau:g}, ψ = {psi:g}, seed {seed}", fontsize=10)
        ax.set_xlabel("kernel width h (units of y², log scale)")
        ax.set_ylabel(f"validation {score.upper()}{unit}, mean over folds")
        ax.grid(True, alpha=0.3)
        st = int(status.sel(sel))
        scores = ds["cv_score"].sel(sel).load()
        if st != STATUS_DONE or not bool(scores.notnull().any()):
            name = STATUS_NAMES.get(st, str(st))
            ax.text(0.5, 0.5, f"no CV scores for this cell\n(status: {name})",
                    transform=ax.transAxes, ha="center", va="center")
            continue
        # as the runner: a candidate with a failed fold is ruled out
        mean = scores.mean("fold", skipna=False)
        h = ds["h"].values.astype(float)
        mean, h = mean.isel(h=h > 0), h[h > 0]  # h = 0: lambda-only CV of an auto-width method
        lams = [lam for lam in ds["alpha_ratio"].values if bool(scores.sel(alpha_ratio=lam).notnull().any())]
        l1 = [lam for lam in lams if lam > 0]
        colors = dict(zip(l1, colormaps["viridis"](np.linspace(0.0, 0.85, max(len(l1), 1)))))
        for lam in lams:
            y = mean.sel(alpha_ratio=lam).values
            keep = np.isfinite(y)
            if lam > 0:
                ax.plot(h[keep], y[keep], marker="o", ms=4, color=colors[lam],
                        label=f"λ = {lam:g} λ_max")
            else:
                ax.plot(h[keep], y[keep], marker=style["marker"], ms=4, color=style["color"],
                        label="no L1 penalty (ARD)")
        ax.set_xscale("log")
        chosen_h = float(cell_values(ds, "chosen_h").sel(sel)) if "chosen_h" in ds else math.nan
        own = h[mean.notnull().any([d for d in mean.dims if d != "h"]).values]  # this method's
        ticks = _thin_log(own, keep=[chosen_h] if math.isfinite(chosen_h) else [])
        _plain_log_ticks(ax.xaxis, ticks)
        if len(ticks) > 6:
            ax.tick_params(axis="x", labelrotation=45)
        chosen_lam = (float(cell_values(ds, "chosen_alpha_ratio").sel(sel))
                      if "chosen_alpha_ratio" in ds else 0.0)
        if math.isfinite(chosen_h):
            hi = int(np.argmin(np.abs(h - chosen_h)))
            lam_i = int(np.argmin(np.abs(ds["alpha_ratio"].values - (chosen_lam if math.isfinite(
                chosen_lam) else 0.0))))
            y = float(mean.isel(h=hi, alpha_ratio=lam_i))
            what = f"h = {chosen_h:g}" + (f", λ = {chosen_lam:g} λ_max" if chosen_lam > 0 else "")
            ax.axvline(chosen_h, color="black", ls=":", lw=1.0)
            ax.plot([chosen_h], [y], marker="*", ms=16, color="gold", markeredgecolor="black",
                    ls="none", label=f"CV pick: {what}", zorder=5)
        ax.legend(fontsize=8)
    n_folds = ds.sizes.get("fold", 0)
    fig.suptitle(f"Cross-validation over the kernel width ({n_folds}-fold, lower is better)",
                 fontsize=11)
    return fig


def fig_chosen_h(ds):
    """Figure 6: heat map of the chosen h over (psi, tau), its geometric mean over seeds, one
    panel per method with a kernel width, chosen by CV or set inside the fit (log colour scale
    shared by the panels; grey: no finished cell).

    Raises
    ------
    FigureUnavailable
        If no method in the store has a chosen h.
    """
    from matplotlib import colormaps
    from matplotlib.colors import LogNorm

    methods = _cv_methods(ds)
    if not methods:
        raise FigureUnavailable("figure 6 (chosen h) needs a method with CV over the kernel width "
                                "and finished cells in the store")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        h_values = cell_values(ds, "chosen_h")
        mean_h = np.exp(np.log(h_values.where(h_values > 0)).mean("seed", skipna=True))
    # the authors' estimators take their width in units of standardised y: a colour scale apart
    estimators = {m: (_config(ds).get("methods", {}).get(m) or {}).get("estimator")
                  for m in methods}
    groups = {}
    for m in methods:
        unit = ("standardised y²" if str(estimators[m]).endswith("_authors") else "y²")
        groups.setdefault(unit, []).append(m)
    psi = ds["psi"].values.astype(float)
    taus = ds["tau"].values.astype(float)
    all_methods = [str(m) for m in ds["model"].values]
    ncols = min(2, len(methods))
    nrows = math.ceil(len(methods) / ncols)
    fig, axes = _figure(nrows, ncols, 5.2 * ncols + 1.8, nrows * (1.3 + 0.5 * len(taus)) + 0.9)
    panels = dict(zip(methods, axes.flat))
    for ax in list(axes.flat)[len(methods):]:
        ax.set_visible(False)
    step = max(1, math.ceil(len(psi) / 11))
    cmap = colormaps["viridis"].with_extremes(bad="lightgray")
    for unit, members in groups.items():
        finite = mean_h.sel({"model": members}).values
        finite = finite[np.isfinite(finite) & (finite > 0)]
        grid_h = np.array(sorted({float(h) for m in members
                                  for h in (_method_grid(ds, m) or finite)}))
        grid_h = grid_h[grid_h > 0] if grid_h.size else finite
        vmin = float(min(grid_h.min(), finite.min())) if finite.size else float(grid_h.min())
        vmax = float(max(grid_h.max(), finite.max())) if finite.size else float(grid_h.max())
        if vmax <= vmin:
            vmin, vmax = vmin / 2, vmax * 2
        norm = LogNorm(vmin=vmin, vmax=vmax)
        image = None
        for m in members:
            ax = panels[m]
            values = mean_h.sel({"model": m}).transpose("tau", "psi").values
            image = ax.imshow(np.ma.masked_invalid(values), norm=norm, cmap=cmap, aspect="auto",
                              origin="lower", interpolation="nearest")
            ax.set_xticks(np.arange(len(psi))[::step], [f"{p:g}" for p in psi[::step]])
            ax.set_yticks(np.arange(len(taus)), [f"{t:g}" for t in taus])
            ax.set_xlabel(_PSI_LABEL)
            ax.set_ylabel("τ (outlier scale)")
            ax.set_title(method_style(m, all_methods, ds)["label"], fontsize=10)
            if len(psi) <= 11:
                for ti in range(len(taus)):
                    for pi in range(len(psi)):
                        v = values[ti, pi]
                        if np.isfinite(v):
                            dark = norm(v) < 0.6
                            ax.text(pi, ti, f"{v:.2g}", ha="center", va="center", fontsize=8,
                                    color="white" if dark else "black")
        bar = fig.colorbar(image, ax=[panels[m] for m in members],
                           label=f"h, geometric mean over seeds\n(units of {unit}, log scale)")
        inside = grid_h[(grid_h >= vmin) & (grid_h <= vmax)] if grid_h.size else np.array([])
        ticks = _thin_log(inside, keep=[inside.min(), inside.max()] if inside.size else [],
                          min_decades=0.2)
        _plain_log_ticks(bar.ax.yaxis, ticks or None)
    fig.suptitle("Kernel width: chosen by CV, or set inside the fit (auto h)", fontsize=11)
    return fig


#: the figures written by :func:`write_figures`: key -> (file name, title)
FIGURES = {
    "prediction": ("fig1_prediction.png", "r and RMSE against psi (all methods)"),
    "selection": ("fig2_selection.png", "selected features and F1 against psi"),
    "deviant_vs_proper": ("fig3_deviant_vs_proper.png", "deviant vs proper MCC-ARD"),
    "densities": ("fig4_densities.png", "noise densities C and C'"),
    "cv_curves": ("fig5_cv_curves.png", "CV curves of one cell"),
    "chosen_h": ("fig6_chosen_h.png", "chosen kernel width over (psi, tau)"),
}


@dataclass(frozen=True)
class FigureFile:
    """A figure written by :func:`write_figures` (``path`` None and ``note`` set when skipped)."""

    key: str
    title: str
    path: Path | None
    note: str = ""


def write_figures(ds, out_dir, cell=None, dpi: int = 120) -> list[FigureFile]:
    """Write the six figures as PNG files with the stable names of :data:`FIGURES`.

    A figure the store cannot make (:class:`FigureUnavailable`, e.g. figure 3 without the proper
    variant) is skipped with a note and a log message; a stale file of that name is removed.
    ``cell`` is passed to :func:`fig_cv_curves`.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    makers = {
        "prediction": lambda: fig_prediction(ds),
        "selection": lambda: fig_selection(ds),
        "deviant_vs_proper": lambda: fig_deviant_vs_proper(ds),
        "densities": fig_densities,
        "cv_curves": lambda: fig_cv_curves(ds, cell),
        "chosen_h": lambda: fig_chosen_h(ds),
    }
    written = []
    for key, (name, title) in FIGURES.items():
        path = out_dir / name
        try:
            fig = makers[key]()
        except FigureUnavailable as exc:
            log.info("skipped %s: %s", name, exc)
            path.unlink(missing_ok=True)
            written.append(FigureFile(key, title, None, str(exc)))
            continue
        fig.savefig(path, dpi=dpi, format="png")
        written.append(FigureFile(key, title, path))
    return written
