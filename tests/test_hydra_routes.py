"""`mccard-run` refuses, before anything runs, every command line that would make Hydra import code,
open files, change the environment or read configs from outside the shipped folder, however it is
spelled; the config that would run is composed and compared with the shipped one."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mccard_dist import cli
from mccard_dist.config import config_dir

TRUST = "MCCARD_TRUST_HYDRA_OVERRIDES"
ENDING = f"; set {TRUST}=1 to allow it"

#: the spellings of a route beyond the first (each composes the config: about 0.15 s)
SLOW = pytest.mark.slow

EVIL = """\
# @package _global_
hydra:
  callbacks:
    evil:
      _target_: os.makedirs
      name: {marker}
"""


@pytest.fixture
def mccard_run(monkeypatch, tmp_path):
    """``mccard_run(*args) -> (error line or None, reached)``: ``cli.run`` with this command line;
    ``reached`` says whether Hydra's main (replaced by a stand-in that runs nothing) was called."""
    import hydra

    reached = []

    def main(**kwargs):
        return lambda task: (lambda: reached.append(kwargs))

    monkeypatch.setattr(hydra, "main", main)
    monkeypatch.delenv(TRUST, raising=False)
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


def evil_config(folder: Path, marker: Path) -> Path:
    """A config folder whose experiment ``evil`` adds a Hydra callback making ``marker``."""
    (folder / "experiment").mkdir(parents=True)
    (folder / "experiment" / "evil.yaml").write_text(EVIL.format(marker=marker))
    return folder


def outside_option(group_file: Path) -> str:
    """``group_file`` (without .yaml) as an option of the shipped ``experiment`` group."""
    return os.path.relpath(group_file.with_suffix(""), config_dir() / "experiment")


def assert_refused(result, key):
    message, reached = result
    assert not reached, "Hydra's main was reached"
    assert message is not None and message.startswith(f"error: {key}: not accepted on the "
                                                      "command line ("), message
    assert message.endswith(ENDING) and "\n" not in message, message


@pytest.mark.parametrize("override, key", [
    ("++hydra={callbacks:{x:{_target_:os.makedirs,name:MARKER}}}", "hydra.callbacks.x._target_"),
    pytest.param("+hydra={callbacks:{x:{_target_:os.makedirs}}}", "hydra.callbacks.x._target_",
                 marks=SLOW),
    pytest.param("+hydra.callbacks.x._target_=os.makedirs", "hydra.callbacks.x._target_",
                 marks=SLOW),
    ("++hydra={job_logging:{handlers:{f:{class:logging.FileHandler,filename:MARKER}}}}",
     "hydra.job_logging.handlers.f.class"),
    pytest.param("++hydra.hydra_logging.handlers.console.class=logging.FileHandler",
                 "hydra.hydra_logging.handlers.console.class", marks=SLOW),
    ("hydra/job_logging=disabled", "hydra/job_logging"),
    pytest.param("hydra/hydra_logging=none", "hydra/hydra_logging", marks=SLOW),
    ("+hydra.job.env_set.PYTHONPATH=MARKER", "hydra.job.env_set.PYTHONPATH"),
    pytest.param("++hydra={job:{env_set:{LD_PRELOAD:MARKER}}}", "hydra.job.env_set.LD_PRELOAD",
                 marks=SLOW),
    pytest.param("hydra.job.env_copy=[HOME]", "hydra.job.env_copy", marks=SLOW),
    ("hydra.searchpath=[file://MARKER]", "hydra.searchpath"),
    pytest.param("++hydra={searchpath:[file://MARKER]}", "hydra.searchpath", marks=SLOW),
    pytest.param("++hydra={sweeper:{params:{hydra.job.env_set.X:a}}}",
                 "hydra.sweeper.params.hydra.job.env_set.X", marks=SLOW),
], ids=lambda v: v[:45])
def test_each_route_into_hydra_is_refused_naming_the_key(mccard_run, tmp_path, override, key):
    override = override.replace("MARKER", str(tmp_path / "marker"))
    assert_refused(mccard_run("experiment=smoke", override), key)
    assert not (tmp_path / "marker").exists()


