"""The run's progress bar: a speed that reads right below one cell a second, and under a stop
rule a total that is the run's budget, the cells a stop makes not needed counted as done."""

import pytest

from mccard_dist.runner.drain import speed


@pytest.mark.parametrize("cells, seconds, said", [
    (0, 0.0, "-"), (0, 12.0, "-"),
    (1, 5.0, "5 s/cell"), (3, 14.0, "4.67 s/cell"), (2, 1.0, "2 cells/s"),
    (250, 100.0, "2.5 cells/s"), (5000, 2.0, "2.5e+03 cells/s"),
])
def test_the_speed_reads_right_below_one_cell_a_second(cells, seconds, said):
    assert speed(cells, seconds) == said


def test_under_a_stop_rule_the_bar_counts_the_run_not_the_round(smoke_spec):
    """Rounds run serially through :class:`RoundTasks` as the driver runs them: the total is
    every cell the rule may run, fixed from the start, and once every (tau, psi) cell has
    stopped the bar stands at its total, though the psi=0 cell stopped before its budget."""
    import numpy as np

    from mccard_dist import grid
    from mccard_dist.records import STATUS_UNNEEDED
    from mccard_dist.runner.rounds import RoundTasks, Rounds
    from mccard_dist.runner.run import RunReport
    from mccard_dist.runner.work import write
    from mccard_dist.store import ResultsStore
    from mccard_dist.tasks import run_block

    spec = smoke_spec("experiment.methods=[ls_ard]", "experiment.psi=[0.0,0.3]",
                      "experiment.seeds.count=9",
                      "experiment.stop={min_seeds: 3, round: 2, precision: {rmse: 0.2}}")
    store = ResultsStore.open_or_create(spec)
    report = RunReport(store.path, 0, 0)

    class Serial:  # the driver's tasks, each block run here as it is queued
        def __init__(self):
            self.finished, self.queue = [], iter(())

        def extend(self, todo):
            self.finished += [(b, run_block(spec, b)) for b in
                              grid.blocks(spec, todo, lambda method: 1, store.tile)]

        def flush(self, limit=None):
            finished, self.finished = self.finished, []
            return write(store, finished, report)

    rounds = Rounds(spec, store)
    tasks = RoundTasks(Serial(), rounds)
    tasks.tasks.extend(rounds.plan())
    total = tasks.total
    assert total == 18  # 1 method x 2 psi x 9 seeds: the budget, not the first round's 6
    done = 0
    while tasks.tasks.finished:
        done += tasks.flush()
        assert tasks.total == total and done <= total
    status = np.asarray(store.status())
    assert (status == STATUS_UNNEEDED).sum() > 0  # the psi=0 cell stopped early ...
    assert done == total == report.n_cells_written + (status == STATUS_UNNEEDED).sum()  # ... done
