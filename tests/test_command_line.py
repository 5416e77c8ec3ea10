"""`mccard-run` as Hydra users know it: the command line is the user's (Hydra's model, in which
configs may name callbacks and launchers), Hydra composes it once, and the mistakes a person
makes are said in one line, before Hydra starts, with what was meant."""

import subprocess
import sys

import pytest

from mccard_dist import cli
from mccard_dist.config import config_dir


@pytest.fixture
def mccard_run(monkeypatch, tmp_path):
    """``mccard_run(*args) -> (error line or None, reached)``: ``cli.run`` with this command line;
    ``reached`` says whether Hydra's main (replaced by a stand-in that runs nothing) was called."""
    import hydra

    reached = []

    def main(**kwargs):
        return lambda task: (lambda: reached.append(kwargs))

    monkeypatch.setattr(hydra, "main", main)
    monkeypatch.chdir(tmp_path)

    def call(*args):
        reached.clear()
        monkeypatch.setattr(sys, "argv", ["mccard-run", *args])
        try:
            cli.run()
        except SystemExit as exc:
            return str(exc.code), bool(reached)
        return None, bool(reached)

    return call


def mccard_run_process(tmp_path, *args, env=None, timeout=300):
    """``mccard-run ARGS`` as a user types it, in ``tmp_path``."""
    return subprocess.run([sys.executable, "-m", "mccard_dist.cli", *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=timeout, env=env, check=False)


def test_a_misspelt_group_option_names_the_options(mccard_run):
    message, reached = mccard_run("experiment=smok")
    assert not reached
    assert message.startswith("error: experiment=smok: no such option of experiment; available: ")
    assert message.endswith("; did you mean experiment=smoke?")
    # every value of a sweep
    message, reached = mccard_run("-m", "cluster=local,slurmm")
    assert not reached and message.endswith("did you mean cluster=slurm?")


@pytest.mark.parametrize("args, message", [
    (["experment=smoke"], "error: experment: no config group or key experment; "
                          "did you mean experiment=smoke?"),
    (["-m", "clustr=slurm,local"], "error: clustr: no config group or key clustr; "
                                   "did you mean cluster?"),
    (["methds=[mcc_ard]"], None),  # close to a key, not a group: the schema's check says it
])
def test_a_misspelt_group_says_the_override_that_was_meant(mccard_run, args, message):
    said, reached = mccard_run(*args)
    assert said == message
    assert reached is (message is None)


@pytest.mark.parametrize("word, hint", [
    ("smoke", "did you mean experiment=smoke?"),
    ("slurm", "did you mean cluster=slurm?"),
    ("nothing", "an override is KEY=VALUE or GROUP=OPTION, e.g. experiment=smoke"),
])
def test_a_word_that_is_no_override_says_what_was_meant(mccard_run, word, hint):
    assert mccard_run(word) == (f"error: {word}: not an override; {hint}", False)


def test_a_value_with_spaces_is_said_to_need_quotes(mccard_run, tmp_path):
    path = f"{tmp_path}/ü n i/ß $x.zarr"
    message, reached = mccard_run(f"store.path={path}")
    assert not reached and "must be quoted" in message and "\n" not in message
    assert f"\"store.path='{path}'\"" in message
    assert mccard_run(f"store.path='{path}'", "experiment=smoke") == (None, True)


def test_an_abbreviated_help_flag_prints_our_help_and_runs_nothing(mccard_run, capsys):
    assert mccard_run("--hel") == (None, False)
    assert capsys.readouterr().out.startswith("mccard-run: ")


def test_version_is_mccard_dists_with_hydras(mccard_run, capsys):
    import hydra

    from mccard_dist import __version__

    assert mccard_run("--version") == (None, False)
    assert capsys.readouterr().out.strip() == f"mccard-dist {__version__} (Hydra {hydra.__version__})"


def test_mccard_report_says_what_is_wrong_with_the_store_before_asking_for_out(tmp_path, capsys):
    """A missing store or a folder that is no store is said before ``--out DIR is required``,
    as ``open_results`` says it; no flag is abbreviated; ``--version`` as ``mccard-run``'s."""
    from mccard_dist import __version__
    from mccard_dist.errors import UsageError
    from mccard_dist.store import open_results

    missing = tmp_path / "nope.zarr"
    for args, said in (([missing], f"error: no such store: {missing}"),
                       ([tmp_path], f"error: {tmp_path} is not a results store")):
        with pytest.raises(SystemExit) as exc:
            cli.report([str(a) for a in args])
        assert str(exc.value.code).startswith(said), exc.value.code
    with pytest.raises(UsageError, match=f"^no such store: {missing}$"):
        open_results(missing)
    with pytest.raises(SystemExit) as exc:
        cli.report([str(missing), "--out", str(tmp_path / "out"), "--htm"])
    assert exc.value.code == 2 and "unrecognized arguments: --htm" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        cli.report(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out.strip() == f"mccard-dist {__version__}"


@pytest.mark.parametrize("args", [
    ["experiment=smoke"],
    ["-m", "experiment=smoke", "data.n_features=500,1000"],
    ["-m", "experiment=smoke,quick", "hydra.sweep.dir=sweeps/x"],
    ["hydra.run.dir=somewhere/else", "hydra.job.chdir=false"],
    ["hydra/launcher=basic", "+hydra.callbacks.mine._target_=builtins.print"],
    ["methods.mcc_ard.estimator=mylab:Mine", "hydra.job.env_set.MY_SETTING=1"],
    ["--cfg", "job", "experiment=smoke"],
    ["-cd", "/any/folder/of/mine", "experiment=smoke"],
    ["-sc", "install=bash"],
], ids=lambda a: " ".join(a)[:40])
def test_the_command_line_is_the_users_and_reaches_hydra(mccard_run, args):
    """Hydra's settings, launchers, callbacks, config folders and estimators: what the user
    chose runs; only mistakes stop before Hydra."""
    assert mccard_run(*args) == (None, True)


def test_a_setting_of_a_method_the_experiment_does_not_run_is_named_from_its_override():
    from mccard_dist.overrides import method_of

    assert method_of("methods.lasso.grid.alpha_ratio=[0.5]") == "lasso"
    assert method_of("+methods.mine.params.alpha=1") == "mine"
    assert method_of("methods=x") is None and method_of("data.n_train=3") is None


@pytest.mark.slow  # a subprocess, as a user types it
def test_a_refusal_is_one_line_and_written_to_the_runs_log(tmp_path):
    """A bad value found in the composed config: one line on the terminal, the same line in the
    run folder's log, and the exit code says it failed."""
    proc = mccard_run_process(tmp_path, "experiment=smoke", "experiment.psi=[0.2,1.5]")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert lines == ["error: experiment.psi: values must be in [0, 1] (bad value 1.5), got "
                     "[0.2, 1.5]"]
    (log,) = tmp_path.glob("outputs/smoke/*/cli.log")
    assert lines[-1] in log.read_text()


@pytest.mark.slow  # a subprocess, as a user types it
def test_a_misspelt_key_and_a_grid_name_are_said_by_the_schema_in_one_line(tmp_path):
    proc = mccard_run_process(tmp_path, "experiment=smoke", "data.n_trian=100")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].endswith("did you mean data.n_train?")
    proc = mccard_run_process(tmp_path, "experiment=smoke", "methods.mcc_l1.grid.alpha_ratoi=[0.5]")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        f"error: methods.mcc_l1.grid.alpha_ratoi: {config_dir() / 'method' / 'mcc_l1.yaml'} "
        "gives mcc_l1 no grid axis alpha_ratoi; did you mean methods.mcc_l1.grid.alpha_ratio?")


