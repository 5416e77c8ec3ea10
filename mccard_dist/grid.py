"""The experiment grid: cells, CV candidates, blocks of work, store coordinates and the grid hash;
pure functions of an :class:`~mccard_dist.config.ExperimentSpec` (no Dask, no zarr, no I/O).

A *cell* is one ``(method, tau, psi, seed)`` point (K-fold CV over the method's candidates, then a
final fit); a *block*, the unit of distribution, is a ``psi x seed`` rectangle of cells of one
method and tau inside one of the store's per-cell chunks, its size set by the run as it learns
what a cell costs (:func:`blocks`). :func:`grid_hash` identifies everything that changes
results, not how or where the run happens.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # the grid reads specs; it needs no config code at run time
    from .config import CVSpec, ExperimentSpec, MethodSpec

__all__ = ["CELLS_PER_CHUNK", "GRID_VERSION", "Block", "Cell", "block_fits", "blocks",
           "candidate_values", "cell_block", "cell_tile", "cells", "chosen_names", "coords",
           "cv_candidates", "cv_units", "description_hash", "diff_descriptions", "fits_per_cell",
           "flatten_keys",
           "grid_description", "grid_hash", "make_blocks", "resolve_unit", "todo_mask"]

#: Bumped when the meaning of a grid description or the store's layout changes (stores of an
#: earlier version are refused until ``mccard-migrate`` brings them to this one).
GRID_VERSION = 4


@dataclass(frozen=True)
class Cell:
    """One ``(method, tau, psi, seed)`` point; ``index`` is its position in those coordinates."""

    method: str
    tau: float
    psi: float
    seed: int
    index: tuple[int, int, int, int]

    @property
    def key(self) -> str:
        """Readable, stable key, e.g. ``"mcc_ard/t0/p3/s7"`` (coordinate positions)."""
        _, t, p, s = self.index
        return f"{self.method}/t{t}/p{p}/s{s}"


@dataclass(frozen=True)
class Block:
    """A unit of distributed work: the cells of one method and tau in a ``psi x seed`` rectangle
    of the grid's positions (``positions``: method, tau, first and end psi, first and end seed,
    ends exclusive), with the rectangle's coordinate values; ``key`` gives the positions (ranges
    inclusive), e.g. ``"mcc_l1/t2/p20/s40-42"``."""

    method: str
    positions: tuple[int, int, int, int, int, int]
    tau: float
    psis: tuple[float, ...]
    seeds: range | tuple[int, ...]

    @classmethod
    def of(cls, spec: ExperimentSpec, mi: int, ti: int, psis: range, seeds: range) -> Block:
        """The block of method ``mi`` and tau ``ti`` over the psi and seed positions given."""
        return cls(spec.methods[mi].name, (mi, ti, psis.start, psis.stop, seeds.start,
                                           seeds.stop), spec.tau[ti],
                   tuple(spec.psi[psis.start:psis.stop]), spec.seeds[seeds.start:seeds.stop])

    @property
    def key(self) -> str:
        _, t, p0, p1, s0, s1 = self.positions
        return f"{self.method}/t{t}/{_range('p', p0, p1 - 1)}/{_range('s', s0, s1 - 1)}"

    @property
    def region(self) -> tuple[int, int, slice, slice]:
        """Position of the block in the ``(method, tau, psi, seed)`` coordinates."""
        mi, ti, p0, p1, s0, s1 = self.positions
        return mi, ti, slice(p0, p1), slice(s0, s1)

    @property
    def shape(self) -> tuple[int, int]:
        """``(psi values, seeds)`` of the rectangle."""
        return len(self.psis), len(self.seeds)

    @property
    def cells(self) -> tuple[Cell, ...]:
        """The block's cells, psi varying slowest."""
        mi, ti, p0, _, s0, _ = self.positions
        return tuple(Cell(self.method, self.tau, psi, seed, (mi, ti, p0 + p, s0 + s))
                     for p, psi in enumerate(self.psis) for s, seed in enumerate(self.seeds))

    def __len__(self) -> int:
        return len(self.psis) * len(self.seeds)


def cells(spec: ExperimentSpec) -> list[Cell]:
    """Every cell of the grid, in the order method, tau, psi, seed (the last varying fastest)."""
    return [
        Cell(m.name, tau, psi, seed, (mi, ti, pi, si))
        for mi, m in enumerate(spec.methods)
        for ti, tau in enumerate(spec.tau)
        for pi, psi in enumerate(spec.psi)
        for si, seed in enumerate(spec.seeds)
    ]


