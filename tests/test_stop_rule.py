"""Runs with a stop rule (``experiment.stop``): rounds per (tau, psi) cell decided from the store,
the same store from a distributed run, a serial one and a killed-and-resumed one, a tighter rule
continuing only the cells it reopens, and fixed-count experiments as before."""

import json

import numpy as np
import pytest
import xarray as xr

from mccard_dist.config import ConfigError
from mccard_dist.grid import grid_hash
from mccard_dist.records import STATUS_DONE, STATUS_PENDING, STATUS_UNNEEDED
from mccard_dist.runner import run_experiment, run_serial
from mccard_dist.store import store_path

BASE = ("experiment.methods=[mcc_ard,ls_ard]", "experiment.psi=[0.0,0.3]",
        "experiment.seeds.count=9")
#: RMSE's interval (the anytime-valid t sequence) within 0.2: the psi=0 cell, whose RMSE
#: varies little over seeds, stops after a few rounds; the psi=0.3 one spends the budget
LOOSE = "experiment.stop={min_seeds: 3, round: 2, precision: {rmse: 0.2}}"
TIGHT = "experiment.stop={min_seeds: 3, round: 2, precision: {rmse: 0.13}}"
VALUES = ("status", "r", "rmse", "f1", "n_selected", "cell_seconds")


def stops(path) -> dict:
    return json.loads(xr.open_zarr(path).attrs["stopping"])


def assert_same_store(path_a, path_b):
    a, b = xr.open_zarr(path_a), xr.open_zarr(path_b)
    for name in VALUES[:-1]:
        np.testing.assert_array_equal(a[name].values, b[name].values, err_msg=name)
    np.testing.assert_array_equal(np.isfinite(a["cell_seconds"].values),
                                  np.isfinite(b["cell_seconds"].values))
    assert stops(path_a) == stops(path_b)


def seeds_used(path) -> dict:
    return {key: (cell["seeds"], cell["why"]) for key, cell in stops(path)["cells"].items()}


@pytest.fixture(scope="module")
def loose_reference(tmp_path_factory):
    """The loose rule run serially: the reference every other run must equal."""
    from conftest import compose_config
    from mccard_dist.config import from_dictconfig

    cfg = compose_config(["experiment=smoke", "run.progress=false", *BASE, LOOSE])
    cfg.store.path = str(tmp_path_factory.mktemp("stop") / "serial.zarr")
    spec = from_dictconfig(cfg)
    run_serial(spec)
    return store_path(spec)


@pytest.mark.slow
def test_a_cell_stops_when_its_rule_holds_and_the_seeds_after_are_not_needed(loose_reference):
    used = seeds_used(loose_reference)
    (n0, why0), (n1, why1) = used["0/0"], used["0/1"]
    assert why0 == "rule held" and n0 < 9 and (n0 - 3) % 2 == 0
    assert (n1, why1) == (9, "budget spent")
    status = xr.open_zarr(loose_reference)["status"].values
    assert (status[:, 0, 0, :n0] == STATUS_DONE).all()
    assert (status[:, 0, 0, n0:] == STATUS_UNNEEDED).all()
    assert (status[:, 0, 1] == STATUS_DONE).all()
    # the interval at the stop is the one that held: every method's RMSE within 0.2
    parts = stops(loose_reference)["cells"]["0/0"]["parts"]
    assert {p[1] for p in parts} == {"mcc_ard", "ls_ard"}
    assert all((high - low) / 2 <= 0.2 and n == n0 for _, _, _, _, low, high, n, *_ in parts)


@pytest.mark.slow
def test_distributed_rounds_give_the_serial_store(smoke_spec, local_client, loose_reference):
    spec = smoke_spec(*BASE, LOOSE, name="dist")
    report = run_experiment(spec, client=local_client)
    assert report.complete
    assert_same_store(store_path(spec), loose_reference)
    # the rounds ran no cell the rule did not need
    status = xr.open_zarr(store_path(spec))["status"].values
    assert report.n_cells_written == int((status == STATUS_DONE).sum())


@pytest.mark.slow
def test_a_run_killed_during_a_round_resumes_to_the_same_store(smoke_spec, local_client,
                                                               loose_reference):
    spec = smoke_spec(*BASE, LOOSE, "run.block_seconds=0", name="killed")
    first = run_experiment(spec, client=local_client, stop_after_blocks=9)
    assert first.stopped_early
    status = xr.open_zarr(store_path(spec))["status"].values
    assert (status == STATUS_PENDING).any()  # stopped inside a round
    second = run_experiment(spec, client=local_client)
    assert second.complete
    assert_same_store(store_path(spec), loose_reference)


