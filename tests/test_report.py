"""`mccard-report`: report.md and the figures from small stores, in process and in a subprocess."""

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mccard_dist import analysis, app, cli
from mccard_dist.analysis.claims import HOLDS, NO_DATA, NOT_APPLICABLE, NOT_IN_GRID, NOT_TESTABLE
from mccard_dist.analysis.figures import (
    FIGURES,
    fig_densities,
    fig_deviant_vs_proper,
    fig_prediction,
    fig_selection,
)
from mccard_dist.analysis.values import cell_values, method_style, n_relevant, summarize
from mccard_dist.analysis.width_figures import fig_chosen_kernel_width, fig_cv_curves
from mccard_dist.runner import run_serial
from mccard_dist.store import open_results, store_path

# every test here runs the pipeline into a store and writes figures (one runs the CLI in a
# subprocess): slow
pytestmark = pytest.mark.slow

METHODS = ("mcc_ard", "mcc_ard_proper", "ls_ard", "mcc_l1")


def assert_png(path):
    import matplotlib.image

    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", path
    image = matplotlib.image.imread(path)
    assert image.ndim == 3 and min(image.shape[:2]) > 100


@pytest.fixture(scope="module")
def store(compose, tmp_path_factory):
    """The smoke experiment (every method, tau 5, psi 0 and 0.2, 2 seeds)."""
    from mccard_dist.config import from_dictconfig

    path = tmp_path_factory.mktemp("report") / "smoke.zarr"
    run_serial(from_dictconfig(compose(["experiment=smoke", f"store.path={path}",
                                        "run.progress=false"])))
    return path


def test_report_has_every_method_the_claims_cells_config_and_versions(store, tmp_path):
    out = analysis.write_report(open_results(store), tmp_path / "out", store_path=store)
    text = out.path.read_text()
    for method in METHODS:
        assert f"`{method}`" in text
    for name, _ in FIGURES.values():
        assert_png(tmp_path / "out" / name)
        assert f"]({name})" in text
    assert "| **all** | 16 | 0 | 0 | 16 |" in text  # cells done / failed / pending / total
    for claim in "123456":
        assert f"\n| {claim} | **" in text
    assert "### tau = 5" in text and "| 0.2 |" in text  # summary tables per tau
    assert '"n_relevant": 5' in text  # the config the store was written with
    assert "| numpy |" in text and "| xarray |" in text
    # the smoke grid has tau = 5 only: claim 1 needs tau 2 and 10, so it cannot hold
    assert analysis.check_claims(open_results(store))[0].verdict != HOLDS


def test_report_on_a_partial_store(store, tmp_path):
    import shutil

    import zarr

    partial = tmp_path / "partial.zarr"
    shutil.copytree(store, partial)
    g = zarr.open_group(str(partial), mode="r+")
    status = g["status"][...]
    status[3] = 0  # mcc_l1 not started (an interrupted run)
    status[0, 0, 1, 1] = 2  # one failed mcc_ard cell
    with zarr.config.set({"array.write_empty_chunks": True}):  # as the writer writes
        g["status"][...] = status
        g["error"][0, 0, 1, 1] = "ValueError: injected"
    out = analysis.write_report(open_results(partial), tmp_path / "out")
    text = out.path.read_text()
    assert "| MCC-L1 (`mcc_l1`) | 0 | 0 | 4 | 4 |" in text
    assert "| **all** | 11 | 1 | 4 | 16 |" in text
    assert "mcc_ard, tau=5, psi=0.2, seed=1: ValueError: injected" in text
    claims = {c.claim: c for c in out.claims}
    assert claims["2"].verdict == NO_DATA  # needs MCC-L1
    assert all(f.path is not None for f in out.figures)
    # the CV figure skips the unfinished method rather than plotting masked cells
    fig = fig_cv_curves(open_results(partial))
    assert [ax.get_title().split(":")[0] for ax in fig.get_axes()] == [
        "MCC-ARD", "MCC-ARD, proper C'"]


