"""A user's data file (``data=file``), read and checked into a
:class:`~mccard_dist.data.real.TableSource`.

Nothing is opened before the path is known to be a regular file (a FIFO or a device would block
or never end), and no value is parsed before the file's size and shape are known to fit: a
.csv's header line is read alone, the other formats' shapes and dtypes come from their metadata.
Every refusal is a :class:`DataFileError` of one line naming the file and the problem.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import math
import stat
from pathlib import Path

import numpy as np

from ..errors import UsageError
from .real import TableSource
from .synthetic import _read_only

__all__ = ["ARRAYS", "FORMATS", "MAX_COLUMNS", "DataFileError", "available_memory", "file_kind",
           "load_table"]

#: file suffix -> format of :func:`load_table` (a zarr group is a folder)
FORMATS = {".npz": "npz", ".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".zarr": "zarr"}

#: arrays a .npz file or a zarr group may hold (X and y required)
ARRAYS = ("X", "y", "X_test", "y_test", "coef_true")

#: memory to read a file, refused unread if more than is available: per byte of a .csv file
#: (parsing text takes several times the file's size) and per value of the other formats' arrays
CSV_BYTES_PER_BYTE, BYTES_PER_VALUE = 10, 24
#: the most columns of a .csv or .parquet file (parsing takes time per column)
MAX_COLUMNS = 100_000
#: the longest first line of a .csv file (the column names)
HEADER_BYTES = 16 * 2**20


class DataFileError(ValueError, UsageError):
    """A data file that cannot be used; the message names the file and the problem."""


def load_table(path, target: str | None = None) -> TableSource:
    """Read and check a data file; cached per (path, modification time, size, target).

    A ``.npz`` file or zarr group holds arrays ``X`` and ``y``, optionally ``X_test`` and ``y_test``
    (both or neither) and ``coef_true``; in a ``.csv`` or ``.parquet`` file the column ``target`` is
    y and every other column a numeric feature. Anything a run would trip over later raises
    :class:`DataFileError` with one line naming the file and the problem. The path (links resolved)
    must be a regular file (a zarr group a folder), whose size and shape (a .csv's header line, the
    other formats' metadata) fit :data:`MAX_COLUMNS` and the memory before any value is read.
    """
    path = Path(path).expanduser()
    try:
        resolved = path.resolve(strict=True)
        info = resolved.stat()
    except FileNotFoundError:
        raise DataFileError(f"data.path: no such file: {path}") from None
    except (OSError, RuntimeError) as exc:  # a link loop, a folder without permission
        raise DataFileError(f"data.path: cannot read {path} ({_first_line(exc)})") from None
    fmt = FORMATS.get(resolved.suffix.lower())
    is_folder = stat.S_ISDIR(info.st_mode)
    # opening a FIFO or reading a device would block or never end
    if not (stat.S_ISREG(info.st_mode) or is_folder) or (fmt and is_folder != (fmt == "zarr")):
        what = "a zarr group (a folder)" if fmt == "zarr" else "a regular file"
        raise DataFileError(f"data.path: {resolved} is {file_kind(info.st_mode)}, not {what}; "
                            "give the path of the data")
    if fmt is None:
        raise DataFileError(f"data.path: {resolved} has an unknown format; use a .npz, .csv or "
                            ".parquet file or a zarr group (a .zarr folder)")
    if is_folder:
        _refuse_special_files(resolved)
    return _load_cached(str(resolved), info.st_mtime_ns, info.st_size, target)


def _refuse_special_files(folder: Path) -> None:
    """Refuse a zarr group holding anything but folders and regular files (links followed), which
    reading its metadata or chunks could block on."""
    import os

    for root, _, names in os.walk(folder):
        for name in names:
            entry = Path(root, name)
            try:
                mode = entry.stat().st_mode
            except OSError as exc:  # a dangling or looping link
                raise DataFileError(f"data.path: cannot read {entry} ({_first_line(exc)})") \
                    from None
            if not stat.S_ISREG(mode):
                raise DataFileError(f"data.path: {entry} in the zarr group is "
                                    f"{file_kind(mode)}, not a regular file; give a zarr group "
                                    "of regular files")


def file_kind(mode: int) -> str:
    """What a file of ``st_mode`` ``mode`` is, in words ("a FIFO (named pipe)")."""
    kinds = ((stat.S_ISREG, "a regular file"), (stat.S_ISDIR, "a folder"),
             (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))
    return next((words for test, words in kinds if test(mode)), "a special file")


def available_memory() -> int:
    """Bytes of memory available to this process without swapping."""
    import psutil

    return int(psutil.virtual_memory().available)


@functools.lru_cache(maxsize=4)
def _load_cached(path: str, mtime_ns: int, size: int, target: str | None) -> TableSource:
    fmt = FORMATS[Path(path).suffix.lower()]
    if fmt in ("csv", "parquet"):
        arrays, names = _read_frame(path, fmt, size, target)
    else:
        if target is not None:
            raise DataFileError(f"data.target: only used with .csv and .parquet files (the "
                                f"target of {Path(path).name} is its array y); remove it")
        arrays, names = _read_arrays(path, fmt), ()
    return _checked(path, arrays, names)


def _first_line(exc: Exception) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _fits_memory(name: str, needed: int, what: str) -> None:
    """Refuse a file whose reading would take more memory than is available."""
    available = available_memory()
    if needed > available:
        raise DataFileError(f"data.path: reading {name} ({what}) would take about "
                            f"{needed / 2**30:.1f} GiB of memory, but {available / 2**30:.1f} "
                            "GiB is available; use a smaller file or a machine with more memory")


def _unreadable(name: str, fmt: str, exc: Exception) -> DataFileError:
    """The error for a file a reader refused: the first line of the reader's message."""
    return DataFileError(f"data.path: cannot read {name} as {fmt}: {_first_line(exc)}")


def _read_frame(path: str, fmt: str, size: int, target: str | None):
    """A .csv or .parquet file's columns: its header (or metadata) is checked before the values
    are parsed, then every column must have a numeric dtype (bool, datetime and text are not)."""
    import pandas as pd

    name = Path(path).name
    if fmt == "csv":
        _fits_memory(name, CSV_BYTES_PER_BYTE * size, f"a .csv file of {size / 2**20:.0f} MiB")
        columns = _csv_header(path, name, size)
    else:
        columns, n_rows = _parquet_header(path, name)
        _fits_memory(name, BYTES_PER_VALUE * n_rows * len(columns),
                     f"{n_rows} rows of {len(columns)} columns")
    if len(columns) > MAX_COLUMNS:
        raise DataFileError(f"data.path: {name} has {len(columns)} columns; at most "
                            f"{MAX_COLUMNS} are read (a table's parsing time grows with its "
                            "columns): keep fewer features")
    _check_target(name, columns, target)
    try:
        frame = pd.read_csv(path) if fmt == "csv" else pd.read_parquet(path, engine="pyarrow")
    except Exception as exc:  # noqa: BLE001 - a parser's message, shown on one line
        raise _unreadable(name, fmt, exc) from None
    frame.columns = [str(c) for c in frame.columns]
    bad = [f"{c} ({d})" for c, d in zip(frame.columns, frame.dtypes) if d.kind not in "iuf"]
    if bad:
        raise DataFileError(f"data.path: {name} has non-numeric column(s) {_listed(bad)}; every "
                            "column must hold numbers, not text, true/false or dates (encode "
                            "or drop them)")
    features = frame.columns.drop(target)
    if features.empty:
        raise DataFileError(f"data.path: {name} has no feature column besides the target "
                            f"{target!r}")
    arrays = {"X": frame[features].to_numpy(dtype=np.float64, na_value=np.nan),
              "y": frame[target].to_numpy(dtype=np.float64, na_value=np.nan)}
    return arrays, tuple(features)


def _csv_header(path: str, name: str, size: int) -> list[str]:
    """The column names on a .csv file's first line, read alone (at most :data:`HEADER_BYTES`)."""
    import codecs
    import csv
    import io

    try:
        with open(path, "rb") as file:
            head = file.read(HEADER_BYTES)
    except OSError as exc:
        raise _unreadable(name, "csv", exc) from None
    if size > len(head) and b"\n" not in head and b"\r" not in head:
        raise DataFileError(f"data.path: cannot read {name} as csv: its first line is longer "
                            f"than {HEADER_BYTES / 2**20:g} MiB (it must name the columns)")
    try:
        # not final: a character cut at the end of ``head`` is left out, not an error
        text = codecs.getincrementaldecoder("utf-8-sig")().decode(head)
        header = next(csv.reader(io.StringIO(text)), None)
    except (ValueError, csv.Error) as exc:  # ValueError: not UTF-8 text
        raise _unreadable(name, "csv", exc) from None
    if not header:
        raise DataFileError(f"data.path: cannot read {name} as csv: its first line is empty "
                            "(it must name the columns)")
    return header


def _parquet_header(path: str, name: str) -> tuple[list[str], int]:
    """A .parquet file's column names (a stored pandas index left out) and row count."""
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise DataFileError(f"data.path: reading {name} needs a parquet engine ({exc}); "
                            "pip install pyarrow") from None
    try:
        with pq.ParquetFile(path) as file:
            schema, n_rows = file.schema_arrow, file.metadata.num_rows
    except Exception as exc:  # noqa: BLE001 - a reader's message, shown on one line
        raise _unreadable(name, "parquet", exc) from None
    index = {c for c in (schema.pandas_metadata or {}).get("index_columns", [])
             if isinstance(c, str)}
    return [str(c) for c in schema.names if c not in index], n_rows


def _check_target(name: str, columns: list[str], target: str | None) -> None:
    """``target`` must name a column; the message puts the closest names first."""
    if target is not None and target in columns:
        return
    listed = f"it has {len(columns)} columns: {_listed(columns, count=False)}"
    if target is None:
        raise DataFileError(f"data.target: set the target column of {name} ({listed})")
    close = difflib.get_close_matches(target, columns, n=5, cutoff=0.6)
    hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
    raise DataFileError(f"data.target: {name} has no column {target!r}{hint} ({listed})")


def _read_arrays(path: str, fmt: str) -> dict:
    """A .npz file's or zarr group's arrays as float64: their names, dtypes and shapes (the .npy
    headers, the zarr metadata) are checked before any value is read; nothing is unpickled."""
    name = Path(path).name
    try:
        if fmt == "npz":
            import zipfile

            with zipfile.ZipFile(path) as archive:
                layout = {info.filename.removesuffix(".npy"): _npy_header(archive, info)
                          for info in archive.infolist()}
                _check_layout(name, layout)
                found = {key: _npy_array(archive, info) for key, (*_, info) in layout.items()}
        else:
            import zarr

            layout = {key: (a.shape, a.dtype, a) for key, a in
                      zarr.open_group(path, mode="r").arrays()}
            _check_layout(name, layout)
            found = {key: array[...] for key, (*_, array) in layout.items()}
    except DataFileError:
        raise
    except Exception as exc:  # noqa: BLE001 - a reader's message, shown on one line
        if fmt == "npz":  # not a zip of .npy files, or a damaged one
            raise DataFileError(f"data.path: {name} is not a valid .npz file "
                                f"({_first_line(exc)}); numpy.savez writes one") from None
        raise _unreadable(name, fmt, exc) from None
    return {key: np.asarray(value, dtype=np.float64) for key, value in found.items()}


def _npy_header(archive, info) -> tuple:
    """``(shape, dtype, info)`` of a .npz file's member ``info``, from its .npy header."""
    from numpy.lib import format as npy

    with archive.open(info) as member:
        version = npy.read_magic(member)
        read = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
        shape, _, dtype = read(member)
    return shape, dtype, info


def _npy_array(archive, info) -> np.ndarray:
    from numpy.lib import format as npy

    with archive.open(info) as member:
        return npy.read_array(member, allow_pickle=False)


def _check_layout(name: str, layout: dict) -> None:
    """The arrays ``{name: (shape, dtype, ...)}`` of a .npz file or zarr group, before reading
    them: the names of :data:`ARRAYS`, real numbers, and memory enough to read them."""
    expected = ("data.path: a .npz file or zarr group holds arrays X and y (optionally X_test, "
                "y_test, coef_true)")
    unknown = sorted(set(layout) - set(ARRAYS))
    if unknown:
        raise DataFileError(f"{expected}; {name} also has {_listed(unknown)}: rename or remove "
                            "them")
    missing = [key for key in ("X", "y") if key not in layout]
    if missing:
        raise DataFileError(f"{expected}; {name} has no {' or '.join(missing)} "
                            f"(arrays: {_listed(sorted(layout)) or 'none'})")
    if ("X_test" in layout) != ("y_test" in layout):
        raise DataFileError(f"data.path: {name} has only one of X_test and y_test; give both "
                            "or neither (then the seed splits X)")
    for key, (_, dtype, _) in layout.items():
        if np.dtype(dtype).kind not in "iuf":
            raise DataFileError(f"data.path: array {key} of {name} is not real numbers (dtype "
                                f"{dtype})")
    n_values = sum(math.prod(shape) for shape, *_ in layout.values())
    _fits_memory(name, BYTES_PER_VALUE * n_values, f"{n_values} values")


def _checked(path: str, arrays: dict, names: tuple) -> TableSource:
    name = Path(path).name
    X, y = arrays["X"], arrays["y"]
    if X.ndim != 2:
        raise DataFileError(f"data.path: X of {name} must be 2-D (rows x features), got shape "
                            f"{X.shape}")
    if y.ndim != 1:
        raise DataFileError(f"data.path: y of {name} must be 1-D, got shape {y.shape}")
    if len(y) != len(X):
        raise DataFileError(f"data.path: y of {name} has {len(y)} values but X has {len(X)} rows")
    n_features = X.shape[1]
    X_test, y_test = arrays.get("X_test"), arrays.get("y_test")
    if X_test is not None:
        if X_test.ndim != 2 or X_test.shape[1] != n_features:
            raise DataFileError(f"data.path: X_test of {name} must have {n_features} columns "
                                f"like X, got shape {X_test.shape}")
        if y_test.ndim != 1 or len(y_test) != len(X_test):
            raise DataFileError(f"data.path: y_test of {name} must have one value per row of "
                                f"X_test ({len(X_test)}), got shape {y_test.shape}")
        if len(y_test) < 2:
            raise DataFileError(f"data.path: the test set of {name} needs at least 2 rows")
    coef_true = arrays.get("coef_true")
    if coef_true is not None and coef_true.shape != (n_features,):
        raise DataFileError(f"data.path: coef_true of {name} must have one value per feature "
                            f"({n_features}), got shape {coef_true.shape}")
    digest = hashlib.sha256()
    for key in ARRAYS:
        array = arrays.get(key)
        if array is None:
            continue
        bad = ~np.isfinite(array)
        if bad.any():
            where = np.argwhere(bad)[0]
            at = f"row {where[0]}" + (f", column {names[where[1]] if names else where[1]}"
                                      if array.ndim == 2 else "")
            what = "the target" if key == "y" and names else key
            raise DataFileError(f"data.path: {what} of {name} has {int(bad.sum())} NaN or "
                                f"infinite value(s) (first at {at}); remove or impute them")
        digest.update(f"{key}:{array.shape}".encode())
        digest.update(np.ascontiguousarray(array, dtype="<f8").tobytes())
    for key, array in (("y", y), ("y_test", y_test)):
        if array is not None and np.ptp(array) == 0:
            what = "the target" if key == "y" and names else key
            raise DataFileError(f"data.path: {what} of {name} is constant ({array[0]:g} in every "
                                "row): correlation and fits are undefined; give a target that "
                                "varies")
    _read_only(X, y, X_test, y_test, coef_true)
    return TableSource(X, y, X_test, y_test, coef_true,
                       feature_names=names or tuple(f"x{d}" for d in range(n_features)),
                       sha256=digest.hexdigest())


def _listed(items, limit: int = 8, count: bool = True) -> str:
    items = list(items)
    shown = ", ".join(items[:limit])
    if len(items) <= limit:
        return shown
    return shown + (f", ... ({len(items)} in all)" if count else ", ...")
