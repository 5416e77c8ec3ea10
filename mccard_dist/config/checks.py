"""Checks of typed config values (ranges, non-empty strings, lists of numbers, sizes, walltimes,
durations): each refuses a bad value with a ConfigError that starts with the key."""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Mapping

import numpy as np
from dask.utils import parse_bytes, parse_timedelta

from ..errors import UsageError

_MISSING = "???"  # OmegaConf's mandatory-value marker, left as a string by to_container
_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_EXPERIMENT_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")



class ConfigError(ValueError, UsageError):
    """A configuration value is missing or invalid; the message starts with the config key."""


class FrozenMap(Mapping):
    """A read-only, hashable, picklable mapping (used for estimator params and cluster options)."""

    def __init__(self, data=()):
        self._data = dict(data)

    def __getitem__(self, key):
        return self._data[key]

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)

    def __hash__(self):
        return hash(frozenset(self._data.items()))

    def __repr__(self):
        return f"FrozenMap({self._data!r})"


# -- small checkers: each returns the converted value or raises ConfigError naming the key -----------

def _fail(key: str, problem: str, value=None, show_value: bool = True):
    suffix = f", got {value!r}" if show_value else ""
    raise ConfigError(f"{key}: {problem}{suffix}")


def _check_known(section: Mapping, key: str, known, hint: str = ""):
    """Refuse keys of ``section`` outside ``known`` (a subset of the schema's: e.g. the keys one
    ``data.source`` reads)."""
    unknown = sorted(set(section) - set(known))
    if unknown:
        names = ", ".join(f"{key}.{u}" for u in unknown)
        raise ConfigError(
            f"{names}: unknown key(s); known keys are {', '.join(known)}{hint}"
        )


def _at_least(key: str, value: int, minimum: int) -> int:
    """``value`` (an integer, checked here for keys the schema leaves untyped) >= ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        _fail(key, "must be an integer", value)
    if value < minimum:
        _fail(key, f"must be >= {minimum}", value)
    return value


def _finite(key: str, value: float) -> float:
    if not math.isfinite(value):
        _fail(key, "must be finite", value)
    return value


def _nonempty(key: str, value: str | None, allow_none: bool = False) -> str | None:
    if value is None and allow_none:
        return None
    if not isinstance(value, str) or not value:
        _fail(key, "must be a non-empty string", value)
    return value


def _float_list(key: str, value, *, low: float, low_open: bool, high: float | None = None,
                allow_empty: bool) -> tuple[float, ...]:
    if not isinstance(value, (list, tuple)):
        _fail(key, "must be a list", value)
    for i, v in enumerate(value):
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            _fail(f"{key}[{i}]", "must be a real number", v)
    values = tuple(_finite(f"{key}[{i}]", float(v)) for i, v in enumerate(value))
    if not values and not allow_empty:
        _fail(key, "must not be empty", list(values))
    for v in values:
        if v < low or (low_open and v == low) or (high is not None and v > high):
            if high is not None:
                problem = f"values must be in [{low:g}, {high:g}]"
            else:
                problem = f"values must be {'>' if low_open else '>='} {low:g}"
            _fail(key, problem + f" (bad value {v!r})", list(values))
    _check_unique(key, values)
    return values


def _check_unique(key: str, values) -> None:
    seen, dupes = set(), []
    for v in values:
        if v in seen and v not in dupes:
            dupes.append(v)
        seen.add(v)
    if dupes:
        _fail(key, f"duplicate values {dupes}", list(values))


# -- the spec dataclasses --------------------------------------------------------------------------

_WALLTIME_RE = re.compile(r"^(?:(\d+)-)?(\d+):([0-5]\d):([0-5]\d)$")


def _walltime_seconds(text: str) -> int:
    """``"[D-]HH:MM:SS"`` in seconds (the caller has validated the format)."""
    days, hours, minutes, seconds = _WALLTIME_RE.match(text).groups()
    return ((int(days or 0) * 24 + int(hours)) * 60 + int(minutes)) * 60 + int(seconds)


def _duration_seconds(text: str) -> float:
    """``"55m"``, ``"90s"``, ``"1.5h"`` or ``"3300"`` in seconds, as Dask reads durations (a
    worker's ``--lifetime`` goes through the same parser); validated by :func:`_as_duration`."""
    return float(parse_timedelta(str(text)))


def _as_size(key: str, value) -> str:
    """A memory size such as ``"16GB"`` or ``"512MiB"`` (dask's units); returned as written."""
    if isinstance(value, bool) or not isinstance(value, str):
        _fail(key, 'must be a size such as "16GB" or "512MiB"', value)
    try:
        size = parse_bytes(value)
    except (ValueError, TypeError):
        _fail(key, 'must be a size such as "16GB" or "512MiB"', value)
    if size <= 0:
        _fail(key, "must be > 0", value)
    return value


def _as_walltime(key: str, value, allow_days: bool) -> str:
    form = '"HH:MM:SS" or "D-HH:MM:SS"' if allow_days else '"HH:MM:SS"'
    if not isinstance(value, str):
        # e.g. an unquoted 01:00:00 that a YAML 1.1 reader turned into a number
        _fail(key, f"must be a quoted string {form}", value)
    match = _WALLTIME_RE.match(value)
    if match is None or (match.group(1) is not None and not allow_days):
        _fail(key, f"must be {form}", value)
    if _walltime_seconds(value) <= 0:
        _fail(key, "must be > 0", value)
    return value


def _as_duration(key: str, value) -> str:
    """A duration such as ``"55m"``, ``"90s"``, ``"1.5h"`` or a number of seconds; kept as text."""
    if isinstance(value, bool) or not isinstance(value, (str, numbers.Real)):
        _fail(key, 'must be a duration such as "55m", "90s" or "1.5h"', value)
    text = str(value)
    try:
        seconds = parse_timedelta(text)
    except (ValueError, KeyError, TypeError):
        _fail(key, 'must be a duration such as "55m", "90s" or "1.5h"', value)
    if seconds is None or seconds < 0:
        _fail(key, 'must be a duration such as "55m", "90s" or "1.5h"', value)
    return text


def _str_list(key: str, value) -> tuple[str, ...]:
    return tuple(_nonempty(f"{key}[{i}]", v) for i, v in enumerate(value or ()))


def _freeze(value):
    """Nested mappings/lists to FrozenMap/tuples, so a spec holding them stays hashable."""
    if isinstance(value, Mapping):
        return FrozenMap({k: _freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value



def to_plain(value):
    """Mappings and tuples to dicts and lists, and numpy scalars to Python numbers, recursively
    (e.g. ``cluster.options`` for the Dask backends, seeds from ``np.arange``)."""
    if isinstance(value, Mapping):
        return {k: to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


# -- parsing and validation ------------------------------------------------------------------------
