"""The data sections of the config, one sealed dataclass per ``data.source``
(:data:`DATA_SCHEMAS`): the paper's synthetic problem, a user's file, scikit-learn's diabetes
set, a generator of one's own. Each builds a cell's data (``make_data``) and says what
identifies the data for the grid hash (``describe``)."""

from __future__ import annotations

import functools
import inspect
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from ..data import OUTLIERS, load_table, make_paper_data, make_split_data
from ..data.real import DIABETES_SHAPE, diabetes_sizes, diabetes_source, split_sizes
from .checks import (MISSING, ConfigError, Sealed, fail, freeze, integer, one_of, real, text,
                     to_plain)

MIN_SAMPLES = 3  # the fewest samples an estimator fits (one goes to the intercept)


def _df(key: str, value) -> float | None:
    return None if value is None else real(key, value)


class _Data(Sealed):
    """What every source shares: ``outliers`` (null: laplace) and ``df`` (student_t's degrees
    of freedom, and only there); no file to ship to the workers."""

    SECTION = "data"
    RULES = {"outliers": partial(one_of, options=OUTLIERS, default="laplace"), "df": _df}

    def check(self):
        self.source = type(self).source  # the field's default: one class per source
        if self.outliers == "student_t":
            if self.df is None:
                fail("data.df", "is required with data.outliers=student_t (degrees of freedom, "
                                "> 0)", show_value=False)
            if not self.df > 0:
                fail("data.df", "must be > 0", self.df)
        elif self.df is not None:
            fail("data.df", "is only used with data.outliers=student_t", self.df)

    def load_source(self):
        """Nothing to ship: a worker makes the data from the spec."""
        return None

    def to_dict(self) -> dict:
        return asdict(self)

    def describe(self) -> dict:
        """What identifies the data for the grid hash."""
        return self.to_dict()

    #: a store's reader may rebuild these data (a metric added later): the package's own code
    #: makes them, nothing the store names is imported
    rebuilt_when_read = True


@dataclass(unsafe_hash=True)
class DataSpec(_Data):
    """The paper's synthetic problem (:func:`mccard_dist.make_paper_data`) and its contamination
    scenario: ``outliers`` (the outlier noise, one of :data:`mccard_dist.data.OUTLIERS`), ``df``
    (its degrees of freedom for ``student_t``), ``leverage`` (outlying rows also get shifted
    covariates), ``rho`` (feature correlation)."""

    source: str | None = "paper"
    n_train: int = MISSING
    n_test: int = MISSING
    n_features: int = MISSING
    n_relevant: int = MISSING
    noise_var: float = MISSING
    outliers: str | None = "laplace"
    df: float | None = None
    leverage: bool = False
    rho: float = 0.0

    knows_true_coef = True  # the generator's coefficients: selection scores are defined
    RULES = {"n_train": partial(integer, minimum=MIN_SAMPLES),
             "n_test": partial(integer, minimum=1), "n_features": partial(integer, minimum=1),
             "n_relevant": partial(integer, minimum=0), "noise_var": partial(real, low=0.0),
             "rho": partial(real, low=0.0, high=1.0, high_open=True), **_Data.RULES}

    def check(self):
        if self.n_relevant > self.n_features:
            fail("data.n_relevant", f"must be <= data.n_features ({self.n_features})",
                 self.n_relevant)
        super().check()

    def make_data(self, seed: int, psi: float, tau: float, source=None):
        """The dataset of one cell: a pure function of ``(seed, psi, tau)`` and this spec."""
        return make_paper_data(seed, psi, tau, **{k: v for k, v in asdict(self).items()
                                                  if k != "source"})


@dataclass(unsafe_hash=True)
class FileDataSpec(_Data):
    """The user's data file (:func:`mccard_dist.data.load_table`), split by the seed when it has no
    test set, with outliers injected into the training targets.

    The file is read where the data are used (:meth:`load_source`, cached per process), not when
    the config is checked: its sizes (``n_train``, ``n_test``, ``n_features``, ``n_relevant``,
    None without ``coef_true``) and content hash come from it. ``sha256``, when given, pins the
    content the experiment was set up with.
    """

    source: str | None = "file"
    path: str = MISSING
    target: str | None = None
    test_fraction: float = 0.3
    standardize: bool = True
    outliers: str | None = "laplace"
    df: float | None = None
    sha256: str | None = None

    RULES = {"path": text, "target": partial(text, allow_none=True),
             "test_fraction": partial(real, low=0.0, low_open=True, high=1.0, high_open=True),
             "sha256": partial(text, allow_none=True), **_Data.RULES}

    def load_source(self):
        """The file's arrays, checked: readable, the pinned content, rows enough to split."""
        table = load_table(self.path, self.target)
        if self.sha256 is not None and self.sha256 != table.sha256:
            fail("data.sha256", f"{self.path} holds other data than the experiment was set up "
                                f"with (its content hash is {table.sha256[:16]}...); remove "
                                "data.sha256 to use the file as it is now (a new grid)",
                 self.sha256[:16] + "...")
        if table.X_test is None and table.n_rows < MIN_SAMPLES + 1:
            raise ConfigError(f"data.path: {Path(self.path).name} has {table.n_rows} rows: a "
                              f"random train/test split needs at least {MIN_SAMPLES + 1} (or "
                              "give X_test and y_test)")
        return table

    def _sizes(self) -> tuple[int, int]:
        table = self.load_source()
        if table.X_test is None:
            return split_sizes(table.n_rows, self.test_fraction)
        return table.n_rows, len(table.y_test)

    @property
    def n_train(self) -> int:
        return self._sizes()[0]

    @property
    def n_test(self) -> int:
        return self._sizes()[1]

    @property
    def n_features(self) -> int:
        return self.load_source().n_features

    @property
    def n_relevant(self) -> int | None:
        coef = self.load_source().coef_true
        return None if coef is None else int((coef != 0).sum())

    @property
    def knows_true_coef(self) -> bool:
        return self.load_source().coef_true is not None

    def make_data(self, seed: int, psi: float, tau: float, source=None):
        """One cell's data from the file's arrays (``source``; read from ``path`` if None)."""
        table = self.load_source() if source is None else source
        return make_split_data(table, seed, psi, tau,
                               n_train=None if table.X_test is not None
                               else split_sizes(table.n_rows, self.test_fraction)[0],
                               standardize=self.standardize, outliers=self.outliers, df=self.df)

    def describe(self) -> dict:
        """The data for the grid hash: by content, not location (a moved file is the same
        grid, a changed one another)."""
        return {k: v for k, v in self.to_dict().items() if k != "path"}

    def to_dict(self) -> dict:
        return {**asdict(self), "sha256": self.load_source().sha256}


