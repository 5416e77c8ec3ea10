"""Worker processes start without Dask's MALLOC_TRIM_THRESHOLD_ (it makes numpy-heavy fits spend
much of their time in the kernel; see mccard_dist.cluster.MALLOC_ENV) and with one BLAS thread."""

import os
import subprocess
import sys

import pytest

from mccard_dist.cluster import MALLOC_ENV

pytestmark = [pytest.mark.slow, pytest.mark.cluster]


def test_local_workers_have_no_trim_threshold_and_one_blas_thread(compose, monkeypatch):
    from mccard_dist.cluster import connect
    from mccard_dist.config import from_dictconfig

    # what a plain Dask cluster made earlier in this process leaves behind: its nanny exported
    # Dask's value into os.environ before spawning its worker
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "65536")
    spec = from_dictconfig(compose(["experiment=smoke", "cluster.n_workers=2"]))
    with connect(spec.cluster) as client:
        env = client.run(lambda: (os.environ.get("MALLOC_TRIM_THRESHOLD_"),
                                  os.environ.get("OMP_NUM_THREADS")))
        client.restart()  # workers respawned during a run start the same way
        again = client.run(lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_"))
    assert len(env) == 2 and set(env.values()) == {(None, "1")}
    assert set(again.values()) == {None}
    assert os.environ["MALLOC_TRIM_THRESHOLD_"] == "65536"  # this process's own setting is back


def test_the_batch_job_setting_removes_it_from_what_a_nanny_sets():
    code = ("from distributed.nanny import _get_env_variables; "
            "print(sorted(_get_env_variables('distributed.nanny.pre-spawn-environ')))")
    plain = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={k: v for k, v in os.environ.items() if not k.startswith("DASK_")})
    assert "MALLOC_TRIM_THRESHOLD_" in plain.stdout  # Dask's default, which the setting removes
    fixed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={**os.environ, **MALLOC_ENV})
    assert fixed.returncode == 0 and "MALLOC_TRIM_THRESHOLD_" not in fixed.stdout
    assert "OMP_NUM_THREADS" in fixed.stdout  # the rest of Dask's defaults stay


def test_local_workers_leave_ctrl_c_to_the_driver(compose):
    """A Ctrl-C reaches the terminal's whole process group: the workers ignore it (restarted
    ones too), and the driver stops the run and closes them."""
    import signal

    from mccard_dist.cluster import connect
    from mccard_dist.config import from_dictconfig

    spec = from_dictconfig(compose(["experiment=smoke", "cluster.n_workers=2"]))
    with connect(spec.cluster) as client:
        ignored = client.run(lambda: signal.getsignal(signal.SIGINT) == signal.SIG_IGN)
        client.restart()
        again = client.run(lambda: signal.getsignal(signal.SIGINT) == signal.SIG_IGN)
    assert len(ignored) == 2 and all(ignored.values()) and all(again.values())


def test_the_default_local_cluster_serves_no_page(compose):
    """Dask's dashboard has no login: unless asked for, the scheduler's HTTP port answers
    nothing (its JSON routes neither)."""
    import urllib.error
    import urllib.request

    from mccard_dist.cluster import connect
    from mccard_dist.config import from_dictconfig

    spec = from_dictconfig(compose(["experiment=smoke", "cluster.n_workers=1"]))
    assert spec.cluster.dashboard_address is None
    with connect(spec.cluster) as client:
        port = client.scheduler_info()["services"]["dashboard"]
        for route in ("/status", "/json/counts.json", "/info/main/workers.html"):
            with pytest.raises(urllib.error.HTTPError, match="404"):
                urllib.request.urlopen(f"http://127.0.0.1:{port}{route}", timeout=10)
    on = from_dictconfig(compose(["experiment=smoke", "cluster.n_workers=1",
                                  "cluster.dashboard_address=127.0.0.1:0"]))
    with connect(on.cluster) as client:
        port = client.scheduler_info()["services"]["dashboard"]
        assert urllib.request.urlopen(f"http://127.0.0.1:{port}/json/counts.json",
                                      timeout=10).status == 200
