"""Checks of config values (each returns the value converted, or raises a ConfigError whose message
starts with the key) and :class:`Sealed`, the base of every section."""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Mapping

from ..errors import UsageError

MISSING = "???"  # OmegaConf's mandatory-value marker
NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
WALLTIME_RE = re.compile(r"^(?:(\d+)-)?(\d+):([0-5]\d):([0-5]\d)$")


class ConfigError(ValueError, UsageError):
    """A configuration value is missing or invalid; the message starts with the config key."""


class Sealed:
    """A dataclass that checks its fields and is read-only once built: each field of ``RULES`` is
    replaced by ``rule("<SECTION>.<field>", value)``, then :meth:`check` applies the rules between
    fields. Not a frozen dataclass: OmegaConf makes the schema of one read-only, and Hydra must
    merge files and overrides into the schema."""

    SECTION = ""
    RULES = {}

    def __post_init__(self):
        for name, rule in self.RULES.items():
            setattr(self, name, rule(f"{self.SECTION}.{name}", getattr(self, name)))
        self.check()
        object.__setattr__(self, "_sealed", True)

    def check(self):
        """The rules between fields (their values already checked)."""

    def __setattr__(self, name, value):
        if "_sealed" in self.__dict__:
            raise AttributeError(f"cannot assign to field {name!r}: the spec is read-only")
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        raise AttributeError(f"cannot delete field {name!r}: the spec is read-only")


class FrozenMap(Mapping):
    """A read-only, hashable, picklable mapping (estimator params, cluster options)."""

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


def fail(key: str, problem: str, value=None, show_value: bool = True):
    raise ConfigError(f"{key}: {problem}" + (f", got {value!r}" if show_value else ""))


def present(key: str, value):
    """``value``, refusing ``???`` (a mandatory value left unset)."""
    if isinstance(value, str) and value == MISSING:
        raise ConfigError(f"{key}: missing mandatory value")
    return value


def integer(key: str, value, minimum: int) -> int:
    present(key, value)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        fail(key, "must be an integer", value)
    if value < minimum:
        fail(key, f"must be >= {minimum}", value)
    return int(value)


def real(key: str, value, low: float | None = None, low_open: bool = False,
         high: float | None = None, high_open: bool = False) -> float:
    """A finite number in the interval (``None``: unbounded), as a float."""
    present(key, value)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        fail(key, "must be a real number", value)
    value = float(value)
    if not math.isfinite(value):
        fail(key, "must be finite", value)
    too_low = low is not None and (value < low or (low_open and value == low))
    too_high = high is not None and (value > high or (high_open and value == high))
    if (too_low or too_high) and low is not None and high is not None:
        fail(key, f"must be in {'(' if low_open else '['}{low:g}, {high:g}"
                  f"{')' if high_open else ']'}", value)
    if too_low:
        fail(key, f"must be {'>' if low_open else '>='} {low:g}", value)
    if too_high:
        fail(key, f"must be {'<' if high_open else '<='} {high:g}", value)
    return value


def text(key: str, value, allow_none: bool = False) -> str | None:
    """A non-empty string (``None`` where allowed)."""
    if value is None and allow_none:
        return None
    present(key, value)
    if not isinstance(value, str) or not value:
        fail(key, "must be a non-empty string", value)
    return value


def one_of(key: str, value, options, default: str | None = None) -> str:
    """One of ``options`` (``default``, where given, for None or an empty string)."""
    if default is not None:
        value = value or default
    present(key, value)
    if value not in options:
        fail(key, f"must be one of {', '.join(options)}", value)
    return value


def real_list(key: str, value, *, low: float, low_open: bool,
              high: float | None = None) -> tuple[float, ...]:
    """A non-empty list of distinct finite numbers in ``[low, high]`` (``low`` open if asked)."""
    if not isinstance(value, (list, tuple)):
        fail(key, "must be a list", value)
    values = tuple(real(f"{key}[{i}]", v) for i, v in enumerate(value))
    for v in values:
        if v < low or (low_open and v == low) or (high is not None and v > high):
            problem = (f"values must be in [{low:g}, {high:g}]" if high is not None else
                       f"values must be {'>' if low_open else '>='} {low:g}")
            fail(key, f"{problem} (bad value {v!r})", list(values))
    return unique(key, values)


def unique(key: str, values):
    """``values``, refusing an empty list and duplicates."""
    if not values:
        fail(key, "must not be empty", [])
    seen, dupes = set(), []
    for v in values:
        if v in seen and v not in dupes:
            dupes.append(v)
        seen.add(v)
    if dupes:
        fail(key, f"duplicate values {dupes}", list(values))
    return values


