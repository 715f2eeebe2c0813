#!/usr/bin/env bash
# Builds popsim's documentation site (docs/, Sphinx) into build/docs/html, a static site that
# opens from the file system (build/docs/html/index.html). Sets up first if needed: the Debian
# packages of the docs, .venv and popsim (the API reference documents the installed package).
#
#   scripts/docs.sh           the site, with the tutorial's notebook executed (3 epochs, a few
#                             minutes), as `make docs` builds it
#   scripts/docs.sh --check   what `make test` checks: the site with warnings as errors (broken
#                             cross-references, public names missing from the API reference),
#                             the notebook rendered without running it (the tests run it), and
#                             every example of the guide run (sphinx.ext.doctest), and the
#                             site opened from disk in headless Chromium (no page errors,
#                             search with snippets)
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
if [[ "${1:-}" == --check ]]; then check=1; fi

source scripts/debian_packages.sh
# pandoc converts the notebook's Markdown cells (nbconvert only recommends it).
install_missing python3-sphinx furo python3-myst-parser python3-nbsphinx \
  python3-sphinx-autodoc-typehints python3-sphinx-copybutton pandoc doxygen python3-breathe
if [[ "$check" == 0 ]]; then
  scripts/setup.sh
  scripts/prepare_data.sh
else
  install_missing chromium # the check opens the built site in headless Chromium
fi

out=build/docs
mkdir -p "$out"
# The notebook's kernel: a kernelspec named like the notebook's ("python3") that starts the
# venv's Python, found before Debian's (which runs /usr/bin/python3, without popsim). The
# tutorial's modules are imported from its directory; its profiles go to the build directory;
# POPSIM_PROGRESS=0 hides popsim's and the tutorial's progress bars.
kernel_dir="$out/jupyter/kernels/python3"
mkdir -p "$kernel_dir"
cat >"$kernel_dir/kernel.json" <<JSON
{"argv": ["$PWD/.venv/bin/python", "-Xfrozen_modules=off", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
 "display_name": "Python 3 (popsim docs)", "language": "python"}
JSON
export JUPYTER_PATH="$PWD/$kernel_dir/../.."
export PYTHONPATH="$PWD/tutorials/pipelining${PYTHONPATH:+:$PYTHONPATH}"
# Relative to the notebook's directory, where its kernel runs: the page shows no machine's path.
export POPSIM_TUTORIAL_PROFILE_DIR="../../$out/tutorial-profile"
export POPSIM_PROGRESS=0 MPLBACKEND=agg
# torchvision's progress bars warn in a kernel without ipywidgets; the page would show it.
export PYTHONWARNINGS="ignore:IProgress not found"

sphinx=(.venv/bin/python -m sphinx -W --keep-going -q -j auto)
if [[ "$check" == 1 ]]; then
  "${sphinx[@]}" -b html -D nbsphinx_execute=never -d "$out/doctrees-check" docs "$out/check-html"
  # The site needs nothing fetched: no page may load a script or a style sheet from the network.
  if grep -rlE '(src|href)="https?://[^"]*\.(js|css)"' "$out/check-html" --include='*.html'; then
    echo "popsim docs: the pages above load scripts or styles from the network" >&2
    exit 1
  fi
  # Opened from the file system, pages run without errors and search shows snippets.
  .venv/bin/python scripts/check_site_offline.py "$out/check-html"
  # The examples write files (exported programs, profiles, caches) into temporary
  # directories of their own: kept under build/ and emptied on each run, not left in /tmp.
  rm -rf "$out/doctest-tmp" && mkdir -p "$out/doctest-tmp"
  TMPDIR="$PWD/$out/doctest-tmp" \
    "${sphinx[@]}" -b doctest -D nbsphinx_execute=never -d "$out/doctrees-check" docs "$out/doctest"
  echo "popsim docs: the site builds without warnings and its examples run"
else
  "${sphinx[@]}" -b html -d "$out/doctrees" docs "$out/html"
  echo "popsim docs: open $out/html/index.html"
fi
