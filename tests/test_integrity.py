"""A store with lost or damaged chunks: found on resume, its cells recomputed, the results whole."""

import shutil

import numpy as np
import pytest
import xarray as xr

from mccard_dist.records import SCALARS
from mccard_dist.runner import run_serial
from mccard_dist.store import ResultsStore, open_results

pytestmark = pytest.mark.slow  # runs small grids into stores

CHECKED = ["status", *SCALARS, "cv_score", "coef"]
VOLATILE = {"fit_seconds", "cell_seconds"}


@pytest.fixture(scope="module")
def reference(tmp_path_factory, compose):
    from mccard_dist.config import from_dictconfig

    root = tmp_path_factory.mktemp("integrity")

    def spec_at(path):
        return from_dictconfig(compose(["experiment=smoke", "data.n_features=40",
                                        "experiment.methods=[mcc_ard,ls_ard]",
                                        f"store.path={path}", "run.progress=false"]))

    path = root / "reference.zarr"
    run_serial(spec_at(path))
    return spec_at, path


def copy_of(reference, tmp_path):
    spec_at, path = reference
    copy = tmp_path / "store.zarr"
    shutil.copytree(path, copy)
    return spec_at(copy), copy


def assert_same(path, reference_path):
    a, b = xr.open_zarr(path), xr.open_zarr(reference_path)
    for name in CHECKED:
        if name not in VOLATILE:
            np.testing.assert_array_equal(a[name].values, b[name].values, err_msg=name)


def test_a_whole_store_has_nothing_to_repair(reference, tmp_path):
    spec, path = copy_of(reference, tmp_path)
    assert ResultsStore(path, spec).check_and_repair() == []
    assert ResultsStore(path, spec).check_and_repair(full=True) == []


@pytest.mark.parametrize("name", ["r", "chosen_kernel_width", "n_selected", "coef", "cv_score"])
def test_a_deleted_chunk_is_recomputed(reference, tmp_path, name):
    spec, path = copy_of(reference, tmp_path)
    victim = sorted(p for p in (path / name).iterdir() if not p.name.startswith("."))[0]
    victim.unlink()
    report = run_serial(spec)
    assert report.n_pending_before > 0  # not "nothing to run"
    assert_same(path, reference[1])


def test_a_truncated_chunk_is_recomputed_and_never_crashes_reading(reference, tmp_path):
    spec, path = copy_of(reference, tmp_path)
    victim = path / "rmse" / "0.0.0.0"
    victim.write_bytes(victim.read_bytes()[:7])
    with pytest.raises(Exception, match="rmse"):
        open_results(path)  # names the variable, and how to repair
    report = run_serial(spec)
    assert report.n_pending_before == 4  # the chunk's cells: one method's psi x seed slab
    assert_same(path, reference[1])
    open_results(path)


def test_a_lost_status_chunk_is_rebuilt_not_recomputed(reference, tmp_path):
    spec, path = copy_of(reference, tmp_path)
    (path / "status" / "0.0.0.0").unlink()
    report = run_serial(spec)
    assert report.n_pending_before == 0
    assert_same(path, reference[1])


def test_missing_consolidated_metadata_is_rebuilt(reference, tmp_path):
    from mccard_dist.store import StoreDamagedError

    spec, path = copy_of(reference, tmp_path)
    (path / ".zmetadata").unlink()
    with pytest.raises(StoreDamagedError, match=r"\(\.zmetadata\) is missing; rerun"):
        open_results(path)
    report = run_serial(spec)
    assert report.n_pending_before == 0
    assert (path / ".zmetadata").exists()
    assert_same(path, reference[1])


def test_a_truncated_coef_chunk_is_found_by_the_quick_check(reference, tmp_path):
    """The quick check reads each large chunk's header, not its body: a chunk cut short is
    found without decompressing it."""
    spec, path = copy_of(reference, tmp_path)
    victim = sorted(p for p in (path / "coef").iterdir() if not p.name.startswith("."))[0]
    victim.write_bytes(victim.read_bytes()[:-9])
    problems = ResultsStore(path, spec).check_and_repair(full=False)
    assert any(p.startswith("coef: chunk") and "is damaged" in p for p in problems)
    assert any("pending again" in p for p in problems)
    assert not victim.exists()
    run_serial(spec)
    assert_same(path, reference[1])