@pytest.mark.slow  # a subprocess that runs a tiny grid
def test_a_setting_of_a_method_the_experiment_does_not_run_is_said_to_have_no_effect(tmp_path):
    proc = mccard_run_process(tmp_path, "experiment=smoke", "experiment.methods=[ls_ard]",
                              "experiment.seeds.count=1", "run.progress=false",
                              "methods.lasso.grid.alpha_ratio=[0.5]")
    assert proc.returncode == 0, proc.stderr
    assert ("methods.lasso.grid.alpha_ratio=[0.5] has no effect: lasso is not in "
            "experiment.methods (ls_ard); add it there to run it") in proc.stdout + proc.stderr


@pytest.mark.slow  # a subprocess
def test_shell_completion_is_hydras(tmp_path):
    import os

    proc = mccard_run_process(tmp_path, "-sc", "install=bash")
    assert proc.returncode == 0, proc.stderr
    assert "hydra_bash_completion" in proc.stdout and "complete " in proc.stdout
    line = "mccard-run experiment=sm"  # what the shell asks as a user presses tab
    proc = mccard_run_process(tmp_path, "-sc", "query=bash",
                              env={**os.environ, "COMP_LINE": line, "COMP_POINT": str(len(line))})
    assert proc.returncode == 0 and "experiment=smoke" in proc.stdout.split(), proc.stdout