def cv_candidates(method_spec: MethodSpec) -> list[dict]:
    """The CV candidates of a method, ``{name: value}`` under its grid's names, the width varying
    slowest (:meth:`mccard_dist.methods.MethodKind.candidates`): none without a list in its grid
    (one fit per cell)."""
    return method_spec.kind.candidates(method_spec.grid)


def cv_units(method_spec: MethodSpec, cv_spec: CVSpec) -> list[tuple[int, ...]]:
    """The candidates each K-fold task fits on one fold (indices into :func:`cv_candidates`):
    one path per L1 ratio (``cv.paths=width``) or per kernel width (``penalty``) for a method
    that fits paths, in the path's order (from its largest value down), else one candidate per
    task."""
    candidates = cv_candidates(method_spec)
    route = path_route(method_spec, cv_spec)
    if route == "none":
        return [(c,) for c in range(len(candidates))]
    along = method_spec.kind.path_name(route)
    groups: dict[tuple, list[int]] = {}
    for c, candidate in enumerate(candidates):
        groups.setdefault(tuple(v for k, v in candidate.items() if k != along), []).append(c)
    return [tuple(sorted(group, key=lambda c: -candidates[c][along]))
            for group in groups.values()]


def path_route(method_spec: MethodSpec, cv_spec: CVSpec) -> str:
    """The route (one of ``cv.paths``) by which K-fold CV fits the method's candidates:
    ``cv.paths`` where the method can fit paths, else ``none``."""
    if cv_spec.scheme != "kfold":
        return "none"
    return method_spec.kind.path_route(method_spec.params, method_spec.grid, cv_spec.paths)


def fits_per_cell(method_spec: MethodSpec, cv_spec: CVSpec) -> int:
    """Estimator fits in one cell: every candidate on every fold, plus the final fit (kfold); one
    fit per candidate, the chosen one being the final fit (alo); one fit without candidates.
    An upper bound when ``cv.race`` or ``cv.path_stop`` skips candidates."""
    n_candidates = len(cv_candidates(method_spec))
    if not n_candidates:
        return 1
    if cv_spec.scheme == "alo":
        return n_candidates
    return n_candidates * cv_spec.n_folds + 1


def block_fits(spec: ExperimentSpec, block: Block) -> int:
    """Estimator fits in a block."""
    return len(block.cells) * fits_per_cell(spec.method(block.method), spec.cv)


def _range(prefix: str, first: int, last: int) -> str:
    return f"{prefix}{first}" if first == last else f"{prefix}{first}-{last}"


def cell_block(spec: ExperimentSpec, cell: Cell) -> Block:
    """The block of one cell (its region in the store), e.g. for ``run.unit=fit``."""
    mi, ti, p, s = cell.index
    return Block.of(spec, mi, ti, range(p, p + 1), range(s, s + 1))


#: cells of one per-cell chunk of a store's variables (:func:`cell_tile`)
CELLS_PER_CHUNK = 10_000


