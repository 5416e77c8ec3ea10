"""Analysis: summaries on partial stores, the figures, and the claim checks on constructed data."""

import json
import sys
import re

import numpy as np
import pytest
import xarray as xr
from matplotlib.colors import LogNorm
from scipy import stats

from mccard_dist import analysis, records
from mccard_dist.analysis import check_claims, claims_markdown
from mccard_dist.analysis.cells import parse_cell, resolve_cell
from mccard_dist.analysis.claims import (
    BETTER,
    FAILS,
    HOLDS,
    NO_DATA,
    NOT_IN_GRID,
    NOT_TESTABLE,
    PARTIAL,
    claims_table,
    with_roles,
)
from mccard_dist.analysis.compare import auto_roles
from mccard_dist.intervals import Intervals
from mccard_dist.analysis.figures import (
    FIGURES,
    fig_densities,
    fig_deviant_vs_proper,
    fig_prediction,
    fig_selection,
    write_figures,
)
from mccard_dist.analysis.plotting import FigureUnavailable
from mccard_dist.analysis.values import cell_values, method_style, summarize, summary_markdown
from mccard_dist.analysis.width_figures import fig_chosen_kernel_width, fig_cv_curves
from mccard_dist.runner import run_serial
from mccard_dist.store import open_results, store_path

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def assert_png(path):
    import matplotlib.image

    assert path.is_file(), path
    assert path.read_bytes()[:8] == PNG_SIGNATURE, path
    image = matplotlib.image.imread(path)
    assert image.ndim == 3 and image.shape[2] in (3, 4) and min(image.shape[:2]) > 100


# --- a real store (every method, two tau, three psi, two seeds) ----------------------------------
@pytest.fixture(scope="module")
def store(compose, tmp_path_factory):
    from mccard_dist.config import from_dictconfig

    path = tmp_path_factory.mktemp("analysis") / "store.zarr"
    spec = from_dictconfig(compose(["experiment=smoke", f"store.path={path}", "run.progress=false",
                                    "experiment.tau=[2.0,10.0]",
                                    "experiment.psi=[0.0,0.05,0.3]"]))
    run_serial(spec)
    return path


@pytest.fixture(scope="module")
def ds(store):
    return open_results(store)


# --- summarize ----------------------------------------------------------------------------------
@pytest.mark.slow  # runs the pipeline into a real store
def test_summarize_counts_failed_and_pending_cells(smoke_spec, monkeypatch):
    import zarr

    from mccard_dist.models import LSARDRegressor

    spec = smoke_spec("experiment.methods=[ls_ard,mcc_ard]")
    target = spec.data.make_data(1, 0.2, 5.0).y_train  # ls_ard fails at psi = 0.2, seed 1
    real_fit = LSARDRegressor.fit

    def failing_fit(estimator, X, y, **kw):
        if np.array_equal(y, target):
            raise ValueError("injected failure")
        return real_fit(estimator, X, y, **kw)

    monkeypatch.setattr(LSARDRegressor, "fit", failing_fit)
    run_serial(spec)
    g = zarr.open_group(str(store_path(spec)), mode="r+")
    status = g["status"][...]
    status[1, 0, 0, 0] = 0  # mcc_ard (psi 0, seed 0) and (psi 0.2, seed 1): an interrupted run
    status[1, 0, 1, 1] = 0
    g["status"][...] = status

    for opened in (open_results(store_path(spec)), xr.open_zarr(store_path(spec))):
        s = summarize(opened)
        # dims (method, tau, psi): ls_ard then mcc_ard, one tau, psi 0 and 0.2
        np.testing.assert_array_equal(s["n_done"].values[:, 0], [[2, 1], [1, 1]])
        np.testing.assert_array_equal(s["n_failed"].values[:, 0], [[0, 1], [0, 0]])
        np.testing.assert_array_equal(s["n_pending"].values[:, 0], [[0, 0], [1, 1]])
        assert int(s["n_done"].sum() + s["n_failed"].sum() + s["n_pending"].sum()) == 8
        # means and std over the finished seeds only (values of pending cells are on disk)
        raw = xr.open_zarr(store_path(spec))
        r = raw["r"].values
        assert s["r_mean"].values[0, 0, 1] == pytest.approx(r[0, 0, 1, 0])
        assert s["r_mean"].values[1, 0, 0] == pytest.approx(r[1, 0, 0, 1])
        assert s["r_mean"].values[0, 0, 0] == pytest.approx(r[0, 0, 0].mean())
        assert s["r_std"].values[0, 0, 0] == pytest.approx(r[0, 0, 0].std(ddof=1))
        assert np.isnan(s["r_std"].values[0, 0, 1])  # a single finished seed has no spread


def test_undefined_r_of_a_finished_cell_counts_as_zero():
    ds = constructed()
    ds["r"][{"model": 3, "tau": 0, "psi": 3}] = np.nan  # mcc_l1 kept no feature: a constant
    ds["n_selected"][{"model": 3, "tau": 0, "psi": 3}] = 0
    s = summarize(ds)
    assert float(s["r_mean"].sel({"model": "mcc_l1", "tau": 2.0, "psi": 0.6})) == 0.0
    assert int(s["n_r_undefined"].sum()) == ds.sizes["seed"]
    # ... and the claim sees r = 0 on every seed of that cell
    r = cell_values(ds, "r").sel({"tau": 2.0}).mean("psi")
    diffs = (r.sel({"model": "mcc_ard"}) - r.sel({"model": "mcc_l1"})).values
    part = _part(check_claims(ds), "2", "r, τ = 2")
    assert part.estimate == pytest.approx(diffs.mean())


