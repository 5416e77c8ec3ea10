"""Every ```python block of the documentation runs: README.md, the pages under docs/ and
jobs/README.md (included by the clusters page), parsed by Sybil's MyST parsers and run one test per
block, in page order, in one namespace per page (a block sees the names its page's earlier blocks
made), in a scratch folder.

In the page source, before a block:

- ``<!-- skip: next "why" -->`` (Sybil's skip directive): the block is not run, and the reason shows
  as the test's skip reason. A skip without a reason is refused.
- ``<!-- slow: next "why" -->``: the block's test is marked ``slow`` (``-m "not slow"`` leaves it
  out). So is every later block of the page, which may use the names a slow block made.

A block that opens ``results/quick-<hash>.zarr`` (the store ``mccard-run`` writes) gets one: the
quick experiment on the tiny problem, run once in process into the scratch folder under that very
name. Such a block is slow.

Any other ```python block runs as it is, so a block added to a page fails here unless it runs or
says why it cannot.
"""

from __future__ import annotations

import ast
import importlib
import re
import shlex
import unittest
from dataclasses import dataclass
from pathlib import Path

import pytest
from sybil import Region, Sybil
from sybil.evaluators.skip import Skipper
from sybil.parsers.abstract.lexers import LexerCollection
from sybil.parsers.markdown.lexers import DirectiveInHTMLCommentLexer
from sybil.parsers.myst import PythonCodeBlockParser, SkipParser

ROOT = Path(__file__).resolve().parents[1]
#: where the documented store lies, relative to the folder the blocks run in
QUICK_STORE = "results/quick-<hash>.zarr"
#: a python block as Markdown and MyST write it (```python, ```py, ```{code-block} python ...),
#: or as Sybil's invisible block (``<!-- invisible-code-block: python``)
PYTHON_BLOCK = re.compile(r"^[ \t]*((`{3,}|~{3,})[ \t]*(\{(code-block|code|sourcecode|code-cell)\}"
                          r"[ \t]*)?|<!--+\s*invisible-code(-block)?:?[ \t]*)"
                          r"(python3?|py|pycon|ipython3?)\b", re.MULTILINE)


def pages() -> list[Path]:
    """The Markdown pages whose blocks a reader runs (the built site and the gallery's output,
    both generated, aside)."""
    docs = [p for p in (ROOT / "docs").rglob("*.md")
            if not {"_build", "auto_examples"} & set(p.relative_to(ROOT / "docs").parts)]
    return [ROOT / "README.md", ROOT / "jobs" / "README.md", *sorted(docs)]


class SlowParser:
    """``<!-- slow: next "why" -->``: the next block's test is marked slow."""

    def __init__(self):
        self.lexers = LexerCollection([DirectiveInHTMLCommentLexer("slow")])

    def __call__(self, document):
        for lexed in self.lexers(document):
            yield Region(lexed.start, lexed.end, lexed.lexemes["arguments"], _no_op)


def _no_op(example):
    """A slow marker does nothing when the page runs: it only marks the next block's test."""


SYBIL = Sybil(parsers=[PythonCodeBlockParser(), SkipParser(), SlowParser()])


def _reason(arguments: str, where: str) -> str:
    """The quoted reason after ``next`` of a skip or slow directive; refused if missing."""
    action, _, reason = (arguments or "").strip().partition(" ")
    try:
        text = ast.literal_eval(reason.strip()) if reason.strip() else None
    except (ValueError, SyntaxError):
        text = None
    if action != "next" or not isinstance(text, str) or not text.strip():
        raise ValueError(f'{where}: write the directive as `next "the reason"`, got {arguments!r}')
    return text


@dataclass
class Block:
    """One ```python block, with the directives (skip, slow) just before it."""

    name: str
    line: int
    directives: list
    example: object
    slow_reason: str | None
    skip_reason: str | None

    @property
    def id(self) -> str:
        return f"{self.name}:{self.line}"

    @property
    def needs_store(self) -> bool:
        return QUICK_STORE in self.example.parsed


def blocks_of(page: Path, root: Path = ROOT) -> list[Block]:
    """The page's blocks; a skip or slow directive without a reason is refused."""
    name = str(page.relative_to(root))
    document = SYBIL.parse(page)
    found, pending, slow, skip = [], [], None, None
    for example in document.examples():
        where = f"{name}:{example.line}"
        if example.region.evaluator is _no_op:
            slow = _reason(example.parsed, where)
            pending.append(example)
        elif isinstance(example.region.evaluator, Skipper):
            action, reason = example.parsed
            skip = _reason(f"{action} {reason or ''}", where)
            pending.append(example)
        else:
            block = Block(name, example.line, pending, example, slow, skip)
            if slow is None and block.needs_store:
                block.slow_reason = f"opens {QUICK_STORE}, which a grid run makes"
            elif slow is None and found and found[-1].slow_reason is not None:
                block.slow_reason = "after a slow block of its page, whose names it may use"
            found.append(block)
            pending, slow, skip = [], None, None
    if pending:
        raise ValueError(f"{name}: a skip or slow directive with no block after it")
    return found


BLOCKS = [block for page in pages() for block in blocks_of(page)]


def _param(block: Block):
    slow = block.slow_reason is not None
    return pytest.param(block, id=block.id, marks=[pytest.mark.slow] if slow else [])


@pytest.fixture(scope="session")
def docs_folder(tmp_path_factory):
    """The folder the blocks run in (so that what they write stays out of the checkout)."""
    return tmp_path_factory.mktemp("docs_blocks")