@pytest.mark.parametrize("override, key", [
    ("hydra.output_subdir=../../../victim", "hydra.output_subdir"),
    ("hydra.job.name=../../../victim/app", "hydra.job.name"),
    ("hydra.job.name=/tmp/app", "hydra.job.name"),
    ("hydra.sweep.subdir=../../victim", "hydra.sweep.subdir"),
    ("hydra.output_subdir=.", "hydra.output_subdir"),
    ("hydra.output_subdir=..", "hydra.output_subdir"),
    ("hydra.sweep.subdir=${oc.env:HOME}", "hydra.sweep.subdir"),
    ("hydra.sweep.subdir=x/${oc.env:HOME}", "hydra.sweep.subdir"),
    ("hydra.launcher._target_=distributed.utils.import_file", "hydra.launcher._target_"),
    ("+hydra.job.config_name=x", "hydra.job.config_name"),
    ("cluster=../../../elsewhere/cl", "cluster=../../../elsewhere/cl"),
    ("method@methods.mcc_ard=../../x", "method@methods.mcc_ard=../../x"),
], ids=lambda v: v[:45])
def test_files_hydra_writes_stay_in_the_runs_folder(mccard_run, override, key):
    """``hydra.job.name`` and ``hydra.output_subdir`` name files Hydra writes (the job's log,
    config.yaml): a path there would overwrite or append to files elsewhere."""
    assert_refused(mccard_run("experiment=smoke", override), key)


@pytest.mark.parametrize("args", [
    ["hydra.job.name=my-job", "hydra.output_subdir=null"],
    ["hydra.output_subdir=.cfg", "hydra.verbose=true"],
    ["-m", "experiment=smoke", "hydra.sweep.subdir=${hydra.job.num}/x"],
    ["method@methods.mcc_ard=mcc_ard_seq"],
], ids=lambda a: " ".join(a)[:40])
@pytest.mark.slow  # keeps the fast subset under its 30 s
def test_the_hydra_settings_users_set_reach_hydra(mccard_run, args):
    assert mccard_run("experiment=smoke", *args) == (None, True)


def test_a_misspelt_group_option_names_the_options(mccard_run):
    message, reached = mccard_run("experiment=smok")
    assert not reached
    assert message.startswith("error: experiment=smok: no such option of experiment; available: ")
    assert message.endswith("; did you mean experiment=smoke?")


@pytest.mark.slow  # keeps the fast subset under its 30 s
def test_a_value_with_spaces_is_said_to_need_quotes(mccard_run, tmp_path):
    path = f"{tmp_path}/ü n i/ß $x.zarr"
    message, reached = mccard_run(f"store.path={path}")
    assert not reached and "must be quoted" in message and "\n" not in message
    assert f"\"store.path='{path}'\"" in message
    assert mccard_run(f"store.path='{path}'", "experiment=smoke") == (None, True)


def test_a_group_option_from_outside_the_shipped_folder_is_refused(mccard_run, tmp_path):
    evil = evil_config(tmp_path / "elsewhere", tmp_path / "marker")
    option = outside_option(evil / "experiment" / "evil.yaml")
    assert_refused(mccard_run(f"experiment={option}"), f"experiment={option}")
    benign = tmp_path / "elsewhere" / "experiment" / "benign.yaml"
    benign.write_text((config_dir() / "experiment" / "smoke.yaml").read_text())
    option = outside_option(benign)  # harmless, but from outside the folder all the same
    assert_refused(mccard_run("cluster=local", f"experiment={option}"), f"experiment={option}")


@pytest.mark.parametrize("args, key", [
    (["-cd", "EVIL", "experiment=evil"], "--config-dir"),
    (["--config-dir=EVIL", "experiment=evil"], "--config-dir"),
    (["--config-d", "EVIL", "experiment=evil"], "--config-dir"),  # argparse's abbreviation
    (["-cp", "EVIL"], "--config-path"),
    (["--config-path", "../conf"], "--config-path"),
    (["--config-name", "EVIL/experiment/evil"], "--config-name"),
    (["-cn", "../../EVIL/experiment/evil"], "--config-name"),
    (["--experimental-rerun", "EVIL/config.pickle"], "--experimental-rerun"),
], ids=lambda v: " ".join(v)[:40] if isinstance(v, list) else v)
def test_configs_from_other_folders_are_refused(mccard_run, tmp_path, args, key):
    evil = evil_config(tmp_path / "elsewhere", tmp_path / "marker")
    assert_refused(mccard_run(*(a.replace("EVIL", str(evil)) for a in args)), key)