def test_a_nan_that_is_not_a_constant_prediction_is_missing_not_zero():
    ds = constructed()
    ds["r"][{"model": 3, "tau": 0, "psi": 3, "seed": 0}] = np.nan  # features kept: not constant
    s = summarize(ds)
    expected = ds["r"].sel({"model": "mcc_l1", "tau": 2.0, "psi": 0.6}).values[1:].mean()
    assert float(s["r_mean"].sel({"model": "mcc_l1", "tau": 2.0, "psi": 0.6})) == pytest.approx(
        expected)
    assert int(s["n_r_undefined"].sum()) == 0


# --- figures ------------------------------------------------------------------------------------
@pytest.mark.slow  # runs the pipeline into a real store
def test_write_figures_writes_every_figure_as_png(ds, tmp_path):
    files = write_figures(ds, tmp_path / "figs")
    assert [f.key for f in files] == list(FIGURES)
    for f in files:
        assert f.path is not None, f.note
        assert f.path.name == FIGURES[f.key][0]
        assert_png(f.path)


@pytest.mark.slow  # runs the pipeline into a real store
def test_metric_figures_have_one_labelled_panel_per_tau_and_every_method(ds):
    labels = {method_style(str(m))["label"] for m in ds["model"].values}
    for make in (fig_prediction, fig_selection):
        fig = make(ds)
        axes = fig.get_axes()
        assert len(axes) == 2 * ds.sizes["tau"]
        for ax in axes:
            assert ax.get_ylabel()
        assert all(ax.get_xlabel() == "outlier proportion ψ" for ax in axes[-2:])
        legend = {t.get_text() for t in fig.legends[0].get_texts()}
        assert labels <= legend
    # the true count of relevant features is drawn in the selection figure
    fig = fig_selection(ds)
    assert any("true count (5 relevant" in t.get_text() for t in fig.legends[0].get_texts())


@pytest.mark.slow  # runs the pipeline into a real store
def test_deviant_vs_proper_needs_both_variants(ds, tmp_path):
    fig = fig_deviant_vs_proper(ds)
    legend = " ".join(t.get_text() for t in fig.legends[0].get_texts())
    assert "MCC-ARD" in legend and "proper" in legend and "LS-ARD (reference)" in legend
    without = ds.sel({"model": ["mcc_ard", "ls_ard", "mcc_l1"]})
    with pytest.raises(FigureUnavailable, match="mcc_ard_proper"):
        fig_deviant_vs_proper(without)
    files = {f.key: f for f in write_figures(without, tmp_path)}
    assert files["deviant_vs_proper"].path is None
    assert "mcc_ard_proper" in files["deviant_vs_proper"].note
    assert not (tmp_path / FIGURES["deviant_vs_proper"][0]).exists()
    assert_png(files["prediction"].path)


def test_density_figure_draws_c_and_c_prime():
    fig = fig_densities(h_values=(0.5, 2.0), h_compare=1.0)
    left, right = fig.get_axes()
    assert len(left.get_lines()) == 2
    e, c = right.get_lines()[0].get_data()
    _, c_prime = right.get_lines()[1].get_data()
    np.testing.assert_allclose(c, np.exp(np.exp(-e**2 / 2.0)), rtol=1e-12)
    np.testing.assert_allclose(c_prime, np.exp(np.exp(-e**2 / 2.0)) - 1.0, rtol=1e-10, atol=1e-12)
    e, c = left.get_lines()[1].get_data()
    np.testing.assert_allclose(c, np.exp(np.exp(-e**2 / 4.0)), rtol=1e-12)


@pytest.mark.slow  # runs the pipeline into a real store
def test_cv_curves_of_a_chosen_cell_mark_the_pick(ds):
    fig = fig_cv_curves(ds, ("mcc_l1", 10, 0.3, 1))
    (ax,) = fig.get_axes()
    chosen_h = float(ds["chosen_kernel_width"].sel({"model": "mcc_l1", "tau": 10.0, "psi": 0.3,
                                                    "seed": 1}))
    lines = {line.get_label(): line for line in ax.get_lines()}
    picks = [line for label, line in lines.items() if label.startswith("CV pick")]
    assert len(picks) == 1 and picks[0].get_xdata()[0] == pytest.approx(chosen_h)
    assert sum(label.startswith("alpha_ratio = ") for label in lines) == 2  # the smoke grid
    # the pick is the lowest mean validation loss of the cell
    cv = ds["cv_score"].sel({"model": "mcc_l1", "tau": 10.0, "psi": 0.3, "seed": 1}).mean("fold")
    assert picks[0].get_ydata()[0] == pytest.approx(float(cv.min()))
    # default: every method with CV side by side
    assert len(fig_cv_curves(ds).get_axes()) == 3


@pytest.mark.slow  # runs the pipeline into a real store
def test_cells_are_checked_against_the_store(ds):
    assert resolve_cell(ds, "mcc_ard,2,0.05,1") == ("mcc_ard", 2.0, 0.05, 1)
    assert resolve_cell(ds, "all,10,0,0")[0] is None
    with pytest.raises(ValueError, match="psi = 0.7 is not in the store .psi: 0, 0.05, 0.3"):
        resolve_cell(ds, ("mcc_ard", 2.0, 0.7, 0))
    with pytest.raises(ValueError, match="method = nope"):
        fig_cv_curves(ds, ("nope", 2.0, 0.0, 0))
    with pytest.raises(ValueError, match="method,tau,psi,seed"):
        parse_cell("mcc_ard,2")


