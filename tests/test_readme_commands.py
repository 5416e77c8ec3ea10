"""The shell commands of README.md's "Quick start" and "Run a grid" run as the README gives them,
in its order, in one folder, through the installed console scripts.

The commands are read from the README (Sybil's Markdown lexer finds the ```bash blocks), so a
command added there runs here. Each ``mccard-run`` gets overrides appended that make its grid tiny
(the tiny problem, one seed, two folds, two-value grids); a cluster kind that needs a batch system
(``cluster=slurm``, ``cluster=pbs``) is only composed (``--cfg job``) and its config validated. The
install line is not run: the package under test is installed. A ``<hash>`` in a store path stands
for the store the README's earlier commands wrote (``results/quick-<hash>.zarr``: the plain
``mccard-run``), or for a store of an earlier version (``results/old-<hash>.zarr``: one of the
fixtures of tests/data/stores/).
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from sybil import Document
from sybil.parsers.markdown.lexers import FencedCodeBlockLexer

pytestmark = [pytest.mark.slow, pytest.mark.cluster]

ROOT = Path(__file__).resolve().parents[1]
SECTIONS = ("Quick start", "Run a grid")
#: appended to every ``mccard-run`` that runs: seconds instead of minutes
TINY = ["data=tiny", "experiment.seeds.count=1", "cv.n_folds=2", "run.progress=false",
        "methods.mcc_ard.grid.kernel_width=[0.3,3.0]",
        "methods.mcc_l1.grid.kernel_width=[0.3,3.0]", "methods.mcc_l1.grid.alpha_ratio=[0.5,0.2]"]
#: cluster kinds that submit batch jobs: composed, not run
BATCH_KINDS = ("cluster=slurm", "cluster=pbs")
#: the earlier version's store that ``results/old-<hash>.zarr`` stands for
OLD_STORE = ROOT / "tests" / "data" / "stores" / "1ed758d.zip"


def readme_commands(path: Path = ROOT / "README.md") -> list[tuple[str, list[str]]]:
    """(section, argv) of every command of the ```bash blocks under the SECTIONS headings."""
    text = path.read_text()
    headings = [(m.start(), m.group(1).strip())
                for m in re.finditer(r"^## (.+)$", text, re.MULTILINE)]
    commands = []
    for block in FencedCodeBlockLexer("bash")(Document(text, str(path))):
        section = [title for start, title in headings if start < block.start][-1]
        if section not in SECTIONS:
            continue
        for line in str(block.lexemes["source"]).replace("\\\n", " ").splitlines():
            argv = shlex.split(line, comments=True)
            if argv:
                commands.append((section, argv))
    return commands


def script(name: str) -> str:
    """The console script installed beside this Python (as ``pip install`` puts it)."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.is_file() else shutil.which(name)
    assert found, f"{name} is not installed: pip install -e .[test]"
    return found


def run(folder: Path, argv: list[str]) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    proc = subprocess.run([script(argv[0]), *argv[1:]], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=600, check=False)
    assert proc.returncode == 0, f"{shlex.join(argv)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


def written_stores(folder: Path, output: str) -> list[str]:
    """The stores a ``mccard-run`` (each job of a multirun) says it wrote, in order, relative to
    ``folder``."""
    stores = []
    for path in re.findall(r"^results: (\S+)", output, re.MULTILINE):
        path = (folder / path).resolve().relative_to(folder.resolve()).as_posix()
        stores += [path] if path not in stores else []
    return stores


def resolve(folder: Path, argv: list[str], written: list[str]) -> list[str]:
    """``argv`` with each ``<hash>`` store path replaced by the store it stands for."""
    out = []
    for arg in argv:
        if "<hash>" in arg:
            pattern = arg.replace("<hash>", "*")
            if pattern.startswith("results/old-"):
                old = folder / arg.replace("<hash>", OLD_STORE.stem)
                with zipfile.ZipFile(OLD_STORE) as archive:
                    archive.extractall(old)
            matches = [p for p in written if fnmatch.fnmatch(p, pattern)]
            matches = matches or sorted(str(p.relative_to(folder)) for p in folder.glob(pattern))
            assert matches, f"{arg}: no store of the README's earlier commands matches"
            arg = matches[0]
        out.append(arg)
    return out


def test_the_readme_lists_the_commands_this_test_runs():
    programs = [argv[0] for _, argv in readme_commands()]
    assert programs[:2] == ["pip", "mccard-run"]
    assert {"mccard-report", "mccard-migrate"} <= set(programs)
    assert any(set(BATCH_KINDS) & set(argv) for _, argv in readme_commands())


def test_the_readme_commands_run_on_a_tiny_grid(tmp_path):
    from omegaconf import OmegaConf

    from mccard_dist import open_results
    from mccard_dist.config import from_dictconfig

    written = []
    for section, argv in readme_commands():
        where = f"README {section}: {shlex.join(argv)}"
        if argv[0] == "pip":  # the package under test is installed
            assert argv[1] == "install", where
            continue
        if argv[0] == "mccard-run" and set(BATCH_KINDS) & set(argv):
            proc = run(tmp_path, [*argv, "--cfg", "job"])
            spec = from_dictconfig(OmegaConf.create(proc.stdout))
            assert spec.cluster.kind in ("slurm", "pbs"), where
            continue
        if argv[0] == "mccard-run" and "run.plan=true" in argv:  # says what it would do
            before = sorted(tmp_path.rglob("*.zarr"))
            proc = run(tmp_path, [*argv, *TINY])
            assert re.search(r"^plan: new store \S+", proc.stdout, re.MULTILINE), where
            assert "cells to run:" in proc.stdout and "time: about" in proc.stdout, where
            assert sorted(tmp_path.rglob("*.zarr")) == before, f"{where}: wrote a store"
            continue
        if argv[0] == "mccard-run":
            proc = run(tmp_path, [*argv, *TINY])
            stores = written_stores(tmp_path, proc.stdout)
            assert stores, f"{where}: no store written\n{proc.stdout}"
            for store in stores:
                assert (open_results(tmp_path / store)["status"] == 1).all(), where
            if "-m" in argv:
                assert len(stores) == 2 and list((tmp_path / "multirun").glob("*/stores.txt"))
            written += stores
            continue
        assert argv[0] in ("mccard-report", "mccard-migrate"), f"{where}: not covered by this test"
        resolved = resolve(tmp_path, argv, written)
        run(tmp_path, resolved)
        if argv[0] == "mccard-report":
            out = tmp_path / resolved[resolved.index("--out") + 1]
            assert (out / "report.md").is_file(), where
            assert "--html" not in argv or (out / "report.html").is_file(), where
        else:
            assert (open_results(tmp_path / resolved[1])["status"] == 1).any(), where