@pytest.mark.parametrize("args, key", [
    (["-m", "hydra.job.env_set.X=a,b"], "hydra.job.env_set.X"),
    (["-m", "+hydra.callbacks.x._target_=builtins.print,os.makedirs"],
     "hydra.callbacks.x._target_"),
    (["-m", "++hydra={job:{chdir:false}},{callbacks:{x:{_target_:os.makedirs}}}"], "hydra"),
    (["-m", "hydra/job_logging=default,disabled"], "hydra/job_logging"),
    (["--multirun", "experiment@hydra.callbacks=quick,smoke"], "experiment@hydra.callbacks"),
])
def test_sweeps_over_hydra_settings_are_refused_outright(mccard_run, args, key):
    # the first value of each is the shipped one: only its second value would reach Hydra
    assert_refused(mccard_run(*args, "experiment=smoke"), key)


def test_every_value_of_a_swept_group_is_checked(mccard_run, tmp_path):
    evil = evil_config(tmp_path / "elsewhere", tmp_path / "marker")
    option = outside_option(evil / "experiment" / "evil.yaml")
    assert_refused(mccard_run("-m", f"experiment=smoke,{option}"), f"experiment={option}")


@pytest.mark.slow  # composes twice (the fast tests compose once per route)
def test_hydras_help_and_config_printing_are_checked_too(mccard_run, tmp_path):
    # Hydra's own --hydra-help sets up its logging from the composed config
    logging_file = f"++hydra={{job_logging:{{handlers:{{f:{{class:logging.FileHandler," \
                   f"filename:{tmp_path / 'marker'}}}}}}}}}"
    assert_refused(mccard_run("--hydra-help", logging_file), "hydra.job_logging.handlers.f.class")
    assert_refused(mccard_run("--cfg", "job", "hydra/job_logging=disabled"), "hydra/job_logging")


def test_an_abbreviated_help_flag_prints_our_help_and_runs_nothing(mccard_run, tmp_path, capsys):
    # Hydra would take --hel for --help, whose page configures logging from the composed config
    logging_file = f"++hydra={{job_logging:{{handlers:{{f:{{class:logging.FileHandler," \
                   f"filename:{tmp_path / 'marker'}}}}}}}}}"
    assert mccard_run("--hel", logging_file) == (None, False)
    assert capsys.readouterr().out.startswith("mccard-run: ")
    assert not (tmp_path / "marker").exists()