@pytest.mark.slow  # runs the pipeline into a real store
def test_chosen_h_heat_map_uses_a_log_scale_per_cv_method(ds):
    fig = fig_chosen_kernel_width(ds)
    panels = [ax for ax in fig.get_axes() if ax.get_images()]
    assert [ax.get_title() for ax in panels] == ["MCC-ARD", "MCC-ARD, proper C'", "MCC-L1"]
    image = panels[0].get_images()[0]
    assert isinstance(image.norm, LogNorm)
    expected = ds["chosen_kernel_width"].sel({"model": "mcc_ard"}).mean("seed").transpose(
        "tau", "psi")
    np.testing.assert_allclose(image.get_array(), expected.values)


# --- claims on constructed datasets -------------------------------------------------------------
METHODS = ["mcc_ard", "mcc_ard_proper", "ls_ard", "mcc_l1"]
TAUS = [2.0, 5.0, 10.0]
PSIS = [0.0, 0.05, 0.3, 0.6]
N_SEEDS = 6


def _means(method, tau, psi):
    """Cell means of a world where every claim of the paper clearly holds."""
    out = {"r": 0.99 - 0.5 * psi, "rmse": 0.3 + 5 * psi, "n_selected": 250.0, "f1": 0.2}
    if method == "mcc_ard":
        out = {"r": 0.99 - 0.05 * psi, "rmse": 0.3 + psi, "n_selected": 30.0,
               "f1": 0.9 if psi == 0 else 0.95}
    elif method == "mcc_l1":
        out = {"r": 0.99 - 0.2 * psi, "rmse": 0.3 + (psi if tau == 10.0 else 2 * psi),
               "n_selected": 60.0, "f1": 0.5}
    return out  # mcc_ard_proper and ls_ard: the same (proper close to LS-ARD)


def constructed(seed=0):
    """A dataset with the store's layout (every cell finished), values from :func:`_means` plus
    small independent noise per cell."""
    rng = np.random.default_rng(seed)
    shape = (len(METHODS), len(TAUS), len(PSIS), N_SEEDS)
    data = {name: np.zeros(shape) for name in ("r", "rmse", "n_selected", "f1")}
    for mi, m in enumerate(METHODS):
        for ti, t in enumerate(TAUS):
            for pi, p in enumerate(PSIS):
                for name, mean in _means(m, t, p).items():
                    data[name][mi, ti, pi] = mean + 0.002 * rng.standard_normal(N_SEEDS)
    dims = ("model", "tau", "psi", "seed")
    ds = xr.Dataset({name: (dims, v) for name, v in data.items()},
                    coords={"model": METHODS, "tau": TAUS, "psi": PSIS, "seed": range(N_SEEDS)})
    ds["status"] = (dims, np.ones(shape, np.int8))
    ds.attrs["config"] = json.dumps({"data": {"n_relevant": 30}})
    return ds


def _claim(results, claim):
    (c,) = [c for c in results if c.claim == claim]
    return c


def _part(results, claim, part):
    (p,) = [p for p in _claim(results, claim).parts if p.part == part]
    return p


def test_every_claim_holds_where_it_clearly_does():
    results = check_claims(constructed())
    assert [c.claim for c in results] == ["1", "2", "3", "4", "5", "6"]
    for c in results[:5]:
        assert c.verdict == HOLDS, [(p.part, p.verdict, p.note) for p in c.parts]
        assert all(p.n_seeds == N_SEEDS for p in c.parts)
    assert results[5].verdict == NOT_TESTABLE and not results[5].parts
    # the number of parts follows the claims: 6 + (3 + 3) + (3 * 2 * 2 + 2) + 2 + (3 + 2)
    assert len(claims_table(results)) == 6 + 6 + 14 + 2 + 5 + 1


def test_the_interval_is_the_paired_t_interval_of_per_seed_differences():
    ds = constructed()
    r = ds["r"].sel({"tau": 5.0, "psi": [0.05, 0.3, 0.6]}).mean("psi")
    diffs = (r.sel({"model": "mcc_ard"}) - r.sel({"model": "ls_ard"})).values
    part = _part(check_claims(ds), "1", "r, τ = 5")
    low, high = stats.t.interval(0.95, N_SEEDS - 1, loc=diffs.mean(), scale=stats.sem(diffs))
    assert (part.estimate, part.ci_low, part.ci_high) == pytest.approx((diffs.mean(), low, high))
    assert Intervals().of(diffs) == pytest.approx((diffs.mean(), low, high, N_SEEDS))
    assert "0.05, 0.3, 0.6" in part.quantity and "r(MCC-ARD) − r(LS-ARD)" in part.quantity


def test_claims_do_not_hold_where_they_clearly_fail():
    ds = constructed()
    # LS-ARD better than MCC-ARD in r at tau = 5; MCC-L1's RMSE far below MCC-ARD's at tau = 10;
    # F1 lower at psi = 0.05 than at psi = 0 at tau = 10
    ds["r"].loc[{"model": "ls_ard", "tau": 5.0}] = ds["r"].sel({"model": "mcc_ard",
                                                                 "tau": 5.0}) + 0.05
    ds["rmse"].loc[{"model": "mcc_l1", "tau": 10.0}] = ds["rmse"].sel(
        {"model": "mcc_ard", "tau": 10.0}) - 1.0
    ds["f1"].loc[{"model": "mcc_ard", "tau": 10.0, "psi": 0.05}] = 0.8
    results = check_claims(ds)
    assert _claim(results, "1").verdict == FAILS
    assert _part(results, "1", "r, τ = 5").verdict == FAILS
    assert _part(results, "1", "r, τ = 2").verdict == HOLDS
    assert _part(results, "1", "RMSE, τ = 5").verdict == HOLDS
    assert _claim(results, "2").verdict == FAILS
    assert [p.part for p in _claim(results, "2").parts if p.verdict == FAILS] == ["RMSE, τ = 10"]
    assert _claim(results, "4").verdict == FAILS
    assert _part(results, "4", "F1, τ = 5").verdict == HOLDS
    assert _claim(results, "3").verdict == HOLDS and _claim(results, "5").verdict == HOLDS


