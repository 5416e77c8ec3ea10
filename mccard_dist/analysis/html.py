"""``report.html``: one self-contained page with interactive figures, the claims, the cells, the
stop rule's account (a store run with ``experiment.stop``) and the config of a store: one Altair
(Vega-Lite) chart of every panel, with the Vega libraries inline (no network), a tau and a psi
selector, and a legend that picks methods; hover shows values."""

from __future__ import annotations

import base64
import html
import io
import json

import numpy as np

from .claims import claims_blocks, claims_intro
from .stops import bounds_of, fig_seeds_used, intervals_of, stop_blocks
from .markup import to_html
from .values import _config, cell_values, has_values, method_style, store_metrics, summarize
from .width_figures import DEFAULT_PSI, _cv_methods, _standardised_width

def panels(ds=None) -> tuple[tuple, ...]:
    """(variable, axis title, log scale) of the metric panels, in page order: the metrics the
    report shows (the store's: :func:`~mccard_dist.analysis.values.store_metrics`), then the
    chosen kernel width."""
    return (*((m.name, m.heading, bool(m.log)) for m in store_metrics(ds)
              if m.shown and (ds is None or m.name in ds)),
            ("chosen_kernel_width", "chosen kernel_width", True))
HTML_EXTRA = "pip install 'mccard-dist[html]'"
#: a log panel's y range reaches this factor beyond its extreme means, so the points clear the frame
LOG_PAD = 1.25
#: pixels between the frame and the first and last psi of a panel
PSI_PAD = 12
#: decimals of psi in the page: Vega's ``==`` filters (selector, panels, seed strips) then compare
#: the same short number, not float noise such as 0.15000000000000002
PSI_DECIMALS = 6


class HtmlUnavailable(ImportError):
    """Altair or vl-convert (which provides the inline Vega libraries) is not installed."""


def require_html():
    try:
        import altair as alt
        import vl_convert  # noqa: F401  (altair's inline embedding takes the libraries from it)
    except ImportError as exc:
        raise HtmlUnavailable(f"report.html needs altair and vl-convert-python ({exc.name} is "
                              f"missing): {HTML_EXTRA}") from None
    return alt


def records(ds, summary=None) -> list[dict]:
    """One row per (method, tau, psi, metric) with finished seeds: mean, the interval of the
    mean the store's comparisons show (:func:`~.stops.intervals_of`: t-intervals, or confidence
    sequences under a stop rule) within the seeds' range (the mean itself with one seed), and the
    number of seeds.
    The chosen width only of methods whose width is in units of y²."""
    s = summarize(ds) if summary is None else summary
    methods = [str(m) for m in ds["model"].values]
    labels = [method_style(m, methods, ds)["label"] for m in methods]
    widths = [m for m in _cv_methods(ds) if not _standardised_width(ds, m)]
    taus, psis = s["tau"].values, s["psi"].values
    rows = []
    for name, title, _ in panels(ds):
        if f"{name}_mean" not in s or not has_values(s[f"{name}_mean"].values):
            continue
        mean, sd = (s[f"{name}_{x}"].transpose("model", "tau", "psi").values
                    for x in ("mean", "std"))
        seeds = cell_values(ds, name).transpose("model", "tau", "psi", "seed")
        count = seeds.notnull().sum("seed").values
        _, low, high, _ = intervals_of(ds).along(seeds.values, bounds_of(name, ds))
        low = np.fmax(np.where(np.isfinite(low), low, mean), seeds.min("seed").values)
        high = np.fmin(np.where(np.isfinite(high), high, mean), seeds.max("seed").values)
        for mi, ti, pi in zip(*np.nonzero(np.isfinite(mean) & (count > 0))):
            if name == "chosen_kernel_width" and methods[mi] not in widths:
                continue
            rows.append({"metric": title, "method": labels[mi], "key": methods[mi],
                         "tau": float(taus[ti]), "psi": round(float(psis[pi]), PSI_DECIMALS),
                         "mean": float(mean[mi, ti, pi]), "low": float(low[mi, ti, pi]),
                         "high": float(high[mi, ti, pi]), "seeds": int(count[mi, ti, pi])})
    return rows


