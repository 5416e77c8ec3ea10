"""A cluster with no worker, or an address that is not a Dask scheduler, ends the run with one line
(``cluster.no_worker_timeout``, ``cluster.connect_timeout``) instead of waiting forever."""

import http.server
import socket
import threading
import time

import pytest

from mccard_dist.cluster import connect
from mccard_dist.errors import ClusterError
from mccard_dist.runner import run_experiment
from mccard_dist.store import ResultsStore

pytestmark = pytest.mark.slow  # each test waits out a timeout of a few seconds


@pytest.fixture
def scheduler_without_workers():
    """The address of a plain-TCP scheduler (in this process) that never gets a worker."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=0, processes=False, protocol="tcp://", host="127.0.0.1",
                      dashboard_address=None) as cluster:
        yield cluster.scheduler_address


@pytest.mark.cluster
@pytest.mark.timeout(120)
@pytest.mark.parametrize("unit", ["cell", "fit"])
def test_a_run_without_workers_fails_after_no_worker_timeout(smoke_spec, scheduler_without_workers,
                                                              unit):
    spec = smoke_spec("experiment.methods=[ls_ard]", f"run.unit={unit}", "cluster=address",
                      f"cluster.address={scheduler_without_workers}",
                      "cluster.no_worker_timeout=3s", name=unit)
    with pytest.raises(ClusterError, match="no workers for 3s") as info:
        run_experiment(spec)
    message = str(info.value)
    assert "cluster.no_worker_timeout" in message and len(message.splitlines()) == 1
    [run] = ResultsStore(spec.store.path, spec).runs()
    assert run["ended"].startswith("failed:") and "no workers for 3s" in run["ended"]


@pytest.fixture
def silent_port():
    """A TCP server that accepts connections and never sends a byte."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted = []

    def accept():
        while True:
            try:
                accepted.append(server.accept()[0])
            except OSError:  # closed at teardown
                return

    threading.Thread(target=accept, daemon=True).start()
    yield server.getsockname()[1]
    server.close()
    for conn in accepted:
        conn.close()


@pytest.fixture
def http_port():
    """A plain HTTP server (what a dashboard port or a wrong service looks like)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("server", ["silent_port", "http_port"])
def test_an_address_that_is_not_a_scheduler_is_refused_within_connect_timeout(
        compose, request, server):
    from mccard_dist.config import from_dictconfig

    port = request.getfixturevalue(server)
    spec = from_dictconfig(compose(["experiment=smoke", "cluster=address",
                                    f"cluster.address=tcp://127.0.0.1:{port}",
                                    "cluster.connect_timeout=2s"])).cluster
    start = time.monotonic()
    with pytest.raises(ClusterError, match="cluster.connect_timeout") as info, connect(spec):
        pass
    assert time.monotonic() - start < 30  # 2 s asked; generous for a loaded machine
    message = str(info.value)
    assert message.startswith("cluster.address: ") and len(message.splitlines()) == 1
    assert f"127.0.0.1:{port}" in message


@pytest.mark.timeout(60)
def test_batch_workers_that_never_connect_fail_after_no_worker_timeout():
    from types import SimpleNamespace

    from mccard_dist.cluster import jobqueue
    from mccard_dist.config import cluster_spec

    class NoWorkers:  # a scheduler whose worker jobs never start
        def wait_for_workers(self, n_workers, timeout):
            time.sleep(timeout)
            raise TimeoutError(f"{n_workers} workers did not connect")

        def nthreads(self):
            return {}

    jobs = SimpleNamespace(workers={"w0": SimpleNamespace(job_id="4242")})
    spec = cluster_spec("slurm", cores=1, memory="1GB", walltime="01:00:00", n_jobs=1,
                       no_worker_timeout="2s")
    with pytest.raises(ClusterError, match="no workers for 2s") as info:
        jobqueue._wait_for_workers(NoWorkers(), jobs, 1, spec)
    assert "4242" in str(info.value) and "squeue --me" in str(info.value)
