"""Sphinx configuration of popsim's documentation site (``make docs`` builds it into
build/docs/html; ``make test`` builds it with warnings as errors and runs its examples)."""

import importlib.metadata
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "_ext"))

project = "popsim"
author = "the popsim developers"
copyright = "2026, the popsim developers"
# The installed package, which the API reference documents.
version = release = importlib.metadata.version("popsim")


def _give_plots_their_axes() -> None:
    """popsim.profiling's plots annotate matplotlib's Axes, which their module imports only for
    the type checker (matplotlib loads when a plot is drawn, not with popsim). The API reference
    resolves annotations in the module's namespace, so the build gives it there."""
    from matplotlib.axes import Axes

    import popsim.profiling._plots

    popsim.profiling._plots.Axes = Axes  # type: ignore[attr-defined]


_give_plots_their_axes()

extensions = [
    "myst_parser",
    "nbsphinx",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx_autodoc_typehints",
    "sphinx.ext.doctest",
    "sphinx_copybutton",
    "breathe",
    "popsim_docs",
    "search_snippets",
    "offline_theme",
]

# The C++ reference (cpp-reference.md): breathe reads the XML that Doxygen writes from
# include/popsim when the docs build (popsim_docs.run_doxygen).
breathe_projects = {"popsim": os.path.join(HERE, "..", "build", "docs", "doxygen", "xml")}
breathe_default_project = "popsim"
breathe_default_members = ("members",)

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
# ops.md is generated from the tests and included by guide/ops.md.
exclude_patterns = ["_build", "**.ipynb_checkpoints", "README.md", "ops.md"]
root_doc = "index"

# Markdown: ::: fences for directives, definition lists, and anchors for the headings down to
# level 3, so that pages link to each other's sections.
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

# The API reference: members in source order, types from the annotations.
autodoc_member_order = "bysource"
# (An option listed here is on whatever its value: leaving out undoc-members and
# show-inheritance keeps undocumented fields and private base classes off the pages.)
autodoc_default_options = {"members": True}
autodoc_typehints = "description"
typehints_document_rtype = True
# A class's page shows its constructor's arguments (documented in __init__) after its own text.
autoclass_content = "both"
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
# Dataclass fields under "Attributes:" become a field list, not entries of their own that would
# duplicate the members autodoc lists.
napoleon_use_ivar = True

# The tutorial's notebook is executed while the site builds (docs.sh gives it a kernel that runs
# the venv's Python with the installed popsim); its outputs are never stored in the repository.
nbsphinx_execute = "always"
nbsphinx_timeout = 900
nbsphinx_kernel_name = "python3"
# The site needs nothing fetched: no require.js (the notebook has no widgets) and no MathJax
# (its cells have no equations) from a CDN.
nbsphinx_requirejs_path = ""
nbsphinx_assume_equations = False

# The examples of the guide (``testcode`` blocks) run under ``sphinx-build -b doctest``.
doctest_global_setup = """
import os
os.environ.setdefault("POPSIM_PROGRESS", "0")
import torch
import popsim
torch.manual_seed(0)
"""

html_theme = "furo"
html_title = f"popsim {release}"
html_static_path = ["_static"]
html_css_files = ["popsim.css"]
# The site opens from the file system: no search index needs a server, and nothing is fetched.
html_copy_source = False
copybutton_prompt_text = r"\$ |>>> "
copybutton_prompt_is_regexp = True
