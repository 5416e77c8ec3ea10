"""``bench threads``: the README's estimator example under the fits' BLAS-thread rule, against the
process's default threads (every fit keeping them, as before the rule) and one thread, on the
machine as it is and beside one busy process per core that the benchmark starts and stops."""

from __future__ import annotations

import multiprocessing
import os
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
    from ..models import LSARDRegressor, MCCARDRegressor, MCCARDRegressorCV

    MCCARDRegressor(kernel_width=5.0).fit(data.X_train, data.y_train)
    LSARDRegressor().fit(data.X_train, data.y_train)
    cv = MCCARDRegressorCV(kernel_widths=[0.3, 1.5, 7.9, 43.0], n_jobs=-1).fit(
        data.X_train, data.y_train)
    cv.predict(data.X_test, return_std=True)


def _arms():
    """name -> the context its fits run in."""
    from threadpoolctl import threadpool_limits

    from ..models import threads

    return {"rule": nullcontext,
            "default threads": lambda: mock.patch.object(threads, "THREADS_MIN_COST", 0),
            "threadpool_limits(1)": lambda: threadpool_limits(limits=1, user_api="blas")}


def _timed(data, context, repeats):
    """Median wall seconds of the example in ``context``."""
    times = []
    for _ in range(repeats):
        with context(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            _readme_example(data)
            times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def bench_threads(repeats=1, out=sys.stdout):
    """Returns ``{(phase, arm): seconds}``; prints them and the goals' ratios."""
    from threadpoolctl import threadpool_info

    from ..data import make_paper_data
    from ..models import threads

    cpus = threads.available_cpus()
    blas = ", ".join(f"{i['internal_api']}={i['num_threads']}" for i in threadpool_info()
                     if i["user_api"] == "blas")
    limit = [n for n in threads.LIMIT_VARIABLES if os.environ.get(n)]
    print(f"README estimator example (N=300, D=1000: MCC-ARD, LS-ARD, MCC-ARD CV n_jobs=-1), "
          f"median of {repeats}; {cpus} CPUs, BLAS threads {blas}"
          + (f"; set: {', '.join(limit)} (the rule keeps them)" if limit else ""), file=out)
    data = make_paper_data(seed=0, psi=0.3, tau=10.0)
    arms = _arms()
    _timed(data, arms["threadpool_limits(1)"], 1)  # imports, joblib's workers started
    results = {}
    for phase, load in (("as is", nullcontext), (f"{cpus} busy", lambda: _load(cpus))):
        with load():
            print(f"{phase}: load average {os.getloadavg()[0]:.1f}", file=out)
            for arm, context in arms.items():
                results[phase, arm] = _timed(data, context, repeats)
                print(f"  {arm:22s} {results[phase, arm]:8.2f} s", file=out, flush=True)
    idle, busy = "as is", f"{cpus} busy"
    ratio = {phase: {arm: results[phase, arm] / results[phase, "threadpool_limits(1)"]
                     for arm in arms} for phase in (idle, busy)}
    print(f"as is: rule / default threads "
          f"{results[idle, 'rule'] / results[idle, 'default threads']:.2f} (goal <= 1)", file=out)
    print(f"busy: rule / threadpool_limits(1) {ratio[busy]['rule']:.2f} (goal <= 1.5); "
          f"default threads / threadpool_limits(1) {ratio[busy]['default threads']:.2f}",
          file=out)
    return results
