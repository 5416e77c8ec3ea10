"""The runner: what a run says when its tasks stall."""

import pytest


@pytest.mark.slow
@pytest.mark.cluster
def test_a_stopped_worker_is_named_with_the_blocks_it_holds(smoke_spec, monkeypatch):
    """A worker stopped (SIGSTOP) before the run holds the blocks the scheduler gave it: once
    the other worker has run the rest and nothing finishes for the stall interval, one line (not
    one per check) says which blocks wait on the stopped worker; after SIGCONT the run ends."""
    import logging
    import os
    import signal
    import threading
    import time

    from distributed import Client, LocalCluster

    from mccard_dist import runner
    from mccard_dist.runner import drain

    monkeypatch.setattr(drain, "STALL_SECONDS", 3.0)
    spec = smoke_spec("run.block_seconds=0")
    lines, only_stopped = [], threading.Event()

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        pids = client.run(os.getpid)
        (stopped, stopped_pid), (running, _) = sorted(pids.items())

        class Seen(logging.Handler):
            def emit(self, record):
                if record.getMessage().startswith("no task has finished"):
                    lines.append(record.getMessage())
                    if running not in lines[-1]:  # the rest is done: the stall is the stop
                        only_stopped.set()

        def resume():
            only_stopped.wait(120)
            time.sleep(8)  # more than two stall intervals: still one line
            os.kill(stopped_pid, signal.SIGCONT)

        seen = Seen(logging.WARNING)
        logging.getLogger("mccard_dist.runner").addHandler(seen)
        os.kill(stopped_pid, signal.SIGSTOP)
        thread = threading.Thread(target=resume)
        thread.start()
        try:
            report = runner.run_experiment(spec, client=client, progress=False)
        finally:
            os.kill(stopped_pid, signal.SIGCONT)
            only_stopped.set()
            thread.join()
            logging.getLogger("mccard_dist.runner").removeHandler(seen)
    assert report.complete and report.n_cells_written == report.n_cells
    final = [line for line in lines if running not in line]
    assert len(final) == 1, lines
    assert f"({stopped}, last heard from" in final[0] and " holds block " in final[0]


def test_a_stall_names_each_workers_tasks_without_the_runs_token():
    from collections import namedtuple

    from mccard_dist.runner.drain import _holders

    Future = namedtuple("Future", "key")

    token = "0123abcd-9f8e7d"
    keys = [f"block-{token}-mcc_ard/t0/p0/s0-1", f"block-{token}-ls_ard/t0/p1/s0",
            f"fit-{token}-mcc_l1/t0/p0/s1-u2-f0"]
    in_flight = {Future(k): None for k in keys}
    text = _holders({"tcp://h:1": [keys[0], "someone-elses-task"], "tcp://h:2": []},
                    {"tcp://h:1": {"name": 3, "last_seen": 1000.0}}, in_flight, now=1095.0)
    assert text.startswith("worker 3 (tcp://h:1, last heard from 95 s ago) holds block "
                           "mcc_ard/t0/p0/s0-1; 2 task(s) wait for a worker;")
    assert "someone" not in text and "tcp://h:2" not in text and token not in text


@pytest.mark.slow
@pytest.mark.cluster
def test_a_local_cluster_closes_without_dasks_kill_notice(smoke_spec, caplog):
    """A worker process slower than Dask's 4 s to exit (a loaded machine) is killed by its nanny
    as the cluster closes; the run has every result by then, so nothing is said about it."""
    import logging

    from mccard_dist.cluster import connect

    def exit_slowly():
        import atexit
        import time

        atexit.register(time.sleep, 6)

    caplog.set_level(logging.INFO, logger="distributed.nanny")
    with connect(smoke_spec("cluster.n_workers=1").cluster) as client:
        client.run(exit_slowly)
    assert "Nanny asking worker to close" in caplog.text  # the nanny's log is seen here
    assert "still alive" not in caplog.text
