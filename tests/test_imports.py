"""The house rules of ARCHITECTURE.md, checked on the source: arrows point down only (no import
cycle between rooms), no private name or private module of another room is imported, and every
module imports on its own."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "mccard_dist"

#: each room's layer; a room may import rooms of lower layers only (the house plan's picture)
LAYERS = {
    "errors": 0, "lock": 1, "records": 0, "data": 1, "metrics": 0, "models": 0,
    "methods": 1,
    "config": 2,
    "grid": 3, "method_cv": 3,  # any method file as one CV estimator (config and models)
    "tasks": 4, "store": 4, "cluster": 4,
    "runner": 5, "analysis": 5,
    "hydra_guard": 5,  # the check of the command line, used by cli
    "cli": 6, "bench": 6,
    "__init__": 7,
}


def modules():
    return sorted(p for p in PACKAGE.rglob("*.py"))


def room_of(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def imports(path: Path):
    """``(room, names, module_path)`` of every import of the package made by ``path``, at module
    level or inside functions; ``module_path`` is the dotted path inside the package."""
    tree = ast.parse(path.read_text())
    package = path.relative_to(PACKAGE).parent.parts
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(package[: len(package) - node.level + 1])
                target = base + (node.module.split(".") if node.module else [])
            elif node.module and node.module.startswith("mccard_dist"):
                target = node.module.split(".")[1:]
            else:
                continue
            names = [a.name for a in node.names]
            if not target:  # "from . import grid"
                for name in names:
                    yield name, [], [name]
            else:
                yield target[0], names, target
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("mccard_dist."):
                    target = alias.name.split(".")[1:]
                    yield target[0], [], target


def test_the_layers_cover_every_room():
    assert {room_of(p) for p in modules()} == set(LAYERS)


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_arrows_point_down_and_nothing_private_crosses_a_room(path):
    room = room_of(path)
    for target, names, module_path in imports(path):
        if target == room:
            continue  # inside a room (e.g. models/) anything goes
        assert LAYERS[target] < LAYERS[room], (
            f"{path.name} ({room}, layer {LAYERS[room]}) imports {target} "
            f"(layer {LAYERS[target]}): the arrow points up")
        private = [n for n in names if n.startswith("_")] + [
            m for m in module_path[1:] if m.startswith("_")]
        assert not private, f"{path.name} imports private {private} of {target}"


@pytest.mark.slow
@pytest.mark.parametrize("path", [p for p in modules() if p.name != "__main__.py"],
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_every_module_imports_on_its_own(path):
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    name = ".".join(p for p in rel.parts if p != "__init__")
    done = subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("room", ["grid.py", "tasks.py", "runner.py", "store/writer.py",
                                  "store/layout.py",
                                  "store/reader.py"])
def test_the_grid_tasks_runner_and_store_know_no_method_by_name(room):
    """Methods declare themselves in mccard_dist/methods.py; these rooms only ask. Checked on
    the code (names and string values), not on docstrings and comments."""
    tree = ast.parse((PACKAGE / room).read_text())
    words = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            words.add(node.id)
        elif isinstance(node, ast.Attribute):
            words.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            words.add(node.value)
    for name in ("mcc_ard", "ls_ard", "mcc_l1", "MCCARDRegressor", "LSARDRegressor",
                 "MCCL1Regressor", "mcc_l1_alpha_max", "alpha_max", "takes_alpha"):
        assert name not in words, f"{room} uses {name}"


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_a_room_stays_small(path):
    """A module that outgrows about 500 lines has taken on a second job: split it."""
    n = len(path.read_text().splitlines())
    assert n <= 500, f"{path.relative_to(PACKAGE)} has {n} lines: split it along its jobs"
