"""A store with lost or damaged chunks: found on resume, its cells recomputed, the results whole."""

import shutil

import numpy as np
import pytest
import xarray as xr

from mccard_dist.metrics import METRICS
from mccard_dist.records import SCALARS
from mccard_dist.runner import run_serial
from mccard_dist.store import ResultsStore, open_results

pytestmark = pytest.mark.slow  # runs small grids into stores

CHECKED = ["status", *(m.name for m in METRICS), *SCALARS, "cv_score", "coef"]
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
    assert any(p.startswith("error: chunk 0.0.0.0 is missing; rebuilt") for p in problems)
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


#: what the refusal calls each thing put where a chunk file belongs
NOT_A_FILE = {"folder": "a folder", "link that loops": "a symbolic link that loops",
              "FIFO": "a FIFO", "link": "a symbolic link"}


def _not_a_file(victim, kind, elsewhere):
    """Put ``kind`` where the chunk file ``victim`` was."""
    import os

    if kind == "link":  # to a whole copy of the chunk outside the store
        victim.rename(elsewhere)
        victim.symlink_to(elsewhere)
        return
    victim.unlink()
    if kind == "folder":
        victim.mkdir()
        (victim / "stray").write_bytes(b"x")
    elif kind == "link that loops":
        victim.symlink_to(victim.name)
    else:
        os.mkfifo(victim)


@pytest.mark.timeout(120)  # reading a FIFO blocks
@pytest.mark.parametrize("name, chunk, kind, recomputed", [
    ("r", "1.0.0.0", "folder", 4),  # zarr reads it as "no chunk": done cells as NaN
    ("rmse", "0.0.0.0", "folder", 4),  # a value every done cell has
    ("coef", "0.0.0.0.0", "folder", 2),
    ("r", "1.0.0.0", "link that loops", 4),
    ("cv_score", "0.0.0.0.0.0", "FIFO", 2),
    ("n_selected", "1.0.0.0", "link", 4),
    ("status", "0.0.0.0", "folder", 0),  # rebuilt from cell_seconds and error
    ("seed", "0", "folder", 0),  # rewritten from the config
])
def test_anything_but_a_file_where_a_chunk_belongs_is_refused_and_repaired(
        reference, tmp_path, name, chunk, kind, recomputed):
    from mccard_dist.store import StoreDamagedError

    spec, path = copy_of(reference, tmp_path)
    victim = path / name / chunk
    _not_a_file(victim, kind, tmp_path / "elsewhere")
    with pytest.raises(StoreDamagedError) as refused:
        open_results(path)
    message = str(refused.value)
    assert (f"{name}: chunk {chunk} " in message or f"chunk {name}/{chunk} " in message), message
    assert f"is damaged ({NOT_A_FILE[kind]}" in message and "rerun" in message
    assert "\n" not in message
    assert run_serial(spec).n_pending_before == recomputed
    assert victim.is_file() and not victim.is_symlink()
    assert_same(path, reference[1])
    assert run_serial(spec).n_pending_before == 0
    open_results(path)


def test_a_failed_cell_without_an_error_message_rebuilds_the_status_chunk(reference, tmp_path):
    """A whole status chunk that marks done cells failed (copied from elsewhere, written by
    hand) disagrees with ``error``: a failed cell always has a message."""
    import zarr

    from mccard_dist.store import StoreDamagedError

    spec, path = copy_of(reference, tmp_path)
    group = zarr.open_group(str(path), mode="r+")
    status = group["status"][...]
    status[1] = 2  # every cell of ls_ard, each with an empty error
    with zarr.config.set({"array.write_empty_chunks": True}):
        group["status"][...] = status
    with pytest.raises(StoreDamagedError,
                       match=r"status: chunk 1\.0\.0\.0 marks 4 cell\(s\) failed that have no "
                             "error message; rerun"):
        open_results(path)
    assert run_serial(spec).n_pending_before == 0  # the cells' results are all there
    assert_same(path, reference[1])


def test_a_failed_cell_with_its_message_is_no_damage(reference, tmp_path):
    import zarr

    spec, path = copy_of(reference, tmp_path)
    group = zarr.open_group(str(path), mode="r+")
    status, error = group["status"][...], group["error"][...]
    status[1, 0, 0, 0], error[1, 0, 0, 0] = 2, "ValueError: a fit that failed"
    with zarr.config.set({"array.write_empty_chunks": True}):
        group["error"][...] = error
        group["status"][...] = status
    assert ResultsStore(path, spec).check_and_repair() == []
    assert open_results(path)["status_name"].values[1, 0, 0, 0] == "failed"


def _break_json(file):
    text = file.read_text()
    file.write_text(text[: len(text) // 2])  # cut short, as a full disk or a killed copy leaves it


@pytest.mark.parametrize("name, how", [
    (".zmetadata", "it is rebuilt from the arrays' metadata"),
    (".zattrs", "it is rewritten from its copy in .zmetadata"),
    (".zgroup", "it is rewritten from its copy in .zmetadata"),
    ("r/.zattrs", "it is rewritten from its copy in .zmetadata"),
    ("coef/.zarray", "it is rewritten from its copy in .zmetadata"),
])
def test_an_unreadable_metadata_file_is_refused_and_rewritten_from_its_copy(
        reference, tmp_path, name, how):
    from mccard_dist.store import StoreDamagedError

    spec, path = copy_of(reference, tmp_path)
    _break_json(path / name)
    with pytest.raises(StoreDamagedError) as refused:
        open_results(path)
    assert str(refused.value) == (f"store {path}: "
                                  + ("its consolidated metadata (.zmetadata)"
                                     if name == ".zmetadata" else name)
                                  + f" is damaged (not valid JSON); rerun the experiment's "
                                  f"command to repair it ({how})")
    assert run_serial(spec).n_pending_before == 0  # every cell kept
    assert_same(path, reference[1])
    # readable from its files alone, as from the consolidated copy
    whole = xr.open_zarr(reference[1], consolidated=False)
    disk = xr.open_zarr(path, consolidated=False)
    for variable in ("r", "coef", "status"):
        np.testing.assert_array_equal(disk[variable].values, whole[variable].values)
        assert disk[variable].dims == whole[variable].dims
    open_results(path)


def test_metadata_with_no_intact_copy_is_refused_and_left_as_it_is(reference, tmp_path):
    import hashlib

    from mccard_dist.store import StoreDamagedError

    spec, path = copy_of(reference, tmp_path)
    _break_json(path / ".zattrs")
    _break_json(path / ".zmetadata")

    def digest():
        return {p.relative_to(path): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(path.rglob("*")) if p.is_file() and p.name != ".lock"}

    before = digest()
    for attempt in (lambda: open_results(path), lambda: run_serial(spec)):
        with pytest.raises(StoreDamagedError, match=r"\.zmetadata, \.zattrs are missing or "
                                                    r"damaged, with no intact copy of them; the "
                                                    r"store cannot be repaired: move it away"):
            attempt()
    assert digest() == before