def test_a_searchpath_package_is_not_imported_by_the_check(mccard_run, tmp_path, monkeypatch):
    """Proof of harm: composing a config with ``hydra.searchpath=[pkg://M]`` imports M."""
    marker = tmp_path / "imported"
    module = "mccard_test_evil_searchpath"
    (tmp_path / f"{module}.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, module, raising=False)
    for spelling in ("hydra.searchpath", "+hydra.searchpath", "++hydra.searchpath"):
        assert_refused(mccard_run(f"{spelling}=[pkg://{module}]"), "hydra.searchpath")
    assert_refused(mccard_run(f"++hydra={{searchpath:[pkg://{module}]}}"), "hydra.searchpath")
    assert not marker.exists()


@pytest.mark.parametrize("args", [
    ["experiment=smoke"],
    ["-m", "experiment=smoke", "data.n_features=500,1000"],
    pytest.param(["-m", "experiment=smoke,quick", "hydra.sweep.dir=sweeps/x"], marks=SLOW),
    pytest.param(["hydra.run.dir=somewhere/else", "hydra.job.chdir=false"], marks=SLOW),
    pytest.param(["--cfg", "job", "experiment=smoke"], marks=SLOW),
    pytest.param(["-cd", "CONFIG_DIR", "experiment=smoke"], marks=SLOW),
    pytest.param(["--config-path", "CONFIG_DIR", "--config-name", "config"], marks=SLOW),
], ids=lambda a: " ".join(a)[:40])
def test_plain_command_lines_reach_hydra(mccard_run, args):
    assert mccard_run(*(a.replace("CONFIG_DIR", str(config_dir())) for a in args)) == (None,
                                                                                        True)


@pytest.mark.slow  # composes from another folder (about 1 s)
def test_a_config_folder_of_ones_own_sets_hydras_code_only_with_trust(mccard_run, tmp_path,
                                                                      monkeypatch):
    """MCCARD_CONFIG_DIR's own files may not set what can run code or change the environment
    (``hydra.job.env_set`` here) unless trust is given; a copy of the shipped folder runs."""
    import shutil

    mine = tmp_path / "myconf"
    shutil.copytree(config_dir(), mine)
    monkeypatch.setenv("MCCARD_CONFIG_DIR", str(mine))
    assert mccard_run("experiment=smoke") == (None, True)
    assert mccard_run("-cd", str(mine), "experiment=smoke") == (None, True)
    text = (mine / "config.yaml").read_text().replace(
        "  job:\n    chdir: false\n", "  job:\n    chdir: false\n    env_set:\n"
                                     "      OMP_NUM_THREADS: '1'\n")
    assert "OMP_NUM_THREADS" in text
    (mine / "config.yaml").write_text(text)
    message, reached = mccard_run("experiment=smoke")
    assert not reached and message == (
        f"error: hydra.job.env_set: not accepted from a config of {mine} (a config sets it "
        "otherwise than the shipped configs do: it sets the environment of the run and its "
        f"workers){ENDING}")
    assert_refused(mccard_run("hydra.job.env_set.OMP_NUM_THREADS='4'"),
                   "hydra.job.env_set.OMP_NUM_THREADS")
    monkeypatch.setenv(TRUST, "1")
    assert mccard_run("experiment=smoke") == (None, True)


def test_with_trust_an_override_is_let_through_to_composition(mccard_run, monkeypatch):
    monkeypatch.setenv(TRUST, "1")
    assert mccard_run("experiment=smoke", "+hydra.job.env_set.MCCARD_X=1") == (None, True)
    assert mccard_run("-cd", "/elsewhere", "experiment=smoke") == (None, True)


@pytest.mark.slow  # a subprocess
def test_a_callback_from_another_config_folder_does_not_run(tmp_path):
    """Proof of harm: Hydra instantiates the callbacks of the composed config when the run
    starts, so this callback would create the marker folder."""
    marker = tmp_path / "marker"
    evil = evil_config(tmp_path / "elsewhere", marker)
    env = {k: v for k, v in os.environ.items() if k != TRUST}
    proc = subprocess.run([sys.executable, "-m", "mccard_dist.cli", "-cd", str(evil),
                           "experiment=evil"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode != 0
    assert proc.stderr.strip().startswith("error: --config-dir"), proc.stderr
    assert proc.stderr.strip().endswith(ENDING) and "Traceback" not in proc.stderr
    assert not marker.exists() and not (tmp_path / "outputs").exists()


@pytest.mark.slow  # a subprocess
def test_mccard_config_dir_on_the_command_line(tmp_path):
    import shutil

    mine = tmp_path / "myconf"
    shutil.copytree(config_dir(), mine)
    env = {**{k: v for k, v in os.environ.items() if k != TRUST}, "MCCARD_CONFIG_DIR": str(mine)}
    proc = subprocess.run([sys.executable, "-m", "mccard_dist.cli", "-cd", str(mine),
                           "experiment=smoke", "--cfg", "job"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "name: smoke" in proc.stdout


def test_hydra_gets_the_command_line_as_it_was_checked():
    from mccard_dist.hydra_guard import hydra_argv, parse_args

    argv = ["experiment=smoke", "-m", "data.n_features=20,30", "--cfg", "job", "run.progress=false"]
    assert hydra_argv(parse_args(argv)) == [
        "--multirun", "--cfg", "job", "experiment=smoke", "data.n_features=20,30",
        "run.progress=false"]
    # an abbreviation reaches Hydra under the name that was checked
    assert hydra_argv(parse_args(["--config-d", "/x", "--multi"])) == [
        "--multirun", "--config-dir", "/x"]


#: a config that a group option could reach from outside the config folder
EVIL_FILE = """\
# @package _global_
hydra:
  callbacks:
    evil:
      _target_: os.makedirs
      name: {marker}
  output_subdir: .
  run:
    dir: {victim}
"""


@pytest.fixture
def evil_file(tmp_path):
    """``(option, marker, victim, digest)``: an option that reaches ``evil.yaml`` outside the
    config folder from any group below ``conf/`` (``../`` up to the root, then its path)."""
    import hashlib

    (tmp_path / "evilconf").mkdir()
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "config.yaml").write_text("precious: 2\n")
    marker = tmp_path / "marker"
    (tmp_path / "evilconf" / "evil.yaml").write_text(EVIL_FILE.format(marker=marker,
                                                                     victim=victim))
    depth = len(config_dir().resolve().parts) + 3
    option = "../" * depth + str(tmp_path / "evilconf" / "evil").lstrip("/")

    def digest():
        return hashlib.sha256((victim / "config.yaml").read_bytes()).hexdigest()

    return option, marker, victim, digest


@pytest.mark.parametrize("args, key", [
    (["+schema/data=EVIL"], "schema/data=EVIL"),
    (["+schema/cluster=EVIL"], "schema/cluster=EVIL"),
    (["+schema=EVIL"], "schema=EVIL"),
    (["+schema/data@_global_=EVIL"], "schema/data@_global_=EVIL"),
    (["-m", "+schema/data=EVIL"], "schema/data=EVIL"),
    # variants: other spellings, packages, sweeps and groups
    (["schema/data=EVIL"], "schema/data=EVIL"),
    (["++schema/data=EVIL"], "schema/data=EVIL"),
    (["+schema/cluster@_global_=EVIL"], "schema/cluster@_global_=EVIL"),
    (["-m", "+schema=local,EVIL"], "schema=local"),
    (["-m", "+schema/data=glob(*)"], "schema/data=glob(*)"),
    (["+no/such/group=EVIL"], "no/such/group=EVIL"),
    (["+nosuchgroup=EVIL"], "nosuchgroup=EVIL"),
    (["+schema/data/deeper=EVIL"], "schema/data/deeper=EVIL"),
    (["+experiment@_global_=EVIL"], "experiment@_global_=EVIL"),
    (["+method@methods.x=EVIL"], "method@methods.x=EVIL"),
    (["-m", "cluster=local,EVIL"], "cluster=EVIL"),
    (["+data@hydra.callbacks=EVIL"], "data@hydra.callbacks"),
], ids=lambda v: " ".join(v)[:40] if isinstance(v, list) else v)
def test_a_group_option_reaches_no_file_outside_the_config_folder(mccard_run, evil_file, args,
                                                                  key):
    """A group of Hydra's ConfigStore (the schemas) has no folder in ``conf/``: Hydra would
    resolve ``..`` in its option after the missing folder and load any YAML file, whose
    ``hydra.callbacks`` it calls before the run starts."""
    option, marker, victim, digest = evil_file
    before = digest()
    args = [a.replace("EVIL", option) for a in args]
    assert_refused(mccard_run("experiment=smoke", *args), key.replace("EVIL", option))
    assert not marker.exists() and digest() == before


@pytest.fixture
def own_folder(tmp_path, monkeypatch):
    """A copy of the shipped config folder as MCCARD_CONFIG_DIR."""
    import shutil

    mine = tmp_path / "myconf"
    shutil.copytree(config_dir(), mine)
    monkeypatch.setenv("MCCARD_CONFIG_DIR", str(mine))
    return mine


@pytest.mark.parametrize("text, key", [
    ("# @package _global_\nhydra:\n  callbacks:\n    x:\n      _target_: os.makedirs\n"
     "      name: MARKER\n", "hydra.callbacks"),
    ("# @package hydra\njob_logging:\n  version: 1\n  handlers:\n    f:\n"
     "      class: logging.FileHandler\n      filename: MARKER\n", "hydra.job_logging"),
    ("# @package _global_\ndefaults:\n  - override /hydra/job_logging: disabled\n",
     "hydra.job_logging"),
    ("hydra:\n  searchpath: [file://MARKER]\n", "hydra.searchpath"),
    ("# @package _global_\nhydra:\n  output_subdir: .\n", "hydra.output_subdir"),
    ("# @package _global_\nhydra:\n  sweep:\n    subdir: ${oc.env:HOME}\n",
     "hydra.sweep.subdir"),
], ids=["callbacks", "job_logging", "override-logging", "searchpath", "output_subdir", "subdir"])
@pytest.mark.slow  # copies the config folder and composes from it (callbacks: the fast one below)
def test_a_config_of_ones_own_folder_sets_no_hydra_code(mccard_run, own_folder, tmp_path, text,
                                                        key):
    """Whatever route a file takes into ``hydra`` (``@package _global_``, ``@package hydra``,
    a defaults override, the primary config), the composed config is checked, not only the
    command line."""
    marker = tmp_path / "marker"
    text = text.replace("MARKER", str(marker))
    if text.startswith("hydra:\n"):  # Hydra takes a search path from the primary config only
        primary = own_folder / "config.yaml"
        primary.write_text(primary.read_text().replace("\nhydra:\n", "\n" + text, 1))
    else:
        (own_folder / "experiment" / "mine.yaml").write_text(text)
    message, reached = mccard_run("experiment=smoke" if text.startswith("hydra:") else
                                  "experiment=mine")
    assert not reached, message
    assert message.startswith(f"error: {key}: not accepted from a config of {own_folder} ("), \
        message
    assert message.endswith(ENDING) and "\n" not in message
    assert not marker.exists()


@pytest.mark.slow  # a subprocess, as a user types it
def test_a_configstore_group_runs_no_code_in_a_real_run(tmp_path, evil_file):
    option, marker, victim, digest = evil_file
    before = digest()
    env = {k: v for k, v in os.environ.items() if k != TRUST}
    proc = subprocess.run([sys.executable, "-m", "mccard_dist.cli", "experiment=smoke",
                           f"+schema/data={option}"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode != 0
    assert proc.stderr.strip().startswith("error: schema/data="), proc.stderr
    assert "Traceback" not in proc.stderr
    assert not marker.exists() and digest() == before
    assert not (tmp_path / "outputs").exists()


@pytest.mark.parametrize("override, message", [
    pytest.param("methods.mcc_l1.grid.alpha_ratoi=[0.5]", "error: methods.mcc_l1.grid.alpha_ratoi: "
                 "is not a grid name of MCCL1Regressor, which takes kernel_width, alpha_ratio, "
                 "fit_intercept, max_iter, solver, tol, working_set, zero_tol; did you mean "
                 "methods.mcc_l1.grid.alpha_ratio?", marks=SLOW),
    pytest.param("+methods.ridge.grid.alpha=[1.0]", "error: methods.ridge: no such method in the "
                 "config; a method is added from a method file of CONF/method: "
                 "+method@methods.ridge=FILE, then experiment.methods lists it", marks=SLOW),
    pytest.param("methods.mcc_ardd.grid.kernel_width=[1]", "error: methods.mcc_ardd: no such "
                 "method in the config (did you mean methods.mcc_ard?); a method is added from a "
                 "method file of CONF/method: +method@methods.mcc_ardd=FILE, then "
                 "experiment.methods lists it", marks=SLOW),
], ids=["grid-name", "added-by-key", "misspelt-method"])
def test_a_key_under_methods_hydra_cannot_set_is_said_as_the_spec_says_it(mccard_run, override,
                                                                            message):
    """The plain spelling gets the same "did you mean" as ``+methods...`` (which the spec
    checks); a method added by key is told how methods are added."""
    assert mccard_run("experiment=smoke", override) == (
        message.replace("CONF", str(config_dir())), False)


@pytest.mark.slow  # keeps the fast subset under its 30 s
def test_a_setting_of_a_method_the_experiment_does_not_run_is_said_to_have_no_effect(
        mccard_run, capsys):
    assert mccard_run("experiment=smoke", "methods.lasso.grid.alpha_ratio=[0.5]") == (None, True)
    assert capsys.readouterr().err.strip() == (
        "warning: methods.lasso.grid.alpha_ratio=[0.5] has no effect: lasso is not in "
        "experiment.methods (ls_ard, mcc_ard, mcc_ard_proper, mcc_l1); add it there to run it")
    assert mccard_run("experiment=smoke", "methods.mcc_l1.grid.alpha_ratio=[0.5]") == (None, True)
    assert "warning" not in capsys.readouterr().err


def test_a_callback_in_a_config_of_ones_own_folder_is_refused(mccard_run, own_folder, tmp_path):
    """The fast case of the test above: ``@package _global_`` from one's own folder."""
    marker = tmp_path / "marker"
    (own_folder / "experiment" / "mine.yaml").write_text(
        f"# @package _global_\nhydra:\n  callbacks:\n    x:\n      _target_: os.makedirs\n"
        f"      name: {marker}\n")
    message, reached = mccard_run("experiment=mine")
    assert not reached and message.startswith(
        f"error: hydra.callbacks: not accepted from a config of {own_folder} ("), message
    assert not marker.exists()
