"""The Hydra callback of ``conf/config.yaml`` (``hydra.callbacks.sweep_summary``): which job of a
sweep wrote which store. A module of its own, so that ``mccard-run --help`` imports no Hydra."""

from __future__ import annotations

from pathlib import Path

from hydra.experimental.callback import Callback

__all__ = ["SweepSummary"]


class SweepSummary(Callback):
    """Hydra callback (``hydra.callbacks`` in ``conf/config.yaml``): after a multirun, print which
    job wrote which store and list the stores in ``<sweep dir>/stores.txt`` (for
    ``open_results(<sweep dir>)``; each store's path relative to the sweep folder, then its
    absolute path: :func:`~mccard_dist.store.reader.sweep_entry`); each job leaves its store's
    path in its folder (``store.txt``), so launchers that run the jobs in other processes work
    too."""

    def on_job_end(self, config, job_return, **kwargs) -> None:
        from hydra.core.hydra_config import HydraConfig

        value = getattr(job_return, "_return_value", None)
        if isinstance(value, str) and HydraConfig.initialized():
            Path(HydraConfig.get().runtime.output_dir, "store.txt").write_text(value + "\n")

    def on_multirun_end(self, config, **kwargs) -> None:
        import yaml

        from .store.reader import SWEEP_LIST, sweep_entry

        sweep = Path(config.hydra.sweep.dir)
        rows = []
        for job in sorted((p for p in sweep.iterdir() if (p / "store.txt").is_file()),
                          key=lambda p: (len(p.name), p.name)):
            overrides = yaml.safe_load((job / ".hydra" / "overrides.yaml").read_text()) or []
            rows.append((job.name, overrides, (job / "store.txt").read_text().strip()))
        if not rows:
            return
        common = set.intersection(*(set(r[1]) for r in rows))  # show what the jobs vary
        rows = [(job, " ".join(o for o in overrides if o not in common) or "(none)", store)
                for job, overrides, store in rows]
        (sweep / SWEEP_LIST).write_text("".join(sweep_entry(r[2], sweep) for r in rows))
        width = max(len(r[1]) for r in rows)
        print(f"\n{'job':>4}  {'swept':<{width}}  store")
        for job, overrides, store in rows:
            print(f"{job:>4}  {overrides:<{width}}  {store}")
        print(f"all stores as one dataset: mccard_dist.open_results({str(sweep)!r})")