@dataclass(unsafe_hash=True)
class DiabetesDataSpec(_Data):
    """scikit-learn's diabetes data with ``n_noise_features`` noise features drawn from the seed,
    ``n_train`` of its 442 rows for training (a random split per seed)."""

    source: str | None = "diabetes"
    n_train: int = MISSING
    n_noise_features: int = MISSING
    standardize: bool = True
    outliers: str | None = "laplace"
    df: float | None = None

    knows_true_coef = False  # real data
    n_relevant = None
    RULES = {"n_train": partial(integer, minimum=MIN_SAMPLES),
             "n_noise_features": partial(integer, minimum=0), **_Data.RULES}

    def check(self):
        n_rows = DIABETES_SHAPE[0]
        if self.n_train > n_rows - 2:
            fail("data.n_train", f"must leave at least 2 of the {n_rows} rows for testing",
                 self.n_train)
        super().check()

    @property
    def n_test(self) -> int:
        return diabetes_sizes(self.n_train, self.n_noise_features)[1]

    @property
    def n_features(self) -> int:
        return diabetes_sizes(self.n_train, self.n_noise_features)[2]

    def make_data(self, seed: int, psi: float, tau: float, source=None):
        return make_split_data(diabetes_source(self.n_noise_features, seed), seed, psi, tau,
                               n_train=self.n_train, standardize=self.standardize,
                               outliers=self.outliers, df=self.df)


def _generator_path(key: str, value) -> str:
    from ..methods import ESTIMATOR_RE

    value = text(key, value)
    if not ESTIMATOR_RE.match(value):
        fail(key, "must be a function's import path, module:name", value)
    return value


@dataclass(unsafe_hash=True)
class GeneratorDataSpec(_Data):
    """Data from a generator of one's own (:mod:`mccard_dist.data.generated`): ``generator``
    names a function by import path, ``generator(seed, psi, tau, **params)``, which builds every
    cell's data, contamination included, on the workers. Its sizes and whether it gives the
    true coefficients are read from one call at seed 0, psi 0, tau 1, when first needed."""

    source: str | None = "generator"
    generator: str = MISSING
    params: dict[str, Any] | None = field(default_factory=dict)

    RULES = {"generator": _generator_path, "params": lambda key, value: freeze(value or {})}
    #: what a store names is never imported: its reader does not call the generator
    rebuilt_when_read = False

    def check(self):
        self.source = type(self).source

    def checked_generator(self) -> None:
        """Import the generator (the config is the user's) and check its parameters against its
        signature, in one line naming what to change."""
        from ..data.generated import generator_function

        try:
            function = generator_function(self.generator)
        except (ImportError, AttributeError, TypeError) as exc:
            fail("data.generator", f"cannot be imported ({type(exc).__name__}: {exc})",
                 self.generator)
        signature = inspect.signature(function)
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD
                        for p in signature.parameters.values())
        named = [n for n in list(signature.parameters)[3:]]
        unknown = sorted(set(self.params) - set(named))
        if unknown and not takes_any:
            fail("data.params", f"{', '.join(unknown)} not accepted by {self.generator}; it "
                                f"takes {', '.join(named) or 'no parameter'}",
                 to_plain(self.params))

    def make_data(self, seed: int, psi: float, tau: float, source=None):
        """The dataset of one cell: the generator's, a pure function of ``(seed, psi, tau)``
        and its parameters."""
        from ..data.generated import generate

        return generate(self.generator, to_plain(self.params), seed, psi, tau)

    @property
    def _probe(self):
        return _probe(self.generator, self.params)

    @property
    def n_train(self) -> int:
        return self._probe.n_train

    @property
    def n_test(self) -> int:
        return self._probe.n_test

    @property
    def n_features(self) -> int:
        return self._probe.n_features

    @property
    def n_relevant(self) -> int | None:
        coef = self._probe.coef_true
        return None if coef is None else int((coef != 0).sum())

    @property
    def knows_true_coef(self) -> bool:
        return self._probe.coef_true is not None

    def to_dict(self) -> dict:
        return {"source": self.source, "generator": self.generator,
                "params": to_plain(self.params)}


@functools.lru_cache(maxsize=8)
def _probe(generator: str, params):
    """One call of a generator (seed 0, psi 0, tau 1), once per process: its sizes."""
    from ..data.generated import generate

    return generate(generator, to_plain(params), 0, 0.0, 1.0)


#: the class of each ``data.source``
DATA_SCHEMAS = {"paper": DataSpec, "file": FileDataSpec, "diabetes": DiabetesDataSpec,
                "generator": GeneratorDataSpec}
