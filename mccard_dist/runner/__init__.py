"""Run an experiment grid on a Dask cluster into its results store (the only Dask-aware room
besides :mod:`mccard_dist.cluster`): :mod:`.run` drives a run (checks, the store, the cluster, its
record), :mod:`.work` makes and sizes its units of work, :mod:`.drain` keeps them running and
collects their results, :mod:`.plan` says what a run would do without running it."""

from .plan import RunPlan, plan_run
from .run import Interrupted, RunReport, run_experiment, run_serial

__all__ = ["Interrupted", "RunPlan", "RunReport", "plan_run", "run_experiment", "run_serial"]
