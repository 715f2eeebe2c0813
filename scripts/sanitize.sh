#!/usr/bin/env bash
# Builds popsim's C++ core (with the LibTorch frontend, without the Python
# extension) and its GoogleTests with AddressSanitizer and
# UndefinedBehaviorSanitizer, in build/sanitize, and runs them. Any report
# fails the run. Debian's LibTorch and oneDNN are not instrumented: their
# memory is still checked where popsim's code touches it, not inside them.
# It builds at -O1 with line tables only (-g1), as the sanitizers' authors
# advise: every check and a stack trace with lines, in half the build time
# of -O2 -g (LibTorch's headers make full debug information costly).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/debian_packages.sh
install_missing build-essential cmake ninja-build ccache libdnnl-dev libsleef-dev nlohmann-json3-dev libssl-dev \
  googletest libtorch-dev \
  python3-torch

build_dir="${POPSIM_SANITIZE_BUILD_DIR:-build/sanitize}"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DPOPSIM_WITH_TORCH=ON -DPOPSIM_BUILD_PYTHON=OFF -DPOPSIM_BUILD_TESTS=ON -DPOPSIM_WERROR=ON \
  -DCMAKE_PREFIX_PATH="/usr/lib/$(gcc -dumpmachine)/cmake" \
  -DPOPSIM_SANITIZE=address,undefined >/dev/null
cmake --build "$build_dir" --parallel "${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
ctest --test-dir "$build_dir" --output-on-failure --timeout 600
