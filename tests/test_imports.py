"""The house rules of ARCHITECTURE.md, checked on the source: arrows point down only (no import
cycle between rooms), no private name or private module of another room is imported, and every
module imports on its own."""

import ast
import functools
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "mccard_dist"

#: each room's layer; a room may import rooms of lower layers only (the house plan's picture)
LAYERS = {
    "defaults": -1, "errors": 0, "lock": 1, "records": 0, "data": 1, "metrics": 0, "models": 0,
    "intervals": 0, "stopping": 1,  # confidence sequences; a stop rule read on them
    "methods": 1,
    "config": 2,
    "grid": 3, "method_cv": 3,  # any method file as one CV estimator (config and models)
    "tasks": 4, "store": 4, "cluster": 4,
    "runner": 5, "analysis": 5,
    "overrides": 5,  # the command line's mistakes, said before Hydra starts
    "app": 6,  # compose and run: the plain functions under the command
    "sweep": 6,  # Hydra's callback: which job of a sweep wrote which store
    "cli": 7, "bench": 7,
    "__init__": 8,
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


def module_of(target: list[str], names: list[str]) -> Path:
    """The file an import of ``names`` from the dotted ``target`` runs first: a submodule named
    in ``names`` is its own node (``from . import integrity``)."""
    base = PACKAGE.joinpath(*target)
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


@functools.lru_cache(maxsize=1)  # one parse of the package for every room's check
def room_graph() -> dict[Path, set[Path]]:
    """Every module's imports of modules of its own room, lazy imports included."""
    graph: dict[Path, set[Path]] = {}
    for path in modules():
        edges = graph.setdefault(path, set())
        for target, names, module_path in imports(path):
            if target != room_of(path):
                continue
            found = [module_of(module_path + [n], []) for n in names]
            found = [f for f in found if f.is_file()] or [module_of(module_path, names)]
            edges.update(f for f in found if f.is_file() and f != path)
    return graph


@pytest.mark.parametrize("room", sorted({room_of(p) for p in modules()
                                          if p.parent != PACKAGE}))
def test_no_room_has_an_import_cycle(room):
    """Inside a room imports form a DAG, counting imports made inside functions (they hide a
    cycle from Python, not from the design)."""
    graph = {k: v for k, v in room_graph().items() if room_of(k) == room}
    state: dict[Path, int] = {}  # 1: on the current path, 2: done
    cycles = []

    def visit(node, trail):
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                loop = trail[trail.index(nxt):] + [nxt]
                cycles.append(" -> ".join(str(p.relative_to(PACKAGE)) for p in loop))
            elif nxt not in state:
                visit(nxt, trail + [nxt])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert not cycles, "import cycles inside a room:\n" + "\n".join(cycles)


@pytest.mark.slow
@pytest.mark.parametrize("path", [p for p in modules() if p.name != "__main__.py"],
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_every_module_imports_on_its_own(path):
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    name = ".".join(p for p in rel.parts if p != "__init__")
    done = subprocess.run([sys.executable, "-c", f"import {name}"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("room", ["grid.py", "tasks.py", "runner/run.py", "runner/work.py",
                                  "runner/drain.py", "store/writer.py",
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