def test_what_the_grid_lacks_is_told_apart_from_too_few_seeds():
    # every part the grid can test holds: the claim holds there, and says what it could not test
    results = check_claims(constructed().sel(tau=[2.0, 10.0]))
    for claim in "1235":
        assert _claim(results, claim).verdict == PARTIAL
        assert "tau = 5 is not in the store" in _claim(results, claim).note
    assert _claim(results, "4").verdict == PARTIAL  # tau = 10 holds, tau = 5 missing
    assert _part(results, "1", "r, τ = 2").verdict == HOLDS
    assert _part(results, "1", "r, τ = 5").verdict == NOT_IN_GRID
    assert "tau = 5 is not in the store" in _part(results, "1", "r, τ = 5").note

    results = check_claims(constructed().sel({"model": ["mcc_ard", "mcc_ard_proper", "ls_ard"]}))
    assert _claim(results, "1").verdict == HOLDS
    assert _claim(results, "2").verdict == NOT_IN_GRID
    assert all(p.verdict == NOT_IN_GRID for p in _claim(results, "2").parts)
    assert _claim(results, "3").verdict == PARTIAL  # against LS-ARD only

    results = check_claims(constructed().sel(psi=[0.0, 0.3, 0.6]))
    assert _claim(results, "4").verdict == NOT_IN_GRID
    assert "psi = 0.05 is not in the store" in _part(results, "4", "F1, τ = 5").note
    results = check_claims(constructed().sel(psi=[0.0]))
    assert _claim(results, "1").verdict == NOT_IN_GRID  # no outliers at all

    # too few seeds is a different verdict, even where the grid lacks other parts
    few = constructed().sel(tau=[2.0, 10.0])
    few["status"][{"seed": slice(1, None)}] = 0
    assert _claim(check_claims(few), "1").verdict == NO_DATA


def test_better_than_claimed_is_not_a_failure():
    ds = constructed()
    # MCC-ARD's RMSE far below MCC-L1's at tau = 10, where the paper says "similar"
    ds["rmse"].loc[{"model": "mcc_l1", "tau": 10.0}] = ds["rmse"].sel(
        {"model": "mcc_ard", "tau": 10.0}) + 1.0
    results = check_claims(ds)
    assert _part(results, "2", "RMSE, τ = 10").verdict == BETTER
    assert _claim(results, "2").verdict == HOLDS
    # ... while the same gap the other way round does not hold
    ds["rmse"].loc[{"model": "mcc_l1", "tau": 10.0}] = ds["rmse"].sel(
        {"model": "mcc_ard", "tau": 10.0}) - 1.0
    assert _part(check_claims(ds), "2", "RMSE, τ = 10").verdict == FAILS


def test_unfinished_cells_never_make_a_claim_hold():
    ds = constructed()
    ds["status"][{"seed": slice(1, None)}] = 0  # values present but pending: must not count
    results = check_claims(ds)
    for c in results[:5]:
        assert c.verdict == NO_DATA
        assert all(p.n_seeds <= 1 for p in c.parts)
    ds = constructed()
    ds["status"][{"seed": slice(2, None)}] = 2  # failed
    ds["status"][{"seed": 1, "model": 0}] = 0
    assert all(c.verdict == NO_DATA for c in check_claims(ds)[:5])


def test_paired_seeds_drop_seeds_with_an_unfinished_cell():
    ds = constructed()
    ds["status"].loc[{"model": "mcc_ard", "tau": 2.0, "psi": 0.3, "seed": 0}] = 2
    results = check_claims(ds)
    part = _part(results, "1", "r, τ = 2")
    assert part.verdict == HOLDS and part.n_seeds == N_SEEDS - 1
    assert f"{N_SEEDS - 1} of {N_SEEDS} seeds" in part.note
    assert _part(results, "1", "r, τ = 5").n_seeds == N_SEEDS


def test_a_failing_part_outweighs_missing_data():
    ds = constructed().sel(tau=[2.0, 5.0])
    ds["r"].loc[{"model": "ls_ard", "tau": 5.0}] = 1.0
    assert _claim(check_claims(ds), "1").verdict == FAILS


def test_similar_means_within_ten_percent_of_the_level():
    ds = constructed()
    level = float(ds["rmse"].sel({"model": ["mcc_ard", "mcc_l1"], "tau": 10.0}).mean())
    ds["rmse"].loc[{"model": "mcc_l1", "tau": 10.0}] = ds["rmse"].sel(
        {"model": "mcc_ard", "tau": 10.0}) + 0.05 * level
    assert _part(check_claims(ds), "2", "RMSE, τ = 10").verdict == HOLDS
    ds["rmse"].loc[{"model": "mcc_l1", "tau": 10.0}] = ds["rmse"].sel(
        {"model": "mcc_ard", "tau": 10.0}) - 0.2 * level
    part = _part(check_claims(ds), "2", "RMSE, τ = 10")
    assert part.verdict == FAILS and "below +10%" in part.rule
    ds["rmse"].loc[{"model": "mcc_l1", "tau": 10.0}] = ds["rmse"].sel(
        {"model": "mcc_ard", "tau": 10.0}) + 0.2 * level
    assert _part(check_claims(ds), "2", "RMSE, τ = 10").verdict == BETTER
    # a two-sided "close" (claim 5) fails on either side
    level = float(ds["r"].sel({"model": ["mcc_ard_proper", "ls_ard"], "tau": 10.0}).mean())
    ds["r"].loc[{"model": "mcc_ard_proper", "tau": 10.0}] = ds["r"].sel(
        {"model": "ls_ard", "tau": 10.0}) + 0.2 * level
    part = _part(check_claims(ds), "5", "proper vs LS-ARD r, τ = 10")
    assert part.verdict == FAILS and "within ±10%" in part.rule


