"""``bench startup``: how long ``mccard-run --help`` and two refusals (one after Hydra composes the
config, one before) take, against the interpreter's start and the import of Hydra; each command
runs ``repeats`` times in a fresh process (the minimum is the least disturbed figure)."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

COMMANDS = {
    "python -c pass (the interpreter)": [sys.executable, "-c", "pass"],
    "python -c 'import hydra'": [sys.executable, "-c", "import hydra"],
    "mccard-run --help": [sys.executable, "-m", "mccard_dist.cli", "--help"],
    "mccard-run experiment.methods=[mcc_ardd]": [
        sys.executable, "-m", "mccard_dist.cli", "experiment.methods=[mcc_ardd]"],
    "mccard-run ++hydra.callbacks.x._target_=os.getcwd": [
        sys.executable, "-m", "mccard_dist.cli", "++hydra.callbacks.x._target_=os.getcwd"],
}


def bench_startup(repeats: int = 5, out=sys.stdout) -> dict[str, list[float]]:
    """Seconds of each command over ``repeats`` runs; prints min, median and the exit code."""
    seconds: dict[str, list[float]] = {}
    print(f"{'command':52s} {'min s':>6s} {'median s':>8s}  exit", file=out)
    for label, command in COMMANDS.items():
        times, code = [], None
        for _ in range(repeats):
            start = time.perf_counter()
            code = subprocess.run(command, capture_output=True).returncode
            times.append(time.perf_counter() - start)
        seconds[label] = times
        print(f"{label:52s} {min(times):6.2f} {statistics.median(times):8.2f}  {code}", file=out)
    return seconds