def cell_tile(n_psi: int, n_seeds: int) -> tuple[int, int]:
    """``(psi values, seeds)`` of a new store's per-cell chunks: every seed of up to
    :data:`CELLS_PER_CHUNK` cells per psi row, and as many whole rows as fit in that many cells;
    a block never spans two of them (:func:`blocks`)."""
    seeds = min(n_seeds, CELLS_PER_CHUNK)
    return max(1, min(n_psi, CELLS_PER_CHUNK // seeds)), seeds


def blocks(spec: ExperimentSpec, todo: np.ndarray, size: Callable[[str], int],
           tile: tuple[int, int]) -> Iterator[Block]:
    """The blocks of the cells ``todo`` marks (a boolean array ``(method, tau, psi, seed)``),
    made one at a time, each of at most ``size(method)`` cells (asked as it is made, so sizes may
    change as a run learns its cells' cost) and inside one ``tile`` (``(psi values, seeds)``
    aligned to multiples of it: a store's per-cell chunk, :func:`cell_tile`).

    Order: seed tile by seed tile (an unfinished grid holds complete seeds, the same data for
    every method: what paired comparisons need), then method, tau and psi. Within a tile, whole
    psi rows of it go together where all their cells are to do and ``size`` allows; else each
    row's consecutive cells to do, in runs of at most ``size``."""
    n_methods, n_taus, n_psi, n_seeds = todo.shape
    psi_tile, seed_tile = tile
    for s0 in range(0, n_seeds, seed_tile):
        s1 = min(s0 + seed_tile, n_seeds)
        width = s1 - s0
        for mi, ti, p0 in itertools.product(range(n_methods), range(n_taus),
                                            range(0, n_psi, psi_tile)):
            rows = todo[mi, ti, p0:min(p0 + psi_tile, n_psi), s0:s1]
            if not rows.any():
                continue
            method = spec.methods[mi].name
            full = rows.all(axis=1)
            p = 0
            while p < rows.shape[0]:
                if not rows[p].any():
                    p += 1
                    continue
                n = max(1, int(size(method)))  # asked once for each block made
                if full[p] and n >= width:
                    k = 1
                    while k < n // width and p + k < rows.shape[0] and full[p + k]:
                        k += 1
                    yield Block.of(spec, mi, ti, range(p0 + p, p0 + p + k), range(s0, s1))
                    p += k
                    continue
                for start, stop in _runs(rows[p]):
                    while start < stop:
                        if n is None:
                            n = max(1, int(size(method)))
                        end = min(start + n, stop)
                        yield Block.of(spec, mi, ti, range(p0 + p, p0 + p + 1),
                                       range(s0 + start, s0 + end))
                        start, n = end, None
                p += 1


def _runs(row: np.ndarray) -> list[tuple[int, int]]:
    """``(start, stop)`` of each run of True values of a boolean row."""
    edges = np.flatnonzero(np.diff(np.concatenate(([False], row, [False])).astype(np.int8)))
    return list(zip(edges[::2].tolist(), edges[1::2].tolist()))


def todo_mask(spec: ExperimentSpec, cells_: Iterable[Cell]) -> np.ndarray:
    """The boolean ``(method, tau, psi, seed)`` array of ``cells_``."""
    mask = np.zeros((len(spec.methods), len(spec.tau), len(spec.psi), len(spec.seeds)), bool)
    for cell in cells_:
        mask[cell.index] = True
    return mask


def make_blocks(spec: ExperimentSpec, cells_: Iterable[Cell], size: int | None = None,
                tile: tuple[int, int] | None = None) -> list[Block]:
    """:func:`blocks` of ``cells_`` as a list: at most ``size`` cells each (default: as large as
    ``tile`` allows), inside ``tile`` (default: a new store's, :func:`cell_tile`)."""
    tile = tile or cell_tile(len(spec.psi), len(spec.seeds))
    limit = size if size is not None else tile[0] * tile[1]
    return list(blocks(spec, todo_mask(spec, cells_), lambda _: limit, tile))


def coords(spec: ExperimentSpec, n_features: int | None = None) -> dict[str, np.ndarray]:
    """Coordinates of the results store: ``model`` (method names), ``tau``, ``psi``, ``seed`` in
    the spec's order; ``candidate``, ``fold`` (one column for ``cv.scheme=alo``) and ``feature``
    as positions, ``candidate`` up to the most CV candidates of a method."""
    n_candidates = max((len(cv_candidates(m)) for m in spec.methods), default=0)
    return {
        "model": np.array(spec.method_names, dtype=str),
        "tau": np.array(spec.tau, dtype=np.float64),
        "psi": np.array(spec.psi, dtype=np.float64),
        "seed": np.array(spec.seeds, dtype=np.int64),
        "candidate": np.arange(n_candidates, dtype=np.int64),
        "fold": np.arange(spec.cv.n_columns, dtype=np.int64),
        "feature": np.arange(spec.data.n_features if n_features is None else n_features,
                             dtype=np.int64),
    }


def candidate_values(spec) -> dict[str, np.ndarray]:
    """The value of each method's candidates under each name of the methods' grids (``spec``:
    an :class:`~mccard_dist.config.ExperimentSpec`, or anything with its ``methods``), as
    ``{name: (n_methods, n_candidates) array}``; NaN where a method has no such name (or a width
    set inside each fit) or fewer candidates."""
    per_method = [cv_candidates(m) for m in spec.methods]
    n = max(map(len, per_method), default=0)
    names = dict.fromkeys(name for cands in per_method for c in cands for name in c)
    out = {name: np.full((len(spec.methods), n), np.nan) for name in names}
    for mi, cands in enumerate(per_method):
        for c, candidate in enumerate(cands):
            for name, value in candidate.items():
                out[name][mi, c] = value
    return out


def chosen_names(spec) -> list[str]:
    """The store's per-cell variables ``chosen_<name>`` of the final fit's value of each name of
    the methods' grids (``spec`` as for :func:`candidate_values`), but ``chosen_alpha`` (the
    absolute penalty, a scalar of every cell)."""
    names = dict.fromkeys(f"chosen_{name}" for m in spec.methods for name in m.grid_names)
    return [name for name in names if name != "chosen_alpha"]


def grid_description(spec: ExperimentSpec) -> dict:
    """Everything that changes results, as plain JSON-able Python in the config's layout (the
    input of :func:`grid_hash`): not the experiment's name, ``run``, ``store`` nor ``cluster``; a
    data file by its content, not its location. A ``cv`` key at its schema default is left out,
    so that a new key changes no store's hash; so is ``cv.paths`` when no method fits paths (the
    route changes nothing)."""
    cv = {f.name: getattr(spec.cv, f.name) for f in fields(spec.cv)
          if getattr(spec.cv, f.name) != f.default}
    if all(path_route(m, spec.cv) == "none" for m in spec.methods):
        cv.pop("paths", None)
    return {
        "grid_version": GRID_VERSION,
        "experiment": {"methods": list(spec.method_names), "tau": list(spec.tau),
                       "psi": list(spec.psi), "seeds": list(spec.seeds)},
        "methods": {m.name: _method_description(m) for m in spec.methods},
        "data": spec.data.describe(),
        "cv": cv,
    }


def _method_description(method: MethodSpec) -> dict:
    """A method's config, and the version of its estimator's package where that is not this
    package: a new version of a user's estimator is another method (another store, no reuse)."""
    version = method.kind.version
    described = {k: v for k, v in method.to_dict().items() if k != "style"}  # no result
    return {**described, **({"version": str(version)} if version is not None else {})}


def grid_hash(spec: ExperimentSpec) -> str:
    """SHA-256 hex digest of the canonical JSON (sorted keys) of :func:`grid_description`."""
    return description_hash(grid_description(spec))


def description_hash(description: dict) -> str:
    """SHA-256 hex digest of the canonical JSON (sorted keys) of a grid description."""
    text = json.dumps(description, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


_ABSENT = object()


def _short(value) -> str:
    if value is _ABSENT:
        return "<absent>"
    if isinstance(value, list) and len(value) > 6:
        head = ", ".join(json.dumps(v) for v in value[:3])
        return f"[{head}, ..., {json.dumps(value[-1])}] ({len(value)} values)"
    return json.dumps(value, sort_keys=True)


def flatten_keys(d: dict, prefix: str = "") -> dict:
    """A nested dict as one level, its keys joined by dots (``{"data.n_features": 500}``)."""
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(flatten_keys(v, key + "."))
        else:
            out[key] = v
    return out


def diff_descriptions(a: dict, b: dict) -> list[str]:
    """Human-readable differences between two grid descriptions, e.g. ``"data.n_features: 1000 !=
    500"`` (``a``'s value first), keys as in the config; empty when they are equal. Long lists
    are abbreviated."""
    fa, fb = flatten_keys(a), flatten_keys(b)
    keys = list(fa) + [k for k in fb if k not in fa]
    return [
        f"{k}: {_short(fa.get(k, _ABSENT))} != {_short(fb.get(k, _ABSENT))}"
        for k in keys
        if fa.get(k, _ABSENT) != fb.get(k, _ABSENT)
    ]


def resolve_unit(spec: ExperimentSpec, n_cells: int, n_workers: int) -> str:
    """``cell`` or ``fit``: ``spec.run.unit``, with ``auto`` decided by the cells to run per
    worker (:data:`~mccard_dist.config.FIT_UNIT_CELLS_PER_WORKER`) and whether the CV allows fit
    units (plain K-fold)."""
    from .config import FIT_UNIT_CELLS_PER_WORKER  # the grid imports no config code at load

    unit = spec.run.unit
    if unit != "auto":
        return unit
    splittable = spec.cv.scheme == "kfold" and spec.cv.race is None
    few = n_cells < FIT_UNIT_CELLS_PER_WORKER * n_workers
    return "fit" if splittable and few else "cell"