@pytest.mark.slow
def test_a_tighter_rule_continues_only_the_cells_it_reopens(smoke_spec, local_client,
                                                           loose_reference):
    spec = smoke_spec(*BASE, LOOSE, name="tightened")
    run_experiment(spec, client=local_client)
    before = xr.open_zarr(store_path(spec)).load()
    tight = smoke_spec(*BASE, TIGHT, name="tightened")
    assert grid_hash(tight) == grid_hash(spec)  # the rule is not part of the grid
    report = run_experiment(tight, client=local_client)
    after = xr.open_zarr(store_path(spec)).load()
    (n_loose, _), (n_tight, why) = seeds_used(loose_reference)["0/0"], seeds_used(
        store_path(spec))["0/0"]
    assert n_tight > n_loose
    # only the reopened cell ran, only its seeds past the loose stop, up to the tight one
    assert report.n_cells_written == 2 * (n_tight - n_loose)
    changed = after["status"].values != before["status"].values
    assert not changed[:, :, 1].any()
    assert changed[:, 0, 0, n_loose:n_tight].all() and not changed[:, 0, 0, n_tight:].any()
    np.testing.assert_array_equal(after["rmse"].values[:, :, 1], before["rmse"].values[:, :, 1])
    fresh = smoke_spec(*BASE, TIGHT, name="fresh")
    run_experiment(fresh, client=local_client)
    assert_same_store(store_path(spec), store_path(fresh))
    runs = json.loads(after.attrs["runs"])
    assert [r["stop"]["precision"] for r in runs] == [{"rmse": 0.2}, {"rmse": 0.13}]


def test_a_fixed_count_experiment_is_as_without_the_rule(smoke_spec):
    fixed, ruled = smoke_spec(*BASE), smoke_spec(*BASE, LOOSE)
    assert grid_hash(fixed) == grid_hash(ruled)
    assert "stop" not in fixed.to_dict()["experiment"]
    assert fixed.stop is None and ruled.stop.precision == (("rmse", 0.2),)


@pytest.mark.parametrize("rule, needle", [
    ("{min_seeds: 3}", "experiment.stop: says nothing to stop on"),
    ("{precision: {rmsee: 0.1}}", "experiment.stop.precision: 'rmsee' is not a metric of this "
                                  "experiment; did you mean 'rmse'?"),
    ("{precison: {rmse: 0.1}}", "experiment.stop.precison: unknown key; did you mean "
                                "experiment.stop.precision?"),
    ("{claims: {margin: {f1: 0.02}, against: lsard}}",
     "experiment.stop.claims.against: must be one of experiment.methods (mcc_ard, ls_ard); did "
     "you mean 'ls_ard'?"),
    ("{claims: {against: ls_ard}}", "experiment.stop.claims.margin: missing"),
    ("{precision: {f1: 0}}", "experiment.stop.precision.f1: must be > 0"),
    ("{min_seeds: 1, precision: {f1: 0.1}}", "experiment.stop.min_seeds: must be >= 2"),
    ("{guarantee: exact, precision: {f1: 0.1}}",
     "experiment.stop.guarantee: must be one of normal, bounded"),
    ("{tuned_for: 100, precision: {f1: 0.1}}", "experiment.stop.tuned_for: no longer a key"),
    ("{audit: 2, precision: {f1: 0.1}}", "experiment.stop.audit: must be in [0, 1]"),
    ("{fixed_seeds: 1, precision: {f1: 0.1}}", "experiment.stop.fixed_seeds: must be >= 2"),
])
def test_a_bad_rule_is_refused_in_one_line_before_a_store_exists(smoke_spec, rule, needle,
                                                                  tmp_path):
    with pytest.raises(ConfigError) as info:
        spec = smoke_spec(*BASE, f"experiment.stop={rule}", name="refused")
        spec.check_data()
    assert needle in str(info.value) and "\n" not in str(info.value)
    assert not (tmp_path / "refused.zarr").exists()


def test_the_fixed_count_a_rule_replaces_is_its_budget_unless_given(smoke_spec):
    assert smoke_spec(*BASE, LOOSE).stop.fixed_seeds == 9
    given = "experiment.stop={precision: {rmse: 0.2}, fixed_seeds: 100}"
    assert smoke_spec(*BASE, given).stop.fixed_seeds == 100


