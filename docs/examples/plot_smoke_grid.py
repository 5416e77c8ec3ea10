"""
A grid, its store and its report
================================

``mccard-run`` runs an experiment's grid of (method, tau, psi, seed) cells on a Dask cluster and
writes one labelled zarr store; ``mccard-report`` turns a store into tables, figures and a check of
the paper's claims. The ``smoke`` experiment runs every method on a tiny problem, 16 cells. Here
both commands run in a temporary folder; in a shell they are the two lines in the comments.
"""

import subprocess
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt

import mccard_dist

work = Path(tempfile.mkdtemp(prefix="mccard-example-"))
# mccard-run experiment=smoke store.root=results
run = subprocess.run(
    ["mccard-run", "experiment=smoke", f"store.root={work / 'results'}",
     f"hydra.run.dir={work / 'outputs'}"],
    capture_output=True, text=True, check=True)
print(run.stdout[-1200:])
store = next((work / "results").glob("smoke-*.zarr"))

# %%
# The store opens as an xarray Dataset: one variable per metric, with dimensions
# ``model, tau, psi, seed`` (unfinished cells would be NaN).
ds = mccard_dist.open_results(store)
metrics = ds[["r", "rmse", "f1", "chosen_kernel_width"]]
metrics.attrs = {}  # the store's attributes hold its config and run records: long
print(metrics)
print(ds["r"].mean("seed").isel(tau=0).to_pandas())  # one tau in this grid: (model, psi)

# %%
# The report: ``report.md`` with its figures, and ``report.html``, one self-contained page with
# interactive figures that opens without a network.
# mccard-report results/smoke-<hash>.zarr --out report --html
subprocess.run(["mccard-report", str(store), "--out", str(work / "report"), "--html"],
               capture_output=True, text=True, check=True)
print(sorted(p.name for p in (work / "report").iterdir()))

fig, ax = plt.subplots(figsize=(5.5, 3.5), layout="constrained")
for model in ds["model"].values:
    r = ds["r"].sel(model=model, tau=ds["tau"][0]).mean("seed")
    ax.plot(ds["psi"], r, marker="o", label=str(model))
ax.set(xlabel="psi (share of outliers)", ylabel="mean test r", title="smoke grid, tau = 5")
ax.legend(fontsize=8)
plt.show()
