"""cluster.tls, and what cluster.options may hold: allow-lists all the way down, nothing that binds
beyond this machine except through the typed keys (cluster.host, cluster.dashboard_address)."""

import copy
import logging

import pytest
from omegaconf import OmegaConf

from mccard_dist.config import ConfigError, spec_from_dict, to_plain


@pytest.fixture(scope="module")
def configs():
    """``configs(kind) -> dict``: the smoke config with conf/cluster/<kind>.yaml, plain Python."""
    from conftest import compose_config

    overrides = {"local": [], "slurm": ["cluster=slurm"], "address": [
        "cluster=address", "cluster.address=tcp://127.0.0.1:8786"]}
    plain = {kind: OmegaConf.to_container(compose_config(["experiment=smoke", *extra]),
                                          resolve=True)
             for kind, extra in overrides.items()}
    return lambda kind: copy.deepcopy(plain[kind])


def with_options(d, **options):
    d["cluster"]["options"] = options
    return d


REFUSED = [
    # Dask refuses interface together with host, and cluster.host is always set: never worked
    ("local", {"interface": "lo"}, "cluster.options.interface: ", "cluster.host"),
    ("local", {"scheduler_kwargs": {"host": "0.0.0.0"}},
     "cluster.options.scheduler_kwargs.host: ", "cluster.host"),
    ("local", {"scheduler_kwargs": {"dashboard_address": ":8787"}},
     "cluster.options.scheduler_kwargs.dashboard_address: ", "cluster.dashboard_address"),
    ("local", {"scheduler_kwargs": {"interface": "eth0"}},
     "cluster.options.scheduler_kwargs.interface: ", "cluster.host"),
    ("local", {"scheduler_kwargs": {"jupyter": True}},
     "cluster.options.scheduler_kwargs.jupyter: is not an accepted", "allowed_failures"),
    ("local", {"scheduler_kwargs": {"contact_address": "tcp://10.0.0.1:8786"}},
     "cluster.options.scheduler_kwargs.contact_address: is not an accepted", "allowed_failures"),
    ("local", {"scheduler_kwargs": ["allowed_failures"]},
     "cluster.options.scheduler_kwargs: must be a mapping", ""),
    ("local", {"worker_dashboard_address": ":0"},
     "cluster.options.worker_dashboard_address: ", "127.0.0.1:0"),
    ("slurm", {"scheduler_options": {"interface": "ib0"}},
     "cluster.options.scheduler_options.interface: ", "cluster.interface"),
    ("slurm", {"scheduler_options": {"dashboard_address": ":9999"}},
     "cluster.options.scheduler_options.dashboard_address: ", "cluster.dashboard_address"),
    ("slurm", {"scheduler_options": {"jupyter": True}},
     "cluster.options.scheduler_options.jupyter: is not an accepted", "port"),
]


@pytest.mark.parametrize("kind, options, start, hint", REFUSED)
def test_options_that_bind_or_reach_beyond_the_allow_list_are_refused(configs, kind, options,
                                                                       start, hint):
    with pytest.raises(ConfigError) as info:
        spec_from_dict(with_options(configs(kind), **options))
    message = str(info.value)
    assert message.startswith(start) and hint in message and len(message.splitlines()) == 1


@pytest.mark.parametrize("kind, options", [
    ("local", {"scheduler_kwargs": {"allowed_failures": 5, "worker_ttl": "5m"}}),
    ("local", {"worker_dashboard_address": "127.0.0.1:0", "scheduler_port": 0}),
    ("slurm", {"scheduler_options": {"port": 8786, "allowed_failures": 5}}),
])
def test_the_allowed_options_pass(configs, kind, options):
    spec = spec_from_dict(with_options(configs(kind), **options))
    assert to_plain(spec.cluster.options) == options


def test_a_dashboard_beyond_loopback_is_warned_about(configs, monkeypatch, caplog):
    import distributed

    from mccard_dist.cluster import connect

    from mccard_dist.errors import ClusterError

    def no_cluster(**kwargs):  # the warning comes before the cluster starts
        raise RuntimeError("not started here")

    monkeypatch.setattr(distributed, "LocalCluster", no_cluster)
    d = configs("local")
    d["cluster"]["dashboard_address"] = ":8787"
    spec = spec_from_dict(d)
    with caplog.at_level(logging.WARNING, logger="mccard_dist"), pytest.raises(ClusterError), connect(
            spec.cluster):
        pass
    assert "cluster.dashboard_address=:8787" in caplog.text
    caplog.clear()
    d["cluster"]["dashboard_address"] = "127.0.0.1:0"
    with caplog.at_level(logging.WARNING, logger="mccard_dist"), pytest.raises(ClusterError), connect(
            spec_from_dict(d).cluster):
        pass
    assert "dashboard" not in caplog.text


@pytest.mark.slow
@pytest.mark.cluster
@pytest.mark.timeout(300)
def test_tls_false_runs_on_a_plain_tcp_local_cluster(smoke_spec):
    from mccard_dist.runner import run_experiment
    from mccard_dist.store import ResultsStore

    spec = smoke_spec("experiment.methods=[ls_ard]", "cluster.tls=false", "cluster.n_workers=1")
    assert spec.cluster.tls is False
    report = run_experiment(spec)
    assert report.complete and report.n_blocks_written == report.n_blocks
    assert [r["ended"] for r in ResultsStore(spec.store.path, spec).runs()] == ["finished"]


def test_a_worker_dying_while_the_local_cluster_starts_is_one_line(monkeypatch):
    import distributed

    from mccard_dist.cluster import connect
    from mccard_dist.config import cluster_spec
    from mccard_dist.errors import ClusterError

    def dies(*args, **kwargs):
        raise RuntimeError("Nanny failed to start worker process\nmore lines")

    monkeypatch.setattr(distributed, "LocalCluster", dies)
    spec = cluster_spec("local", n_workers=2, threads_per_worker=1, memory_limit="2GiB",
                       host="127.0.0.1", dashboard_address="127.0.0.1:0")
    with pytest.raises(ClusterError) as info, connect(spec):
        pass
    message = str(info.value)
    assert len(message.splitlines()) == 1
    assert "did not start (RuntimeError: Nanny failed to start worker process)" in message
