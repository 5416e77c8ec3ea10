"""``bench startup``: how long ``mccard-run --help`` and a refusal (a misspelt method, found once
the config is composed) take, against the interpreter's start and the import of Hydra; with
``--tree``, the same commands of another checkout (e.g. a worktree of an earlier commit) side by
side, interleaved run by run. Each command runs ``repeats`` times in a fresh process (the minimum
is the least disturbed figure)."""

from __future__ import annotations

import os
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
}


def bench_startup(repeats: int = 5, tree: str | None = None, out=sys.stdout) -> dict:
    """Seconds of each command over ``repeats`` runs, of this tree and (``tree``) of another,
    in a scratch folder; prints min, median and the exit code, and this tree's over the other's
    (minima)."""
    import tempfile

    trees = {"this": os.environ.get("PYTHONPATH", "")}
    if tree is not None:
        trees["other"] = os.pathsep.join(p for p in (os.path.abspath(tree), trees["this"]) if p)
    seconds: dict = {}
    with tempfile.TemporaryDirectory(prefix="mccard-startup-") as folder:
        for label, command in COMMANDS.items():
            for name, path in trees.items():
                seconds[label, name] = []
            codes = {}
            for _ in range(repeats):
                for name, path in trees.items():
                    env = {**os.environ, "PYTHONPATH": path}
                    start = time.perf_counter()
                    codes[name] = subprocess.run(command, capture_output=True, cwd=folder,
                                                 env=env).returncode
                    seconds[label, name].append(time.perf_counter() - start)
            for name in trees:
                times = seconds[label, name]
                who = "" if tree is None else f" [{name} tree]"
                print(f"{(label + who)[:64]:64s} {min(times):6.2f} {statistics.median(times):8.2f}"
                      f"  {codes[name]}", file=out)
            if tree is not None:
                ratio = min(seconds[label, "this"]) / min(seconds[label, "other"])
                print(f"{'  this tree / other (minima)':64s} {ratio:6.2f}", file=out)
    return seconds
