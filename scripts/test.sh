#!/usr/bin/env bash
# Sets up (if needed) with the C++ tests, then runs every test: the
# GoogleTests through CTest and the Python tests through pytest (popsim's and
# the pipelining tutorial's, whose data it prepares first).
set -euo pipefail
cd "$(dirname "$0")/.."
POPSIM_BUILD_TESTS=1 scripts/setup.sh
build_dir="${POPSIM_BUILD_DIR:-build/release}"
ctest --test-dir "$build_dir" --output-on-failure --timeout 300
scripts/prepare_data.sh
.venv/bin/python -m pytest tests/python tutorials/pipelining/tests "$@"
