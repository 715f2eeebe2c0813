#!/usr/bin/env bash
# Builds popsim's C++ core and its torch-free GoogleTests with AddressSanitizer
# and UndefinedBehaviorSanitizer (in build/sanitize) and runs them. Any report
# fails the run. The LibTorch frontend is left out: Debian's LibTorch is not
# built with the sanitizers, and its tests then report inside torch.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/debian_packages.sh
install_missing build-essential cmake ninja-build ccache libdnnl-dev googletest

build_dir="${POPSIM_SANITIZE_BUILD_DIR:-build/sanitize}"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPOPSIM_WITH_TORCH=OFF -DPOPSIM_BUILD_TESTS=ON -DPOPSIM_WERROR=ON \
  -DPOPSIM_SANITIZE=address,undefined >/dev/null
cmake --build "$build_dir" --parallel "${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
ctest --test-dir "$build_dir" --output-on-failure --timeout 600
