"""``bench threads``: the README's estimator example under the fits' BLAS-thread rule
(``mccard_dist/models/_threads.py``), against the process's default threads (the rule switched
off from outside: every fit keeps the threads the process has) and against one thread, on the
machine as it is and beside one busy process per core that the benchmark starts and stops; then
one fit at a size where the rule keeps the process's threads, with the rule and without it. The
arms alternate run by run, so a change of the machine's load falls on all of them."""

from __future__ import annotations

import multiprocessing
import os
import statistics
import sys
import time
import warnings
from contextlib import contextmanager, nullcontext
from unittest import mock


def _busy():  # pragma: no cover - runs in the load's processes
    while True:
        pass


@contextmanager
def _load(processes):
    """``processes`` CPU-bound processes running until the block ends."""
    busy = [multiprocessing.Process(target=_busy, daemon=True) for _ in range(processes)]
    for p in busy:
        p.start()
    time.sleep(1.0)  # every one of them spinning before the clock starts
    try:
        yield
    finally:
        for p in busy:
            p.terminate()
        for p in busy:
            p.join()


def _readme_example(data):
    """The README's "Fit an estimator" block (its three fits and the prediction)."""
    from mccard_dist import LSARDRegressor, MCCARDRegressor, MCCARDRegressorCV

    MCCARDRegressor(kernel_width=5.0).fit(data.X_train, data.y_train)
    LSARDRegressor().fit(data.X_train, data.y_train)
    cv = MCCARDRegressorCV(kernel_widths=[0.3, 1.5, 7.9, 43.0], n_jobs=-1).fit(
        data.X_train, data.y_train)
    cv.predict(data.X_test, return_std=True)


def _arms():
    """name -> the context its fits run in."""
    from threadpoolctl import threadpool_limits

    from mccard_dist.models import _threads

    return {"rule": nullcontext,
            "process threads": lambda: mock.patch.object(_threads, "THREADS_MIN_COST", 0),
            "threadpool_limits(1)": lambda: threadpool_limits(limits=1, user_api="blas")}


def _seconds(work, context):
    with context(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        work()
        return time.perf_counter() - start


def _interleaved(work, arms, repeats, summary=statistics.median):
    """arm -> ``summary`` (median) of the wall seconds of ``work`` in its context, the arms
    taking turns."""
    times = {arm: [] for arm in arms}
    for _ in range(repeats):
        for arm, context in arms.items():
            times[arm].append(_seconds(work, context))
    return {arm: summary(t) for arm, t in times.items()}


def _settle(limit=1.0, wait=120.0):
    """Wait (at most ``wait`` s) for the one-minute load average to fall below ``limit``."""
    deadline = time.monotonic() + wait
    while os.getloadavg()[0] >= limit and time.monotonic() < deadline:
        time.sleep(5.0)


def bench_threads(repeats=3, large=3000, out=sys.stdout):
    """Returns ``{(phase, arm): seconds}``; prints them and the goals' ratios."""
    from threadpoolctl import threadpool_info

    from mccard_dist import MCCARDRegressor, make_paper_data
    from mccard_dist.models import _threads

    cpus = _threads.available_cpus()
    blas = ", ".join(f"{i['internal_api']}={i['num_threads']}" for i in threadpool_info()
                     if i["user_api"] == "blas")
    limit = [n for n in _threads.LIMIT_VARIABLES if os.environ.get(n)]
    if limit:
        print(f"set: {', '.join(limit)}: the rule keeps a user's limit, so every arm but "
              "threadpool_limits(1) runs that limit; unset them to measure the rule", file=out)
    print(f"README estimator example (N=300, D=1000: MCC-ARD, LS-ARD, MCC-ARD CV n_jobs=-1), "
          f"median of {repeats}, arms interleaved; {cpus} CPUs, BLAS threads {blas}", file=out)
    data = make_paper_data(seed=0, psi=0.3, tau=10.0)
    arms = _arms()
    _seconds(lambda: _readme_example(data), arms["threadpool_limits(1)"])  # imports, joblib's
    results = {}
    for phase, load in (("idle", nullcontext), (f"{cpus} busy", lambda: _load(cpus))):
        if phase == "idle":
            _settle()
        with load():
            print(f"{phase}: load average {os.getloadavg()[0]:.1f}", file=out)
            for arm, seconds in _interleaved(lambda: _readme_example(data), arms,
                                             repeats).items():
                results[phase, arm] = seconds
                print(f"  {arm:22s} {seconds:8.2f} s", file=out, flush=True)
    for phase in ("idle", f"{cpus} busy"):
        one = results[phase, "threadpool_limits(1)"]
        print(f"{phase}: rule / one thread {results[phase, 'rule'] / one:.2f} (goal <= 1.25); "
              f"process threads / one thread {results[phase, 'process threads'] / one:.2f}",
              file=out)
    if large:
        big = make_paper_data(seed=0, psi=0.3, tau=10.0, n_train=large, n_test=10,
                              n_features=large)
        model = MCCARDRegressor(kernel_width=5.0)
        _settle()
        print(f"one MCC-ARD fit at N = D = {large} (solver {model.solver!r}), idle (load average "
              f"{os.getloadavg()[0]:.1f}), least of {4 * repeats + 1}:", file=out)
        for arm, seconds in _interleaved(lambda: model.fit(big.X_train, big.y_train), arms,
                                         4 * repeats + 1, summary=min).items():
            results["large", arm] = seconds
            print(f"  {arm:22s} {seconds:8.3f} s", file=out, flush=True)
        base = results["large", "process threads"]
        print(f"large: rule / process threads {results['large', 'rule'] / base:.2f} (goal <= 1 "
              "within the noise: at this size the rule keeps the process's threads); one thread "
              f"/ process threads {results['large', 'threadpool_limits(1)'] / base:.2f}",
              file=out)
    return results