@pytest.mark.slow  # runs the pipeline into a real store
def test_claims_on_a_real_store_and_as_markdown(ds):
    results = check_claims(ds)
    # the store has tau 2 and 10 only: claims that need tau 5 cannot plainly hold
    for claim in "1235":
        assert _claim(results, claim).verdict in (PARTIAL, NO_DATA, FAILS)
        if _claim(results, claim).verdict == PARTIAL:
            assert "tau = 5 is not in the store" in _claim(results, claim).note
    text = claims_markdown(results)
    for c in results:
        assert f"| {c.claim} | **{c.verdict}**" in text
    # every row of a table has its table's number of columns (no stray "|" in a cell)
    widths = {len(re.findall(r"(?<!\\)\|", line)) for line in text.splitlines() if line}
    assert widths == {4, 9}


def test_an_agreeing_estimate_with_a_wide_interval_is_not_enough_data():
    ds = constructed()
    # tau = 5: MCC-ARD's r advantage over LS-ARD is +0.05 on average but swings from seed to seed
    swing = np.array([0.6, -0.5, 0.6, -0.5, 0.6, -0.5])
    ds["r"].loc[{"model": "ls_ard", "tau": 5.0}] = (
        ds["r"].sel({"model": "mcc_ard", "tau": 5.0}) - 0.05 - swing)
    part = _part(check_claims(ds), "1", "r, τ = 5")
    assert part.estimate > 0 and part.ci_low < 0 < part.ci_high
    assert part.verdict == NO_DATA and "more seeds" in part.note


# --- comparing two stores -----------------------------------------------------------------------
@pytest.mark.slow  # runs the pipeline into a real store
def test_compare_stores_pairs_shared_cells_against_seed_noise(ds):
    from mccard_dist.analysis import compare_stores, comparison_table

    base = ds.load()
    other = base.copy(deep=True)
    method = str(base["model"].values[0])
    other["r"].loc[{"model": method}] = other["r"].sel({"model": method}) - 0.3
    other["status"].loc[{"model": method, "psi": 0.3}] = records.STATUS_PENDING  # unfinished
    rows = {(r.method, r.metric): r for r in compare_stores(base, other)}
    row = rows[(method, "r")]
    va = base["r"].sel({"model": method}).drop_sel(psi=0.3).values
    assert row.n_cells == va.size
    assert row.diff == pytest.approx(-0.3)
    assert row.low == pytest.approx(-0.3) and row.high == pytest.approx(-0.3)
    assert row.base_mean == pytest.approx(np.mean(va))
    # pooled seed sd: within each (tau, psi), over seeds (independent numpy computation)
    assert row.seed_sd == pytest.approx(np.sqrt(np.mean(np.var(va, axis=-1, ddof=1))))
    assert row.n_seeds == base.sizes["seed"]
    assert not row.within_seed_noise
    same = rows[(method, "rmse")]
    assert same.diff == 0.0 and same.within_seed_noise
    table = comparison_table(list(rows.values()))
    assert "differs" in table and "within seed noise" in table


# --- auto widths: roles, paired methods, stores side by side ---------------------------------------
def test_claims_with_roles_judge_another_method_in_a_role():
    ds = constructed()
    # a copy of the world where mcc_ard's values are played by "mcc_ard_auto" and the original
    # mcc_ard is replaced by LS-ARD's (bad) values: the claims must follow the roles
    auto = ds.sel({"model": ["mcc_ard"]}).assign_coords(model=["mcc_ard_auto"])
    bad = ds.copy(deep=True)
    for name in ("r", "rmse", "n_selected", "f1"):
        bad[name].loc[{"model": "mcc_ard"}] = ds[name].sel({"model": "ls_ard"}).values
    both = xr.concat([bad, auto], dim="model")
    assert _claim(check_claims(both), "1").verdict != HOLDS
    with_auto = check_claims(both, roles={"mcc_ard": "mcc_ard_auto"})
    for c in with_auto[:5]:
        assert c.verdict == HOLDS, [(p.part, p.verdict, p.note) for p in c.parts]
    view = with_roles(both, {"mcc_ard": "mcc_ard_auto"})
    assert list(view["model"].values) == ["mcc_ard", "mcc_ard_proper", "ls_ard", "mcc_l1"]
    np.testing.assert_array_equal(view["r"].sel({"model": "mcc_ard"}).values,
                                  ds["r"].sel({"model": "mcc_ard"}).values)