def test_cli_refuses_a_missing_store_and_a_bad_cell(store, tmp_path):
    with pytest.raises(SystemExit, match="no such store: "):
        cli.report([str(tmp_path / "nothing.zarr"), "--out", str(tmp_path / "out")])
    import xarray as xr

    (tmp_path / "empty.zarr").mkdir()  # a folder, and a zarr store of someone else's
    xr.Dataset({"x": ("i", np.arange(3))}).to_zarr(tmp_path / "other.zarr", zarr_format=2)
    for folder in (tmp_path / "empty.zarr", tmp_path / "other.zarr"):
        assert report_error(folder, "--out", tmp_path / "out") == (
            f"error: {folder} is not a results store (no .zmetadata/.zattrs of mccard-dist); "
            "give a store written by mccard-run")
    with pytest.raises(SystemExit, match=r"--cell: psi = 0.3 is not in the store \(psi: 0, 0.2\)"):
        cli.report([str(store), "--out", str(tmp_path / "out"), "--cell", "mcc_ard,5,0.3,0"])
    assert not (tmp_path / "out").exists()


def test_mccard_report_in_a_subprocess(store, tmp_path):
    script = Path(sys.executable).parent / "mccard-report"
    assert script.exists(), "install the package (pip install -e .) to get the mccard-report script"
    out = tmp_path / "report"
    proc = subprocess.run([str(script), str(store), "--out", str(out), "--cell", "mcc_l1,5,0.2,1"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    # smoke's one tau tests part of the paper's claims: one line printed, the table in report.md
    assert "The paper's claims on this grid" in proc.stdout and "| claim |" not in proc.stdout
    assert f"report: {out / 'report.md'}" in proc.stdout
    assert "Traceback" not in proc.stderr
    for name, _ in FIGURES.values():
        assert_png(out / name)
    text = (out / "report.md").read_text()
    assert all(f"`{m}`" in text for m in METHODS)
    assert "| claim | verdict | statement |" in text


def test_figures_a_store_cannot_make_are_skipped_with_a_note(smoke_spec, tmp_path):
    spec = smoke_spec("experiment.methods=[ls_ard]")
    run_serial(spec)
    out = analysis.write_report(open_results(store_path(spec)), tmp_path / "out")
    skipped = {f.key for f in out.figures if f.path is None}
    assert skipped == {"deviant_vs_proper", "cv_curves", "chosen_kernel_width"}
    text = out.path.read_text()
    assert text.count("Skipped: ") == 3 and "needs the methods mcc_ard and mcc_ard_proper" in text
    assert_png(tmp_path / "out" / FIGURES["prediction"][0])
    assert all(c.verdict in (NOT_IN_GRID, NOT_TESTABLE) for c in out.claims)


def test_a_grid_left_by_its_edge_is_counted_in_the_report_and_warned_after_the_run(
        smoke_spec, tmp_path, caplog):
    # smoke's data want a width far outside 0.01-0.03: every cell picks an edge
    spec = smoke_spec("experiment.methods=[mcc_ard]",
                      "methods.mcc_ard.grid.kernel_width=[0.01,0.02,0.03]")
    with caplog.at_level("WARNING", logger="mccard_dist"):
        app.run_from_spec(spec)
    assert re.search(r"mcc_ard: CV chose an edge of its kernel_width grid in [34] of 4 cells",
                     caplog.text)
    text = analysis.write_report(open_results(store_path(spec)), tmp_path / "out").path.read_text()
    assert "## CV grid edges" in text
    assert "| `mcc_ard` | kernel_width | 0.01: " in text
    assert re.search(r"\| [01] \| 4 \| (75|100)% \*\*> 10%\*\* \|", text)  # flat edges apart


def test_report_compare_prints_the_paired_table(store, capsys):
    cli.report([str(store), "--compare", str(store)])
    out = capsys.readouterr().out
    assert "within seed noise" in out and "differs" not in out  # a store against itself
    assert "mcc_l1" in out and "rmse" in out
    with pytest.raises(SystemExit):
        cli.report([str(store)])  # neither --out nor --compare


def test_report_pair_prints_the_paired_difference_of_two_methods(store, tmp_path, capsys):
    cli.report([str(store), "--out", str(tmp_path / "out"), "--pair", "ls_ard,mcc_ard"])
    out = capsys.readouterr().out
    assert "Methods paired as asked" in out
    row = next(line for line in out.splitlines()
               if line.startswith("| `mcc_ard` vs `ls_ard` | r |"))
    ds = open_results(store)
    r = ds["r"].sel(model=["ls_ard", "mcc_ard"]).values.reshape(2, -1)
    expected = np.nanmean(r[1] - r[0])
    assert float(row.split("|")[7]) == pytest.approx(expected, abs=6e-4)  # printed to 3 digits
    cli.report([str(store), "--pair", "ls_ard,mcc_ard"])  # without --out: printed only
    assert row in capsys.readouterr().out


def test_report_pair_refuses_unknown_methods_before_writing(store, tmp_path):
    out = tmp_path / "out"
    with pytest.raises(SystemExit, match="--pair: no method nope in the store"):
        cli.report([str(store), "--out", str(out), "--pair", "mcc_ard,nope"])
    for pair in ("mcc_ard", "mcc_ard,mcc_ard"):
        with pytest.raises(SystemExit):
            cli.report([str(store), "--out", str(out), "--pair", pair])
    assert not out.exists()


def test_report_versus_prints_the_means_the_blocks_and_the_grid_edges(store, capsys):
    cli.report([str(store), "--versus", "mcc_ard"])
    out = capsys.readouterr().out
    assert "**Means over the finished cells**" in out and "**CV grid edges**" in out
    assert "**MCC-ARD − LS-ARD**" in out and "| other method |" in out
    means = next(line for line in out.splitlines() if line.startswith("| MCC-ARD |"))
    ds = open_results(store)
    assert float(means.split("|")[3]) == pytest.approx(
        float(np.nanmean(ds["r"].sel(model="mcc_ard").where(ds["status"] == 1))), abs=6e-4)
    with pytest.raises(SystemExit, match="--versus: no method nope in the store"):
        cli.report([str(store), "--versus", "nope"])


# -- legibility of the figures ---------------------------------------------------------------------
def _drawn(fig):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return canvas.get_renderer()


def assert_legible(fig):
    """No two tick labels of an axis overlap, and the title and legends lie inside the figure."""
    renderer = _drawn(fig)
    width, height = fig.bbox.width, fig.bbox.height
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            boxes = [t.get_window_extent(renderer) for t in axis.get_ticklabels()
                     if t.get_visible() and t.get_text()]
            for i, a in enumerate(boxes):
                for b in boxes[i + 1:]:
                    assert not a.overlaps(b), (ax.get_title(), [t.get_text() for t in
                                                                axis.get_ticklabels()])
    texts = [fig._suptitle] if fig._suptitle is not None else []
    for item in texts + list(fig.legends):
        box = item.get_window_extent(renderer)
        assert box.x0 >= -1 and box.x1 <= width + 1 and box.y0 >= -1 and box.y1 <= height + 1, item


def test_figures_of_one_tau_fit_their_title_and_legend(store):
    ds = open_results(store)  # one tau
    for make in (fig_prediction, fig_selection, fig_deviant_vs_proper):
        assert_legible(make(ds))
    assert_legible(fig_densities())


def test_the_count_panel_marks_the_true_count(smoke_spec):
    # 3 relevant features: not on the 1-2-5 ticks of a log axis
    spec = smoke_spec("experiment.methods=[mcc_ard,ls_ard]", "data.n_features=40",
                      "data.n_relevant=3", name="k3")
    run_serial(spec)
    ds = open_results(store_path(spec))
    fig = fig_selection(ds)
    count_axis = fig.axes[0]
    assert count_axis.get_yscale() == "log"
    labels = {t.get_text() for t in count_axis.get_yticklabels()}
    assert str(n_relevant(ds)) in labels


def test_cv_and_chosen_h_ticks_of_methods_with_different_grids_do_not_overlap(smoke_spec):
    spec = smoke_spec("experiment.methods=[mcc_ard,mcc_l1]", "data.n_features=40",
                      "methods.mcc_ard.grid.kernel_width=[1.0,10.0,100.0]",
                      "methods.mcc_l1.grid.kernel_width=[1.2,12.0,80.0]", name="grids")
    run_serial(spec)
    ds = open_results(store_path(spec))
    fig = fig_cv_curves(ds)
    assert_legible(fig)
    # each panel's ticks are its own method's widths
    ticks = [sorted(float(t) for t in ax.get_xticks()) for ax in fig.axes[:2]]
    assert ticks[0] and ticks[1]
    assert set(ticks[0]) <= {1.0, 10.0, 100.0} and set(ticks[1]) <= {1.2, 12.0, 80.0}
    assert_legible(fig_chosen_kernel_width(ds))


def test_a_store_without_finished_cells_draws_no_empty_figure(smoke_spec, tmp_path):
    from mccard_dist.store import ResultsStore

    spec = smoke_spec("experiment.methods=[mcc_ard,ls_ard]", "data.n_features=40", name="empty")
    ResultsStore.open_or_create(spec)
    out = analysis.write_report(open_results(store_path(spec)), tmp_path / "out")
    drawn = {f.key for f in out.figures if f.path is not None}
    assert drawn == {"densities"}, drawn
    notes = {f.key: f.note for f in out.figures}
    assert "finished cells" in notes["prediction"] and "finished cells" in notes["selection"]


# -- several stores that are not one grid -----------------------------------------------------------
@pytest.fixture(scope="module")
def variants(compose, tmp_path_factory):
    """Tiny stores of mcc_ard: ``base``; ``max_iter`` (methods.mcc_ard.params.max_iter=50);
    ``wider`` (data.n_features=25); ``ls_ard`` (another method, the same cells as ``base``)."""
    from mccard_dist.config import from_dictconfig

    folder = tmp_path_factory.mktemp("variants")
    tiny = ["experiment=smoke", "run.progress=false", "experiment.methods=[mcc_ard]",
            "experiment.psi=[0.0,0.2]", "data.n_features=20"]
    paths = {}
    for name, extra in (("base", []), ("max_iter", ["methods.mcc_ard.params.max_iter=50"]),
                        ("wider", ["data.n_features=25"]),
                        ("ls_ard", ["experiment.methods=[ls_ard]"])):
        paths[name] = folder / f"{name}.zarr"
        run_serial(from_dictconfig(compose([*tiny, f"store.path={paths[name]}", *extra])))
    return paths


def multirun_folder(tmp_path, *stores):
    """A folder as ``mccard-run -m`` leaves it: job folders and the list of their stores."""
    folder = tmp_path / "multirun" / "2024-01-01_00-00-00"
    for i, store in enumerate(stores):
        (folder / str(i)).mkdir(parents=True)
        (folder / str(i) / "store.txt").write_text(f"{store}\n")
    (folder / "stores.txt").write_text("".join(f"{s}\n" for s in stores))
    return folder


def report_error(*args):
    with pytest.raises(SystemExit) as info:
        cli.report([str(a) for a in args])
    message = str(info.value.code)
    assert message.startswith("error: ") and "\n" not in message, message
    assert "this is a bug" not in message
    return message


def test_a_multirun_along_a_setting_is_reported_along_it(variants, tmp_path, capsys):
    """``mccard-report multirun/<start> --out DIR``: each store's report in its setting's
    folder, and a table of every method's means per setting (checked against the store's own
    finished cells); --versus per store; options about one store are refused in one line."""
    folder = multirun_folder(tmp_path, variants["base"], variants["wider"])
    cli.report([str(folder), "--out", str(tmp_path / "out"), "--versus", "mcc_ard"])
    printed = capsys.readouterr().out
    assert "## n_features=20" in printed and "## n_features=25" in printed
    for width in (20, 25):
        assert (tmp_path / "out" / f"n_features={width}" / "report.md").is_file()
    table = (tmp_path / "out" / "report.md").read_text()
    assert "A sweep of 2 stores along data.n_features" in table
    wider = open_results(variants["wider"])
    r = wider["r"].sel(model="mcc_ard").values
    row = next(line for line in table.splitlines() if line.startswith("| [n_features=25]"))
    assert f"| {np.mean(r[np.isfinite(r)]):.3g} |" in row
    message = report_error(folder, "--out", tmp_path / "other", "--cell", "mcc_ard,5,0,0")
    assert message.endswith("--cell ask for one store"), message
    assert report_error(folder, "--versus", "mcc_ard").startswith(
        f"error: {folder} is a sweep along data.n_features: give --out DIR")
    message = report_error(variants["base"], "--compare", folder)
    assert message.startswith(f"error: {folder} is a multirun of 2 stores")


def test_a_multirun_folder_moved_with_its_stores_opens_and_reports(variants, tmp_path):
    """The sweep callback lists each store relative to the multirun folder (and absolute): the
    folder and its stores moved elsewhere together open there; a listed store missing at every
    path is named in one line."""
    import shutil

    from omegaconf import OmegaConf

    from mccard_dist.sweep import SweepSummary

    project = tmp_path / "project"
    folder = project / "multirun" / "2024-01-01_00-00-00"
    for i, (name, width) in enumerate((("base", 20), ("wider", 25))):
        store = project / "results" / f"{name}.zarr"
        shutil.copytree(variants[name], store)
        (folder / str(i) / ".hydra").mkdir(parents=True)
        (folder / str(i) / ".hydra" / "overrides.yaml").write_text(
            f"- data.n_features={width}\n")
        (folder / str(i) / "store.txt").write_text(f"{store}\n")
    SweepSummary().on_multirun_end(OmegaConf.create({"hydra": {"sweep": {"dir": str(folder)}}}))
    assert (folder / "stores.txt").read_text().startswith(
        f"../../results/base.zarr\t{project / 'results' / 'base.zarr'}\n")

    moved = tmp_path / "laptop"
    shutil.move(project, moved)
    folder = moved / "multirun" / "2024-01-01_00-00-00"
    ds = open_results(folder)
    assert list(ds["n_features"].values) == [20, 25]
    assert [s["path"] for s in json.loads(ds.attrs["stores"])] == [
        str(moved / "results" / "base.zarr"), str(moved / "results" / "wider.zarr")]
    cli.report([str(folder), "--out", str(tmp_path / "out")])
    assert (tmp_path / "out" / "n_features=25" / "report.md").is_file()

    shutil.rmtree(moved / "results" / "wider.zarr")
    message = report_error(folder, "--out", tmp_path / "out2")
    assert message.startswith(f"error: no such store: {moved / 'results' / 'wider.zarr'} "
                              f"(listed in {folder / 'stores.txt'}; nor at "
                              f"{project / 'results' / 'wider.zarr'})"), message


def test_stores_whose_same_method_differs_are_refused_with_the_difference(variants, tmp_path):
    base, other = variants["base"], variants["max_iter"]
    assert report_error(base, other, "--out", tmp_path / "out") == (
        f"error: {base} and {other} both have method mcc_ard with different settings "
        "(params.max_iter: 300 vs 50); report them one at a time")
    assert report_error(base, variants["wider"], "--out", tmp_path / "out") == (
        f"error: {base} and {variants['wider']} hold the same methods with different settings "
        "(data.n_features: 20 vs 25); report them one at a time")
    assert not (tmp_path / "out").exists()
    # a library caller of write_report gets the same message
    from mccard_dist.errors import UsageError

    with pytest.raises(UsageError, match="both have method mcc_ard with different settings"):
        analysis.write_report(open_results([base, other]), tmp_path / "out")


def test_a_multirun_over_methods_is_reported_side_by_side(variants, tmp_path):
    folder = multirun_folder(tmp_path, variants["base"], variants["ls_ard"])
    cli.report([str(folder), "--out", str(tmp_path / "out")])
    text = (tmp_path / "out" / "report.md").read_text()
    assert "`mcc_ard`" in text and "`ls_ard`" in text


def test_error_bars_stay_within_the_seeds_values(store):
    """mean ± std, but never past the smallest or largest value a seed reached (an r of 0 from
    a no-feature fit must not draw a bar below 0, a count no bar below its smallest count)."""
    ds = open_results(store)
    fig = fig_prediction(ds)
    checked = 0
    for ax in fig.axes:
        for container in ax.containers:
            label = container.get_label()
            method = next(str(m) for m in ds["model"].values
                          if method_style(str(m), [str(x) for x in ds["model"].values],
                                          ds)["label"] == label)
            metric = "r" if "r (Pearson" in ax.get_ylabel() else "rmse"
            values = cell_values(ds, metric).sel(model=method, tau=ds["tau"][0])
            for segment, psi in zip(container.lines[2][0].get_segments(), ds["psi"].values):
                seeds = values.sel(psi=psi).values
                (_, low), (_, high) = segment
                assert seeds.min() - 1e-12 <= low <= high <= seeds.max() + 1e-12
                checked += 1
    assert checked == 2 * 4 * 2  # r and RMSE, 4 methods, 2 psi


def test_claims_that_do_not_apply_are_one_line():
    from mccard_dist.analysis.claims import _STATEMENTS, ClaimResult

    note = "the data are not the paper's problem"
    results = [ClaimResult(c, s, NOT_APPLICABLE, (), note) for c, s in _STATEMENTS.items()]
    text = analysis.claims_markdown(results)
    assert len(text.splitlines()) == 1 and "not applicable" in text and note in text


def test_the_authors_width_has_its_own_colour_scale_in_units_of_standardised_y(smoke_spec):
    spec = smoke_spec("experiment.methods=[mcc_ard,mcc_ard_authors]", "data.n_features=40",
                      "experiment.psi=[0.2]", name="authors")
    run_serial(spec)
    fig = fig_chosen_kernel_width(open_results(store_path(spec)))
    assert_legible(fig)
    labels = sorted(ax.get_ylabel() for ax in fig.axes if ax.get_label() == "<colorbar>")
    assert len(labels) == 2
    assert "(units of standardised y², log scale)" in labels[0]
    assert "(units of y², log scale)" in labels[1]
    assert fig.get_size_inches()[0] * 120 <= 1600  # at write_figures' dpi: two panels a row
    # report.html's single width axis is in units of y²: the authors' width stays off it
    from mccard_dist.analysis.html import records

    shown = {r["key"] for r in records(open_results(store_path(spec)))
             if r["metric"] == "chosen kernel_width"}
    assert shown == {"mcc_ard"}


def test_an_rmse_ten_times_the_others_puts_the_panel_on_a_log_scale(store):
    ds = open_results(store)
    rmse = summarize(ds)["rmse_mean"].values
    assert np.nanmax(rmse) > 10 * np.nanmin(rmse)  # LS-ARD under outliers against MCC-ARD
    fig = fig_prediction(ds)
    scales = {ax.get_ylabel(): ax.get_yscale() for ax in fig.axes}
    assert scales["test RMSE (units of y)"] == "log"
    assert scales["test r (Pearson, unitless)"] == "linear"


def test_a_count_row_that_reaches_zero_is_symlog_in_every_panel_and_shows_0(store):
    """A seed with no feature kept puts 0 on the count axis: log above 1, the same scale in every
    panel of the row (not log in one tau and linear in another)."""
    ds = open_results(store).load()
    ds["n_selected"].loc[{"model": "mcc_ard", "tau": ds["tau"].values[-1],
                          "psi": ds["psi"].values[-1], "seed": ds["seed"].values[0]}] = 0
    fig = fig_selection(ds)
    counts = [ax for ax in fig.axes if ax.get_ylabel() == "selected features (count)"]
    assert len(counts) == ds.sizes["tau"]
    assert {ax.get_yscale() for ax in counts} == {"symlog"}
    for ax in counts:
        assert ax.get_ylim()[0] == 0 and "0" in [t.get_text() for t in ax.get_yticklabels()]
    assert_legible(fig)


def test_the_psi_axis_is_ticked_at_the_grids_psi_when_it_has_few(store):
    ds = open_results(store)
    psi = [f"{p:g}" for p in ds["psi"].values]
    assert 1 < len(psi) <= 11
    for ax in fig_prediction(ds).axes:
        assert [t.get_text() for t in ax.get_xticklabels()] == psi


def test_cv_curves_list_only_the_penalties_with_a_mean_over_the_folds(store):
    """A candidate without a score on some fold (dropped by racing) has no mean, no line and no
    legend entry."""
    ds = open_results(store).load()
    cell = {"model": "mcc_l1", "tau": float(ds["tau"].values[0]),
            "psi": float(ds["psi"].values[-1]), "seed": int(ds["seed"].values[0])}
    l1 = ds["alpha_ratio"].sel(model="mcc_l1").values
    ratios = sorted(float(r) for r in np.unique(l1[np.isfinite(l1)]))
    assert len(ratios) == 2
    dropped = np.flatnonzero(l1 == ratios[0])  # every width's candidate of the smaller ratio
    ds["cv_score"].loc[{**cell, "candidate": list(dropped), "fold": 1}] = np.nan
    fig = fig_cv_curves(ds, cell=tuple(cell.values()))
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert f"alpha_ratio = {ratios[1]:g}" in labels
    assert not any(label.startswith(f"alpha_ratio = {ratios[0]:g}") for label in labels)
    # an ARD method's candidates (no penalty) are one line, one legend entry
    fig = fig_cv_curves(ds)
    for ax in fig.axes:
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert len(labels) == len(set(labels)), labels
    ard = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert ard.count("no L1 penalty (ARD)") == 1 and len(fig.axes[0].get_lines()) == 3


def test_chosen_h_cells_are_written_without_exponents(store):
    ds = open_results(store).load()
    ds["chosen_kernel_width"].loc[{"model": "mcc_ard"}] = 170.0
    fig = fig_chosen_kernel_width(ds)
    texts = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert "170" in texts and not any("e+" in t for t in texts)


def test_a_store_too_large_to_load_is_reported_from_its_lazy_arrays_alike(store, tmp_path,
                                                                       monkeypatch):
    """A store whose per-cell values exceed what open_results loads (a million cells) stays
    lazy, read a chunk at a time by the report's reductions: the same report, claims and
    --versus table as the loaded store gives."""
    from mccard_dist.analysis.compare import versus_report
    from mccard_dist.store import reader

    loaded = open_results(store)
    monkeypatch.setattr(reader, "LOADED_BYTES", 0)
    lazy = open_results(store)
    assert lazy["r"].chunks is not None and loaded["r"].chunks is None
    texts = [analysis.write_report(ds, tmp_path / name).path.read_text()
             for name, ds in (("loaded", loaded), ("lazy", lazy))]
    assert texts[0] == texts[1]
    assert versus_report(lazy, "mcc_ard") == versus_report(loaded, "mcc_ard")
