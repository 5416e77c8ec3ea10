"""The figures of the kernel width: CV curves of one cell, and the chosen width over (psi, tau)."""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..records import STATUS_DONE, STATUS_NAMES
from .cells import resolve_cell
from .plotting import (_PSI_LABEL, FigureUnavailable, _figure, _log_ticks_125, _plain_log_ticks,
                       _thin_log)
from .values import (_auto_width_methods, _config, _done, _grid, cell_values, method_style,
                     stored_kind)

#: the psi shown first (figure 5's cell, the psi marked in report.html): the one closest to this,
#: a moderately contaminated cell
DEFAULT_PSI = 0.3


def _cv_methods(ds) -> list[str]:
    """Methods with a kernel width (a ``chosen_kernel_width`` in at least one finished cell),
    in the store's order: chosen by CV, or set inside the fit (``kernel_width: auto``)."""
    if "chosen_kernel_width" not in ds:
        return []
    has_width = cell_values(ds, "chosen_kernel_width").notnull().any(("tau", "psi", "seed"))
    return [str(m) for m, ok in zip(ds["model"].values, has_width.values) if ok]


def _same(values, value) -> np.ndarray:
    """``values == value``, NaN equal to NaN."""
    return np.isnan(values) if not math.isfinite(value) else values == value


def _standardised_width(ds, method) -> bool:
    """Whether the method's width is in units of standardised y (its class's ``width_unit``, for
    the store's declarations: nothing is imported)."""
    kind = stored_kind(ds, method)
    return kind is not None and "standardised" in kind.width_unit


def _method_grid(ds, method) -> list[float]:
    """A method's kernel-width grid from its stored config ([] for ``auto`` or none)."""
    widths = _grid(_config(ds).get("methods", {}).get(method)).get("kernel_width")
    return [float(h) for h in widths] if isinstance(widths, list) else []