def test_claims_with_auto_widths_keep_the_baselines_k_fold():
    pairs = [("mcc_ard", "mcc_ard_auto"), ("mcc_ard_proper", "mcc_ard_proper_auto"),
             ("mcc_l1", "mcc_l1_auto")]
    assert auto_roles(pairs) == {"mcc_ard": "mcc_ard_auto",
                                 "mcc_ard_proper": "mcc_ard_proper_auto"}
    # in a store whose auto MCC-L1 beats MCC-ARD everywhere, the claims with auto widths still
    # judge MCC-ARD against the K-fold MCC-L1, as the paper does
    ds = constructed()
    auto = ds.sel({"model": ["mcc_ard", "mcc_l1"]}).assign_coords(
        model=["mcc_ard_auto", "mcc_l1_auto"])
    for name, change in (("r", lambda v: np.minimum(v + 0.05, 1.0)), ("rmse", lambda v: v / 2)):
        auto[name].loc[{"model": "mcc_l1_auto"}] = change(ds[name].sel({"model": "mcc_ard"}))
    both = xr.concat([ds, auto], dim="model")
    roles = auto_roles([("mcc_ard", "mcc_ard_auto"), ("mcc_l1", "mcc_l1_auto")])
    kept = check_claims(both, roles=roles)
    plain = check_claims(ds)
    assert [(c.claim, c.verdict) for c in kept] == [(c.claim, c.verdict) for c in plain]
    swapped = check_claims(both, roles={**roles, "mcc_l1": "mcc_l1_auto"})
    assert [c.verdict for c in swapped] != [c.verdict for c in plain]


def test_compare_methods_is_the_paired_difference_with_intervals_over_seeds_and_cells():
    ds = constructed()
    ds["rmse"].loc[{"model": "ls_ard", "tau": 2.0, "psi": 0.3, "seed": 1}] = np.nan  # unfinished
    (row,) = analysis.compare_methods(ds, [("mcc_ard", "ls_ard")], metrics=("rmse",))
    a = ds["rmse"].sel({"model": "mcc_ard"}).transpose("seed", "tau", "psi").values.reshape(N_SEEDS, -1)
    b = ds["rmse"].sel({"model": "ls_ard"}).transpose("seed", "tau", "psi").values.reshape(N_SEEDS, -1)
    d = b - a
    ok = np.isfinite(d)
    assert row.n_cells == ok.sum() == len(TAUS) * len(PSIS) * N_SEEDS - 1
    assert row.diff == pytest.approx(d[ok].mean())
    assert row.base_mean == pytest.approx(a[ok].mean())
    per_seed = np.array([d[s][ok[s]].mean() for s in range(N_SEEDS)])
    low, high = stats.t.interval(0.95, N_SEEDS - 1, loc=per_seed.mean(), scale=stats.sem(per_seed))
    assert (row.seed_low, row.seed_high) == pytest.approx((low, high))
    low, high = stats.t.interval(0.95, ok.sum() - 1, loc=d[ok].mean(), scale=stats.sem(d[ok]))
    assert (row.cell_low, row.cell_high) == pytest.approx((low, high))
    only_tau10 = analysis.compare_methods(ds, [("mcc_ard", "ls_ard")], metrics=("rmse",), tau=10.0)
    assert only_tau10[0].n_cells == len(PSIS) * N_SEEDS
    text = analysis.method_comparison_markdown([row])
    assert "`ls_ard` vs `mcc_ard`" in text and f"{row.diff:+.3g}" in text


@pytest.mark.slow  # keeps the fast subset under its 30 s
def test_versus_is_the_paired_difference_per_tau_and_psi_block_with_a_verdict():
    from mccard_dist.analysis.compare import psi_blocks, versus, versus_markdown

    ds = constructed()
    ds["rmse"].loc[{"model": "ls_ard", "tau": 2.0, "psi": 0.3, "seed": 1}] = np.nan  # unfinished
    assert psi_blocks(PSIS, 3) == [(0.0, 0.05), (0.3,), (0.6,)]
    rows = versus(ds, "mcc_ard", others=["ls_ard"], metrics=("rmse", "r"))
    assert [(r.tau, r.psis, r.metric) for r in rows[:4]] == [
        (2.0, (0.0, 0.05), "rmse"), (2.0, (0.0, 0.05), "r"), (2.0, (0.3,), "rmse"),
        (2.0, (0.3,), "r")]
    row = next(r for r in rows if (r.tau, r.psis, r.metric) == (2.0, (0.0, 0.05), "rmse"))
    sel = {"tau": 2.0, "psi": [0.0, 0.05]}
    per_seed = (ds["rmse"].sel(model="mcc_ard", **sel) - ds["rmse"].sel(model="ls_ard", **sel)
                ).mean("psi").values
    low, high = stats.t.interval(0.95, N_SEEDS - 1, loc=per_seed.mean(), scale=stats.sem(per_seed))
    assert (row.diff, row.low, row.high, row.n_seeds) == pytest.approx(
        (per_seed.mean(), low, high, N_SEEDS))
    # a block with an unfinished cell counts the seeds that finished all of it
    hole = next(r for r in rows if (r.tau, r.psis, r.metric) == (2.0, (0.3,), "rmse"))
    assert hole.n_seeds == N_SEEDS - 1
    # LS-ARD's RMSE is far above MCC-ARD's under outliers: MCC-ARD wins it; equal values tie
    assert next(r for r in rows if (r.tau, r.psis, r.metric) == (10.0, (0.6,), "rmse")
                ).verdict == "wins"
    same = versus(ds.assign(r=ds["r"].where(ds["model"] != "ls_ard",
                                            ds["r"].sel(model="mcc_ard"))),
                  "mcc_ard", others=["ls_ard"], metrics=("r",))
    assert {r.verdict for r in same} == {"ties"}
    text = versus_markdown(rows, {"mcc_ard": "MCC-ARD", "ls_ard": "LS-ARD"})
    assert "**MCC-ARD − LS-ARD**" in text and "| LS-ARD |" in text
    # real covariates have no F1: the means still count every finished cell and metric
    from mccard_dist.analysis.compare import versus_report

    no_f1 = ds.assign(f1=ds["f1"] * np.nan)
    row = next(line for line in versus_report(no_f1, "mcc_ard").splitlines()
               if line.startswith("| MCC-ARD |"))
    cells = row.split("|")
    assert cells[2].strip() == str(len(TAUS) * len(PSIS) * N_SEEDS) and cells[5].strip() == "–"
    assert float(cells[3]) == pytest.approx(float(ds["r"].sel(model="mcc_ard").mean()), abs=6e-4)


