"""What others hand a user never makes code run: a store (here), a data file (parsed, never
unpickled: tests/test_real_data.py, the .npz of objects), a scheduler's answer (the LocalCluster's
TLS admits only the run's processes: tests/test_refusals.py). The command line and the config
files a user points to are the user's (tests/test_command_line.py)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mccard_dist.runner import run_serial

pytestmark = pytest.mark.slow  # runs a small grid, then reads it in subprocesses

MARKER_MODULE = "mccard_test_marker"


@pytest.fixture
def forged(smoke_spec, tmp_path):
    """A store whose every estimator names a module that leaves a mark when imported (one
    outside the package, one inside it whose import runs a command line), its grid hash made
    anew from the forged description, and the marker."""
    from mccard_dist.grid import description_hash

    spec = smoke_spec("experiment.methods=[mcc_ard,ls_ard]", "data.n_features=20")
    run_serial(spec)
    path = spec.store.path
    marker = tmp_path / "imported"
    (tmp_path / f"{MARKER_MODULE}.py").write_text(
        f"open({str(marker)!r}, 'w').close()\nclass X:\n    pass\n")
    names = {"mcc_ard": f"{MARKER_MODULE}:X", "ls_ard": "mccard_dist.bench.__main__:X"}
    for name in (".zattrs", ".zmetadata"):
        meta_path = Path(path) / name
        meta = json.loads(meta_path.read_text())
        attrs = meta if name == ".zattrs" else meta["metadata"][".zattrs"]
        for key in ("config", "grid_description"):
            value = json.loads(attrs[key])
            for method, estimator in names.items():
                value["methods"][method]["estimator"] = estimator
            attrs[key] = json.dumps(value, sort_keys=True)
        attrs["grid_hash"] = description_hash(json.loads(attrs["grid_description"]))
        meta_path.write_text(json.dumps(meta))
    return path, marker, tmp_path


def test_reading_and_reporting_a_store_imports_no_module_it_names(forged):
    path, marker, tmp_path = forged
    code = f"""
import sys
import mccard_dist
from mccard_dist.analysis import write_report
from mccard_dist.analysis.compare import versus_report
ds = mccard_dist.open_results({path!r})
write_report(ds, {str(tmp_path / 'report')!r}, html=False)
print(versus_report(ds, "mcc_ard")[:10])
print("bench main imported:", "mccard_dist.bench.__main__" in sys.modules)
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env={**os.environ,
                                                       "PYTHONPATH": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "bench main imported: False" in done.stdout
    assert not marker.exists()
    report = subprocess.run(["mccard-report", path, "--out", str(tmp_path / "cli")], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300,
                            env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert report.returncode == 0, report.stderr[-3000:]
    assert not marker.exists()
    # what it reports it calls by the method's name, not by a shipped method's label
    text = (tmp_path / "cli" / "report.md").read_text()
    assert "MCC-ARD (`mcc_ard`)" not in text and "LS-ARD (`ls_ard`)" not in text


def test_a_store_of_an_earlier_version_beside_a_run_imports_nothing_it_names(forged, compose):
    """A run looks for a store of an earlier version holding its grid among those in its
    store.root; one that names a module of its own is not one, and is not imported."""
    from mccard_dist.config import from_dictconfig
    from mccard_dist.store.migrate import refuse_unmigrated

    path, marker, tmp_path = forged
    attrs_file = Path(path) / ".zattrs"
    attrs = json.loads(attrs_file.read_text())
    description = json.loads(attrs["grid_description"])
    description["grid_version"] = 3
    attrs["grid_description"] = json.dumps(description)
    attrs_file.write_text(json.dumps(attrs))
    root = Path(path).parent
    os.rename(path, root / "smoke-0123456789.zarr")
    sys.path.insert(0, str(tmp_path))
    try:
        refuse_unmigrated(from_dictconfig(compose(["experiment=smoke", f"store.root={root}",
                                                   "experiment.methods=[mcc_ard,ls_ard]",
                                                   "data.n_features=20"])))
    finally:
        sys.path.remove(str(tmp_path))
    assert not marker.exists()


def test_a_store_whose_description_is_not_its_hashs_is_refused(smoke_spec):
    """A description edited by hand (another estimator than the cells were computed by) no
    longer hashes to the store's grid hash: no reader or resume takes it at its word."""
    from mccard_dist import open_results
    from mccard_dist.store import ResultsStore, StoreDamagedError

    spec = smoke_spec("experiment.methods=[mcc_ard,ls_ard]", "data.n_features=20")
    run_serial(spec)
    path = spec.store.path
    for name in (".zattrs", ".zmetadata"):
        meta_path = Path(path) / name
        meta = json.loads(meta_path.read_text())
        attrs = meta if name == ".zattrs" else meta["metadata"][".zattrs"]
        description = json.loads(attrs["grid_description"])
        description["methods"]["ls_ard"]["estimator"] = "sklearn.linear_model:Ridge"
        attrs["grid_description"] = json.dumps(description, sort_keys=True)
        meta_path.write_text(json.dumps(meta))
    with pytest.raises(StoreDamagedError, match="its grid description is not the one its grid "
                                                "hash"):
        open_results(path)
    with pytest.raises(StoreDamagedError, match="edited or damaged"):
        ResultsStore.check_compatible(Path(path), spec)


def test_a_store_path_inside_another_store_is_refused(smoke_spec, tmp_path):
    from mccard_dist.errors import StoreAccessError

    spec = smoke_spec("experiment.methods=[ls_ard]", "data.n_features=20")
    run_serial(spec)
    for inner in ("store.zarr/sub", "store.zarr/r"):
        inside = smoke_spec("experiment.methods=[ls_ard]", "data.n_features=20", name=inner)
        assert str(inside.store.path).startswith(str(spec.store.path) + "/")
        with pytest.raises(StoreAccessError, match="lies inside the results store"):
            run_serial(inside)
