"""What the benchmarks share: the configurations they compare and the scaffolding of a run."""

from __future__ import annotations

import time
import warnings
from contextlib import contextmanager

#: The benchmark's baseline ("plain K-fold" in its output), as overrides of the current config:
#: plain K-fold CV (the paper's 5 folds, no racing, every MCC-L1 candidate fitted from w = 0) and
#: MCC-L1's inner Lasso solves through scikit-learn's Lasso estimator (``solver="lasso"``, with
#: its own stopping rule): the protocol as the paper states it, with off-the-shelf solvers.
PLAIN_KFOLD = ("cv=kfold", "cv.race=null", "cv.paths=none", "methods.mcc_l1.params.solver=lasso")
#: The racing margin of the current configuration.
RACE = 0.25
#: The current configuration: the same K-fold CV with racing (docs/results/speed.md), current
#: solvers.
CURRENT = ("cv=kfold", f"cv.race={RACE}")
#: The kernel width set inside each fit: the paper's grid as ``experiment=paper_auto``.
AUTO = ("experiment=paper_auto",)


def blas_report() -> str:
    from threadpoolctl import threadpool_info

    infos = threadpool_info()
    return ", ".join(f"{i.get('internal_api')}={i.get('num_threads')}" for i in infos) or "none"


def one_thread():
    """A context in which BLAS runs on one thread."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)


def compose_spec(overrides, root=None, name=None):
    """The validated spec of ``conf/`` composed with these Hydra overrides (and, with ``root``,
    the store ``root/name.zarr`` and no progress bar)."""
    from ..app import compose

    if root is not None:
        overrides = [*overrides, f"store.path={root}/{name}.zarr", "run.progress=false"]
    return compose(overrides=list(overrides))


def timed_fit(model, X, y, ignore=Warning) -> float:
    """Seconds of ``model.fit(X, y)``, with warnings of class ``ignore`` silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ignore)
        start = time.perf_counter()
        model.fit(X, y)
        return time.perf_counter() - start


@contextmanager
def local_client(n_workers, memory_limit, dashboard_address="127.0.0.1:0"):
    """A client of a LocalCluster of one-thread workers, started before any clock is."""
    from ..cluster import connect
    from ..config import cluster_spec

    cluster = cluster_spec("local", n_workers=n_workers, threads_per_worker=1,
                           memory_limit=memory_limit, host="127.0.0.1",
                           dashboard_address=dashboard_address)
    with connect(cluster) as client:
        client.run(lambda: None)  # workers up before the clock starts
        yield client


def ints(text):
    return [int(v) for v in text.split(",")]


def floats(text):
    return [float(v) for v in text.split(",")]