@pytest.fixture(scope="module")
def two_stores(tmp_path_factory):
    """The same smoke cells in two stores: K-fold methods in one, an auto-width method in the
    other."""
    from conftest import compose_config

    from mccard_dist.config import from_dictconfig

    root = tmp_path_factory.mktemp("side")
    specs = []
    for name, methods in (("kfold", "[mcc_ard,ls_ard]"), ("auto", "[mcc_ard_auto]")):
        spec = from_dictconfig(compose_config(["experiment=smoke", f"experiment.methods={methods}",
                                               f"store.path={root / name}.zarr",
                                               "run.progress=false"]))
        run_serial(spec)
        specs.append(spec)
    return specs


@pytest.mark.slow  # runs the pipeline into a real store
def test_stores_of_the_same_cells_in_another_order_open_side_by_side(tmp_path):
    """The same cells listed in another order (psi reversed) are the same cells:
    opened in the first store's order, each value where its cell is."""
    from conftest import compose_config

    from mccard_dist.config import from_dictconfig

    paths = []
    for name, method, psi in (("a", "ls_ard", "[0.0,0.2]"), ("b", "mcc_ard_auto", "[0.2,0.0]")):
        spec = from_dictconfig(compose_config([
            "experiment=smoke", f"experiment.methods=[{method}]", f"experiment.psi={psi}",
            "data.n_features=20", f"store.path={tmp_path / name}.zarr", "run.progress=false"]))
        run_serial(spec)
        paths.append(store_path(spec))
    ds = open_results(paths)
    assert list(ds["psi"].values) == [0.0, 0.2] and list(ds["seed"].values) == [0, 1]
    alone = open_results(paths[1])
    for psi in (0.0, 0.2):
        for seed in (0, 1):
            assert float(ds["r"].sel(model="mcc_ard_auto", psi=psi, seed=seed).item()) == float(
                alone["r"].sel(model="mcc_ard_auto", psi=psi, seed=seed).item())


@pytest.mark.slow  # runs the pipeline into a real store
def test_stores_of_the_same_cells_open_side_by_side(two_stores):
    kfold, auto = two_stores
    ds = open_results([store_path(kfold), store_path(auto)])
    assert list(ds["model"].values) == ["mcc_ard", "ls_ard", "mcc_ard_auto"]
    alone = open_results(store_path(auto))
    np.testing.assert_array_equal(ds["r"].sel({"model": "mcc_ard_auto"}).values,
                                  alone["r"].sel({"model": "mcc_ard_auto"}).values)
    np.testing.assert_array_equal(ds["cv_score"].sel({"model": "mcc_ard"}).values,
                                  open_results(store_path(kfold))["cv_score"].sel(
                                      {"model": "mcc_ard"}).values)
    np.testing.assert_array_equal(ds["kernel_width"].sel(model="mcc_ard").values, [0.3, 3.0])
    assert analysis.width_pairs(ds) == [("mcc_ard", "mcc_ard_auto")]
    rows = analysis.compare_methods(ds, analysis.width_pairs(ds))
    assert {r.metric for r in rows} == {"r", "rmse", "f1", "n_selected"}
    assert all(r.n_cells == 4 for r in rows)  # 1 tau x 2 psi x 2 seeds


@pytest.mark.slow  # runs the pipeline into a real store
def test_stores_of_other_cells_or_the_same_methods_are_refused(two_stores, smoke_spec):
    from mccard_dist.store import StoreMismatchError

    kfold, auto = two_stores
    with pytest.raises(StoreMismatchError, match="repeats the grid"):
        open_results([store_path(kfold), store_path(kfold)])
    other = smoke_spec("experiment.methods=[ls_ard]", "experiment.seeds.count=1", name="other")
    run_serial(other)
    with pytest.raises(StoreMismatchError, match="other experiment.seeds"):
        open_results([store_path(auto), store_path(other)])


@pytest.mark.slow  # runs the pipeline into a real store
def test_report_compares_auto_widths_with_kfold_and_checks_the_claims_with_them(two_stores,
                                                                                tmp_path):
    kfold, auto = two_stores
    ds = open_results([store_path(kfold), store_path(auto)])
    report = analysis.write_report(ds, tmp_path)
    text = report.path.read_text()
    assert "## Kernel width set inside the fit against K-fold CV" in text
    assert "| `mcc_ard_auto` vs `mcc_ard` | RMSE | 4 | 2 |" in text
    assert "`mcc_ard_auto` as `mcc_ard`" in text
    chosen_h = [f for f in report.figures
                if f.path is not None and "chosen_kernel_width" in f.path.name]
    assert chosen_h  # the auto method's widths are drawn next to the CV-chosen ones
    # a store with K-fold methods only has no such section
    alone = analysis.write_report(open_results(store_path(kfold)), tmp_path / "alone")
    assert "Kernel width set inside the fit" not in alone.path.read_text()


@pytest.mark.parametrize("mean, std, text", [
    (5.0012, 0.781, "5.00 ± 0.78"), (0.1512, 0.0751, "0.151 ± 0.075"), (33.4, 12.3, "33 ± 12"),
    (0.98765, 0.00123, "0.9877 ± 0.0012"), (2.0, 0.0, "2 ± 0"), (500.0, 0.0, "500 ± 0"),
    (0.125, 0.0, "0.125 ± 0"),
])
def test_mean_and_spread_share_their_decimal_place(mean, std, text):
    from mccard_dist.analysis.values import mean_std

    assert mean_std(mean, std) == text


