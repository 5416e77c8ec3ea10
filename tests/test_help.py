"""``mccard-run --help``: says what the tool does, and every choice it lists works as shown."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from mccard_dist.cli import GROUPS, help_text
from mccard_dist.config import config_dir

CONFIG_DIR = config_dir()
ROOT = Path(__file__).resolve().parents[1]


def listed(text, heading):
    """Option names listed (indented by 4) under a heading line that starts with ``heading``."""
    block = text.split(heading, 1)[1]
    names = []
    for line in block.splitlines()[1:]:
        if line.startswith(" " * 5):  # a summary's next line
            continue
        if not line.startswith("    "):
            if line.startswith("  ") and line.strip().endswith(":"):
                break  # next group
            if not line.strip():
                break
            continue
        names.append(line.split()[0])
    return names


@pytest.mark.slow  # composes every option
def test_help_lists_each_group_option_and_each_works_as_shown(compose, tmp_path):
    import numpy as np

    from mccard_dist.config import from_dictconfig

    text = help_text()
    assert "Hydra" not in text.splitlines()[0] and "results store" in text
    for group in GROUPS:
        options = listed(text, f"  {group}:")
        assert options == sorted(p.stem for p in (CONFIG_DIR / group).glob("*.yaml"))
        for option in options:
            overrides = [f"{group}={option}", "experiment=smoke"] if group != "experiment" else [
                f"experiment={option}"]
            if option == "address":
                overrides.append("cluster.address=tcp://host:8786")
            if option == "generator":  # checked, not imported, until a run
                overrides.append("data.generator=mylab.sim:hetero")
            if option == "scheduler_file":
                overrides.append("cluster.scheduler_file=/tmp/s.json")
            if option == "file":  # as the help's example: a .csv and its target column
                rows = np.random.default_rng(0).standard_normal((40, 3))
                np.savetxt(tmp_path / "mydata.csv", rows, delimiter=",", header="a,b,y",
                           comments="")
                overrides += [f"data.path={tmp_path / 'mydata.csv'}", "data.target=y"]
            from_dictconfig(compose(overrides))  # composes and validates as listed
    methods = listed(text, "\nmethods (")
    assert methods == sorted(p.stem for p in (CONFIG_DIR / "method").glob("*.yaml"))
    assert "experiment.methods=[" in text
    assert not re.search(r"^\s*method:", text, re.M)  # not offered as a group
    for method in methods:
        spec = from_dictconfig(compose(["experiment=smoke", f"experiment.methods=[{method}]"]))
        assert [m.name for m in spec.methods] == [method]


@pytest.mark.slow
def test_help_on_the_command_line():
    proc = subprocess.run([sys.executable, "-m", "mccard_dist.cli", "--help"], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0
    assert proc.stdout.startswith("mccard-run: ")
    assert "powered by Hydra" not in proc.stdout
    assert len(re.findall(r"^  mccard-run ", proc.stdout, re.M)) >= 3  # examples


def test_each_summary_is_a_whole_sentence_within_100_columns():
    from mccard_dist.cli import _summary

    text = help_text()
    assert all(len(line) <= 100 for line in text.splitlines())
    assert _summary(CONFIG_DIR / "cv" / "kfold.yaml").endswith("scored on held-out folds")
    flat = " ".join(line.strip() for line in text.splitlines())
    assert "alpha_ratio for MCC-L1), scored on held-out folds" in flat


#: how long ``experiment=smoke`` takes, as every page says it (a range: the machine's load moves it)
SMOKE_TIME = "under a minute on 2 cores"


@pytest.mark.slow  # composes the smoke experiment
def test_smokes_cost_is_said_one_way_in_the_help_the_config_and_the_docs(compose):
    """Smoke's size in cells, counted from its config, and one time range wherever a time is
    given; its config file's comment (the help's summary of it) gives the cells only."""
    from mccard_dist.config import from_dictconfig
    from mccard_dist.grid import cells

    said = f"{len(cells(from_dictconfig(compose(['experiment=smoke']))))} cells"
    timed = re.compile(r"\b(seconds?|minutes?)\b")
    text = help_text()
    summary = next(line for line in text.splitlines() if line.startswith("    smoke "))
    example = next(line for line in text.splitlines() if "mccard-run experiment=smoke " in line)
    assert said in summary and not timed.search(summary), summary
    assert example.endswith(f"# {said}, {SMOKE_TIME}"), example
    header = (CONFIG_DIR / "experiment" / "smoke.yaml").read_text().split("\ndefaults:")[0]
    assert said in header and not timed.search(header), header
    pages = [ROOT / "README.md", ROOT / "jobs" / "README.md", *(ROOT / "docs").rglob("*.md"),
             *(ROOT / "docs" / "examples").glob("*.py")]
    lines = [(page.name, line) for page in pages if "_build" not in page.parts
             for line in page.read_text().splitlines() if "smoke" in line]
    commands = [(name, line) for name, line in lines if re.search(r"experiment=smoke +#", line)]
    assert len(commands) >= 4  # README, getting started, experiments, jobs
    for name, line in commands:
        assert said in line.split("#", 1)[1], (name, line)
    for name, line in lines:
        if timed.search(line):
            assert f"{said}, {SMOKE_TIME}" in line, (name, line)


def test_mccard_bench_help_lists_every_command_with_the_options_the_docs_use(monkeypatch,
                                                                            capsys):
    """``mccard-bench`` (installed) and ``docs/tools/bench/run.py`` (the research benchmarks):
    each lists its commands with their options, and every command and option the docs use is
    one of them (the changelog and the recorded measurements name commands of their day)."""
    import sys

    from mccard_dist.bench import SUBCOMMANDS, main

    bench = ROOT / "docs" / "tools" / "bench"
    sys.path.insert(0, str(bench))
    try:
        import run
    finally:
        sys.path.remove(str(bench))
    monkeypatch.setenv("COLUMNS", "80")  # argparse wraps its own parts to the terminal
    listed = {}
    for prog, table in (("mccard-bench", SUBCOMMANDS),
                        ("python docs/tools/bench/run.py", run.SUBCOMMANDS)):
        name = prog.split()[-1]
        with pytest.raises(SystemExit) as exit_:
            main(["--help"], subcommands=table, prog=name)
        assert exit_.value.code == 0
        text = capsys.readouterr().out
        assert text.startswith(f"usage: {name} ") and "python -m" not in text
        assert all(len(line) <= 100 for line in text.splitlines())
        blocks = {}  # command -> its lines in the list of commands
        for block in re.split(rf"\n(?=  {re.escape(name)} )", text)[1:]:
            blocks[block.split()[1]] = block
        assert list(blocks) == list(table)
        listed[prog] = blocks
        for command, (_, _, arguments) in table.items():  # each option says what it is
            assert all(options.get("help") for options in arguments.values()), command
    assert not set(listed["mccard-bench"]) & set(listed["python docs/tools/bench/run.py"])
    pages = [ROOT / "README.md", ROOT / "jobs" / "README.md", *(ROOT / "docs").rglob("*.md"),
             *(ROOT / "docs" / "examples").glob("*.py")]
    pages = [p for p in pages if "_build" not in p.parts and "measurements" not in p.parts
             and p.name != "changelog.md"]
    used = [(page.name, prog, m[1], m[2]) for page in pages for prog in listed
            for m in re.finditer(rf"{re.escape(prog)} (\w+)([^\n`#|]*)", page.read_text())
            if not m[1].isupper()]  # not a placeholder such as COMMAND
    assert len(used) >= 15
    for page, prog, command, rest in used:
        assert command in listed[prog], (page, prog, command)
        for flag in re.findall(r"(?<!\S)--[\w-]+", rest):  # optional "[--x" or required "--x"
            assert re.search(rf"(?<![\w-]){flag}(?![\w-])", listed[prog][command]), (
                page, command, flag)