@pytest.mark.slow
def test_an_audited_cell_runs_on_to_the_budget_and_says_what_changed(smoke_spec, tmp_path,
                                                                      loose_reference):
    from mccard_dist.analysis.report import write_report
    from mccard_dist.store import open_results

    audited = LOOSE.replace("}}", "}, audit: 1.0}")
    spec = smoke_spec(*BASE, audited, name="audited")
    run_serial(spec)
    (n0, _), _ = seeds_used(loose_reference).values()
    cell = stops(store_path(spec))["cells"]["0/0"]
    assert cell["seeds"] == 9 and cell["audit"]["seeds"] == n0
    status = xr.open_zarr(store_path(spec))["status"].values
    assert (status[:, 0, 0] == STATUS_DONE).all()
    text = write_report(open_results(store_path(spec)), tmp_path / "report").path.read_text()
    assert "Audit: 1 stopped cell(s) ran on to the budget" in text
    assert f"audited: stopped at {n0}, run on to 9" in text


@pytest.mark.slow
def test_a_store_of_the_rule_before_the_t_sequence_still_opens_and_reports(loose_reference,
                                                                            tmp_path):
    """A store whose record names no guarantee and keeps ``tuned_for`` and eight-field parts
    (the rule whose sequences were empirical-Bernstein and asymptotic) reads as ``bounded``."""
    import shutil

    import zarr

    from mccard_dist.analysis.report import write_report
    from mccard_dist.analysis.stops import intervals_of
    from mccard_dist.store import open_results

    old = tmp_path / "old.zarr"
    shutil.copytree(loose_reference, old)
    record = stops(old)
    record["rule"] = {**{k: v for k, v in record["rule"].items()
                         if k not in ("guarantee", "fixed_seeds")}, "tuned_for": 100}
    for cell in record["cells"].values():
        cell["parts"] = [part[:8] for part in cell["parts"]]
    group = zarr.open_group(str(old), mode="r+")
    group.attrs["stopping"] = json.dumps(record)
    zarr.consolidate_metadata(str(old))
    ds = open_results(old)
    assert intervals_of(ds).guarantee == "bounded"
    text = write_report(ds, tmp_path / "report").path.read_text()
    assert "empirical Bernstein" in text and "## Stop rule" in text


@pytest.mark.slow
def test_the_report_shows_the_rule_its_decisions_and_the_sequences(loose_reference, tmp_path):
    from mccard_dist.analysis.report import write_report
    from mccard_dist.store import open_results

    ds = open_results(loose_reference)
    text = write_report(ds, tmp_path / "report").path.read_text()
    assert "- intervals: 95% confidence sequences" in text
    assert "## Stop rule" in text
    (n0, _), _ = seeds_used(loose_reference).values()
    assert f"| 5 | 0 | {n0} | rule held |" in text and "| 5 | 0.3 | 9 | budget spent |" in text
    assert f"Seeds run: {n0 + 9} of 18" in text
    assert (tmp_path / "report" / "seeds_used.png").stat().st_size > 1000
    assert "| method | done | failed | pending | not needed | total |" in text


@pytest.mark.slow
def test_the_html_page_names_the_sequences_and_carries_the_rule(loose_reference, tmp_path):
    """report.html of a stop-rule store: its figures and claims say confidence sequences (what
    they draw), and it has report.md's stop-rule section with the seeds-used figure."""
    pytest.importorskip("altair")
    pytest.importorskip("vl_convert")
    from mccard_dist.analysis.report import write_report
    from mccard_dist.store import open_results

    page = write_report(open_results(loose_reference), tmp_path / "report", html=True).html
    text = page.read_text()
    assert "t-interval" not in text.replace("wider than t-intervals", "")
    assert "Means over the finished seeds with their 95% confidence sequences" in text
    assert "mean and 95% confidence sequences" in text  # the claims' sentence
    assert "<h2>Stop rule</h2>" in text
    (n0, _), _ = seeds_used(loose_reference).values()
    assert f"<td>5</td><td>0</td><td>{n0}</td><td>rule held</td>" in text
    assert "<td>5</td><td>0.3</td><td>9</td><td>budget spent</td>" in text
    assert f"Seeds run: {n0 + 9} of 18" in text
    assert "alt='seeds used per cell' src='data:image/png;base64," in text


@pytest.mark.slow
def test_a_fixed_count_report_says_it_shows_t_intervals(smoke_spec, tmp_path):
    from mccard_dist.analysis.report import write_report
    from mccard_dist.store import open_results

    spec = smoke_spec("experiment.methods=[ls_ard]", name="fixed")
    run_serial(spec)
    text = write_report(open_results(store_path(spec)), tmp_path / "report").path.read_text()
    assert "- intervals: 95% t-intervals" in text
    assert "## Stop rule" not in text and not (tmp_path / "report" / "seeds_used.png").exists()
    assert "not needed" not in text
