"""The paper-style figures of a store (matplotlib)."""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .plotting import (_PSI_LABEL, FigureUnavailable, _dodge, _figure, _log_ticks_125,
                       _plain_log_ticks, _thin_log)
from .values import (_done, cell_values, has_values, method_style, n_relevant, outlier_scale_title,
                     scenario, store_metrics, summarize)
from .width_figures import fig_chosen_kernel_width, fig_cv_curves

log = logging.getLogger("mccard_dist.analysis")

def _rows(needs: tuple[str, ...], ds=None) -> list[tuple]:
    """The figure rows (metric, y label, log scale) of the store's shown metrics that need
    ``needs``: figures 1 and 3 the prediction's (and the estimator's), figure 2 the
    selection's."""
    shown = [m for m in store_metrics(ds) if m.shown and m.needs in needs
             and (ds is None or m.name in ds)]
    return [(m.name, m.heading, m.log) for m in sorted(shown, key=lambda m: needs.index(m.needs))]


def _metric_panels(ds, methods, rows, title, *, hline=None, reference=()):
    """Rows of metrics against psi, one column per tau, mean ± std over seeds per method, the bars
    clipped to the seeds' range (counts and ``r`` of no-feature fits cannot pass what a seed had).

    ``rows``: (metric, y label, log scale: True, False or ``"auto"``: log where the means of a
    panel lie more than 3x apart); ``hline``: (y, label) drawn in the first row; ``reference``:
    methods drawn thinner and dashed, for comparison.
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
    # counts that reach 0 in some seed (the error bars go down to it): symlog in the whole row
    counts = (values["n_selected"].sel({"model": shown}).values if "n_selected" in values
              else np.array([]))
    zero_counts = bool(np.any(counts[np.isfinite(counts)] <= 0))
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
            marks = [hline[0]] if hline is not None and i == 0 else []
            if marks:
                ax.axhline(hline[0], color="black", ls=":", lw=1.2, label=hline[1])
            if log and metric == "n_selected" and zero_counts:
                # a count that reaches 0 somewhere in the row: log above 1 and 0 still drawn,
                # the same scale in every panel of the row
                ax.set_yscale("symlog", linthresh=1.0, linscale=0.4)
                top = np.nanmax(s["n_selected_mean"].sel({"model": shown}).values)
                ax.set_ylim(0.0, 1.4 * max(top, hline[0] if hline else 1.0))
                ticks = _thin_log(_log_ticks_125(1.0, ax.get_ylim()[1]), keep=marks)
                _plain_log_ticks(ax.yaxis, [0.0, *ticks])
            elif log:
                finite = s[f"{metric}_mean"].sel({"tau": tau}).values
                finite = finite[np.isfinite(finite)]
                # "auto": log only when one method's level would squeeze the others (3x apart)
                if finite.size and finite.min() > 0 and (log != "auto"
                                                         or finite.max() > 3 * finite.min()):
                    ax.set_yscale("log")
                    ticks = _thin_log(_log_ticks_125(*ax.get_ylim()), keep=marks)
                    if metric == "n_selected":  # a count: no "0.2 features"
                        ticks = [t for t in ticks if t >= 1]
                    _plain_log_ticks(ax.yaxis, ticks or None)
            ax.set_ylabel(ylabel)
            ax.grid(True, alpha=0.3)
            if i == 0:
                ax.set_title(outlier_scale_title(ds, tau), fontsize=10)
            if len(psi) <= 11:  # ticks at the grid's psi: the dodged points belong to them
                ax.set_xticks(psi, [f"{p:g}" for p in psi])
            if i == len(rows) - 1:
                ax.set_xlabel(_PSI_LABEL)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center",
               ncol=min(len(labels), max(2, int(width // 2.6))), frameon=False)
    text = (f"{title}: mean ± std over seeds, within the seeds' range ({ds.sizes['seed']} seed(s) "
            "in the grid, finished cells only)")
    if scenario(ds):
        text += f"; data: {scenario(ds)}"
    fig.suptitle("\n".join(textwrap.wrap(text, int(width * 11))), fontsize=11)
    return fig


def fig_prediction(ds):
    """Figure 1: test r and RMSE against psi, one panel per tau, every method (mean ± std)."""
    return _metric_panels(ds, [str(m) for m in ds["model"].values],
                          _rows(("prediction", "estimator"), ds), "Prediction performance")


def fig_selection(ds):
    """Figure 2: number of selected features (true count as a dotted line, log scale when all
    means are positive) and F1 against psi, one panel per tau, every method."""
    k = n_relevant(ds)
    hline = (k, f"true count ({k} relevant features)") if k is not None else None
    # real data: the true coefficients are unknown, and the selection's scores NaN
    rows = [row for row in _rows(("coef", "selection"), ds) if has_values(cell_values(ds, row[0]))]
    return _metric_panels(ds, [str(m) for m in ds["model"].values], rows, "Feature selection",
                          hline=hline)


def fig_deviant_vs_proper(ds):
    """Figure 3: deviant (``mcc_ard``) vs proper (``mcc_ard_proper``) MCC-ARD, test r and RMSE
    against psi per tau, LS-ARD dashed for reference; :class:`FigureUnavailable` without both."""
    methods = [str(m) for m in ds["model"].values]
    missing = [m for m in ("mcc_ard", "mcc_ard_proper") if m not in methods]
    if missing:
        raise FigureUnavailable(f"figure 3 (deviant vs proper likelihood) needs the methods "
                                f"mcc_ard and mcc_ard_proper; the store lacks {missing} "
                                f"(it has {methods})")
    reference = ("ls_ard",) if "ls_ard" in methods else ()
    return _metric_panels(ds, ["mcc_ard", "mcc_ard_proper"], _rows(("prediction", "estimator"), ds),
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


#: the figures written by :func:`write_figures`: key -> (file name, title)
FIGURES = {
    "prediction": ("fig1_prediction.png", "r and RMSE against psi (all methods)"),
    "selection": ("fig2_selection.png", "selected features and F1 against psi"),
    "deviant_vs_proper": ("fig3_deviant_vs_proper.png", "deviant vs proper MCC-ARD"),
    "densities": ("fig4_densities.png", "noise densities C and C'"),
    "cv_curves": ("fig5_cv_curves.png", "CV curves of one cell"),
    "chosen_kernel_width": ("fig6_chosen_kernel_width.png",
                            "chosen kernel width over (psi, tau)"),
}


@dataclass(frozen=True)
class FigureFile:
    """A figure written by :func:`write_figures` (``path`` None and ``note`` set when skipped)."""

    key: str
    title: str
    path: Path | None
    note: str = ""


def write_figures(ds, out_dir, cell=None, dpi: int = 120) -> list[FigureFile]:
    """Write the six figures as PNG files named as in :data:`FIGURES`; one the store cannot make
    (:class:`FigureUnavailable`) is skipped with a note, and a stale file of its name removed.
    ``cell``: see :func:`fig_cv_curves`."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    makers = {"prediction": fig_prediction, "selection": fig_selection,
              "deviant_vs_proper": fig_deviant_vs_proper, "densities": lambda _: fig_densities(),
              "cv_curves": lambda ds: fig_cv_curves(ds, cell),
              "chosen_kernel_width": fig_chosen_kernel_width}
    written = []
    for key, (name, title) in FIGURES.items():
        path = out_dir / name
        try:
            fig = makers[key](ds)
        except FigureUnavailable as exc:
            log.info("skipped %s: %s", name, exc)
            path.unlink(missing_ok=True)
            written.append(FigureFile(key, title, None, str(exc)))
            continue
        fig.savefig(path, dpi=dpi, format="png")
        written.append(FigureFile(key, title, path))
    return written
