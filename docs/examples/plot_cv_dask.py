"""
Cross-validating the kernel width on a Dask cluster
===================================================

:class:`~mccard_dist.MCCARDRegressorCV` makes every (width, fold) fit one joblib task. Under
joblib's ``dask`` backend those tasks go to the workers of a ``distributed.Client``, here a
``LocalCluster`` of two one-thread workers; on a cluster it is the same code with the scheduler's
address. The choice is the same as with ``n_jobs=1``.
"""

import joblib
import matplotlib.pyplot as plt
import numpy as np
from distributed import Client, LocalCluster

from mccard_dist import MCCARDRegressorCV, make_paper_data

data = make_paper_data(seed=1, psi=0.2, tau=5.0, n_train=200, n_test=200, n_features=300)
widths = np.geomspace(0.03, 100.0, 8)

with (LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                   dashboard_address=None) as cluster, Client(cluster),
      joblib.parallel_backend("dask")):
    model = MCCARDRegressorCV(kernel_widths=widths, cv=4).fit(data.X_train, data.y_train)

serial = MCCARDRegressorCV(kernel_widths=widths, cv=4, n_jobs=1).fit(data.X_train, data.y_train)
print("chosen width on the cluster:", model.kernel_width_, " serial:", serial.kernel_width_)
print("test R^2:", round(model.score(data.X_test, data.y_test), 3),
      " features kept:", int(model.best_estimator_.active_.sum()))

# %%
# The cross-validation curve: mean validation MAE over the folds, with one standard deviation.
mean = -model.cv_results_["mean_test_score"]
std = model.cv_results_["std_test_score"]
fig, ax = plt.subplots(figsize=(5.5, 3.5), layout="constrained")
ax.errorbar(widths, mean, yerr=std, marker="o", capsize=3)
ax.axvline(model.kernel_width_, color="k", ls=":", label="chosen")
ax.set(xscale="log", xlabel="kernel width h", ylabel="validation MAE", title="4-fold CV")
ax.legend()
plt.show()