def seed_records(ds) -> list[dict]:
    """One row per finished cell: its test r and number of kept features."""
    methods = [str(m) for m in ds["model"].values]
    r = cell_values(ds, "r").transpose("model", "tau", "psi", "seed")
    kept = cell_values(ds, "n_selected").transpose("model", "tau", "psi", "seed").values
    labels = [method_style(m, methods, ds)["label"] for m in methods]
    return [{"method": labels[mi], "tau": float(r["tau"].values[ti]),
             "psi": round(float(r["psi"].values[pi]), PSI_DECIMALS),
             "seed": int(r["seed"].values[si]), "r": float(value),
             "kept": float(kept[mi, ti, pi, si])}
            for (mi, ti, pi, si), value in np.ndenumerate(r.values) if np.isfinite(value)]


def chart(ds, rows=None):
    """The Altair chart of the page: one panel per metric against psi, with the selectors."""
    alt = require_html()
    rows = records(ds) if rows is None else rows
    if not rows:
        raise ValueError("no finished cell: nothing to draw")
    taus = sorted({r["tau"] for r in rows})
    psis = sorted({r["psi"] for r in rows})
    methods = list(dict.fromkeys(r["method"] for r in rows))
    keys = [str(m) for m in ds["model"].values]
    styles = [method_style(k, keys, ds) for k in keys]
    colors = {s["label"]: s["color"] for s in styles}  # the figures' colours (report PNGs)
    data = alt.Data(values=rows)
    tau = alt.param(name="tau", value=taus[len(taus) // 2],
                    bind=alt.binding_select(options=taus, name="tau (outlier scale) "))
    marked = min(psis, key=lambda p: abs(p - DEFAULT_PSI))
    psi = alt.param(name="psi", value=marked,
                    bind=alt.binding_select(options=psis, name="psi marked in the panels "))
    pick = alt.selection_point(name="methods", fields=["method"], bind="legend")
    fade = alt.condition(pick, alt.value(1.0), alt.value(0.08))  # the methods not picked
    color = alt.Color("method:N", scale=alt.Scale(domain=methods,
                                                  range=[colors[m] for m in methods]),
                      legend=alt.Legend(title="method (click to show one)", orient="top",
                                        columns=min(len(methods), 4), labelLimit=260))
    level = f"{intervals_of(ds).level:.0%}"
    tooltip = [alt.Tooltip("method:N"), alt.Tooltip("tau:Q"), alt.Tooltip("psi:Q"),
               alt.Tooltip("mean:Q", format=".4g"), alt.Tooltip("low:Q", format=".4g",
                                                              title=f"{level} low"),
               alt.Tooltip("high:Q", format=".4g", title=f"{level} high"),
               alt.Tooltip("seeds:Q")]
    # ticks at the grid's psi values (up to 11 of them, evenly picked), not Vega's round steps
    ticks = psis if len(psis) <= 11 else psis[:: -(-len(psis) // 11)]
    psi_axis = alt.Axis(values=ticks, format="~g", labelOverlap=True)
    # the psi range reaches PSI_PAD pixels beyond the grid's ends (not rounded further out):
    # the first and last psi's points and intervals lie inside the clipped frame, not on its edge
    psi_x = alt.X("psi:Q", title="psi (share of outliers)", axis=psi_axis,
                  scale=alt.Scale(padding=PSI_PAD, nice=False))
    charts = []
    for name, title, log in panels(ds):
        means = [r["mean"] for r in rows if r["metric"] == title]
        if not means:
            continue
        # the y range: the means with a margin (intervals beyond it are clipped); a log scale
        # has no zero to leave out (Vega warns at ``zero`` there)
        low, high = min(means), max(means)
        pad = 0.05 * (high - low) or 0.05 * max(abs(high), 1e-12) or 0.05
        scale = (alt.Scale(type="log", domain=[low / LOG_PAD, high * LOG_PAD], clamp=False)
                 if log and low > 0 else
                 alt.Scale(type="linear", domain=[low - pad, high + pad], clamp=False, zero=False))
        y = alt.Y("mean:Q", title=title, scale=scale)
        base = (alt.Chart(data, title=title, width=520, height=220)
                .transform_filter(alt.datum.metric == title)
                .transform_filter(alt.datum.tau == tau)
                .encode(x=psi_x, color=color, opacity=fade))
        band = base.mark_errorbar(clip=True).encode(y=alt.Y("low:Q", title=title, scale=scale),
                                           y2="high:Q")
        line = base.mark_line(point=True, clip=True).encode(y=y, tooltip=tooltip)
        rule = (alt.Chart(data).mark_rule(strokeDash=[4, 3], color="gray")
                .transform_filter(alt.datum.metric == title)
                .transform_filter(alt.datum.tau == tau)
                .transform_filter(alt.datum.psi == psi)
                .encode(x=psi_x))
        if not charts:
            line = line.add_params(pick)  # a legend selection lives in one view; all use it
        charts.append(alt.layer(rule, band, line))  # the marked-psi rule beneath the data
    seeds = alt.Data(values=seed_records(ds))
    strips = []
    for field, axis, each in (("r", "test r", "of"), ("kept", "features kept", "by")):
        title = f"{axis} {each} each seed at the marked psi"
        strips.append(alt.Chart(seeds, title=title, width=250, height=160)
                      .transform_filter(alt.datum.tau == tau)
                      .transform_filter(alt.datum.psi == psi)
                      .mark_tick(thickness=2, size=14)
                      .encode(x=alt.X(f"{field}:Q", title=axis, scale=alt.Scale(zero=False)),
                              y=alt.Y("method:N", title=None, sort=methods), color=color,
                              opacity=fade,
                              tooltip=["method:N", "seed:Q", alt.Tooltip(f"{field}:Q",
                                                                          format=".4g")]))
    return (alt.vconcat(*charts, alt.hconcat(*strips)).add_params(tau, psi)
            .resolve_scale(y="independent").configure_view(stroke=None))


def seeds_figure(ds) -> str:
    """The seeds-used figure of report.md (:func:`~.stops.fig_seeds_used`) as an inline PNG."""
    buffer = io.BytesIO()
    fig_seeds_used(ds).savefig(buffer, dpi=120, format="png")
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f"<p><img alt='seeds used per cell' src='data:image/png;base64,{data}'></p>"


STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1100px; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; }
th { background: #f3f3f3; }
pre { background: #f6f6f6; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
.vega-bindings { margin: 0.5em 0; } .vega-bind { margin-right: 1.5em; display: inline-block; }
"""


def report_html(ds, claims, cells, store_path=None) -> str:
    """The whole page as a string; ``cells``: the cells table and failed cells as
    :mod:`.markup` blocks."""
    require_html()
    config = _config(ds)
    name = config.get("experiment", {}).get("name", "?")
    rows = records(ds)
    figure = (chart(ds, rows).to_html(fullhtml=False, inline=True, output_div="figures",
                                      embed_options={"renderer": "svg", "actions": False})
              if rows else "<p>No figures yet: the store has no finished cell.</p>")
    where = f" — store <code>{html.escape(str(store_path))}</code>" if store_path else ""
    stops = stop_blocks(ds)
    return "\n".join([
        "<!DOCTYPE html>", "<html lang='en'><head><meta charset='utf-8'>",
        f"<title>mccard-dist report: {html.escape(name)}</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<h1>mccard-dist report: experiment <code>{html.escape(name)}</code></h1>",
        f"<p>grid hash <code>{html.escape(str(ds.attrs.get('grid_hash', '?')))}</code>{where}</p>",
        "<h2>Figures</h2>",
        (f"<p>Means over the finished seeds with their {html.escape(intervals_of(ds).name)}; "
         "hover a point for its values. Choose tau and the marked psi with the two selectors; "
         "click a method in the legend to show it alone (shift-click adds one, a click "
         "elsewhere in the legend shows all).</p>"),
        figure,
        "<h2>Claims of the paper</h2>", to_html([claims_intro(ds), *claims_blocks(claims)]),
        "<h2>Cells</h2>", to_html(cells),
        *(["<h2>Stop rule</h2>", to_html(stops), seeds_figure(ds)] if stops else []),
        "<h2>Config</h2>",
        f"<pre>{html.escape(json.dumps(config, indent=2, sort_keys=True))}</pre>",
        "</body></html>"])

