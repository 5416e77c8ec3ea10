"""Stores made by earlier versions: refused in one line that names ``mccard-migrate``, and
migrated by it to this version's layout with every cell's values unchanged, so that the same
command resumes them (fixtures: ``tests/data/stores/PROVENANCE.md``)."""

import errno
import json
import os
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from mccard_dist import tasks
from mccard_dist.cli import report
from mccard_dist.grid import GRID_VERSION, grid_hash
from mccard_dist.store import ResultsStore, open_results
from mccard_dist.store.migrate import main, migrate
from mccard_dist.store.version import StoreVersionError

FIXTURES = Path(__file__).parent / "data" / "stores"
#: the command the fixture stores were made with (store.path aside)
OVERRIDES = ("experiment.methods=[mcc_ard,ls_ard,mcc_l1,huber,mcc_l1_auto]",
             "experiment.seeds.count=2", "data.n_features=20")
PER_CELL = ("status", "r", "rmse", "n_selected", "precision", "recall", "f1", "tp", "fp", "fn",
            "tn", "n_iter", "converged", "chosen_alpha", "error")


@pytest.fixture(params=["1ed758d", "958b2ff"])
def old_store(request, tmp_path):
    path = tmp_path / f"{request.param}.zarr"
    with zipfile.ZipFile(FIXTURES / f"{request.param}.zip") as archive:
        archive.extractall(path)
    return path, request.param


def files(path: Path) -> dict:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*"))
            if p.is_file()}


def rename_on_disk(path, new, old):
    """Rewrite a store as the oldest version wrote it: the variable or dimension ``new`` named
    ``old``."""
    import zarr

    for attrs_file in path.glob("*/.zattrs"):
        attrs = json.loads(attrs_file.read_text())
        dims = attrs.get("_ARRAY_DIMENSIONS", [])
        attrs["_ARRAY_DIMENSIONS"] = [old if d == new else d for d in dims]
        attrs_file.write_text(json.dumps(attrs))
    (path / new).rename(path / old)
    zarr.consolidate_metadata(str(path), zarr_format=2)


def spec_of(smoke_spec, path, commit):
    # the store made before cv.paths fitted every candidate alone, over Huber's grid of then
    extra = ["cv.paths=none", "methods.huber.grid.epsilon=[1.1,1.35,2.0]",
             "methods.huber.grid.alpha=[0.0001,0.01,1.0]"] if commit == "1ed758d" else []
    spec = smoke_spec(*OVERRIDES, *extra, name=path.stem)
    assert spec.store.path == str(path)
    return spec


def test_an_earlier_store_is_refused_in_one_line_naming_the_command(old_store, smoke_spec):
    path, commit = old_store
    before = files(path)
    with pytest.raises(StoreVersionError) as info:
        open_results(path)
    message = str(info.value)
    assert "\n" not in message and f"mccard-migrate {path}" in message
    with pytest.raises(StoreVersionError, match="mccard-migrate"):
        ResultsStore.check_compatible(path, spec_of(smoke_spec, path, commit))
    assert files(path) == before  # refused without a write


