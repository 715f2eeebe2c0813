#!/usr/bin/env bash
# Sets up (if needed) with the C++ tests, then runs every test: the
# GoogleTests through CTest, the public C++ API's tests against an installed
# package, the Python tests through pytest (popsim's and
# the pipelining tutorial's, whose data it prepares first), the CPU-sensitive
# tests as other CPUs, the documentation check and the sanitizers.
#
# The tutorial's tests expect the offline MNIST digits (8,000 train, 2,000
# test), so they get a data directory of their own, prepared without
# torchvision's download even on a machine with the internet (Fashion-MNIST
# still comes from Debian). Set POPSIM_DATA_DIR to use another one.
set -euo pipefail
cd "$(dirname "$0")/.."
POPSIM_BUILD_TESTS=1 scripts/setup.sh
# Where setup.py builds: build/<POPSIM_BUILD_TYPE lowercased>, unless POPSIM_BUILD_DIR says.
build_type="${POPSIM_BUILD_TYPE:-Release}"
build_dir="${POPSIM_BUILD_DIR:-build/${build_type,,}}"
ctest --test-dir "$build_dir" --output-on-failure --timeout 300
# The public C++ API as a LibTorch project sees it: installed into a temporary
# prefix, its GoogleTests and examples/cpp built against that prefix only.
scripts/test_cpp_api.sh "$build_dir"
export POPSIM_DATA_DIR="${POPSIM_DATA_DIR:-$PWD/build/test-data}"
scripts/prepare_data.sh --no-download
# On every core (pytest-xdist): each test runs in one of the worker processes.
.venv/bin/python -m pytest -n auto tests/python tutorials/pipelining/tests "$@"
# Results must not depend on the CPU: the kernel, op and training parity tests
# run again as a CPU with fewer vector instructions would run them (oneDNN
# and ATen pick other kernels there, with other rounding).
scripts/test_isas.sh "$build_dir"
# The documentation site with warnings as errors (broken references, public names missing
# from the API reference), and every example of its guide run.
scripts/docs.sh --check
# The C++ core under AddressSanitizer and UndefinedBehaviorSanitizer.
scripts/sanitize.sh