@pytest.fixture(scope="session")
def quick_store(compose, docs_folder):
    """``results/quick-<hash>.zarr`` under the blocks' folder: the quick experiment's methods, tau
    and psi on the tiny problem, two seeds and small CV grids (seconds, in process)."""
    from mccard_dist.config import from_dictconfig
    from mccard_dist.runner import run_serial

    path = docs_folder / QUICK_STORE
    run_serial(from_dictconfig(compose([
        "experiment=quick", "data=tiny", "experiment.seeds.count=2", "cv.n_folds=2",
        "methods.mcc_ard.grid.kernel_width=[0.3,3.0]",
        "methods.mcc_l1.grid.kernel_width=[0.3,3.0]", "methods.mcc_l1.grid.alpha_ratio=[0.5,0.2]",
        f"store.path='{path}'", "run.progress=false"])))
    return path


#: the blocks run in this test process, by id: a block runs after the ones above it on its page
_RAN: set[str] = set()


def _run(block: Block) -> None:
    for directive in block.directives:
        directive.evaluate()
    _RAN.add(block.id)
    block.example.evaluate()


@pytest.mark.parametrize("block", [_param(b) for b in BLOCKS])
def test_block(block: Block, docs_folder, request, monkeypatch):
    """A page's blocks run top to bottom, as a reader runs them: the ones above this block that
    this process has not run yet (another test process ran them, or only this one was selected)
    run first, so a block may use what the blocks before it defined."""
    earlier = [b for b in BLOCKS if b.name == block.name and b.line < block.line
               and b.id not in _RAN and b.skip_reason is None]
    if block.needs_store or any(b.needs_store for b in earlier):
        request.getfixturevalue("quick_store")
    monkeypatch.chdir(docs_folder)
    try:
        for before in earlier:
            _run(before)
        _run(block)
    except unittest.SkipTest as skip:  # a skip directive's reason, said with the block's place
        pytest.skip(f"{block.id}: {skip}")


def test_every_python_block_of_the_pages_is_collected():
    """Sybil finds as many blocks as the pages have python blocks (one in a spelling its parser
    does not read would otherwise go untested), and the pages hold some."""
    for page in pages():
        name = str(page.relative_to(ROOT))
        written = len(PYTHON_BLOCK.findall(page.read_text()))
        assert sum(b.name == name for b in BLOCKS) == written, (
            f"{name}: {written} python blocks, not all of them collected: write them as ```python")
    names = {b.name for b in BLOCKS}
    assert {"README.md", "docs/user_guide/analysis.md", "jobs/README.md"} <= names


def test_a_skip_or_slow_directive_needs_a_reason(tmp_path):
    page = tmp_path / "page.md"
    for directive in ("<!-- skip: next -->", "<!-- slow: next -->", "<!-- skip: next why -->"):
        page.write_text(f"{directive}\n\n```python\nx = 1\n```\n")
        with pytest.raises(ValueError, match="the reason"):
            blocks_of(page, tmp_path)
    page.write_text('<!-- skip: next "needs a SLURM cluster" -->\n\n```python\nx = 1\n```\n')
    (block,) = blocks_of(page, tmp_path)
    assert block.skip_reason == "needs a SLURM cluster" and block.slow_reason is None


# --- the recorded commands of docs/measurements/ -------------------------------------------------
MEASUREMENTS = sorted((ROOT / "docs" / "measurements").glob("*.md"))
#: how a measurement says that its command is the record of an earlier commit
NO_LONGER_RUNS = re.compile(r"no longer runs since\* `[0-9a-f]{7,40}`")


def recorded_python(path: Path) -> str | None:
    """The code of a measurement's ``python -c`` command (None for other commands)."""
    head = path.read_text().partition("<!-- body -->")[0]
    command = re.search(r"\*Made by\* `(.+?)` \*at commit\*", head).group(1)
    argv = shlex.split(command)
    return argv[argv.index("-c") + 1] if argv[:2] == ["python", "-c"] else None


def missing_imports(code: str) -> list[str]:
    """The names ``code`` imports that this version of the package does not have."""
    missing = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            names = [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [(node.module, alias.name) for alias in node.names]
        else:
            continue
        for module, name in names:
            try:
                found = importlib.import_module(module)
            except ImportError:
                missing.append(module)
                continue
            if name is not None and not hasattr(found, name):
                try:  # a submodule not imported yet
                    importlib.import_module(f"{module}.{name}")
                except ImportError:
                    missing.append(f"{module}.{name}")
    return missing


@pytest.mark.parametrize("path", [p for p in MEASUREMENTS if recorded_python(p)],
                         ids=lambda p: p.stem)
def test_a_recorded_python_command_still_imports_or_says_which_commit_it_records(path):
    missing = missing_imports(recorded_python(path))
    marked = NO_LONGER_RUNS.search(path.read_text().partition("<!-- body -->")[0])
    assert not missing or marked, (
        f"{path.name}: its command imports {missing}, which this version does not have: record it "
        "again, or say under it which commit it is the record of and since when it no longer runs")
    assert missing or not marked, f"{path.name}: says its command no longer runs, but it does"


def test_a_missing_import_is_found():
    assert missing_imports("import sys, mccard_dist; from mccard_dist.analysis import nothing_here"
                           ) == ["mccard_dist.analysis.nothing_here"]
    assert missing_imports("from mccard_dist.analysis.values import summary_markdown") == []