@pytest.mark.slow  # migrates a store and resumes its grid
def test_a_migrated_store_keeps_every_value_and_resumes_with_nothing_to_run(
        old_store, smoke_spec, monkeypatch):
    from mccard_dist.runner import run_serial

    path, commit = old_store
    raw = xr.open_zarr(path).load()  # read independently: plain xarray, none of this package
    assert migrate(path) == path  # given by store.path: migrated in place
    new = open_results(path)
    assert json.loads(new.attrs["grid_description"])["grid_version"] == GRID_VERSION
    for name in PER_CELL:
        np.testing.assert_array_equal(new[name].values, raw[name].values, err_msg=name)
    np.testing.assert_array_equal(new["coef"].values, raw["coef"].values)
    if "degenerate" in raw:
        np.testing.assert_array_equal(new["degenerate"].values, raw["degenerate"].values)
    else:  # a store made before the flag: no value for its finished cells
        assert np.isnan(new["degenerate"].values).all()
    assert new.attrs["runs"] == raw.attrs["runs"]
    # each candidate's fold scores, found in the old layout by its grid values
    for model, width, ratio in [("mcc_ard", 0.3, None), ("mcc_ard", 3.0, None),
                                ("mcc_l1", 3.0, 0.2), ("mcc_l1", 0.3, 0.5)]:
        got = new["cv_score"].sel(model=model)
        at = got["kernel_width"] == width
        if ratio is not None:
            at &= got["alpha_ratio"] == ratio
        (c,) = np.flatnonzero(at.values)
        old = raw["cv_score"].sel(model=model)
        if "h" in old.dims:  # the axes layout
            want = old.sel(h=width, alpha_ratio=0.0 if ratio is None else ratio)
        else:
            where = old["kernel_width"] == width
            if ratio is not None:
                where &= old["alpha_ratio"] == ratio
            want = old.isel(candidate=int(np.flatnonzero(where.values)[0]))
        np.testing.assert_array_equal(got.isel(candidate=c).values, want.values)
    # the chosen width of the auto-width method is its own, not a candidate's
    np.testing.assert_array_equal(new["chosen_kernel_width"].sel(model="mcc_ard").values,
                                  raw["chosen_h" if "h" in raw.dims else "chosen_kernel_width"]
                                  .sel(model="mcc_ard").values)
    # the same command finds the grid it was made with, and has nothing to run
    spec = spec_of(smoke_spec, path, commit)
    assert new.attrs["grid_hash"] == grid_hash(spec)
    assert ResultsStore(path, spec).check_and_repair() == []  # every chunk present and sound
    fits = []
    monkeypatch.setattr(tasks, "run_cell", lambda *args, **kw: fits.append(args))
    run_serial(spec)
    assert fits == []


@pytest.mark.slow  # migrates a store and resumes its grid
def test_the_command_migrates_to_a_copy_and_finds_nothing_to_migrate_the_second_time(
        old_store, tmp_path, capsys):
    path, _ = old_store
    before = files(path)
    copy = tmp_path / "copy.zarr"
    main([str(path), "--to", str(copy)])
    assert capsys.readouterr().out.strip() == f"migrated: {copy}"
    assert files(path) == before  # the original kept as it was
    open_results(copy)
    main([str(copy)])  # a script's rerun: done already, not an error
    assert capsys.readouterr().out.strip() == (
        f"{copy}: the store is already of this version; nothing to migrate")
    with pytest.raises(SystemExit, match="exists already"):
        main([str(path), "--to", str(copy)])


@pytest.mark.slow  # migrates a store and resumes its grid
def test_a_store_of_the_oldest_names_migrates_to_the_same_values(tmp_path):
    """The oldest stores named ``model`` ``method``, ``alpha_ratio`` ``lam`` and
    ``chosen_alpha_ratio`` ``chosen_lam``; migrated, they equal the store without those names."""
    stores = {}
    for name in ("plain", "oldest"):
        path = tmp_path / f"{name}.zarr"
        with zipfile.ZipFile(FIXTURES / "1ed758d.zip") as archive:
            archive.extractall(path)
        stores[name] = path
    for new, old in (("model", "method"), ("alpha_ratio", "lam"),
                     ("chosen_alpha_ratio", "chosen_lam")):
        rename_on_disk(stores["oldest"], new, old)
    raw = xr.open_zarr(stores["oldest"])
    assert "method" in raw.dims and "lam" in raw.dims and "chosen_lam" in raw
    timing = ["status_name", "fit_seconds", "cell_seconds"]
    migrated = {name: open_results(migrate(path)).load().drop_vars(timing)
                for name, path in stores.items()}
    migrated["oldest"].attrs.pop("migrated")
    migrated["plain"].attrs.pop("migrated")
    xr.testing.assert_identical(migrated["oldest"], migrated["plain"])


@pytest.mark.slow  # migrates a store and resumes its grid
def test_the_same_command_points_at_an_earlier_store_of_its_grid_instead_of_starting_anew(
        tmp_path):
    """A store named by the grid carries the hash of its version: the plain rerun of its command
    does not find it, and would compute everything again beside it. It is refused, naming the
    store to migrate; migrated, the store takes the name the command finds."""
    from conftest import compose_config

    from mccard_dist.config import from_dictconfig
    from mccard_dist.runner import run_serial
    from mccard_dist.store import store_path

    root = tmp_path / "results"
    spec = from_dictconfig(compose_config(["experiment=smoke", *OVERRIDES, f"store.root={root}",
                                           "run.progress=false"]))
    with zipfile.ZipFile(FIXTURES / "958b2ff.zip") as archive:
        stored = json.loads(archive.read(".zattrs"))["grid_hash"]
        old = root / f"smoke-{stored[:10]}.zarr"
        archive.extractall(old)
    assert old != store_path(spec)
    with pytest.raises(StoreVersionError, match=f"mccard-migrate {old}"):
        run_serial(spec)
    assert sorted(p.name for p in root.iterdir()) == [old.name]  # nothing started beside it
    assert migrate(old) == store_path(spec)
    assert run_serial(spec).n_pending_before == 0
    assert migrate(old) == store_path(spec)  # the rerun finds where it went: nothing to do