def test_a_coef_chunk_damaged_inside_needs_the_full_check(reference, tmp_path):
    """Bytes overwritten inside a chunk, its length and header intact: only decompressing
    (store.verify=full) finds it."""
    spec, path = copy_of(reference, tmp_path)
    victim = sorted(p for p in (path / "coef").iterdir() if not p.name.startswith("."))[0]
    data = bytearray(victim.read_bytes())
    data[16:] = bytes(len(data) - 16)
    victim.write_bytes(bytes(data))
    store = ResultsStore(path, spec)
    assert store.check_and_repair(full=False) == []
    problems = store.check_and_repair(full=True)
    assert any(p.startswith("coef: chunk") and "cannot be read" in p for p in problems)
    run_serial(spec)
    assert_same(path, reference[1])


def test_a_small_chunk_cut_in_half_is_refused_by_readers_never_decoded(reference, tmp_path):
    """Blosc decodes a small chunk cut in half without an error, from whatever memory follows
    it: the length is checked against its header before any reader decodes it, and the rerun
    recomputes its cells."""
    import mccard_dist
    from mccard_dist.store import StoreDamagedError
    from mccard_dist.store.integrity import open_dataset

    spec, path = copy_of(reference, tmp_path)
    victim = path / "r" / "1.0.0.0"
    data = victim.read_bytes()
    victim.write_bytes(data[: len(data) // 2])
    with pytest.raises(StoreDamagedError, match=r"r: chunk 1\.0\.0\.0 \(ls_ard\) is damaged"):
        mccard_dist.open_results(path)
    with pytest.raises(StoreDamagedError, match="rerun"):
        open_dataset(path)["r"].values  # a lazy read through the store, too
    report = run_serial(spec)
    assert report.n_pending_before == 4
    assert_same(path, reference[1])


@pytest.mark.parametrize("name", ["seed", "psi", "tau", "model", "feature", "candidate",
                                  "kernel_width", "fold"])
def test_a_lost_coordinate_chunk_is_refused_and_rewritten(reference, tmp_path, name):
    from mccard_dist.store import StoreDamagedError

    spec, path = copy_of(reference, tmp_path)
    (path / name / "0").unlink() if (path / name / "0").exists() else (path / name / "0.0").unlink()
    with pytest.raises(StoreDamagedError, match=f"coordinate {name}: chunk .* is missing"):
        open_results(path)
    problems = ResultsStore(path, spec).check_and_repair()
    assert problems == [f"coordinate {name}: chunk {'0.0' if name == 'kernel_width' else '0'} "
                        "is missing; rewritten from the config"]
    assert run_serial(spec).n_pending_before == 0
    assert_same(path, reference[1])
    for coordinate in ("seed", "psi", "tau", "model", "kernel_width"):
        np.testing.assert_array_equal(open_results(path)[coordinate].values,
                                      open_results(reference[1])[coordinate].values)


def test_a_coordinate_with_other_values_is_refused_and_rewritten(reference, tmp_path):
    """A seed chunk replaced by a whole chunk of other seeds (a copy gone wrong) reads fine but
    labels the cells wrongly: compared with the stored config."""
    import zarr

    from mccard_dist.store import StoreDamagedError

    spec, path = copy_of(reference, tmp_path)
    zarr.open_group(str(path), mode="r+")["seed"][...] = [7, 8]
    with pytest.raises(StoreDamagedError, match="coordinate seed: holds other values"):
        open_results(path)
    assert run_serial(spec).n_pending_before == 0
    assert list(open_results(path)["seed"].values) == [0, 1]


def test_a_lost_per_cell_chunk_is_refused_by_readers(reference, tmp_path):
    from mccard_dist.store import StoreDamagedError

    spec, path = copy_of(reference, tmp_path)
    (path / "r" / "0.0.0.0").unlink()
    with pytest.raises(StoreDamagedError, match=r"r: chunk 0\.0\.0\.0 \(mcc_ard\) is missing"):
        open_results(path)
    assert run_serial(spec).n_pending_before == 4
    assert_same(path, reference[1])


def test_every_array_of_a_new_store_is_checked_by_its_blosc_header(reference):
    """The length check applies to Blosc chunks: every array of a store is Blosc-compressed
    and every chunk file's length is the one its header gives."""
    import json

    from mccard_dist.store.integrity import blosc_size_matches

    _, path = reference
    arrays = [p.parent for p in path.glob("*/.zarray")]
    assert len(arrays) > 20
    for folder in arrays:
        assert json.loads((folder / ".zarray").read_text())["compressor"]["id"] == "blosc"
        for chunk in (p for p in folder.iterdir() if not p.name.startswith(".")):
            assert blosc_size_matches(chunk.read_bytes()), chunk


def test_done_cells_without_their_values_are_reported_by_method_and_recomputed(reference,
                                                                                tmp_path):
    import zarr

    spec, path = copy_of(reference, tmp_path)
    with zarr.config.set({"array.write_empty_chunks": True}):
        zarr.open_group(str(path), mode="r+")["rmse"][1, 0, 0, 0] = np.nan  # ls_ard, one cell
    problems = ResultsStore(path, spec).check_and_repair()
    assert "rmse: 1 done cell(s) of ls_ard have no value" in problems
    assert "1 finished cell(s) (ls_ard 1) are pending again and will be recomputed" in problems
    assert run_serial(spec).n_pending_before == 1
    assert_same(path, reference[1])


def test_a_lost_error_chunk_is_rebuilt_not_recomputed(reference, tmp_path):
    spec, path = copy_of(reference, tmp_path)
    (path / "error" / "0.0.0.0").unlink()  # one chunk for the whole grid
    problems = ResultsStore(path, spec).check_and_repair()
    assert any(p.startswith("error: chunk 0.0.0.0 was missing") for p in problems)
    assert run_serial(spec).n_pending_before == 0
    assert_same(path, reference[1])


def test_a_file_system_error_is_raised_and_deletes_nothing(reference, tmp_path, monkeypatch):
    import zarr

    spec, path = copy_of(reference, tmp_path)
    before = sorted(p.relative_to(path) for p in path.rglob("*"))
    real = zarr.Array.__getitem__

    def flaky(self, selection):
        if self.path == "rmse":
            raise OSError(5, "Input/output error")
        return real(self, selection)

    monkeypatch.setattr(zarr.Array, "__getitem__", flaky)
    with pytest.raises(OSError, match="Input/output error"):
        ResultsStore(path, spec).check_and_repair()
    monkeypatch.undo()
    assert sorted(p.relative_to(path) for p in path.rglob("*")) == before
    assert ResultsStore(path, spec).check_and_repair() == []


@pytest.mark.parametrize("name", ["r", "status", "error", "cell_seconds", "cv_score", "coef"])
def test_a_deleted_variable_folder_is_recreated_and_what_it_held_recomputed(reference, tmp_path,
                                                                            name):
    from mccard_dist.errors import UsageError

    spec, path = copy_of(reference, tmp_path)
    shutil.rmtree(path / name)
    with pytest.raises(UsageError, match="rerun"):
        open_results(path)  # one line that says how to repair, not a crash
    report = run_serial(spec)
    # status and error are rebuilt from what the other variables hold; the rest is recomputed
    # (cv_score: the cells of mcc_ard, the method with CV)
    assert report.n_pending_before == {"status": 0, "error": 0, "cv_score": 4}.get(name, 8)
    assert_same(path, reference[1])
    assert name in open_results(path).data_vars


def test_a_deleted_coordinate_is_recreated(reference, tmp_path):
    spec, path = copy_of(reference, tmp_path)
    shutil.rmtree(path / "psi")
    assert run_serial(spec).n_pending_before == 0
    assert_same(path, reference[1])
    np.testing.assert_array_equal(open_results(path)["psi"].values,
                                  open_results(reference[1])["psi"].values)


def test_a_coordinate_lost_with_its_metadata_keeps_this_versions_name(reference, tmp_path):
    import zarr

    spec, path = copy_of(reference, tmp_path)
    shutil.rmtree(path / "model")
    zarr.consolidate_metadata(str(path), zarr_format=2)  # the metadata forgets it too
    assert run_serial(spec).n_pending_before == 0
    assert not (path / "method").exists()
    assert list(open_results(path)["model"].values) == ["mcc_ard", "ls_ard"]



def test_the_report_refuses_a_damaged_cv_score_in_one_line(reference, tmp_path, capsys):
    from mccard_dist.cli import report

    _, path = copy_of(reference, tmp_path)
    victim = sorted(p for p in (path / "cv_score").iterdir() if not p.name.startswith("."))[0]
    victim.write_bytes(victim.read_bytes()[:-5])
    with pytest.raises(SystemExit) as stop:
        report([str(path), "--out", str(tmp_path / "report")])
    message = str(stop.value)
    assert message.startswith(f"error: store {path}: cv_score: chunk ") and "rerun" in message
    assert "bug" not in message and "Traceback" not in capsys.readouterr().err