@pytest.mark.slow  # a subprocess
def test_a_config_folder_of_ones_own_on_the_command_line(tmp_path):
    import os
    import shutil

    mine = tmp_path / "myconf"
    shutil.copytree(config_dir(), mine)
    proc = mccard_run_process(tmp_path, "-cd", str(mine), "experiment=smoke", "--cfg", "job",
                              env={**os.environ, "MCCARD_CONFIG_DIR": str(mine)})
    assert proc.returncode == 0, proc.stderr
    assert "name: smoke" in proc.stdout


def test_hydra_gets_the_flags_before_the_overrides():
    """Hydra's main takes no flag after an override; a user may type one anywhere."""
    from mccard_dist.overrides import hydra_argv, parse_args

    argv = ["experiment=smoke", "-m", "data.n_features=20,30", "--cfg", "job", "run.progress=false"]
    assert hydra_argv(parse_args(argv)) == [
        "--multirun", "--cfg", "job", "experiment=smoke", "data.n_features=20,30",
        "run.progress=false"]
    assert hydra_argv(parse_args(["--config-d", "/x", "--multi"])) == [
        "--multirun", "--config-dir", "/x"]


@pytest.mark.slow  # two small runs
@pytest.mark.parametrize("launcher", ["submitit_local", "joblib"])
def test_hydras_local_launchers_run_each_sweep_job_in_a_process_of_its_own(tmp_path, launcher):
    """Each job of the sweep in a process of its own, with its own Dask run (a LocalCluster
    started from inside joblib's loky workers too), a store each; a job whose value is refused
    fails alone and the command exits non-zero after the others ran."""
    pytest.importorskip({"submitit_local": "hydra_plugins.hydra_submitit_launcher",
                         "joblib": "hydra_plugins.hydra_joblib_launcher"}[launcher])
    proc = mccard_run_process(tmp_path, "-m", f"hydra/launcher={launcher}", "experiment=smoke",
                              "experiment.methods=[ls_ard]", "experiment.seeds.count=1,2",
                              "cluster.n_workers=1", "run.progress=false")
    assert proc.returncode == 0, proc.stderr[-3000:]
    stores = sorted((tmp_path / "results").glob("smoke-*.zarr"))
    assert len(stores) == 2 and "all stores as one dataset" in proc.stdout
    proc = mccard_run_process(tmp_path, "-m", f"hydra/launcher={launcher}", "experiment=smoke",
                              "experiment.methods=[ls_ard]", "experiment.seeds.count=0,3",
                              "cluster.n_workers=1", "run.progress=false")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        "job 0 (experiment=smoke experiment.methods=[ls_ard] experiment.seeds.count=0 "
        "cluster.n_workers=1 run.progress=False): error: experiment.seeds.count: must be >= 1, "
        "got 0")
    assert len(list((tmp_path / "results").glob("smoke-*.zarr"))) == 3  # the job of 3 seeds ran
    assert not list((tmp_path / "results").glob("*.lock"))


def test_a_misspelt_method_of_the_command_line_is_said_before_hydra_starts(mccard_run):
    message, reached = mccard_run("experiment=smoke", "experiment.methods=[mcc_ard,mcc_ardd]")
    assert not reached and message.startswith(
        "error: experiment.methods: unknown method 'mcc_ardd'; known methods are ")
    assert message.endswith("; did you mean mcc_ard?, got ['mcc_ard', 'mcc_ardd']")
    message, reached = mccard_run("-m", "experiment.methods=[ls_ard],[ls_ardd]")
    assert not reached and "unknown method 'ls_ardd'" in message
    # a method the command line adds from a method file is one
    assert mccard_run("+method@methods.mine=ls_ard", "experiment.methods=[mine]") == (None, True)
