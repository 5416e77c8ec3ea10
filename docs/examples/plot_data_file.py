"""
Your own data: ``data=file``
============================

A grid runs on any table of numbers: ``data=file data.path=FILE`` reads a ``.csv`` (or ``.npz``,
``.parquet``, a zarr group), each seed draws a train/test split, and psi and tau inject outliers
into that share of the training targets (psi = 0: the data as they are). Here scikit-learn's
diabetes data, written to a CSV file, with 40 pure-noise columns appended, run through a small
grid of MCC-ARD and LS-ARD.
"""

import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.datasets import load_diabetes

import mccard_dist

work = Path(tempfile.mkdtemp(prefix="mccard-example-"))
X, y = load_diabetes(return_X_y=True, as_frame=True)
noise = np.random.default_rng(0).standard_normal((len(X), 40))
table = pd.concat([X, pd.DataFrame(noise, columns=[f"noise{i}" for i in range(40)])], axis=1)
table["target"] = y
table.to_csv(work / "diabetes.csv", index=False)
print(table.shape)

# %%
# mccard-run data=file data.path=diabetes.csv data.target=target experiment.methods=[...] ...
subprocess.run(
    ["mccard-run", "experiment=smoke", "data=file", f"data.path={work / 'diabetes.csv'}",
     "data.target=target", "experiment.methods=[mcc_ard,ls_ard]", "experiment.psi=[0.0,0.2]",
     "experiment.tau=[5.0]", "experiment.seeds.count=3",
     f"store.root={work / 'results'}", f"hydra.run.dir={work / 'outputs'}"],
    capture_output=True, text=True, check=True)
ds = mccard_dist.open_results(next((work / "results").glob("*.zarr")))

# %%
# Without true coefficients, precision, recall and F1 are NaN; test r, RMSE (in units of the
# target's spread) and the number of kept columns are there.
print(ds[["r", "rmse", "n_selected"]].mean("seed").to_dataframe().round(3))
