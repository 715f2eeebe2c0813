#!/usr/bin/env bash
# Sets up (if needed) with the C++ tests, then runs every test: the
# GoogleTests through CTest and the Python tests through pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
POPSIM_BUILD_TESTS=1 scripts/setup.sh
build_dir="${POPSIM_BUILD_DIR:-build/release}"
ctest --test-dir "$build_dir" --output-on-failure --timeout 300
.venv/bin/python -m pytest tests/python "$@"
