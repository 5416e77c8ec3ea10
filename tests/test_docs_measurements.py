"""The measured tables of the docs: written by docs/tools/record.py, not edited by hand."""

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
spec = importlib.util.spec_from_file_location("record", DOCS / "tools" / "record.py")
record = importlib.util.module_from_spec(spec)
spec.loader.exec_module(record)

MEASUREMENTS = sorted((DOCS / "measurements").glob("*.md"))


def test_there_are_measurements():
    assert len(MEASUREMENTS) >= 3


def check_measurement(text: str, name: str) -> None:
    head, body, recorded = record.split(text)
    assert recorded is not None, f"{name}: no body-sha256 line"
    assert record.body_hash(body) == recorded, (
        f"{name} was edited after docs/tools/record.py wrote it; record it again")
    # the provenance line: command, commit, machine
    assert re.search(r"\*Made by\* `[^`]+` \*at commit\* `[0-9a-f]{7,40}`", head)
    assert " CPUs" in head and "Python " in head


@pytest.mark.parametrize("path", MEASUREMENTS, ids=lambda p: p.stem)
def test_a_measurement_is_unchanged_since_it_was_recorded(path):
    check_measurement(path.read_text(), path.name)


@pytest.mark.parametrize("path", MEASUREMENTS, ids=lambda p: p.stem)
def test_a_measurement_with_one_digit_changed_is_caught(path):
    text = path.read_text()
    start = text.index(record.SEPARATOR) + len(record.SEPARATOR)
    digit = re.compile(r"\d").search(text, start)
    edited = text[:digit.start()] + str((int(digit.group()) + 1) % 10) + text[digit.end():]
    with pytest.raises(AssertionError, match="was edited after"):
        check_measurement(edited, path.name)


def test_results_pages_take_their_tables_from_measurements():
    """Pages under docs/results/ show measured tables and outputs only by including a measurement:
    no table, and no fenced block but commands (bash) and MyST directives."""
    for page in (DOCS / "results").glob("*.md"):
        text = page.read_text()
        tables = [line for line in text.splitlines() if line.lstrip().startswith("|")]
        assert not tables, f"{page.name} has a hand-written table: include a measurement instead"
        fences = re.findall(r"^```(\S*)", text, flags=re.M)
        outputs = [f for f in fences[::2] if f != "bash" and not f.startswith("{")]
        assert not outputs, f"{page.name} has a hand-written output block: record it instead"
        for include in re.findall(r"\{include\} (\S+)", text):
            assert (page.parent / include).resolve().is_file(), include


def test_the_readme_tables_are_their_measurements():
    """Each README block between <!-- NAME:begin/end --> markers is the body of the recorded
    docs/measurements/NAME.md (docs/tools/readme_table.py copies it)."""
    spec = importlib.util.spec_from_file_location("readme_table",
                                                  DOCS / "tools" / "readme_table.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    readme = (ROOT / "README.md").read_text()
    names = re.findall(r"<!-- (\S+):begin -->", readme)
    assert names, "README.md shows no recorded table"
    for name in names:
        assert tool.block(readme, name).group(1) == tool.body(name), (
            f"README.md's {name} block differs from docs/measurements/{name}.md: run "
            f"python docs/tools/readme_table.py {name}")