# --- a migration stopped halfway (killed, power lost), a full disk, a read-only original ---


class Killed(BaseException):
    """The process killed at this point: nothing after it runs (no ``except Exception``)."""


def kill_at(monkeypatch, rename=None, rmtree=None):
    """Kill the first ``Path.rename`` whose source's name ends with ``rename``, or the first
    ``shutil.rmtree`` of a folder whose name ends with ``rmtree`` (after removing a few of its
    files, as a removal stopped halfway)."""
    real_rename, real_rmtree, armed = Path.rename, shutil.rmtree, [True]

    def fake_rename(self, target):
        if armed[0] and rename is not None and self.name.endswith(rename):
            armed[0] = False
            raise Killed(f"killed renaming {self}")
        return real_rename(self, target)

    def fake_rmtree(path, *args, **kwargs):
        if armed[0] and rmtree is not None and Path(path).name.endswith(rmtree) and Path(
                path).exists():
            armed[0] = False
            for file in [f for f in sorted(Path(path).rglob("*")) if f.is_file()][:20]:
                file.unlink()
            raise Killed(f"killed removing {path}")
        return real_rmtree(path, *args, **kwargs)

    monkeypatch.setattr(Path, "rename", fake_rename)
    monkeypatch.setattr(shutil, "rmtree", fake_rmtree)


def beside(path: Path) -> list[str]:
    """The names in the store's folder that begin with its name (lock files aside)."""
    return sorted(p.name for p in path.parent.iterdir()
                  if p.name.startswith(path.name) and not p.name.endswith(".lock"))


def extract(commit, path):
    with zipfile.ZipFile(FIXTURES / f"{commit}.zip") as archive:
        archive.extractall(path)
    return path


@pytest.mark.slow  # migrates a store, then reads or resumes it
@pytest.mark.parametrize("command", ["mccard-migrate", "mccard-report", "open_results",
                                     "mccard-run"])
def test_a_migration_killed_between_its_renames_is_finished_by_the_next_command(
        command, tmp_path, smoke_spec, monkeypatch, capsys):
    """Killed after putting the original aside and before the checked copy takes its place,
    there is no store at the path: the next command on it finishes the migration."""
    from mccard_dist.runner import run_serial

    path = extract("958b2ff", tmp_path / "958b2ff.zarr")
    raw = xr.open_zarr(path).load()
    kill_at(monkeypatch, rename=".migrating")
    with pytest.raises(Killed):
        migrate(path)
    assert beside(path) == [f"{path.name}.migrating", f"{path.name}.premigration"]
    monkeypatch.undo()
    if command == "mccard-migrate":
        main([str(path)])
        assert "nothing to migrate" in capsys.readouterr().out
    elif command == "mccard-report":
        report([str(path), "--pair", "mcc_ard,ls_ard"])
    elif command == "open_results":
        open_results(path)
    else:  # the same command: nothing computed again
        fits = []
        monkeypatch.setattr(tasks, "run_cell", lambda *args, **kw: fits.append(args))
        assert run_serial(spec_of(smoke_spec, path, "958b2ff")).n_pending_before == 0
        assert fits == []
    assert beside(path) == [path.name]
    new = open_results(path)
    assert json.loads(new.attrs["grid_description"])["grid_version"] == GRID_VERSION
    for name in PER_CELL:
        np.testing.assert_array_equal(new[name].values, raw[name].values, err_msg=name)
    np.testing.assert_array_equal(new["coef"].values, raw["coef"].values)