def fig_cv_curves(ds, cell=None):
    """Figure 5: CV curves of one cell: mean validation loss over the folds against the kernel
    width, one line per ``alpha_ratio`` (MCC-L1; the ARD methods have no penalty), the CV pick
    marked. ``cell``: ``(method, tau, psi, seed)`` or ``"method,tau,psi,seed"`` (method None or
    ``"all"``: every method with CV side by side); default: every method with CV at the middle
    tau, the psi > 0 closest to :data:`DEFAULT_PSI` and the first seed where all are finished.

    Raises :class:`FigureUnavailable` if no method has CV candidates, ValueError if a coordinate
    of ``cell`` is not in the store.
    """
    from matplotlib import colormaps

    auto = _auto_width_methods(ds)
    cv_methods = [m for m in _cv_methods(ds) if m not in auto]
    if "cv_score" not in ds or not cv_methods:
        raise FigureUnavailable("figure 5 (CV curves) needs a method with CV over its "
                                "kernel_width with finished cells in the store")
    if cell is None:
        methods = cv_methods
        tau = np.sort(ds["tau"].values)[ds.sizes["tau"] // 2]
        psis = ds["psi"].values
        positive = psis[psis > 0]
        psi = positive[np.argmin(np.abs(positive - DEFAULT_PSI))] if positive.size else psis[0]
        done = _done(ds).sel({"model": methods, "tau": tau, "psi": psi}).all("model").values
        seed = ds["seed"].values[np.argmax(done) if done.any() else 0]
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
        ax.set_xlabel("kernel_width (units of y², log scale)")
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
        mean = scores.mean("fold", skipna=False).values
        widths, ratios = (ds[name].sel(model=m).values.astype(float) if name in ds.coords
                          else np.full(mean.shape, np.nan)
                          for name in ("kernel_width", "alpha_ratio"))
        has_width = np.isfinite(widths)
        # a line per penalty with a mean over the folds (one that racing dropped has none),
        # first NaN: no penalty (ARD)
        values = ratios[has_width]
        drawn = [r for r in [*([math.nan] if np.isnan(values).any() else []),
                             *np.unique(values[np.isfinite(values)]).tolist()]
                 if np.isfinite(mean[has_width & _same(ratios, r)]).any()]
        l1 = [r for r in drawn if math.isfinite(r)]
        colors = dict(zip(l1, colormaps["viridis"](np.linspace(0.0, 0.85, max(len(l1), 1)))))
        for ratio in drawn:
            idx = np.flatnonzero(has_width & _same(ratios, ratio) & np.isfinite(mean))
            idx = idx[np.argsort(widths[idx])]
            if math.isfinite(ratio):
                ax.plot(widths[idx], mean[idx], marker="o", ms=4, color=colors[ratio],
                        label=f"alpha_ratio = {ratio:g}")
            else:
                ax.plot(widths[idx], mean[idx], marker=style["marker"], ms=4,
                        color=style["color"], label="no L1 penalty (ARD)")
        ax.set_xscale("log")
        grid = [g for g in _method_grid(ds, m) if g > 0]
        if grid:  # the whole grid, so that candidates without a mean show as gaps
            ax.set_xlim(min(grid) / 1.5, max(grid) * 1.5)
        chosen = float(cell_values(ds, "chosen_kernel_width").sel(sel))
        own = widths[has_width & np.isfinite(mean)]
        ticks = _thin_log([*own, *grid[:1], *grid[-1:]],
                          keep=[chosen] if math.isfinite(chosen) else [])
        _plain_log_ticks(ax.xaxis, ticks)
        if len(ticks) > 6:
            ax.tick_params(axis="x", labelrotation=45)
        chosen_lam = (float(cell_values(ds, "chosen_alpha_ratio").sel(sel))
                      if "chosen_alpha_ratio" in ds else math.nan)
        pick = np.flatnonzero(has_width & np.isclose(widths, chosen, rtol=1e-12, atol=0)
                              & _same(ratios, chosen_lam))
        if math.isfinite(chosen) and pick.size:
            what = f"kernel_width = {chosen:g}" + (
                f", alpha_ratio = {chosen_lam:g}" if math.isfinite(chosen_lam) else "")
            ax.axvline(chosen, color="black", ls=":", lw=1.0)
            ax.plot([chosen], [mean[pick[0]]], marker="*", ms=16, color="gold",
                    markeredgecolor="black", ls="none", label=f"CV pick: {what}", zorder=5)
        ax.legend(fontsize=8)
    n_folds = ds.sizes.get("fold", 0)
    raced = cv.get("race")
    fig.suptitle(f"Cross-validation over the kernel width ({n_folds}-fold, lower is better)"
                 + (f"; candidates dropped by racing (cv.race = {raced:g}) have no mean and no "
                    "point" if raced else ""), fontsize=11)
    return fig


def fig_chosen_kernel_width(ds):
    """Figure 6: heat map of the final fits' kernel width over (psi, tau), its geometric mean
    over seeds, one panel per method with a kernel width, chosen by CV or set inside the fit (a
    log colour scale per unit; grey: no finished cell). :class:`FigureUnavailable` without one.
    """
    from matplotlib import colormaps
    from matplotlib.colors import LogNorm

    methods = _cv_methods(ds)
    if not methods:
        raise FigureUnavailable("figure 6 (chosen kernel width) needs a method with a kernel "
                                "width and finished cells in the store")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        h_values = cell_values(ds, "chosen_kernel_width")
        mean_h = np.exp(np.log(h_values.where(h_values > 0)).mean("seed", skipna=True))
    # the authors' estimators take their width in units of standardised y: a colour scale apart
    groups = {}
    for m in methods:
        unit = "standardised y²" if _standardised_width(ds, m) else "y²"
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
        grid_h = grid_h[grid_h > 0]
        both = np.concatenate([grid_h, finite])
        vmin, vmax = float(both.min()), float(both.max())
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
            if len(psi) > 11:
                continue
            for (ti, pi), v in np.ndenumerate(values):
                if np.isfinite(v):
                    text = f"{v:.2g}" if v < 100 else f"{v:.0f}"  # not 1.7e+02
                    ax.text(pi, ti, text, ha="center", va="center", fontsize=8,
                            color="white" if norm(v) < 0.6 else "black")
        bar = fig.colorbar(image, ax=[panels[m] for m in members],
                           label=f"kernel_width, geometric mean over seeds\n(units of {unit}, "
                                 "log scale)")
        # labels about 0.2 in apart on the bar, whatever its height
        inches = bar.ax.get_position().height * fig.get_figheight()
        spread = math.log10(vmax / vmin) * 0.2 / max(inches, 0.5)
        ends = [h for h in (grid_h.min(), grid_h.max()) if vmin <= h <= vmax] if grid_h.size else []
        ticks = _thin_log(_log_ticks_125(vmin, vmax), keep=ends, min_decades=max(0.2, spread))
        _plain_log_ticks(bar.ax.yaxis, ticks or None)
    fig.suptitle("Kernel width: chosen by CV, or set inside the fit (auto width)", fontsize=11)
    return fig
