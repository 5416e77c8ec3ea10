"""What the documented commands write into the working folder is ignored by git: following the
README leaves ``git status`` clean."""

import fnmatch
import re
from pathlib import Path

from omegaconf import OmegaConf

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
         *sorted((ROOT / "docs" / "user_guide").glob("*.md")), ROOT / "jobs" / "README.md"]


def ignore_patterns():
    lines = (ROOT / ".gitignore").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith(("#", "!"))]


def ignored(name, folder):
    """Whether a top-level folder (or file) ``name`` is matched by a pattern of .gitignore."""
    for pattern in ignore_patterns():
        if pattern.endswith("/") and not folder:
            continue
        if fnmatch.fnmatch(name, pattern.strip("/")):
            return True
    return False


def top(path):
    """The first component of a relative path (``report/`` -> ``report``), None for an absolute
    path or a placeholder such as ``DIR``."""
    if path.startswith(("/", "$", "<")) or path.isupper():
        return None
    return Path(path).parts[0]


def test_the_report_folders_of_the_docs_commands_are_ignored():
    folders = set()
    for page in PAGES:
        for out in re.findall(r"mccard-report [^\n`]*?--out[ =](\S+)", page.read_text()):
            if (name := top(out)) is not None:
                folders.add(name)
    assert "report" in folders  # the README's quick start
    assert [f for f in sorted(folders) if not ignored(f, folder=True)] == []


def test_the_store_root_and_hydras_run_and_sweep_folders_are_ignored():
    config = OmegaConf.to_container(OmegaConf.load(ROOT / "conf" / "config.yaml"))  # unresolved
    hydra = config["hydra"]
    folders = {config["store"]["root"], top(hydra["run"]["dir"]), top(hydra["sweep"]["dir"])}
    assert folders == {"results", "outputs", "multirun"}
    assert [f for f in sorted(folders) if not ignored(f, folder=True)] == []


def test_the_batch_jobs_folders_and_logs_are_ignored():
    folders, logs = set(), set()
    for script in sorted((ROOT / "jobs").glob("*/*.*")):
        text = script.read_text()
        folders.update(re.findall(r"\$PWD/([\w.-]+)/", text))
        logs.update(re.findall(r"#SBATCH --output=(\S+)", text))
    assert folders == {"mccard-jobs"} and logs
    assert [f for f in sorted(folders) if not ignored(f, folder=True)] == []
    examples = {log.replace("%j", "1234") for log in logs}
    assert [f for f in sorted(examples) if not ignored(f, folder=False)] == []