def known(section: Mapping, key: str, names) -> None:
    """Refuse keys of ``section`` outside ``names``."""
    unknown = sorted(set(section) - set(names))
    if unknown:
        raise ConfigError(f"{', '.join(f'{key}.{u}' for u in unknown)}: unknown key(s); known "
                          f"keys are {', '.join(names)}")


def walltime_seconds(value: str) -> int:
    """``"[D-]HH:MM:SS"`` (validated by :func:`walltime`) in seconds."""
    days, hours, minutes, seconds = WALLTIME_RE.match(value).groups()
    return ((int(days or 0) * 24 + int(hours)) * 60 + int(minutes)) * 60 + int(seconds)


def duration_seconds(value) -> float:
    """``"55m"``, ``"90s"``, ``"1.5h"`` or seconds, as Dask reads durations (a worker's
    ``--lifetime`` too)."""
    from dask.utils import parse_timedelta

    return float(parse_timedelta(str(value)))


def size(key: str, value) -> str:
    """A memory size such as ``"16GB"`` or ``"512MiB"`` (Dask's units), kept as written."""
    from dask.utils import parse_bytes

    example = 'must be a size such as "16GB" or "512MiB"'
    if isinstance(value, bool) or not isinstance(value, str):
        fail(key, example, value)
    try:
        n_bytes = parse_bytes(value)
    except (ValueError, TypeError):
        fail(key, example, value)
    if n_bytes <= 0:
        fail(key, "must be > 0", value)
    return value


def memory_limit(key: str, value):
    """A worker's memory limit as Dask's LocalCluster reads it, kept as written: ``"auto"`` (the
    machine's memory shared by the workers), a size such as ``"4GB"`` (Dask's units), bytes, a
    fraction of the machine's memory (a number up to 1, such as 0.5), or 0 or null (no limit)."""
    from dask.utils import parse_bytes

    fix = ('must be "auto", a size such as "4GB", bytes, a fraction of the memory such as 0.5, '
           "or 0 (no limit)")
    if value is None or value == "auto":
        return value
    if isinstance(value, bool) or not isinstance(value, (str, numbers.Real)):
        fail(key, fix, value)
    try:
        number = float(value)  # Dask reads a number written as text as a number
    except ValueError:
        try:
            number = float(parse_bytes(value))
        except (ValueError, TypeError):
            fail(key, fix, value)
    if math.isnan(number) or number < 0:
        fail(key, fix, value)
    return value


def walltime(key: str, value, allow_days: bool) -> str:
    form = '"HH:MM:SS" or "D-HH:MM:SS"' if allow_days else '"HH:MM:SS"'
    if not isinstance(value, str):  # an unquoted 01:00:00 that YAML 1.1 read as a number
        fail(key, f"must be a quoted string {form}", value)
    match = WALLTIME_RE.match(value)
    if match is None or (match.group(1) is not None and not allow_days):
        fail(key, f"must be {form}", value)
    if walltime_seconds(value) <= 0:
        fail(key, "must be > 0", value)
    return value


def duration(key: str, value, minimum: float = 0.0) -> str | None:
    """A duration such as ``"55m"``, ``"90s"``, ``"1.5h"`` or seconds, kept as text (None
    stays None)."""
    if value is None:
        return None
    example = 'must be a duration such as "55m", "90s" or "1.5h"'
    if isinstance(value, bool) or not isinstance(value, (str, numbers.Real)):
        fail(key, example, value)
    try:
        seconds = duration_seconds(value)
    except (ValueError, KeyError, TypeError):
        fail(key, example, value)
    if seconds < minimum:
        fail(key, example if minimum == 0 else f"must be at least {minimum:g} s, e.g. \"5m\"",
             value)
    return str(value)


def _python(value):
    """A numpy scalar as the Python number it holds (without importing numpy: the command line
    checks its config without it)."""
    numpy_scalar = type(value).__module__ == "numpy" and getattr(value, "ndim", 1) == 0
    return value.item() if numpy_scalar else value


def freeze(value):
    """Mappings and lists to FrozenMap and tuples, numpy scalars to Python numbers, recursively
    (a spec holding them stays hashable and compares with plain values)."""
    if isinstance(value, Mapping):
        return FrozenMap({k: freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return _python(value)


def to_plain(value):
    """Mappings and tuples to dicts and lists, numpy scalars to Python numbers, recursively."""
    if isinstance(value, Mapping):
        return {k: to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    return _python(value)
