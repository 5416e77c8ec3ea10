"""The cluster section: one sealed dataclass per ``cluster.kind`` (:data:`CLUSTER_SCHEMAS`), each
checking its settings, and the rules of ``cluster.options`` (the backend's further keyword
arguments: a fixed list per kind, nothing that names code to run or binds beyond this machine
except through the typed keys, which warn).

A kind is one subclass of :class:`ClusterSpec` that sets ``kind``: it registers itself, and its
class attributes say everything the rest of the package asks of it (the options it accepts, its
default ``no_worker_timeout``, examples of its required settings, and the module of
:mod:`mccard_dist.cluster` that builds or reaches its cluster, ``backend``). Nothing outside the
kind's own class compares ``cluster.kind`` to a kind's name.

Each module holds a family of kinds, as :mod:`mccard_dist.cluster` has one backend per family:
:mod:`.local`, :mod:`.running` (a scheduler already running), :mod:`.jobqueue` (batch jobs); they
are imported in the order the kinds are listed (:data:`CLUSTER_KINDS`).
"""

# isort: off
from .base import CLUSTER_SCHEMAS, ClusterSpec, listens_beyond_loopback
from .local import LocalClusterSpec
from .running import AddressClusterSpec, RunningSchedulerSpec, SchedulerFileClusterSpec
from .jobqueue import AdaptiveSpec, JobQueueClusterSpec, PBSClusterSpec, SlurmClusterSpec
# isort: on

__all__ = ["CLUSTER_KINDS", "CLUSTER_SCHEMAS", "AdaptiveSpec", "AddressClusterSpec", "ClusterSpec",
           "JobQueueClusterSpec", "LocalClusterSpec", "PBSClusterSpec", "RunningSchedulerSpec",
           "SchedulerFileClusterSpec", "SlurmClusterSpec", "cluster_spec",
           "listens_beyond_loopback"]

CLUSTER_KINDS = tuple(CLUSTER_SCHEMAS)


def cluster_spec(kind: str, **settings):
    """The cluster spec of ``kind`` with ``settings`` (checked)."""
    return CLUSTER_SCHEMAS[kind](kind=kind, **settings)