@pytest.mark.slow  # migrates a store
def test_a_copy_left_incomplete_by_a_killed_migration_is_discarded_and_the_original_restored(
        tmp_path, monkeypatch):
    path = extract("958b2ff", tmp_path / "958b2ff.zarr")
    before = files(path)
    kill_at(monkeypatch, rename=".migrating")
    with pytest.raises(Killed):
        migrate(path)
    monkeypatch.undo()
    staging = path.with_name(path.name + ".migrating")
    for chunk in (staging / "r").iterdir():  # the copy's values of r lost (say, by the disk)
        if not chunk.name.startswith("."):
            chunk.unlink()
    with pytest.raises(StoreVersionError, match="mccard-migrate"):
        open_results(path)  # the original is back, as it was, and still to migrate
    assert beside(path) == [path.name]
    assert files(path) == before


@pytest.mark.slow  # migrates a store
def test_a_migration_killed_while_removing_the_original_leaves_nothing_half_removed(
        tmp_path, monkeypatch):
    path = extract("958b2ff", tmp_path / "958b2ff.zarr")
    kill_at(monkeypatch, rmtree=("premigration", "deleting"))
    with pytest.raises(Killed):
        migrate(path)
    monkeypatch.undo()
    open_results(path)  # the migrated store, and what was being removed is removed
    assert beside(path) == [path.name]


@pytest.mark.slow  # migrates a store and resumes its grid
@pytest.mark.parametrize("kill", [dict(rename=".zarr"), dict(rmtree=(".zarr", ".deleting"))],
                         ids=["before-removing", "while-removing"])
def test_a_store_renamed_after_its_grid_and_killed_before_the_original_is_gone_is_finished(
        kill, tmp_path, monkeypatch, capsys):
    """Named by its grid, the migrated copy takes the new name, then the original is removed:
    killed in between, the rerun of the migration or of the same command finishes it."""
    from conftest import compose_config

    from mccard_dist.config import from_dictconfig
    from mccard_dist.runner import run_serial
    from mccard_dist.store import store_path

    root = tmp_path / "results"
    spec = from_dictconfig(compose_config(["experiment=smoke", *OVERRIDES, f"store.root={root}",
                                           "run.progress=false"]))
    stored = json.loads(zipfile.ZipFile(FIXTURES / "958b2ff.zip").read(".zattrs"))["grid_hash"]
    old = extract("958b2ff", root / f"smoke-{stored[:10]}.zarr")
    new = store_path(spec)
    kill_at(monkeypatch, **kill)
    with pytest.raises(Killed):
        migrate(old)
    monkeypatch.undo()
    assert new.is_dir()
    if "rename" in kill:  # the original whole beside its migrated copy: the rerun removes it
        main([str(old)])
        assert capsys.readouterr().out.strip() == f"migrated: {new}"
    assert run_serial(spec).n_pending_before == 0
    assert sorted(p.name for p in root.iterdir()) == [new.name]


@pytest.mark.slow  # migrates a store
def test_a_full_disk_is_one_line_and_leaves_no_copy_behind(old_store, monkeypatch):
    from mccard_dist.store import writer

    path, _ = old_store
    before = files(path)

    def full(path):
        (Path(path) / ".zmetadata").write_text("{")  # part of the copy is on the disk
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(writer, "consolidate", full)
    with pytest.raises(SystemExit) as info:
        main([str(path)])
    message = str(info.value.code)
    assert "\n" not in message and "No space left on device" in message
    assert "store is kept as it was" in message
    assert beside(path) == [path.name]  # the partial copy removed: it would fill the disk
    assert files(path) == before


@pytest.mark.slow  # migrates a store
def test_a_copy_is_made_from_an_original_this_process_cannot_write(tmp_path, monkeypatch,
                                                                   capsys):
    """``--to`` only reads the original: a store in a read-only place migrates to a copy."""
    source = extract("958b2ff", tmp_path / "readonly" / "958b2ff.zarr")
    before = files(source)
    real_open = os.open

    def read_only(file, flags, *args, **kwargs):
        if flags & os.O_CREAT and str(Path(file).resolve()).startswith(str(source.parent)):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(file))
        return real_open(file, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", read_only)
    copy = tmp_path / "copy.zarr"
    main([str(source), "--to", str(copy)])
    assert capsys.readouterr().out.strip() == f"migrated: {copy}"
    assert files(source) == before
    assert sorted(p.name for p in source.parent.iterdir()) == [source.name]
    open_results(copy)
