"""SLURM and PBS: the rendered dask-jobqueue job scripts (everywhere) and, on a running SLURM, the batch
scripts in jobs/ and ``cluster=slurm`` / ``cluster=pbs`` end to end (tests marked ``slurm``).

The SLURM tests need a SLURM whose ``sinfo`` answers: ``.ci/slurm/up`` starts a single-node one (CI does
so in ``.ci/run``). Without it they are skipped, except under ``CI=true``, where they fail. PBS runs
through Debian's ``slurm-wlm-torque`` (``qsub``/``qstat``/``qdel`` wrappers over the same SLURM, which
also reads ``#PBS`` directives): that exercises the scripts and dask-jobqueue's PBSCluster, not a real
PBS server (see jobs/README.md).

Every job gets a unique name and is cancelled at teardown, so a failing test leaves no workers behind.
Batch jobs and CLI runs use a temporary working directory (Hydra writes ``outputs/`` there).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from conftest import compose_config

from mccard_dist.cluster import job_script, jobqueue_kwargs
from mccard_dist.config import from_dictconfig

REPO = Path(__file__).resolve().parents[1]
JOBS = REPO / "jobs"
BATCH_SCRIPTS = sorted(JOBS.glob("slurm/*.sbatch")) + sorted(JOBS.glob("pbs/*.pbs"))
#: compared with a serial run of the same grid (timings and error texts differ by nature)
CHECKED = ["status", "r", "rmse", "f1", "precision", "recall", "n_selected", "chosen_kernel_width",
           "chosen_alpha_ratio", "chosen_alpha", "n_iter", "cv_score", "coef"]
#: resources of the test jobs: the CI machine has 2 CPUs
TASKS = "2"


# -- helpers -----------------------------------------------------------------------------------------
def slurm_problem() -> str | None:
    """Why SLURM cannot run jobs here (None if it can)."""
    if shutil.which("sinfo") is None:
        return "sinfo not found: no SLURM here (start one with .ci/slurm/up)"
    try:
        proc = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True,
                              timeout=20)
    except subprocess.TimeoutExpired:
        return "sinfo does not answer within 20 s (is slurmctld running? .ci/slurm/up)"
    if proc.returncode != 0:
        return f"sinfo fails: {proc.stderr.strip()} (start SLURM with .ci/slurm/up)"
    states = proc.stdout.split()
    if not any(s.rstrip("*~#") in ("idle", "mix", "alloc", "comp") for s in states):
        return f"no usable SLURM node (states: {', '.join(states) or 'none'})"
    return None


@pytest.fixture(scope="module")
def slurm():
    """Skip (fail under CI=true) unless SLURM answers; yields a job-name factory and cancels every
    job submitted under those names at teardown."""
    problem = slurm_problem()
    if problem:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI=true but SLURM is not up: {problem}")
        pytest.skip(problem)
    names = []

    def job_name(label: str) -> str:
        names.append(f"mccard-test-{label}-{uuid.uuid4().hex[:6]}")
        return names[-1]

    yield job_name
    for name in names:
        subprocess.run(["scancel", f"--name={name}"], capture_output=True, timeout=30)


def job_env(**extra) -> dict:
    """The environment of the submitted jobs (sbatch and qsub pass it on)."""
    env = dict(os.environ)
    env.update(MCCARD_PYTHON=sys.executable, MCCARD_DASHBOARD="127.0.0.1:0", OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", **extra)
    return env


def submit(cmd, cwd, **env) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=job_env(**env), capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, f"{cmd} failed:\n{proc.stdout}\n{proc.stderr}"
    return re.search(r"\d+", proc.stdout).group(0)


def job_state(job_id: str) -> tuple[str, str]:
    """(JobState, ExitCode) from scontrol."""
    out = subprocess.run(["scontrol", "show", "job", "-o", job_id], capture_output=True,
                         text=True, timeout=30).stdout
    state = re.search(r"JobState=(\S+)", out)
    code = re.search(r"ExitCode=(\S+)", out)
    return (state.group(1) if state else "GONE"), (code.group(1) if code else "?")


def wait_for_job(job_id: str, timeout: float = 600) -> tuple[str, str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state, code = job_state(job_id)
        if state not in ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED"):
            return state, code
        time.sleep(0.5)
    raise AssertionError(f"job {job_id} still {state} after {timeout} s")


def read_outputs(folder: Path, pattern: str) -> str:
    return "\n".join(f"==> {p.name}\n{p.read_text(errors='replace')}"
                     for p in sorted(folder.glob(pattern)))


def smoke_spec(store, *overrides):
    return from_dictconfig(compose_config(["experiment=smoke", f"store.path={store}",
                                           "run.progress=false", *overrides]))


def status_counts(store: Path) -> tuple[int, int]:
    """(done cells, all cells) of a store, read while a job may be writing it."""
    import zarr

    status = np.asarray(zarr.open_group(str(store), mode="r")["status"][...])
    return int((status == 1).sum()), int(status.size)


def assert_same_results(path, reference):
    a, b = xr.open_zarr(path), xr.open_zarr(reference)
    assert (a["status"] == 1).all(), "not every cell is done"
    for name in CHECKED:
        np.testing.assert_array_equal(a[name].values, b[name].values, err_msg=name)


@pytest.fixture(scope="module")
def smoke_reference(tmp_path_factory):
    """The smoke grid run serially in this process: what every cluster run must reproduce."""
    from mccard_dist.runner import run_serial

    store = tmp_path_factory.mktemp("reference") / "smoke.zarr"
    run_serial(smoke_spec(store))
    return store


# -- rendered job scripts (no scheduler needed) -------------------------------------------------------
def cluster_spec(kind, *overrides):
    return from_dictconfig(compose_config(["experiment=smoke", f"cluster={kind}", *overrides])).cluster


def test_slurm_job_script_carries_the_configured_resources():
    spec = cluster_spec("slurm", "cluster.cores=8", "cluster.processes=4", "cluster.memory=32GB",
                        "cluster.walltime=02:00:00", "cluster.queue=short", "cluster.account=proj1",
                        "cluster.job_extra_directives=['--qos=normal','--constraint=skylake']",
                        "cluster.job_script_prologue=['source ~/venv/bin/activate']",
                        "cluster.worker_lifetime=110m", "cluster.lifetime_stagger=5m",
                        "cluster.python=/opt/py/bin/python")
    script = job_script(spec, "tcp://10.0.0.1:8786")
    lines = script.splitlines()
    for directive in ("#SBATCH -J mccard-worker", "#SBATCH -p short", "#SBATCH -A proj1",
                      "#SBATCH -n 1", "#SBATCH --cpus-per-task=8", "#SBATCH --mem=30G",
                      "#SBATCH -t 02:00:00", "#SBATCH --qos=normal",
                      "#SBATCH --constraint=skylake"):
        assert directive in lines, (directive, script)
    # BLAS pinned before the user's prologue, then the worker command
    blas = lines.index("export OMP_NUM_THREADS=1")
    assert "export OPENBLAS_NUM_THREADS=1" in lines and "export MKL_NUM_THREADS=1" in lines
    assert blas < lines.index("source ~/venv/bin/activate")
    malloc = lines.index("export DASK_DISTRIBUTED__NANNY__PRE_SPAWN_ENVIRON="
                         "'{\"MALLOC_TRIM_THRESHOLD_\": None}'")
    assert malloc < lines.index("source ~/venv/bin/activate")
    command = lines[-1]
    assert command.startswith("/opt/py/bin/python -m distributed.cli.dask_worker tcp://10.0.0.1:8786")
    # 4 workers of one thread each (the last --nthreads wins), 8 GB each, retiring before walltime
    assert "--nworkers 4" in command and command.endswith(
        "--nthreads 1 --lifetime 6600s --lifetime-stagger 300s")
    assert "--memory-limit 7.45GiB" in command


def test_slurm_defaults_give_one_thread_per_core():
    spec = cluster_spec("slurm")
    kwargs = jobqueue_kwargs(spec)
    assert (kwargs["cores"], kwargs["processes"], kwargs["memory"]) == (4, 4, "8GB")
    assert kwargs["worker_extra_args"] == ["--lifetime", "3300s", "--lifetime-stagger", "240s"]
    assert kwargs["scheduler_options"] == {"dashboard_address": ":8787"}
    command = job_script(spec).splitlines()[-1]
    assert "--nthreads 1 " in command and "--nworkers 4" in command
    assert "python" in command and sys.executable in command  # the driver's interpreter


def test_options_are_passed_on_and_merged():
    spec = cluster_spec("slurm", "cluster.worker_lifetime=null",
                        "+cluster.options.local_directory=/scratch",
                        "+cluster.options.worker_extra_args=['--resources','io=1']",
                        "+cluster.options.job_name=grid7")
    kwargs = jobqueue_kwargs(spec)
    assert kwargs["local_directory"] == "/scratch" and kwargs["job_name"] == "grid7"
    assert kwargs["worker_extra_args"] == ["--resources", "io=1"]  # no lifetime: none added
    script = job_script(spec)
    assert "#SBATCH -J grid7" in script and "--local-directory /scratch" in script
    assert "--lifetime" not in script


def test_pbs_job_script_carries_the_configured_resources():
    spec = cluster_spec("pbs", "cluster.cores=6", "cluster.memory=12GB", "cluster.queue=workq",
                        "cluster.account=proj1", "cluster.walltime=04:00:00",
                        "cluster.job_extra_directives=['-l place=scatter']")
    lines = job_script(spec, "tcp://10.0.0.1:8786").splitlines()
    for directive in ("#PBS -N mccard-worker", "#PBS -q workq", "#PBS -A proj1",
                      "#PBS -l select=1:ncpus=6:mem=12GB", "#PBS -l walltime=04:00:00",
                      "#PBS -l place=scatter", "export OMP_NUM_THREADS=1"):
        assert directive in lines, (directive, lines)
    assert "--nthreads 1 " in lines[-1] and "--nworkers 6" in lines[-1]
    assert "--lifetime 3300s --lifetime-stagger 240s" in lines[-1]
    # a Torque site's resource string replaces the PBS Pro default
    spec = cluster_spec("pbs", "cluster.resource_spec='nodes=1:ppn=4,mem=8gb'")
    assert "#PBS -l nodes=1:ppn=4,mem=8gb" in job_script(spec).splitlines()


@pytest.mark.slow  # runs bash -n in a subprocess
@pytest.mark.parametrize("script", BATCH_SCRIPTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_batch_scripts_parse_and_carry_directives(script):
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    text = script.read_text()
    prefix = "#SBATCH" if script.suffix == ".sbatch" else "#PBS"
    assert re.search(rf"^{prefix} .*(--time=|walltime=)", text, re.M)
    assert "--nthreads 1" in text and "OMP_NUM_THREADS=1" in text
    assert "export DASK_DISTRIBUTED__NANNY__PRE_SPAWN_ENVIRON='{\"MALLOC_TRIM_THRESHOLD_\": None}'" \
        in text.splitlines()
    assert "cluster=scheduler_file" in text
    assert (" -m cluster=scheduler_file" in text) == script.stem.startswith("sweep")


@pytest.mark.slow
def test_bad_slurm_settings_are_refused_before_any_job(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "mccard_dist.cli", "experiment=smoke",
                           "cluster=slurm", "cluster.walltime=00:30:00"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert "cluster.worker_lifetime: plus cluster.lifetime_stagger" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "results").exists()


# -- a real SLURM --------------------------------------------------------------------------------------
@pytest.mark.slurm
@pytest.mark.slow
def test_a_worker_job_slurm_refuses_stops_the_run_before_any_store(slurm, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "mccard_dist.cli", "experiment=smoke",
                           "cluster=slurm", "cluster.queue=no_such_partition"], cwd=tmp_path,
                          env=job_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert proc.stderr.startswith("error: cluster=slurm: SLURM refuses the worker job"), proc.stderr
    assert "partition" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "results").exists()


@pytest.mark.slurm
@pytest.mark.slow
def test_sbatch_run_script_completes_the_store(slurm, tmp_path, smoke_reference):
    store = tmp_path / "store.zarr"
    proc = subprocess.run(
        ["sbatch", "--wait", f"--job-name={slurm('run')}", f"--ntasks={TASKS}", "--mem-per-cpu=1G",
         "--time=00:10:00", "--output=job-%j.out", str(JOBS / "slurm" / "run.sbatch"),
         "experiment=smoke", f"store.path={store}"],
        cwd=tmp_path, env=job_env(), capture_output=True, text=True, timeout=900)
    log = read_outputs(tmp_path, "job-*.out")
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}\n{log}"
    assert "16 of 16 cells to run" in log and f"{TASKS} workers" in log
    assert_same_results(store, smoke_reference)
    job_dir = next((tmp_path / "mccard-jobs").iterdir())
    assert (job_dir / "scheduler.log").exists() and (job_dir / "hydra" / ".hydra").is_dir()
    assert len(list(job_dir.glob("worker-*.log"))) == int(TASKS)


@pytest.mark.slurm
@pytest.mark.slow
def test_sweep_script_runs_a_multirun_against_one_scheduler(slurm, tmp_path):
    job_id = submit(["sbatch", "--parsable", f"--job-name={slurm('sweep')}", f"--ntasks={TASKS}",
                     "--mem-per-cpu=1G", "--time=00:10:00", "--output=job-%j.out",
                     str(JOBS / "slurm" / "sweep.sbatch"), "experiment=smoke",
                     "experiment.methods=[mcc_ard,ls_ard]", "data.n_features=40,50"], tmp_path)
    state, code = wait_for_job(job_id)
    log = read_outputs(tmp_path, "job-*.out")
    assert (state, code) == ("COMPLETED", "0:0"), log
    stores = sorted((tmp_path / "results").glob("smoke-*.zarr"))
    assert len(stores) == 2
    assert sorted(xr.open_zarr(s).sizes["feature"] for s in stores) == [40, 50]
    assert all((xr.open_zarr(s)["status"] == 1).all() for s in stores)
    assert log.count("Dask dashboard") == 2 and log.count(f"{TASKS} workers;") == 1  # one scheduler
    assert len(list((tmp_path / "mccard-jobs" / job_id / "multirun").glob("[01]"))) == 2


@pytest.mark.slurm
@pytest.mark.slow
def test_cluster_slurm_runs_through_dask_jobqueue(slurm, tmp_path, smoke_reference):
    store = tmp_path / "store.zarr"
    name = slurm("jobqueue")
    proc = subprocess.run(
        [sys.executable, "-m", "mccard_dist.cli", "experiment=smoke", f"store.path={store}",
         "run.progress=false", "cluster=slurm", "cluster.cores=2", "cluster.memory=2GB",
         "cluster.walltime=00:10:00", "cluster.worker_lifetime=8m", "cluster.lifetime_stagger=30s",
         "cluster.dashboard_address=127.0.0.1:0", f"cluster.log_directory={tmp_path / 'logs'}",
         f"+cluster.options.job_name={name}"],
        cwd=tmp_path, env=job_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    assert ("slurm cluster: 1 job(s), replaced as their workers retire; per job 2 single-threaded"
            in proc.stderr + proc.stdout)
    assert_same_results(store, smoke_reference)
    # the workers ran as a SLURM job (its logs are there) with one thread and one BLAS thread each
    worker_logs = read_outputs(tmp_path / "logs", f"{name}-*.err")
    assert worker_logs.count("Threads:                          1") == 2, worker_logs
    # ... and the job is gone once the driver has finished
    queued = subprocess.run(["squeue", "-h", f"--name={name}", "-o", "%i %t"], capture_output=True,
                            text=True, timeout=30).stdout.split()
    assert not queued or wait_for_job(queued[0], 60)[0] in ("CANCELLED", "COMPLETED")


@pytest.mark.slurm
@pytest.mark.slow
def test_cancelled_job_resubmitted_completes_the_store_exactly(slurm, tmp_path):
    from mccard_dist.runner import run_serial

    seeds = "experiment.seeds.count=12"  # 96 cells: cancelled at 12 done, 84 still to run
    store = tmp_path / "store.zarr"
    cmd = ["sbatch", "--parsable", f"--job-name={slurm('resume')}", f"--ntasks={TASKS}",
           "--mem-per-cpu=1G", "--time=00:10:00", "--output=job-%j.out",
           str(JOBS / "slurm" / "run.sbatch"), "experiment=smoke", seeds, f"store.path={store}"]
    first = submit(cmd, tmp_path)
    deadline = time.monotonic() + 300
    done = total = 0
    while time.monotonic() < deadline:
        assert job_state(first)[0] in ("PENDING", "CONFIGURING", "RUNNING"), (
            "the job ended before it could be cancelled: " + read_outputs(tmp_path, "job-*.out"))
        try:
            done, total = status_counts(store)
        except Exception:  # noqa: BLE001 - the store does not exist yet, or a chunk is being written
            pass
        if done >= 12:
            break
        time.sleep(0.2)
    subprocess.run(["scancel", first], check=True, timeout=30)
    state, _ = wait_for_job(first, 120)
    assert state == "CANCELLED"
    done, total = status_counts(store)
    assert 0 < done < total, f"cancelled with {done} of {total} cells done; make the grid bigger"

    second = submit(cmd, tmp_path)
    state, code = wait_for_job(second)
    log = (tmp_path / f"job-{second}.out").read_text()
    assert (state, code) == ("COMPLETED", "0:0"), log
    # the resubmitted job ran exactly the cells the cancelled one left pending ...
    assert f"{total - done} of {total} cells to run" in log, log
    # ... and the store now equals a clean serial run: nothing lost, nothing computed twice
    reference = tmp_path / "reference.zarr"
    run_serial(smoke_spec(reference, seeds))
    assert_same_results(store, reference)


# -- PBS through Debian's slurm-wlm-torque wrappers (qsub/qstat/qdel) over the same SLURM --------------
@pytest.fixture(scope="module")
def pbs(slurm):
    if shutil.which("qsub") is None or shutil.which("qdel") is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI=true but qsub/qdel (slurm-wlm-torque) are missing: run .ci/slurm/up")
        pytest.skip("qsub/qdel not found (Debian's slurm-wlm-torque; .ci/slurm/up installs it)")
    return slurm


@pytest.mark.slurm
@pytest.mark.slow
def test_qsub_run_script_completes_the_store(pbs, tmp_path, smoke_reference):
    store = tmp_path / "store.zarr"
    # the overrides through the environment, as on PBS Pro (whose qsub takes no script arguments)
    job_id = submit(["qsub", "-N", pbs("pbs-run"), "-l", f"select=1:ncpus={TASKS}:mem=2gb",
                     str(JOBS / "pbs" / "run.pbs")], tmp_path,
                    MCCARD_OVERRIDES=f"experiment=smoke store.path={store}")
    state, code = wait_for_job(job_id)
    log = read_outputs(tmp_path, "*.o*") + read_outputs(tmp_path, "*.e*")
    assert (state, code) == ("COMPLETED", "0:0"), log
    assert f"{TASKS} workers;" in log and "16 of 16 cells to run" in log
    assert_same_results(store, smoke_reference)


@pytest.mark.slurm
@pytest.mark.slow
def test_cluster_pbs_runs_through_dask_jobqueue(pbs, tmp_path, smoke_reference):
    store = tmp_path / "store.zarr"
    name = pbs("pbs-jobqueue")
    proc = subprocess.run(
        [sys.executable, "-m", "mccard_dist.cli", "experiment=smoke", f"store.path={store}",
         "run.progress=false", "cluster=pbs", "cluster.cores=2", "cluster.memory=2GB",
         "cluster.walltime=00:10:00", "cluster.worker_lifetime=8m", "cluster.lifetime_stagger=30s",
         "cluster.dashboard_address=127.0.0.1:0", f"+cluster.options.job_name={name}"],
        cwd=tmp_path, env=job_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    assert "pbs cluster: 1 job(s)" in proc.stderr + proc.stdout
    assert_same_results(store, smoke_reference)
    # qsub named the worker job's output after it: the workers ran as a (PBS-wrapped) batch job
    worker_logs = read_outputs(tmp_path, "tmp*.sh.e*")
    assert worker_logs.count("Threads:                          1") == 2, worker_logs


@pytest.mark.slurm
@pytest.mark.slow
def test_hydras_submitit_launcher_runs_one_slurm_job_per_sweep_value(slurm, tmp_path):
    """``hydra/launcher=submitit_slurm``, as Hydra users know it: each value of the sweep is a
    SLURM job of its own, running its own driver and LocalCluster inside the job, into a store
    of its own; the command waits for them and prints the sweep's stores."""
    name = slurm("submitit")
    proc = subprocess.run(
        [sys.executable, "-m", "mccard_dist.cli", "-m", "hydra/launcher=submitit_slurm",
         f"hydra.launcher.name={name}", "hydra.launcher.timeout_min=10",
         "hydra.launcher.cpus_per_task=1", "hydra.launcher.mem_gb=1", "experiment=smoke",
         "experiment.methods=[mcc_ard,ls_ard]", "data.n_features=40,50", "cluster.n_workers=1",
         "run.progress=false"],
        cwd=tmp_path, env=job_env(), capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    stores = sorted((tmp_path / "results").glob("smoke-*.zarr"))
    assert sorted(xr.open_zarr(s).sizes["feature"] for s in stores) == [40, 50]
    assert all((xr.open_zarr(s)["status"] == 1).all() for s in stores)
    deadline = time.monotonic() + 60  # the tasks end once their results are written
    while True:
        shown = subprocess.run(["scontrol", "show", "job", "-o"], capture_output=True, text=True,
                               timeout=30).stdout.splitlines()
        jobs = [re.search(r"JobState=(\S+)", line).group(1) for line in shown
                if f"JobName={name} " in line]
        if not {"RUNNING", "COMPLETING"} & set(jobs) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert jobs == ["COMPLETED", "COMPLETED"], shown  # an array job's two tasks, one per value
    assert "all stores as one dataset" in proc.stdout
