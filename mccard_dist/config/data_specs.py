"""The ``data`` section: where a cell's data come from, one spec class per ``data.source``.

Every spec makes a cell's data from its key, ``make_data(seed, psi, tau, source)``, and says what
identifies its data for the grid hash (``to_dict`` without the file's location). ``load_source``
gives what the driver ships to the workers once (the arrays of a file), or None when a worker
builds the data from the spec alone.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ..data import PaperData, SplitData, TableSource, make_paper_data, make_split_data
from ..data.real import diabetes_sizes, diabetes_source, load_table

__all__ = ["DataSpec", "DiabetesDataSpec", "FileDataSpec"]


@dataclass(frozen=True)
class DataSpec:
    """Size, noise and contamination scenario of the synthetic problem
    (:func:`mccard_dist.make_paper_data`): ``outliers`` (distribution of the outlier noise, one of
    :data:`mccard_dist.data.OUTLIERS`), ``df`` (its degrees of freedom for ``student_t``),
    ``leverage`` (outlying rows also get shifted covariates) and ``rho`` (feature correlation)."""

    n_train: int
    n_test: int
    n_features: int
    n_relevant: int
    noise_var: float
    outliers: str = "laplace"
    df: float | None = None
    leverage: bool = False
    rho: float = 0.0

    source = "paper"
    knows_true_coef = True  # the generator's coefficients: selection scores are defined

    def make_data(self, seed: int, psi: float, tau: float, source=None) -> PaperData:
        """The dataset of one cell: a pure function of ``(seed, psi, tau)`` and this spec."""
        return make_paper_data(seed, psi, tau, **asdict(self))

    def load_source(self) -> None:
        """Nothing to ship: a worker generates the data from the spec."""
        return None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class FileDataSpec:
    """The user's data file (:func:`mccard_dist.data.load_table`), split by the seed when it has
    no test set, with outliers injected into the training targets.

    ``sha256`` is the content hash of the file's arrays (checked when given, computed otherwise);
    ``n_train``, ``n_test``, ``n_features`` and ``n_relevant`` (None: true coefficients unknown)
    are read from the file.
    """

    path: str
    target: str | None
    test_fraction: float
    standardize: bool
    outliers: str
    df: float | None
    sha256: str
    n_train: int
    n_test: int
    n_features: int
    n_relevant: int | None

    source = "file"

    @property
    def knows_true_coef(self) -> bool:
        """Whether the file holds ``coef_true``: without it, selection scores are NaN."""
        return self.n_relevant is not None

    def load_source(self) -> TableSource:
        """The file's arrays (read once per process, then cached), checked against ``sha256``."""
        table = load_table(self.path, self.target)
        if table.sha256 != self.sha256:
            raise RuntimeError(f"data file {self.path} changed while the experiment was set up "
                               f"(sha256 {table.sha256[:12]}, expected {self.sha256[:12]})")
        return table

    def make_data(self, seed: int, psi: float, tau: float, source=None) -> SplitData:
        """One cell's data from the file's arrays (``source``; read from ``path`` if None)."""
        table = self.load_source() if source is None else source
        return make_split_data(table, seed, psi, tau,
                               n_train=None if table.X_test is not None else self.n_train,
                               standardize=self.standardize, outliers=self.outliers, df=self.df)

    def to_dict(self) -> dict:
        return {"source": "file", "path": self.path, "target": self.target,
                "test_fraction": self.test_fraction, "standardize": self.standardize,
                "outliers": self.outliers, "df": self.df, "sha256": self.sha256}


@dataclass(frozen=True)
class DiabetesDataSpec:
    """scikit-learn's diabetes data with ``n_noise_features`` added noise features (drawn from the
    seed), ``n_train`` of its 442 rows for training (a random split per seed)."""

    n_train: int
    n_noise_features: int
    standardize: bool
    outliers: str
    df: float | None

    source = "diabetes"

    @property
    def n_test(self) -> int:
        return diabetes_sizes(self.n_train, self.n_noise_features)[1]

    @property
    def n_features(self) -> int:
        return diabetes_sizes(self.n_train, self.n_noise_features)[2]

    n_relevant = None  # unknown for real data
    knows_true_coef = False

    def load_source(self) -> None:
        """Nothing to ship: scikit-learn's data come with the package on every worker."""
        return None

    def make_data(self, seed: int, psi: float, tau: float, source=None) -> SplitData:
        return make_split_data(diabetes_source(self.n_noise_features, seed), seed, psi, tau,
                               n_train=self.n_train, standardize=self.standardize,
                               outliers=self.outliers, df=self.df)

    def to_dict(self) -> dict:
        return {"source": "diabetes", "n_train": self.n_train,
                "n_noise_features": self.n_noise_features, "standardize": self.standardize,
                "outliers": self.outliers, "df": self.df}
