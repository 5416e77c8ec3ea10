"""The examples in the docstrings run and print what they say (the installed package's modules,
so the test holds for an editable and a regular install alike)."""

import doctest
import importlib
import pkgutil

import pytest

import mccard_dist


def modules():
    return sorted(info.name for info in pkgutil.walk_packages(mccard_dist.__path__,
                                                              prefix="mccard_dist.")
                  if not info.name.endswith("__main__"))


def examples(name):
    finder = doctest.DocTestFinder(exclude_empty=True)
    module = importlib.import_module(name)
    return [t for t in finder.find(module, name) if t.examples]


WITH_EXAMPLES = [name for name in modules() if examples(name)]


def test_the_estimators_have_examples():
    # the public estimators and path function all show a fit in their docstrings
    assert {"mccard_dist.models.mcc_ard", "mccard_dist.models.ls_ard", "mccard_dist.models.mcc_l1",
            "mccard_dist.models.cv", "mccard_dist.models.mcc_l1_cv",
            "mccard_dist.models.mcc_l1_path"} <= set(WITH_EXAMPLES)


@pytest.mark.parametrize("name", WITH_EXAMPLES)
def test_docstring_examples(name):
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in examples(name):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted > 0 and result.failed == 0, f"{name}: {result.failed} failed"


def test_the_analysis_pages_selections_exist_in_the_store_it_opens():
    """docs/user_guide/analysis.md opens the default (quick) experiment's store: every tau and
    psi its code selects is a coordinate of that store."""
    import re
    from pathlib import Path

    import yaml

    root = Path(__file__).resolve().parents[1]
    grid = yaml.safe_load((root / "conf" / "experiment" / "quick.yaml").read_text())["experiment"]
    page = (root / "docs" / "user_guide" / "analysis.md").read_text()
    code = "\n".join(re.findall(r"```python\n(.*?)```", page, re.S))
    assert "quick-" in code
    for name in ("tau", "psi"):
        chosen = [float(v) for v in re.findall(rf"\b{name}=([0-9.]+)", code)]
        assert chosen and set(chosen) <= set(map(float, grid[name])), (name, chosen)
