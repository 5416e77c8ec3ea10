"""Sphinx configuration of the mccard-dist documentation.

Build: ``python -m sphinx -W --keep-going -b html docs docs/_build/html`` (the ``docs`` extra
installs what it needs). The gallery examples under ``docs/examples/`` run during the build.
"""

import os
import sys
from pathlib import Path

import mccard_dist

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "tools"))
# The examples start Dask workers and fit models: one BLAS thread per process, as the pipeline runs.
for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(variable, "1")

project = "mccard-dist"
author = "the mccard-dist developers"
copyright = "the mccard-dist developers"
release = version = mccard_dist.__version__

extensions = [
    "myst_parser",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx_gallery.gen_gallery",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "examples/README.rst", "measurements", "tools",
                    "auto_examples/*.ipynb", "auto_examples/*.py", "auto_examples/*.zip", "auto_examples/*.md5",
                    "auto_examples/*.json"]
root_doc = "index"

myst_enable_extensions = ["colon_fence", "dollarmath"]
myst_heading_anchors = 3

templates_path = ["_templates"]
autosummary_generate = True
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

intersphinx_mapping = {}  # the build runs offline: no inventories are fetched

sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "abort_on_example_error": True,
    "show_memory": False,
    "within_subsection_order": "FileNameSortKey",
}

html_theme = "pydata_sphinx_theme"
html_title = "mccard-dist"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_static_path = []
