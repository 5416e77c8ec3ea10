"""``report.md`` and its figures: what ``mccard-report`` writes."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import UsageError
from ..methods import FLAT_PER_DECADE
from ..records import STATUS_DONE, STATUS_FAILED, STATUS_NAMES, STATUS_PENDING, STATUS_UNNEEDED
from .claims import check_claims, claims_intro, claims_markdown
from .compare import auto_roles, compare_methods, method_comparison_markdown, width_pairs
from .edges import EDGE_SHARE, cv_failure_warnings, edge_warnings, grid_edges, grid_edges_markdown
from .figures import method_style, write_figures
from .markup import Code, Items, Paragraph, Strong, Table, markdown
from .stops import SEEDS_FIGURE, fig_seeds_used, intervals_of, stop_blocks, stop_record
from .values import _config, scenario, summarize, summary_markdown


def _setting(value) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _json_attr(attrs, name, empty):
    try:
        return json.loads(attrs.get(name, empty))
    except (TypeError, ValueError):
        return json.loads(empty)


def check_one_grid(ds, multirun=None) -> None:
    """Refuse, with a UsageError naming the stores and the settings in which they differ, stores
    opened along settings that differ (``open_results`` of a multirun folder, or of stores of the
    same methods with other settings): a report covers one grid. ``multirun``: their folder."""
    if "sweep" not in ds.attrs:
        return
    keys = list(json.loads(ds.attrs["sweep"]).values())
    stores = json.loads(ds.attrs["stores"])
    if multirun is not None:
        raise UsageError(
            f"{multirun} is a multirun of {len(stores)} stores along {', '.join(keys)}, and a "
            "report covers one grid: report them one at a time (mccard-report STORE --out DIR), "
            f"STORE one of {', '.join(s['path'] for s in stores)}")
    first = stores[0]
    for other in stores[1:]:
        differ = [k for k in keys if first["settings"][k] != other["settings"][k]]
        if differ:
            break
    methods = {k.split(".")[1] for k in differ if k.startswith("methods.")}
    if len(methods) == 1 and all(k.startswith("methods.") for k in differ):
        method = methods.pop()
        what = f"both have method {method} with different settings"
        names = {k: k.removeprefix(f"methods.{method}.") for k in differ}
    else:
        what = "hold the same methods with different settings"
        names = {k: k for k in differ}
    values = "; ".join(f"{names[k]}: {_setting(first['settings'][k])} vs "
                       f"{_setting(other['settings'][k])}" for k in differ)
    raise UsageError(f"{first['path']} and {other['path']} {what} ({values}); report them one at "
                     "a time")


def _cells_blocks(ds) -> list:
    """The cells done, failed and pending per method (:mod:`.markup` blocks), and the first
    failed cells with the last line of their error."""
    status = ds["status"].load()
    methods = [str(m) for m in ds["model"].values]
    kinds = [STATUS_DONE, STATUS_FAILED, STATUS_PENDING]
    if (status == STATUS_UNNEEDED).any():  # a stop rule held before these seeds
        kinds.append(STATUS_UNNEEDED)
    rows, totals = [], np.zeros(len(kinds), int)
    for m in methods:
        st = status.sel({"model": m}).values
        counts = np.array([(st == s).sum() for s in kinds])
        totals += counts
        label = method_style(m, methods, ds)["label"]
        rows.append(((f"{label} (", Code(m), ")"), *map(str, counts), str(st.size)))
    rows.append((Strong("all"), *map(str, totals), str(status.size)))
    blocks = [Table(("method", *(STATUS_NAMES[k] for k in kinds), "total"), rows,
                    "l" + "r" * (len(kinds) + 1))]
    failed = np.argwhere(status.transpose("model", "tau", "psi", "seed").values == STATUS_FAILED)
    if failed.size:
        errors = (ds["error"].load().transpose("model", "tau", "psi", "seed").values
                  if "error" in ds else None)
        items = []
        for mi, ti, pi, si in failed[:10]:
            msg = str(errors[mi, ti, pi, si]).splitlines()[-1][:200] if errors is not None else ""
            items.append(f"{methods[mi]}, tau={ds['tau'].values[ti]:g}, "
                         f"psi={ds['psi'].values[pi]:g}, seed={ds['seed'].values[si]}: {msg}")
        blocks += [Paragraph(f"Failed cells ({len(failed)}; first 10 shown):"), Items(items)]
    return blocks


def _degenerate_lines(ds) -> list[str]:
    """One line on the done cells whose final fit is degenerate, per method (none: nothing)."""
    # done cells whose method has the notion (NaN: the method has none)
    known = (ds["status"] == STATUS_DONE) & ds["degenerate"].notnull()
    flagged = ((ds["degenerate"] == 1) & known).sum(["tau", "psi", "seed"]).values
    if not flagged.any():
        return []
    counts = [f"`{m}` {int(k)} of {int(n)}" for m, k, n in
              zip(ds["model"].values, flagged, known.sum(["tau", "psi", "seed"]).values) if k]
    return ["Degenerate final fits (MCC-ARD: every sample lost its weight, the width is far below "
            "the residuals; LS-ARD: the noise variance collapsed and the fit interpolates), done "
            "cells: " + ", ".join(counts) + ".", ""]


def report_markdown(ds, claims, figures, store_path=None, seeds_figure=None) -> str:
    """The text of ``report.md``: store and cells, the stop rule's account where one chose the
    seeds (``seeds_figure``: its figure's file), figures, claims, summary tables, config and
    versions (from the store's attributes)."""
    attrs = ds.attrs
    config = _config(ds)
    name = config.get("experiment", {}).get("name", "?")
    methods = [str(m) for m in ds["model"].values]
    s = summarize(ds)
    intervals = intervals_of(ds)
    n_undefined = int(s["n_r_undefined"].sum()) if "n_r_undefined" in s else 0
    out = [f"# mccard-dist report: experiment `{name}`", ""]
    if store_path is not None:
        out.append(f"- store: `{store_path}`")
    out += [f"- grid hash: `{attrs.get('grid_hash', '?')}`",
            f"- created: {attrs.get('created', '?')}",
            "- methods: " + ", ".join(f"{method_style(m, methods, ds)['label']} (`{m}`)"
                                      for m in methods),
            "- tau: " + ", ".join(f"{t:g}" for t in ds["tau"].values),
            "- psi: " + ", ".join(f"{p:g}" for p in ds["psi"].values),
            f"- seeds: {ds.sizes['seed']} ({ds['seed'].values.min()}–{ds['seed'].values.max()})",
            "- data: " + (scenario(ds) or "the paper's problem (Laplace outliers in y)"),
            f"- intervals: {intervals.name}",
            "", "## Cells", "", markdown(_cells_blocks(ds)), ""]
    stops = stop_blocks(ds)
    if stops:
        out += ["## Stop rule", "", markdown(stops), ""]
        if seeds_figure is not None:
            out += [f"![seeds used per cell]({seeds_figure.name})", ""]
    edges = grid_edges(ds)
    if edges:
        out += ["## CV grid edges", "",
                "Finished cells whose cross-validated choice is the smallest or the largest "
                f"value of the method's grid. A grid left by its edge in more than "
                f"{EDGE_SHARE:.0%} of cells is too narrow: the best value may lie outside it, and "
                "a comparison with that method compares it under-tuned. Not counted: a value "
                "at the parameter's own bound or a penalty beyond which every fit is empty, a "
                f"CV curve flat at the edge (within {FLAT_PER_DECADE:.0%} of the next value per "
                "decade), and a cell without outliers at a second tau (the same data).", "",
                grid_edges_markdown(edges), ""]
        out += [f"- **{w}**" for w in edge_warnings(edges)]
        if any(e.flagged for e in edges):
            out.append("")
    failures = cv_failure_warnings(ds)
    if failures:
        out += [f"- **{line}**" for line in failures] + [""]
    out += _degenerate_lines(ds)
    if n_undefined:
        out += [f"{n_undefined} finished cell(s) predict a constant (no feature kept): their r is "
                "undefined and counts as 0 in the tables, figures and claims.", ""]
    out += ["Only finished cells count; pending and failed cells are left out (a partial store "
            "gives partial answers).", "", "## Figures", ""]
    for f in figures:
        shown = f"![{f.title}]({f.path.name})" if f.path is not None else f"Skipped: {f.note}"
        out += [f"### {f.title}", "", shown, ""]
    out += ["## Claims of the paper", "", markdown([claims_intro(ds)]), "",
            claims_markdown(claims), ""]
    pairs = width_pairs(ds)
    if pairs:
        out += ["## Kernel width set inside the fit against K-fold CV", "",
                "Each auto-width method against the method with the same estimator and "
                "parameters whose width K-fold CV chose, on the cells both finished (same data "
                f"and folds): means, the mean paired difference and its {intervals.name} over "
                "seeds (each seed's difference averaged over its cells) and over cells.", "",
                method_comparison_markdown(compare_methods(ds, pairs)), "",
                "### Claims of the paper with the auto widths", "",
                "The same checks with " + ", ".join(
                    f"`{a}` as `{b}`" for b, a in auto_roles(pairs).items()) + "; the baselines "
                "keep their K-fold widths, as in the paper.",
                "", claims_markdown(check_claims(ds, roles=auto_roles(pairs))), ""]
    out += ["## Summary per tau", "", summary_markdown(ds, s), "",
            "## Config", "", "```json", json.dumps(config, indent=2, sort_keys=True), "```", "",
            "## Package versions (as written in the store)", ""]
    versions = _json_attr(attrs, "versions", "{}")
    out.append(markdown([Table(("package", "version"), sorted(versions.items()), "ll")]))
    runs = _json_attr(attrs, "runs", "[]")
    if runs:
        rows = [(r.get("started"), r.get("finished") or "",
                 "" if r.get("cells") is None else r["cells"], r.get("ended", "")) for r in runs]
        out += ["", "## Runs", "", markdown([Table(
            ("started", "finished", "cells written", "how it ended"), rows, "llrl")])]
    return "\n".join(out) + "\n"


@dataclass(frozen=True)
class Report:
    """What :func:`write_report` wrote."""

    path: Path
    figures: list
    claims: list
    html: Path | None = None


def write_report(ds, out_dir, cell=None, store_path=None, html=False) -> Report:
    """Write the figures and ``report.md`` into ``out_dir`` (created if needed), and with
    ``html=True`` also ``report.html`` (:mod:`mccard_dist.analysis.html`); stores of different
    grids are refused (:func:`check_one_grid`)."""
    check_one_grid(ds)
    if html:
        from .html import report_html, require_html

        require_html()  # before anything is written
    out_dir = Path(out_dir)
    figures = write_figures(ds, out_dir, cell=cell)
    seeds_figure = None
    if stop_record(ds):
        seeds_figure = out_dir / SEEDS_FIGURE
        fig_seeds_used(ds).savefig(seeds_figure, dpi=120, format="png")
    claims = check_claims(ds)
    path = out_dir / "report.md"
    path.write_text(report_markdown(ds, claims, figures, store_path, seeds_figure),
                    encoding="utf-8")
    page = out_dir / "report.html" if html else None
    if html:
        page.write_text(report_html(ds, claims, _cells_blocks(ds), store_path), encoding="utf-8")
    return Report(path, figures, claims, page)


def sweep_label(settings: dict) -> str:
    """A folder name for one store of a sweep: ``name=value`` of each swept setting (its last
    key part), joined by commas."""
    return ",".join(f"{k.rsplit('.', 1)[-1]}={_setting(v)}" for k, v in settings.items())


def write_sweep_report(ds, out_dir, html=False, versus=None) -> tuple[Path, str]:
    """The stores of a sweep (``ds``: :func:`~mccard_dist.store.open_results` of a Hydra
    multirun folder along settings that differ) reported as one: each store's report in
    ``out_dir/<setting>=<value>/`` (:func:`write_report`), and ``out_dir/report.md`` with each
    method's means over its finished cells per setting. Returns that file and, with ``versus``
    (a method), :func:`~mccard_dist.analysis.compare.versus_report` of each store that has it."""
    from ..store import open_results
    from .compare import versus_report
    from .values import cell_values

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    keys = list(json.loads(ds.attrs["sweep"]).values())
    stores = json.loads(ds.attrs["stores"])
    shown = ("r", "rmse", "f1", "n_selected")
    lines, said = [], []
    for entry in stores:
        label = sweep_label(entry["settings"])
        one = open_results(entry["path"])
        write_report(one, out / label, store_path=entry["path"], html=html)
        labels = {m: method_style(m, entry["methods"], one)["label"] for m in entry["methods"]}
        for m in entry["methods"]:
            means = []
            for name in shown:
                v = cell_values(one, name).sel(model=m).values if name in one else np.array([])
                v = v[np.isfinite(v)]
                means.append(f"{v.mean():.3g}" if v.size else "–")
            lines.append((f"[{label}]({label}/report.md)", labels[m], *means))
        if versus is not None and versus in entry["methods"]:
            said.append(f"## {label}\n\n{versus_report(one, versus)}")
    header = ("setting", "method", "r", "RMSE", "F1", "features")
    text = markdown([Paragraph(Strong(f"A sweep of {len(stores)} stores along {', '.join(keys)}")),
                     Paragraph("Each method's means over its finished cells; each setting's "
                               "report in its folder."),
                     Table(header, lines, "llrrrr")])
    path = out / "report.md"
    path.write_text(text + "\n")
    return path, "\n\n".join(said)
