"""Sphinx configuration of the fastspectral documentation.

Build: ``sphinx-build -W -b html docs docs/_build/html`` (``pip install ".[docs]"``).  The API
reference is generated from the numpydoc docstrings (autodoc; ``_ext/apiref.py`` writes ``api/``
at build time) and the command-line reference from the argparse parsers (``_ext/cliref.py`` writes
``cli/``); neither is committed.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "_ext"))
sys.path.insert(0, os.path.dirname(HERE))

import fastspectral  # noqa: E402

project = "fastspectral"
author = "fastspectral contributors"
copyright = "fastspectral contributors"
release = version = fastspectral.__version__

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "numpydoc",
    "sphinx.ext.doctest",
    "apiref",
    "cliref",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "README.md"]

# Markdown: ```{directive} fences, headings get anchors for [text](page.md#anchor) links
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3

# API reference (_ext/apiref.py): one page per module, members documented where defined
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_member_order = "bysource"
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = False
numpydoc_xref_param_type = False

html_theme = "furo"
html_title = f"fastspectral {release}"
html_static_path = []


# Pages that exist only in some checkouts (written alongside the guide): listed in the index's
# toctree when present, so that every page is reachable and a missing one is no warning.
OPTIONAL_PAGES = {"OPTIONAL-GETTING-STARTED": ("first-run",),
                  "OPTIONAL-BENCHMARKS": ("benchmarks-*",)}


def _optional_pages(app, docname, source):
    if docname != "index":
        return
    import glob

    for marker, patterns in OPTIONAL_PAGES.items():
        found = []
        for pattern in patterns:
            found += sorted(os.path.splitext(os.path.basename(p))[0]
                            for p in glob.glob(os.path.join(HERE, pattern + ".md")))
        source[0] = source[0].replace(marker + "\n", "".join(f + "\n" for f in found))


def setup(app):
    app.connect("source-read", _optional_pages)
