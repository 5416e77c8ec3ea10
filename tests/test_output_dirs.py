"""Hydra's output folders: two runs, or two ``-m`` sweeps, started in the same second keep their
folders (logs, ``store.txt``, ``stores.txt``) apart."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # each run is a process of its own

#: ``mccard-run`` with the clock held at one second (its microseconds still run), as two commands
#: started together see it
SAME_SECOND = """
import datetime, sys
import hydra.core.utils

class SameSecond(datetime.datetime):
    @classmethod
    def now(cls, tz=None):
        return datetime.datetime.now(tz).replace(year=2030, month=1, day=2, hour=3, minute=4,
                                                 second=5)

hydra.core.utils.datetime = SameSecond  # what Hydra's ${now:...} reads
from mccard_dist.cli import run
sys.argv = ["mccard-run", *sys.argv[1:]]
run()
"""

OVERRIDES = ["experiment=smoke", "experiment.methods=[ls_ard]", "run.progress=false"]


def mccard_run(cwd, *args):
    out = subprocess.run([sys.executable, "-c", SAME_SECOND, *OVERRIDES, *args], cwd=cwd,
                         capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    return out


def test_runs_and_sweeps_started_in_the_same_second_keep_their_folders(tmp_path, compose):
    from mccard_dist.config import from_dictconfig
    from mccard_dist.runner import run_serial
    from mccard_dist.store.reader import listed_stores

    # finished stores: the runs below have nothing to run, so they start no cluster
    first = tmp_path / "s0.zarr"
    run_serial(from_dictconfig(compose([*OVERRIDES, f"store.path={first}"])))
    stores = [first] + [tmp_path / f"s{i}.zarr" for i in range(1, 4)]
    for store in stores[1:]:
        shutil.copytree(first, store)

    mccard_run(tmp_path, "-m", f"store.path={stores[0]},{stores[1]}")
    mccard_run(tmp_path, "-m", f"store.path={stores[2]},{stores[3]}")
    sweeps = sorted((tmp_path / "multirun").iterdir())
    assert len(sweeps) == 2 and all(s.name.startswith("2030-01-02_03-04-05") for s in sweeps)
    listed = sorted(tuple(listed_stores(s)) for s in sweeps)
    assert listed == [tuple(stores[:2]), tuple(stores[2:])]

    mccard_run(tmp_path, f"store.path={stores[0]}")
    mccard_run(tmp_path, f"store.path={stores[1]}")
    runs = sorted((tmp_path / "outputs" / "smoke").iterdir())
    assert len(runs) == 2
    assert sorted(Path((r / "store.txt").read_text().strip()) for r in runs) == stores[:2]
