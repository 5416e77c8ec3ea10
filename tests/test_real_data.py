"""Real covariates: the user's data file (formats, checks, content hash, shipping to workers) and
scikit-learn's diabetes data."""

import os

import numpy as np
import pandas as pd
import pytest

from mccard_dist.config import ConfigError, from_dictconfig
from mccard_dist.data import DataFileError, load_table, make_split_data
from mccard_dist.data.real import diabetes_source
from mccard_dist.errors import UsageError
from mccard_dist.grid import grid_hash
from mccard_dist.metrics import evaluate


def table(n=60, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    coef = np.zeros(d)
    coef[:2] = [1.5, -2.0]
    y = X @ coef + 0.1 * rng.standard_normal(n)
    return X, y, coef


def write(path, X, y, **extra):
    """``X, y`` in the format of ``path``'s suffix (csv/parquet: target column ``target``)."""
    suffix = path.suffix
    if suffix == ".npz":
        np.savez(path, X=X, y=y, **extra)
    elif suffix in (".csv", ".parquet"):
        frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
        frame["target"] = y
        frame.to_csv(path, index=False) if suffix == ".csv" else frame.to_parquet(path)
    else:
        import zarr

        group = zarr.open_group(str(path), mode="w")
        for key, value in dict(X=X, y=y, **extra).items():
            group.create_array(key, data=value)
    return path


@pytest.mark.parametrize("suffix", [".npz", ".csv", ".parquet", ".zarr"])
def test_each_format_round_trips_to_the_same_arrays_and_hash(tmp_path, suffix):
    X, y, _ = table()
    path = write(tmp_path / f"d{suffix}", X, y)
    got = load_table(path, "target" if suffix in (".csv", ".parquet") else None)
    np.testing.assert_array_equal(got.X, X)
    np.testing.assert_array_equal(got.y, y)
    assert got.X_test is None and got.coef_true is None
    reference = load_table(write(tmp_path / "ref.npz", X, y))
    assert got.sha256 == reference.sha256  # the numbers, not the format, identify the data
    if suffix == ".csv":
        assert got.feature_names == tuple(f"f{j}" for j in range(5))


def test_a_test_set_and_true_coefficients_are_used_when_given(tmp_path):
    X, y, coef = table(80)
    path = write(tmp_path / "d.npz", X[:50], y[:50], X_test=X[50:], y_test=y[50:],
                 coef_true=coef)
    source = load_table(path)
    d = make_split_data(source, 3, 0.0, 5.0, standardize=False)
    np.testing.assert_array_equal(d.X_train, X[:50])
    np.testing.assert_array_equal(d.y_test, y[50:])
    assert d.train_index is None and d.n_train == 50 and d.n_test == 30
    scores = evaluate(np.r_[1.0, 0, 0, 0, 1.0], 0.0, d.X_test, d.y_test, d.coef_true)
    assert (scores["tp"], scores["fp"], scores["fn"]) == (1, 1, 1)


def test_a_split_is_fixed_per_seed_and_outliers_nest_across_psi():
    X, y, _ = table(100)
    from mccard_dist.data import TableSource

    source = TableSource(X, y)
    clean = make_split_data(source, 7, 0.0, 5.0, n_train=70, standardize=False)
    # psi = 0: the data as they are, on a random split that covers every row once
    np.testing.assert_array_equal(clean.y_train, y[clean.train_index])
    assert sorted(np.r_[clean.train_index, clean.test_index]) == list(range(100))
    low = make_split_data(source, 7, 0.2, 5.0, n_train=70, standardize=False)
    high = make_split_data(source, 7, 0.6, 2.0, n_train=70, standardize=False)
    np.testing.assert_array_equal(low.train_index, clean.train_index)
    np.testing.assert_array_equal(high.X_train, clean.X_train)
    assert not (low.outlier_mask & ~high.outlier_mask).any()  # the outliers at 0.2 are among 0.6's
    assert 0.1 < low.outlier_mask.mean() < 0.35
    # outliers are added to the clean targets; the other rows keep theirs
    np.testing.assert_array_equal(low.y_train[~low.outlier_mask], clean.y_train[~low.outlier_mask])
    assert np.all(low.y_train[low.outlier_mask] != clean.y_train[low.outlier_mask])
    other = make_split_data(source, 8, 0.0, 5.0, n_train=70, standardize=False)
    assert not np.array_equal(other.train_index, clean.train_index)


def test_standardizing_uses_the_training_split_statistics_only():
    X, y, _ = table(100)
    X = X * [1, 10, 100, 0.1, 1] + [0, 5, -3, 0, 1e3]
    from mccard_dist.data import TableSource

    d = make_split_data(TableSource(X, 3 * y + 40), 1, 0.5, 2.0, n_train=70, standardize=True)
    np.testing.assert_allclose(d.X_train.mean(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(d.X_train.std(axis=0), 1, rtol=1e-12)
    raw_train = X[d.train_index]
    expected = (X[d.test_index] - raw_train.mean(axis=0)) / raw_train.std(axis=0)
    np.testing.assert_allclose(d.X_test, expected, rtol=1e-12)
    clean = (3 * y + 40)[d.train_index]
    np.testing.assert_allclose(d.y_train[~d.outlier_mask],
                               ((clean - clean.mean()) / clean.std())[~d.outlier_mask])


def test_unknown_true_coefficients_give_nan_selection_scores_but_a_count():
    scores = evaluate([1.0, 0.0, 2.0], 0.0, np.eye(3), [1.0, 0.0, 2.0], None)
    assert scores["n_selected"] == 2 and scores["r"] == pytest.approx(1.0)
    assert all(np.isnan(scores[k]) for k in ("tp", "fp", "precision", "recall", "f1"))


def test_the_diabetes_source_adds_seeded_noise_features_to_sklearns_data():
    from sklearn.datasets import load_diabetes

    raw = load_diabetes(scaled=False)
    a, b = diabetes_source(490, 0), diabetes_source(490, 1)
    assert a.X.shape == (442, 500)
    np.testing.assert_array_equal(a.X[:, :10], raw.data)
    np.testing.assert_array_equal(a.y, raw.target)
    assert not np.array_equal(a.X[:, 10:], b.X[:, 10:])
    noise = a.X[:, 10:].ravel()
    assert abs(noise.mean()) < 0.01 and abs(noise.std() - 1) < 0.01


# --- through the config: checks before anything starts ------------------------------------------

def spec_for(compose, path, *overrides):
    return from_dictconfig(compose(["experiment=smoke", "data=file", f"data.path={path}",
                                    "experiment.methods=[mcc_ard,ls_ard]", *overrides]))


def bad_files(tmp_path):
    X, y, _ = table()
    cases = []
    cases.append((tmp_path / "nowhere.csv", [], "data.path: no such file"))
    (tmp_path / "d.txt").write_text("1,2\n")
    cases.append((tmp_path / "d.txt", [], "has an unknown format; use a .npz, .csv or .parquet"))
    Xn = X.copy()
    Xn[4, 2] = np.nan
    cases.append((write(tmp_path / "nan.csv", Xn, y), ["data.target=target"],
                  "has 1 NaN or infinite value(s) (first at row 4, column f2)"))
    yi = y.copy()
    yi[3] = np.inf
    cases.append((write(tmp_path / "inf.npz", X, yi), [], "y of inf.npz has 1 NaN or infinite"))
    frame = pd.DataFrame(X, columns=list("abcde"))
    frame["target"] = y
    frame["group"] = ["x", "y"] * 30
    frame.to_csv(tmp_path / "text.csv", index=False)
    cases.append((tmp_path / "text.csv", ["data.target=target"], "non-numeric column(s) group"))
    cases.append((write(tmp_path / "short.npz", X, y[:-1]), [],
                  "y of short.npz has 59 values but X has 60 rows"))
    cases.append((write(tmp_path / "t.csv", X, y), [], "data.target: set the target column"))
    cases.append((tmp_path / "t.csv", ["data.target=price"], "has no column 'price'"))
    cases.append((write(tmp_path / "few.npz", X[:5], y[:5]), ["cv.n_folds=2"],
                  "cv.n_folds: leaves fewer than 3 training samples per fold with the 3 training "
                  "rows"))
    cases.append((tmp_path / "few.npz", ["cv.n_folds=4"],
                  "cv.n_folds: must be <= the 3 training rows"))
    cases.append((write(tmp_path / "three.npz", X[:3], y[:3]), [],
                  "three.npz has 3 rows: a random train/test split needs at least 4"))
    cases.append((write(tmp_path / "half.npz", X, y, X_test=X), [], "only one of X_test and "
                                                                      "y_test"))
    cases.append((write(tmp_path / "typo.npz", X, y, x_test=X), [], "also has x_test"))
    np.savez(tmp_path / "noy.npz", X=X)
    cases.append((tmp_path / "noy.npz", [], "noy.npz has no y (arrays: X)"))
    cases.append((write(tmp_path / "ok.npz", X, y), ["+data.sha256=" + "0" * 64],
                  "data.sha256: "))
    cases.append((tmp_path / "ok.npz", ["+data.rho=0.5"], "data.rho: unknown key"))
    cases.append((write(tmp_path / "flat.npz", X, np.full(len(y), 2.5)), [],
                  "y of flat.npz is constant (2.5 in every row)"))
    cases.append((write(tmp_path / "flattest.npz", X, y, X_test=X[:5], y_test=np.zeros(5)), [],
                  "y_test of flattest.npz is constant"))
    return cases


@pytest.mark.slow  # keeps the fast subset under its 30 s
def test_every_bad_file_is_refused_with_one_line_naming_the_problem(compose, tmp_path):
    from omegaconf import OmegaConf

    from mccard_dist.config import spec_from_dict

    base = OmegaConf.to_container(compose(["experiment=smoke", "data=file", "data.path=x.csv",
                                           "experiment.methods=[mcc_ard,ls_ard]",
                                           f"store.path={tmp_path}/s.zarr"]))
    for path, overrides, message in bad_files(tmp_path):
        config = {**base, "data": dict(base["data"], path=str(path)), "cv": dict(base["cv"])}
        for override in overrides:  # "[+]section.key=value", as on the command line
            key, value = override.lstrip("+").split("=", 1)
            section, name = key.split(".")
            config[section][name] = int(value) if section == "cv" else value
        with pytest.raises(UsageError) as info:
            spec_from_dict(config).check_data()  # what the runner does before any store
        text = str(info.value)
        assert message in text, (path.name, text)
        assert "\n" not in text and text.startswith(("data.", "cv.")), text
        assert isinstance(info.value, (ConfigError, DataFileError))
    assert not (tmp_path / "s.zarr").exists()


def test_the_content_hash_enters_the_grid_hash_and_the_location_does_not(compose, tmp_path):
    X, y, _ = table()
    a = spec_for(compose, write(tmp_path / "a.npz", X, y))
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    b = spec_for(compose, write(moved / "b.npz", X, y))
    assert grid_hash(a) == grid_hash(b)
    y2 = y.copy()
    y2[0] += 1e-9
    c = spec_for(compose, write(tmp_path / "c.npz", X, y2))
    assert grid_hash(c) != grid_hash(a)
    # the stored config pins the content: the same file again is the same spec ...
    from mccard_dist.config import spec_from_dict

    stored = a.to_dict()  # what a store keeps
    pinned = spec_from_dict(stored)
    assert pinned.data.sha256 is not None and grid_hash(pinned) == grid_hash(a)
    pinned.check_data()
    # ... and a changed file is refused rather than run as the old grid
    write(tmp_path / "a.npz", X, y2)
    with pytest.raises(ConfigError, match="data.sha256: .* holds other data"):
        spec_from_dict(stored).check_data()


# --- files that would block or exhaust memory: refused before a value is read --------------------

def _parsing_refused(*args, **kwargs):
    raise AssertionError("the file was parsed before it was refused")


@pytest.mark.timeout(20)  # opening a FIFO for reading blocks until a writer comes
def test_a_fifo_a_device_or_a_folder_is_refused_without_being_opened(tmp_path):
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    link = tmp_path / "link.npz"
    link.symlink_to(fifo)
    (tmp_path / "d.csv").mkdir()
    (tmp_path / "g.zarr").write_text("not a group")
    (tmp_path / "zero.npz").symlink_to("/dev/zero")
    for path, target, kind in [(fifo, "target", "a FIFO (named pipe), not a regular file"),
                               (link, None, "a FIFO (named pipe), not a regular file"),
                               (tmp_path / "d.csv", "target", "a folder, not a regular file"),
                               (tmp_path / "g.zarr", None,
                                "a regular file, not a zarr group (a folder)"),
                               (tmp_path / "zero.npz", None,
                                "a character device, not a regular file")]:
        with pytest.raises(DataFileError) as info:
            load_table(path, target)
        text = str(info.value)
        assert text.startswith(f"data.path: {path.resolve()} is {kind}; "), text
        assert "\n" not in text


@pytest.mark.timeout(20)
def test_a_zarr_group_holding_a_fifo_is_refused_without_opening_it(tmp_path):
    group = tmp_path / "g.zarr"
    (group / "X").mkdir(parents=True)
    os.mkfifo(group / ".zgroup")
    (group / "X" / "0.0").symlink_to("/dev/zero")
    with pytest.raises(DataFileError) as info:
        load_table(group, None)
    text = str(info.value)
    assert "\n" not in text and text.startswith("data.path: ") and " in the zarr group is " in text
    assert ("a FIFO (named pipe), not a regular file" in text
            or "a character device, not a regular file" in text), text


def test_a_header_of_too_many_columns_is_refused_before_the_table_is_parsed(tmp_path,
                                                                             monkeypatch):
    n = 100_001  # one more than the documented limit
    path = tmp_path / "wide.csv"
    path.write_text(",".join(f"c{j}" for j in range(n)) + "\n" + ("1," * (n - 1) + "2\n") * 3)
    monkeypatch.setattr(pd, "read_csv", _parsing_refused)
    with pytest.raises(DataFileError, match=rf"^data.path: wide.csv has {n} columns; at most "
                                            rf"{n - 1} are read"):
        load_table(path, "c0")


def test_a_file_larger_than_the_memory_allows_is_refused_unread(tmp_path, monkeypatch):
    from mccard_dist.data import files

    monkeypatch.setattr(files, "available_memory", lambda: 2**30)
    for reader in ("read_csv", "read_parquet"):
        monkeypatch.setattr(pd, reader, _parsing_refused)
    monkeypatch.setattr(np.lib.format, "read_array", _parsing_refused)
    big = tmp_path / "big.csv"
    with open(big, "wb") as file:
        file.truncate(2 * 2**30)  # 2 GiB, sparse: never read
    with pytest.raises(DataFileError, match=r"^data.path: reading big.csv \(a .csv file of 2048 "
                                            r"MiB\) would take about 20.0 GiB of memory, but 1.0 "
                                            r"GiB is available"):
        load_table(big, "target")
    # the other formats by their arrays' values (from the metadata): 60 x 5 + 60 here
    X, y, _ = table()
    monkeypatch.setattr(files, "available_memory", lambda: 24 * 360 - 1)
    for suffix in (".npz", ".parquet", ".zarr"):
        path = write(tmp_path / f"d{suffix}", X, y)
        with pytest.raises(DataFileError, match=rf"^data.path: reading d{suffix} \((360 values|"
                                                r"60 rows of 6 columns)\) would take"):
            load_table(path, "target" if suffix == ".parquet" else None)
    monkeypatch.undo()
    monkeypatch.setattr(files, "available_memory", lambda: 24 * 360)
    np.testing.assert_array_equal(load_table(tmp_path / "d.npz").X, X)  # just fits


def test_a_first_line_without_end_is_refused_after_reading_only_its_limit(tmp_path,
                                                                           monkeypatch):
    from mccard_dist.data import files

    monkeypatch.setattr(files, "HEADER_BYTES", 1024)
    monkeypatch.setattr(pd, "read_csv", _parsing_refused)
    path = tmp_path / "zeros.csv"
    with open(path, "wb") as file:
        file.truncate(2**20)  # zero bytes, no line end
    with pytest.raises(DataFileError, match=r"^data.path: cannot read zeros.csv as csv: its "
                                            r"first line is longer than"):
        load_table(path, "target")


def test_the_user_guide_states_the_limits_the_reader_applies():
    from pathlib import Path

    from mccard_dist.data import files

    guide = " ".join((Path(__file__).parents[1] / "docs/user_guide/own_data.md").read_text()
                     .split())
    numbers = {10: "ten"}
    assert f"at most {files.MAX_COLUMNS:,} columns" in guide
    assert f"first line (at most {files.HEADER_BYTES // 2**20} MiB)" in guide
    assert f"{numbers[files.CSV_BYTES_PER_BYTE]} times its size for a `.csv`" in guide
    assert f"{files.BYTES_PER_VALUE} bytes per value" in guide


def test_true_false_dates_and_text_are_refused_by_column_name(tmp_path):
    X, y, _ = table()
    frame = pd.DataFrame(X, columns=list("abcde"))
    frame["when"] = pd.date_range("2024-01-01", periods=len(y))
    frame["flag"] = [True, False] * 30
    frame["target"] = y
    frame.to_parquet(tmp_path / "typed.parquet")
    with pytest.raises(DataFileError, match=r"^data.path: typed.parquet has non-numeric "
                                            r"column\(s\) when \(datetime64\[\w+\]\), flag "
                                            r"\(bool\); every column must hold numbers"):
        load_table(tmp_path / "typed.parquet", "target")
    frame.drop(columns="when").to_csv(tmp_path / "flags.csv", index=False)
    with pytest.raises(DataFileError, match=r"flags.csv has non-numeric column\(s\) flag "
                                            r"\(bool\);"):
        load_table(tmp_path / "flags.csv", "target")


def test_what_is_not_an_npz_file_is_refused_without_advice_to_unpickle(tmp_path):
    X, y, _ = table()
    (tmp_path / "zero.npz").write_bytes(bytes(4096))
    np.savez(tmp_path / "objects.npz", X=X.astype(object), y=y)
    whole = write(tmp_path / "whole.npz", X, y).read_bytes()
    (tmp_path / "cut.npz").write_bytes(whole[: len(whole) // 2])
    for name, message in [("zero.npz", "data.path: zero.npz is not a valid .npz file ("),
                          ("objects.npz",
                           "data.path: array X of objects.npz is not real numbers (dtype object)"),
                          ("cut.npz", "data.path: cut.npz is not a valid .npz file (")]:
        with pytest.raises(DataFileError) as info:
            load_table(tmp_path / name)
        text = str(info.value)
        assert text.startswith(message) and "\n" not in text, text
        assert "pickle" not in text, text


def test_a_missing_target_shows_the_closest_columns_first_and_how_many_there_are(tmp_path):
    columns = [f"gene_{j}" for j in range(40)] + ["price"]
    rng = np.random.default_rng(0)
    pd.DataFrame(rng.standard_normal((10, 41)), columns=columns).to_csv(tmp_path / "t.csv",
                                                                         index=False)
    with pytest.raises(DataFileError, match=r"^data.target: t.csv has no column 'prise'; did "
                                            r"you mean 'price'\? \(it has 41 columns: gene_0, "):
        load_table(tmp_path / "t.csv", "prise")


@pytest.mark.slow
@pytest.mark.cluster
@pytest.mark.parametrize("unit", ["cell", "fit"])
def test_a_file_run_on_a_local_cluster_equals_the_run_in_process_without_workers_reading_it(
        compose, tmp_path, monkeypatch, unit):
    from distributed import Client, LocalCluster

    from mccard_dist.config import FileDataSpec
    from mccard_dist.runner import run_experiment, run_serial
    from mccard_dist.store import open_results

    X, y, _ = table(90, 30, seed=4)
    path = write(tmp_path / "mine.csv", X, y)
    overrides = ["data.target=target", "experiment.psi=[0.0,0.3]", "experiment.tau=[5.0]",
                 "experiment.seeds.count=2", "data.outliers=student_t", "data.df=3"]
    serial = spec_for(compose, path, f"store.path={tmp_path}/serial.zarr", *overrides)
    run_serial(serial)
    spec = spec_for(compose, path, f"store.path={tmp_path}/dask.zarr", f"run.unit={unit}",
                    *overrides)
    # the driver reads the file once, then it is gone: the workers can only have the shipped
    # arrays (a worker process reads with the original method, from the file)
    original = FileDataSpec.load_source
    read = {}

    def load_then_remove(self):
        if "source" not in read:
            read["source"] = original(self)
            path.unlink()
        return read["source"]

    monkeypatch.setattr(FileDataSpec, "load_source", load_then_remove)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        report = run_experiment(spec, client=client, progress=False)
    assert report.n_failed_cells == 0 and not path.exists() and report.unit == unit
    a, b = open_results(tmp_path / "serial.zarr"), open_results(tmp_path / "dask.zarr")
    assert (b["status"] == 1).all()
    for name in ("r", "rmse", "n_selected", "chosen_kernel_width", "coef", "cv_score"):
        np.testing.assert_array_equal(a[name].values, b[name].values)
    assert np.isnan(b["f1"].values).all()  # no true coefficients in the file


@pytest.mark.slow  # keeps the fast subset under its 30 s
def test_the_diabetes_experiment_composes_with_its_peers(compose):
    spec = from_dictconfig(compose(["experiment=diabetes"]))
    assert spec.data.source == "diabetes"
    assert (spec.data.n_train, spec.data.n_test, spec.data.n_features) == (300, 142, 500)
    assert {"mcc_ard", "mcc_ard_proper", "ls_ard", "mcc_l1", "lasso", "huber", "huber_l1",
            "huber_mcp", "lad_lasso"} == set(spec.method_names)
    d = spec.data.make_data(0, 0.2, 5.0)
    assert d.X_train.shape == (300, 500) and d.coef_true is None


@pytest.mark.slow
@pytest.mark.cluster
def test_mccard_run_on_a_file_then_on_the_file_broken(tmp_path):
    """The command of the user guide (docs/user_guide/own_data.md) on a .csv; then the same command after the file got a NaN: one
    line, no traceback, and the first run's store untouched."""
    import subprocess
    import sys

    import xarray as xr

    X, y, _ = table(60, 8)
    path = write(tmp_path / "mydata.csv", X, y)
    args = [sys.executable, "-m", "mccard_dist.cli", "experiment=smoke", "data=file",
            f"data.path={path}", "data.target=target", "experiment.methods=[mcc_ard,ls_ard]",
            "cluster.n_workers=1", "run.progress=false"]
    first = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    (store,) = (tmp_path / "results").glob("smoke-*.zarr")
    before = xr.open_zarr(store)["r"].values
    assert (xr.open_zarr(store)["status"] == 1).all()
    X[10, 3] = np.nan
    write(path, X, y)
    second = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert second.returncode != 0 and "Traceback" not in second.stderr
    assert second.stderr.strip().splitlines()[-1].endswith(
        "data.path: X of mydata.csv has 1 NaN or infinite value(s) (first at row 10, column f3); "
        "remove or impute them")
    assert len(second.stderr.strip().splitlines()) <= 2
    assert list((tmp_path / "results").glob("*.zarr")) == [store]
    np.testing.assert_array_equal(xr.open_zarr(store)["r"].values, before)


@pytest.mark.slow
def test_a_diabetes_store_reports_without_selection_scores_and_judges_no_claim(compose, tmp_path):
    from mccard_dist import analysis
    from mccard_dist.analysis.claims import NOT_APPLICABLE
    from mccard_dist.analysis.figures import fig_selection
    from mccard_dist.analysis.values import scenario
    from mccard_dist.runner import run_serial
    from mccard_dist.store import open_results

    spec = from_dictconfig(compose([
        "experiment=diabetes", "experiment.methods=[mcc_ard,ls_ard,lasso]", "experiment.psi=[0.0,0.2]",
        "experiment.seeds.count=2", "data.n_noise_features=20", "cv.n_folds=2",
        "methods.mcc_ard.grid.kernel_width=[0.3,3.0]", f"store.path={tmp_path}/d.zarr",
        "run.progress=false"]))
    run_serial(spec)
    ds = open_results(tmp_path / "d.zarr")
    assert (ds["status"] == 1).all() and ds.sizes["feature"] == 30
    # F1 needs true coefficients; the counts are recorded (a Lasso may choose the empty model)
    assert np.isnan(ds["f1"].values).all() and ds["n_selected"].notnull().all()
    assert (ds["n_selected"].sel(model="mcc_ard") > 0).all()
    assert scenario(ds) == ("scikit-learn's diabetes data with 20 noise features, "
                            "laplace outliers")
    assert all(c.verdict == NOT_APPLICABLE for c in analysis.check_claims(ds))
    fig = fig_selection(ds)
    assert len(fig.axes) == 1  # the count only: no F1 without true coefficients
    assert "Laplace scale" in fig.axes[0].get_title()
    text = analysis.write_report(ds, tmp_path / "report").path.read_text()
    assert "F1 of the selected features" not in text and "test r (Pearson" in text
    assert "- data: scikit-learn's diabetes data with 20 noise features" in text
