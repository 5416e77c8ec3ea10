"""What a user gets for input that cannot work: one or two lines naming what to change, no
traceback, nothing created, and quickly; and how a run's end is recorded in its store."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import xarray as xr

pytestmark = [pytest.mark.slow]


def mccard_run(cwd, *args, env=None, timeout=300):
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "mccard_dist.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)
    return proc, time.monotonic() - start


def unwritable_folder(tmp_path):
    """A folder this process cannot write to (root ignores permission bits: use sysfs then)."""
    if os.geteuid() == 0:
        return "/sys/mccard-results"
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    return str(folder)


def refusal_cases(tmp_path):
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    no_batch = {**os.environ, "PATH": str(tmp_path / "empty-bin")}
    return {
        "slurm without sbatch": (["cluster=slurm"], no_batch, "sbatch"),
        "pbs without qsub": (["cluster=pbs"], no_batch, "qsub"),
        "malformed address": (["cluster=address", "cluster.address=notaurl"], None,
                              "cluster.address: must be a scheduler address"),
        "unreachable address": (["cluster=address", "cluster.address=tcp://127.0.0.1:1",
                                 "cluster.connect_timeout=2s"], None, "cannot reach"),
        "missing scheduler file": (["cluster=scheduler_file",
                                    f"cluster.scheduler_file={tmp_path / 'nope.json'}",
                                    "cluster.connect_timeout=1s"], None, "did not appear"),
        "store root unwritable": ([f"store.root={unwritable_folder(tmp_path)}"], None,
                                  "cannot write"),
        "store path through a file": ([f"store.path={a_file}/x.zarr"], None, "is a file"),
        "timeout in options": (["cluster=address", "cluster.address=tcp://127.0.0.1:1",
                                "+cluster.options.timeout=3"], None, "cluster.options.timeout"),
        "unknown key": (["data.n_trian=100"], None, "did you mean data.n_train?"),
        "unknown option of a group": (["experiment=paper_fast"], None,
                                      "available: diabetes, paper, paper_auto"),
        "unparsable override": (["experiment.psi=[0,"], None, "override_grammar"),
        "unknown key in a sweep": (["-m", "data.n_trian=100,200"], None, "data.n_trian"),
    }


CASES = ["slurm without sbatch", "pbs without qsub", "malformed address", "unreachable address",
         "missing scheduler file", "store root unwritable", "store path through a file",
         "timeout in options", "unknown key", "unknown option of a group", "unparsable override",
         "unknown key in a sweep"]


@pytest.mark.parametrize("case", CASES)
def test_refusals_are_short_and_leave_nothing(tmp_path, case):
    overrides, env, needle = refusal_cases(tmp_path)[case]
    work = tmp_path / "work"
    work.mkdir()
    proc, _ = mccard_run(work, "experiment=smoke", "run.progress=false", *overrides, env=env)
    assert proc.returncode != 0
    errors = [line for line in proc.stderr.splitlines() if line.strip()]
    assert "Traceback" not in proc.stderr + proc.stdout
    assert len(errors) <= 2 and errors[0].startswith("error:"), proc.stderr
    assert needle in proc.stderr
    assert not (work / "results").exists()  # no store, not even an empty one


def test_report_out_unwritable_is_one_line(tmp_path, smoke_spec):
    from mccard_dist.runner import run_serial
    from mccard_dist.store import store_path

    spec = smoke_spec("experiment.methods=[ls_ard]", "experiment.psi=[0.0]",
                      "experiment.tau=[5.0]", "experiment.seeds.count=1")
    run_serial(spec)  # the store is read before --out is asked for
    out = unwritable_folder(tmp_path)
    proc = subprocess.run([sys.executable, "-c", "from mccard_dist.cli import report; report()",
                           str(store_path(spec)), "--out", f"{out}/report"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().startswith("error: --out: cannot write"), proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def _runs(store):
    return json.loads(xr.open_zarr(store).attrs["runs"])


def _wait(predicate, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError("timed out")


@pytest.mark.cluster
def test_run_records_say_how_each_run_ended(tmp_path):
    """A killed driver, then SIGTERM (a batch scheduler's stop), then a run to the end."""
    store = tmp_path / "store.zarr"
    args = [sys.executable, "-m", "mccard_dist.cli", "experiment=smoke", f"store.path={store}",
            "run.progress=false", "run.block_seconds=0", "cluster.n_workers=1"]

    def started_runs():
        try:
            return len(_runs(store))
        except Exception:  # noqa: BLE001 - the store is still being created
            return 0

    killed = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    _wait(lambda: started_runs() == 1)
    assert _runs(store)[0]["ended"] == "running" and _runs(store)[0]["pid"] == killed.pid
    os.killpg(killed.pid, signal.SIGKILL)
    killed.wait()

    terminated = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
    _wait(lambda: started_runs() == 2)
    terminated.send_signal(signal.SIGTERM)
    _, stderr = terminated.communicate(timeout=120)
    assert terminated.returncode != 0
    assert "interrupted (signal SIGTERM)" in stderr and "Traceback" not in stderr

    finished = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert finished.returncode == 0, finished.stderr
    runs = _runs(store)
    assert [r["ended"] for r in runs] == ["unknown: the driver stopped without recording how",
                                          "interrupted (signal SIGTERM)", "finished"]
    assert all(r["started"] for r in runs) and runs[2]["finished"] >= runs[2]["started"]
    assert (xr.open_zarr(store)["status"] == 1).all()


@pytest.mark.parametrize("override, needle", [
    ("+cluster.options.preload=[/tmp/x.py]", "cluster.options.preload: is not an accepted option"),
    ("+cluster.options.scheduler_kwargs={preload:[/tmp/x.py]}",
     "cluster.options.scheduler_kwargs.preload: is not an accepted scheduler option"),
    ("+cluster.options.nanny_class=x", "cluster.options.nanny_class: is not an accepted option"),
    ("cluster=address cluster.address=tls://h:8786 cluster.tls_ca_file=/nonexistent "
     "cluster.tls_cert=/nonexistent cluster.tls_key=/nonexistent",
     "cluster.tls_ca_file: is not a readable file"),
    ("cluster.tls=false cluster.host=0.0.0.0", "cluster.host: listens beyond this machine"),
])
def test_an_option_a_cluster_kind_does_not_take_is_named(tmp_path, override, needle):
    proc, _ = mccard_run(tmp_path, "experiment=smoke", *override.split())
    assert proc.returncode != 0 and needle in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) <= 2
    assert not (tmp_path / "results").exists()


