"""A million cells of an estimator that costs nothing (``mccard-bench pipeline``'s), end to end on
this machine, as a user runs them: ``mccard-run`` into a store, the same grid killed (SIGKILL to
its process group) once half its cells are done and resumed by the same command, the two stores
compared value by value (all but the timings), and ``mccard-report`` on the finished store. Each
command's wall time and peak memory (``/usr/bin/time``) are printed, with the store's files per
million cells.

Usage: ``python docs/tools/bench/million.py [--cells 1000000] [--workers 2]``
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from mccard_dist.bench.pipeline import INSTANT

#: what differs between two runs of the same cells
TIMES = ("fit_seconds", "cell_seconds")


def _command(store: Path, cells: int, workers: int) -> list[str]:
    return ["/usr/bin/time", "-f", "%e %M", "mccard-run", "experiment=smoke",
            "experiment.methods=[instant]", "data.n_train=20", "data.n_test=10",
            "data.n_features=10", "data.n_relevant=2", f"experiment.seeds.count={cells // 2}",
            f"cluster.n_workers={workers}", "run.progress=false", f"store.path={store}"]


def _timed(done: subprocess.CompletedProcess) -> tuple[float, float]:
    """(wall s, peak RSS MiB) from ``/usr/bin/time -f "%e %M"``'s last line."""
    if done.returncode:
        raise SystemExit(f"failed ({done.returncode}):\n{done.stderr[-3000:]}")
    wall, kib = done.stderr.strip().splitlines()[-1].split()
    return float(wall), int(kib) / 1024


def _done(store: Path) -> int:
    import zarr

    try:
        return int((np.asarray(zarr.open_group(str(store), mode="r")["status"][...]) == 1).sum())
    except Exception:  # noqa: BLE001 - not created yet, or being written
        return 0


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", type=int, default=1_000_000, help="cells (1 tau x 2 psi)")
    parser.add_argument("--workers", type=int, default=2, help="LocalCluster workers")
    args = parser.parse_args(argv)
    import xarray as xr

    with tempfile.TemporaryDirectory(prefix="mccard-million-") as tmp:
        tmp = Path(tmp)
        (tmp / "pkg" / "mccard_bench_instant").mkdir(parents=True)
        (tmp / "pkg" / "mccard_bench_instant" / "__init__.py").write_text(INSTANT)
        (tmp / "conf" / "method").mkdir(parents=True)
        (tmp / "conf" / "method" / "instant.yaml").write_text(
            "estimator: mccard_bench_instant:Instant\n")
        env = {**os.environ, "PYTHONPATH": str(tmp / "pkg"), "MCCARD_CONFIG_DIR": str(tmp / "conf"),
               "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        whole, killed = tmp / "whole.zarr", tmp / "killed.zarr"
        print(f"{args.cells} cells of the no-cost estimator (20 x 10 data), {args.workers} "
              f"LocalCluster workers, {os.cpu_count()} CPUs")
        wall, rss = _timed(subprocess.run(_command(whole, args.cells, args.workers), env=env,
                                          cwd=tmp, capture_output=True, text=True))
        files = sum(1 for p in whole.rglob("*") if p.is_file())
        print(f"mccard-run, uninterrupted: {wall:.1f} s ({args.cells / wall:.0f} cells/s), peak "
              f"RSS {rss:.0f} MiB; the store: {files} files "
              f"({files * 1_000_000 / args.cells:.0f} per million cells)")

        proc = subprocess.Popen(_command(killed, args.cells, args.workers), env=env, cwd=tmp,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        start = time.monotonic()
        while _done(killed) < args.cells // 2 and proc.poll() is None:
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        at_kill = _done(killed)
        print(f"the same grid killed (SIGKILL) after {time.monotonic() - start:.1f} s with "
              f"{at_kill} cells done ({at_kill / args.cells:.0%})")
        wall, rss = _timed(subprocess.run(_command(killed, args.cells, args.workers), env=env,
                                          cwd=tmp, capture_output=True, text=True))
        print(f"mccard-run, the same command resuming it: {wall:.1f} s, peak RSS {rss:.0f} MiB")
        a, b = xr.open_zarr(whole), xr.open_zarr(killed)
        differ = [n for n in a.data_vars if n not in TIMES and not a[n].equals(b[n])]
        print(f"resumed store against the uninterrupted one: "
              f"{'identical' if not differ else 'DIFFERENT in ' + ', '.join(differ)} "
              f"({len(a.data_vars) - len(TIMES)} variables compared, timings aside)")

        report = ["/usr/bin/time", "-f", "%e %M", "mccard-report", str(whole), "--out",
                  str(tmp / "report")]
        wall, rss = _timed(subprocess.run(report, env=env, cwd=tmp, capture_output=True,
                                          text=True))
        print(f"mccard-report on the finished store: {wall:.1f} s, peak RSS {rss:.0f} MiB")
        if differ:
            sys.exit(1)


if __name__ == "__main__":
    main()