def test_summary_cells_never_mix_precisions():
    text = summary_markdown(constructed())
    cells = re.findall(r"(-?\d+(?:\.(\d+))?) ± (\d+(?:\.(\d+))?)", text)
    assert cells
    for _, mean_decimals, _, std_decimals in cells:
        assert len(mean_decimals) == len(std_decimals)


def test_a_class_of_ones_own_is_labelled_by_what_the_store_recorded_of_it():
    """The store's ``kinds`` give a class's label and the words of its ``label_params`` without
    importing it (its package need not exist where the store is read); a recorded kind whose
    estimator is not the one the config names gives no label (the method's name)."""
    from mccard_dist.methods import MethodKind

    ds = constructed()
    mine = MethodKind("nowhere_installed.robust:Mine", label="Mine", width_param="scale",
                      auto_width=True, label_params=(("loss", "tukey", "Tukey's loss"),))
    ds.attrs["config"] = json.dumps({"methods": {
        "mcc_ard": {"estimator": "nowhere_installed.robust:Mine", "params": {"loss": "tukey"},
                    "grid": {"scale": "auto"}},
        "ls_ard": {"estimator": "nowhere_installed.robust:Other", "params": {}, "grid": {}}}})
    ds.attrs["kinds"] = json.dumps({
        "mcc_ard": mine.declared(),
        "ls_ard": MethodKind("mccard_dist.models:LSARDRegressor", label="LS-ARD").declared()})
    assert method_style("mcc_ard", METHODS, ds)["label"] == "Mine, Tukey's loss, auto width"
    assert method_style("ls_ard", METHODS, ds)["label"] == "ls_ard"
    assert "nowhere_installed" not in sys.modules


def test_methods_of_ones_own_never_share_a_colour_and_marker_nor_take_a_shipped_style():
    shipped = ["mcc_ard", "mcc_ard_proper", "ls_ard", "mcc_l1", "lasso", "huber"]
    own = [f"mine_{i}" for i in range(36)]
    styles = [method_style(m, shipped + own) for m in shipped + own]
    pairs = [(s["color"], s["marker"]) for s in styles]
    assert len(set(pairs)) == len(pairs)
    shipped_colours = {s["color"] for s in styles[:len(shipped)]}
    shipped_markers = {s["marker"] for s in styles[:len(shipped)]}
    assert not shipped_colours & {s["color"] for s in styles[len(shipped):]}
    assert not shipped_markers & {s["marker"] for s in styles[len(shipped):]}


def _lab(colour):
    """CIELAB (D65) of a colour, from sRGB."""
    from matplotlib.colors import to_rgb

    rgb = np.array(to_rgb(colour))
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722],
                    [0.0193, 0.1192, 0.9505]]) @ linear / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def test_a_method_of_ones_own_gets_no_tint_of_a_shipped_methods_colour():
    """Beside the shipped methods (MCC-ARD's blue among them), a method whose file gives no
    style is drawn in a hue none of them has (CIELAB hue 15 degrees apart from each coloured
    one: a light blue beside a dark blue is not), far from every one of their colours."""
    from mccard_dist.config import shipped_methods

    files = shipped_methods()
    styled = [m for m in files if (files[m].get("style") or {}).get("color")]
    own = [f"mine_{i}" for i in range(4)]
    shipped_colours = {m: method_style(m, styled + own)["color"] for m in styled}
    assert shipped_colours["mcc_ard"] == files["mcc_ard"]["style"]["color"]
    for m in own:
        colour = method_style(m, styled + own)["color"]
        lab = _lab(colour)
        for name, other in shipped_colours.items():
            theirs = _lab(other)
            assert np.linalg.norm(lab - theirs) > 25, (m, colour, name, other)
            if np.hypot(*theirs[1:]) > 10:  # a colour, not a grey
                turn = np.degrees(np.arctan2(lab[2], lab[1]) - np.arctan2(theirs[2], theirs[1]))
                assert abs((turn + 180) % 360 - 180) >= 15, (m, colour, name, other)


def test_a_method_is_labelled_by_what_its_stored_config_says_it_is():
    ds = constructed()
    ds.attrs["config"] = json.dumps({"methods": {
        "mcc_ard": {"estimator": "mccard_dist.models:MCCARDRegressor", "params": {"likelihood": "deviant"},
                    "grid": {"kernel_width": "auto"}},
        "mcc_ard_proper": {"estimator": "mccard_dist.models:MCCARDRegressor", "params": {"likelihood": "proper"},
                           "grid": {"kernel_width": [0.1, 1.0]}},
        "ls_ard": {"estimator": "mccard_dist.models:LSARDRegressor", "params": {"solver": "sequential"}, "grid": {}},
        "mcc_l1": {"estimator": "mccard_dist.models:MCCL1Regressor", "grid": {"kernel_width": [0.3, 3.0]}}}})
    labels = {m: method_style(m, METHODS, ds)["label"] for m in METHODS}
    assert labels == {"mcc_ard": "MCC-ARD, auto width", "mcc_ard_proper": "MCC-ARD, proper C'",
                      "ls_ard": "LS-ARD, sequential solver", "mcc_l1": "MCC-L1"}
    # colours stay those of the name; without a store, the name's label
    assert method_style("mcc_ard", METHODS, ds)["color"] == method_style("mcc_ard")["color"]
    assert method_style("mcc_ard")["label"] == "MCC-ARD"
    summary = summary_markdown(ds)
    assert "| psi | MCC-ARD, auto width | MCC-ARD, proper C' |" in summary