@pytest.mark.cluster
def test_the_local_cluster_admits_only_this_runs_processes(compose):
    from distributed import Client

    from mccard_dist.cluster import connect
    from mccard_dist.config import from_dictconfig

    spec = from_dictconfig(compose(["experiment=smoke", "cluster.n_workers=1"])).cluster
    with connect(spec) as client:
        address = client.scheduler.address
        assert address.startswith("tls://")
        assert client.submit(sum, [1, 2]).result() == 3  # this run's workers are in
        with pytest.raises((OSError, TimeoutError)):  # without the run's certificate: refused
            Client(address.replace("tls://", "tcp://"), timeout="3s")
        # TLS with a certificate of its own (not signed by this run's temporary authority)
        from distributed.security import Security

        with pytest.raises((OSError, TimeoutError)):
            Client(address, security=Security.temporary(), timeout="3s")


@pytest.mark.cluster
def test_a_tls_scheduler_is_reached_with_the_configured_certificates(tmp_path, compose):
    from distributed import LocalCluster
    from distributed.security import Security

    from mccard_dist.cluster import connect
    from mccard_dist.config import from_dictconfig

    security = Security.temporary()  # PEM text in memory: written to files as a user has them
    files = {}
    for name, text in (("ca", security.tls_ca_file), ("cert", security.tls_client_cert),
                       ("key", security.tls_client_key)):
        files[name] = tmp_path / f"{name}.pem"
        files[name].write_text(text)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, security=security,
                      dashboard_address=None) as cluster:
        address = cluster.scheduler_address
        assert address.startswith("tls://")
        spec = from_dictconfig(compose([
            "experiment=smoke", "cluster=address", f"cluster.address={address}",
            f"cluster.tls_ca_file={files['ca']}", f"cluster.tls_cert={files['cert']}",
            f"cluster.tls_key={files['key']}", "cluster.connect_timeout=5s"])).cluster
        with connect(spec) as client:
            assert client.submit(sum, [2, 3]).result() == 5


def test_a_folder_that_takes_no_files_is_not_said_to_be_missing():
    from mccard_dist.errors import StoreAccessError
    from mccard_dist.store import check_writable

    with pytest.raises(StoreAccessError, match=r"^store: cannot write to the folder /proc \(it "
                                               r"accepts no new files\); set store.root"):
        check_writable("/proc/x.zarr")


@pytest.mark.cluster
def test_ctrl_c_to_the_process_group_ends_in_one_line(tmp_path):
    """A Ctrl-C in a terminal reaches the driver and its worker processes: the driver records
    the run as interrupted and closes the workers, and no worker prints a traceback."""
    store = tmp_path / "store.zarr"
    run = subprocess.Popen([sys.executable, "-m", "mccard_dist.cli", "experiment=smoke",
                            "experiment.seeds.count=100", f"store.path={store}",
                            "run.progress=false", "run.block_seconds=0"], cwd=tmp_path,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           start_new_session=True)

    def started():
        try:
            return len(_runs(store)) == 1
        except Exception:  # noqa: BLE001 - the store is still being created
            return False

    _wait(started)
    os.killpg(run.pid, signal.SIGINT)
    _, stderr = run.communicate(timeout=120)
    assert run.returncode == 130  # as a shell reports a process that Ctrl-C stopped
    assert "interrupted: finished blocks are in the store" in stderr
    assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    assert _runs(store)[0]["ended"] == "interrupted"


@pytest.mark.parametrize("what", ["data.path", "cluster.scheduler_file"])
def test_a_fifo_given_as_a_file_is_refused_at_once(tmp_path, what):
    """A FIFO blocks whoever opens it for reading until a writer comes: the run names it in one
    line instead of waiting forever (cluster.connect_timeout included)."""
    work = tmp_path / "work"
    work.mkdir()
    fifo = tmp_path / ("data.csv" if what == "data.path" else "scheduler.json")
    os.mkfifo(fifo)
    overrides = ([f"data.path={fifo}", "data=file", "data.target=y"] if what == "data.path" else
                 ["cluster=scheduler_file", f"cluster.scheduler_file={fifo}",
                  "cluster.connect_timeout=5s"])
    proc, _ = mccard_run(work, "experiment=smoke", "run.progress=false", *overrides, timeout=120)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(errors) == 1, proc.stderr
    assert errors[0].startswith(f"error: {what}: {fifo} is a FIFO (named pipe), not a regular "
                                "file; "), errors
    assert not (work / "results").exists()
