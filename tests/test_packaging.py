"""What a non-editable install (a wheel) contains and can run: the configs ship with the package."""

import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _declared_packages():
    return set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])


def test_every_package_and_config_group_is_declared_for_the_wheel():
    code = {".".join(p.parent.relative_to(ROOT).parts)
            for p in (ROOT / "mccard_dist").rglob("__init__.py")}
    conf = {"mccard_dist.conf"} | {f"mccard_dist.conf.{d.name}"
                                   for d in (ROOT / "conf").iterdir() if d.is_dir()}
    assert _declared_packages() == code | conf


@pytest.mark.slow
def test_a_wheel_runs_without_the_source_tree(tmp_path):
    """Build the wheel, install it (no dependencies: they are this environment's) into a folder
    outside the checkout, and run ``mccard-run`` from there: it finds its configs."""
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels),
                    str(ROOT)], check=True, capture_output=True, timeout=600)
    (wheel,) = wheels.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {n.removeprefix("mccard_dist/conf/") for n in names
               if n.startswith("mccard_dist/conf/")}
    source = {str(p.relative_to(ROOT / "conf")) for p in (ROOT / "conf").rglob("*.yaml")}
    assert source <= shipped

    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                    str(site), str(wheel)], check=True, capture_output=True, timeout=600)
    env = {k: v for k, v in os.environ.items() if k != "MCCARD_CONFIG_DIR"}
    env["PYTHONPATH"] = str(site)
    work = tmp_path / "elsewhere"
    work.mkdir()
    where = subprocess.run([sys.executable, "-c", "import mccard_dist; print(mccard_dist.__file__)"],
                           cwd=work, env=env, capture_output=True, text=True, check=True)
    assert where.stdout.strip().startswith(str(site))
    proc = subprocess.run([sys.executable, "-m", "mccard_dist.cli", "experiment=reproduce",
                           "--cfg", "job"], cwd=work, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "name: reproduce" in proc.stdout and "mcc_ard_proper" in proc.stdout
