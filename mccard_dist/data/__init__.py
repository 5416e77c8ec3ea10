"""The experiments' data: each dataset a pure function of its key ``(seed, psi, tau)`` and its spec.

- :mod:`~mccard_dist.data.synthetic`: the paper's synthetic problem and its contamination scenarios;
- :mod:`~mccard_dist.data.real`: real covariates (the user's file, scikit-learn's diabetes data)
  split into training and test sets by the seed, with outliers injected into the training targets;
- :mod:`~mccard_dist.data.files`: reading and checking the user's file;
- :mod:`~mccard_dist.data.generated`: a generator of one's own, named by import path.
"""

from .files import DataFileError, load_table
from .generated import GeneratedData, generate
from .real import SOURCES, SplitData, TableSource, diabetes_source, make_split_data
from .synthetic import OUTLIERS, PaperData, make_paper_data

__all__ = ["OUTLIERS", "SOURCES", "DataFileError", "GeneratedData", "PaperData", "SplitData",
           "TableSource", "diabetes_source", "generate", "load_table", "make_paper_data",
           "make_split_data"]
