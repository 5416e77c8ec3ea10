"""A cluster kind is its spec class (plus its conf/cluster/<kind>.yaml): a kind defined here, in a
test, is checked by the config, preflighted and connected to by the runner, and a batch-job kind
renders its job script, without an edit to any module of the package; and no module of the
package switches on a kind's name."""

import ast
import contextlib
import copy
from dataclasses import dataclass
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from mccard_dist.config import CLUSTER_SCHEMAS, ConfigError, schemas, spec_from_dict
from mccard_dist.config.cluster import ClusterSpec, JobQueueClusterSpec
from mccard_dist.errors import ClusterError

PACKAGE = Path(__file__).resolve().parents[1] / "mccard_dist"

#: what the fake kind's backend (this module) was asked, in order
CALLS = []


def preflight(spec):
    """The fake kind's backend: refuses a cluster of more than 8 workers."""
    CALLS.append(("preflight", spec.size))
    if spec.size > 8:
        raise ClusterError(f"cluster=fake: {spec.size} workers do not fit here")


@contextlib.contextmanager
def connect(spec):
    """The fake kind's backend: an in-process cluster of ``size`` threads, or a refusal when
    ``spec.reachable`` is false."""
    from distributed import Client, LocalCluster

    CALLS.append(("connect", spec.size))
    if not spec.reachable:
        raise ClusterError("cluster=fake: not reachable")
    with LocalCluster(n_workers=spec.size, threads_per_worker=1, processes=False,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        yield client


@pytest.fixture
def kinds():
    """Kinds defined in a test, registered as the package's own are (by subclassing), and
    unregistered afterwards."""
    before = dict(CLUSTER_SCHEMAS)
    CALLS.clear()

    @dataclass(unsafe_hash=True)
    class FakeClusterSpec(ClusterSpec):
        kind: str = "fake"
        size: int | None = None
        reachable: bool = True

        backend = __name__
        default_no_worker_timeout = "7m"
        accepted_options = ("name",)
        examples = {"size": "2"}
        has_dashboard = False

        def check(self):
            super().check()
            if self.size is None:
                raise ConfigError(self.unset_message("size"))

        @property
        def target_workers(self):
            return self.size

    @dataclass(unsafe_hash=True)
    class SGEClusterSpec(JobQueueClusterSpec):
        kind: str = "sge"

        jobqueue_class = "SGECluster"
        batch_commands = ("qsub", "qstat", "qdel")
        queue_query = "qstat -u $USER"
        directive = ("#$", "-l h_vmem=4G")

        def job_options(self):
            return {"project": self.account}  # SGE's -P

    yield {"fake": FakeClusterSpec, "sge": SGEClusterSpec}
    CLUSTER_SCHEMAS.clear()
    CLUSTER_SCHEMAS.update(before)


@pytest.fixture(scope="module")
def smoke():
    from conftest import compose_config

    plain = OmegaConf.to_container(compose_config(["experiment=smoke", "run.progress=false"]),
                                   resolve=True)
    return lambda: copy.deepcopy(plain)


def with_cluster(d, tmp_path, **cluster):
    d["cluster"] = cluster
    d["store"]["path"] = str(tmp_path / "store.zarr")
    return d


def test_a_kind_defined_outside_the_package_is_checked_by_the_config(kinds, smoke, tmp_path):
    spec = spec_from_dict(with_cluster(smoke(), tmp_path, kind="fake", size=3))
    assert type(spec.cluster) is kinds["fake"] and spec.cluster.size == 3
    assert spec.cluster.no_worker_timeout == "7m"  # the kind's own default
    assert ("schema/cluster", "fake") in {(g, n) for g, n, _ in schemas()}  # its yaml's schema
    with pytest.raises(ConfigError, match=r"^cluster\.size: required when cluster\.kind=fake "
                                          r".*e\.g\. cluster\.size=2\)$"):
        spec_from_dict(with_cluster(smoke(), tmp_path, kind="fake"))
    with pytest.raises(ConfigError, match=r"^cluster\.cores: is not used by cluster\.kind=fake "
                                          r"\(it is a setting of slurm, pbs, sge\)$"):
        spec_from_dict(with_cluster(smoke(), tmp_path, kind="fake", size=3, cores=4))
    with pytest.raises(ConfigError, match=r"^cluster\.options\.silence_logs: is not an accepted "
                                          r"option of cluster\.kind=fake \(accepted: name\)"):
        spec_from_dict(with_cluster(smoke(), tmp_path, kind="fake", size=3,
                                    options={"silence_logs": 40}))


def test_the_runner_preflights_and_connects_through_the_kinds_backend(kinds, smoke, tmp_path):
    from mccard_dist.runner import run_experiment

    too_big = spec_from_dict(with_cluster(smoke(), tmp_path, kind="fake", size=9))
    with pytest.raises(ClusterError, match="9 workers do not fit here"):
        run_experiment(too_big)
    unreachable = spec_from_dict(with_cluster(smoke(), tmp_path, kind="fake", size=2,
                                              reachable=False))
    with pytest.raises(ClusterError, match="not reachable"):
        run_experiment(unreachable)
    assert CALLS == [("preflight", 9), ("preflight", 2), ("connect", 2)]
    assert not (tmp_path / "store.zarr").exists()  # refused before any store exists


@pytest.mark.slow
@pytest.mark.cluster
@pytest.mark.timeout(300)
def test_a_run_on_a_kind_defined_outside_the_package_completes(kinds, smoke, tmp_path):
    from mccard_dist.runner import run_experiment

    report = run_experiment(spec_from_dict(with_cluster(smoke(), tmp_path, kind="fake",
                                                        size=2)))
    assert report.complete and report.n_blocks_written == report.n_blocks
    assert CALLS == [("preflight", 2), ("connect", 2)]


def test_a_batch_job_kind_is_one_class(kinds, smoke, tmp_path, monkeypatch):
    """SGE through dask-jobqueue: the class names its job class, commands and directive, and
    maps cluster.account to SGE's project."""
    from mccard_dist.cluster import job_script, preflight

    d = with_cluster(smoke(), tmp_path, kind="sge", cores=4, memory="8GB", walltime="01:00:00",
                     n_jobs=2, queue="short", account="proj1", worker_lifetime="50m",
                     lifetime_stagger="2m")
    spec = spec_from_dict(d).cluster
    assert spec.no_worker_timeout == "1h" and spec.target_workers == 8
    lines = job_script(spec, "tcp://10.0.0.1:8786").splitlines()
    for line in ("#$ -N mccard-worker", "#$ -q short", "#$ -P proj1", "#$ -l h_rt=01:00:00",
                 "export OMP_NUM_THREADS=1"):
        assert line in lines, (line, lines)
    assert "--nworkers 4" in lines[-1] and "--lifetime 3000s --lifetime-stagger 120s" in lines[-1]
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ClusterError, match=r"^cluster=sge: qsub, qstat, qdel not found on PATH"):
        preflight(spec)
    d["cluster"]["job_extra_directives"] = ["#$ -l h_vmem=4G"]
    with pytest.raises(ConfigError, match=r"give the option only \(e\.g\. -l h_vmem=4G\); '#\$' "
                                          "is added"):
        spec_from_dict(d)


def _kind_switches(path: Path, names: set[str]):
    """Where ``path`` compares a ``kind`` to a kind's name or keys a table by kinds' names."""
    def is_kind(node):
        return (isinstance(node, ast.Name) and node.id == "kind") or (
            isinstance(node, ast.Attribute) and node.attr == "kind")

    def named(node):
        values = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
        return any(isinstance(v, ast.Constant) and v.value in names for v in values)

    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(map(is_kind, operands)) and any(map(named, operands)):
                yield f"{path.relative_to(PACKAGE)}:{node.lineno}"
        elif isinstance(node, ast.Dict) and sum(map(named, filter(None, node.keys))) >= 2:
            yield f"{path.relative_to(PACKAGE)}:{node.lineno} (a table by kind)"


def test_no_module_switches_on_a_cluster_kinds_name():
    """A kind's behaviour is declared by its class (config/cluster/): no module compares
    ``kind`` with a kind's name or keeps a table by kind, so a new kind needs no other edit."""
    names = set(CLUSTER_SCHEMAS)
    found = [hit for path in sorted(PACKAGE.rglob("*.py")) for hit in _kind_switches(path, names)]
    assert not found, "switches on a cluster kind's name:\n" + "\n".join(found)
