#!/usr/bin/env bash
# popsim's public C++ API as a LibTorch user meets it: installs the build into
# a temporary prefix (cmake --install), then builds, against that prefix only,
# the API's GoogleTests (tests/cpp_api) and the example (examples/cpp), and
# runs them on the tutorial network exported from Python, with Python's
# results for the same model and options to compare.
#   scripts/test_cpp_api.sh [BUILD_DIR]     (default build/release)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${1:-build/release}"
work="$(mktemp -d "${TMPDIR:-/tmp}/popsim-cpp-api.XXXXXX")"
trap 'rm -rf "$work"' EXIT

cmake --build "$build_dir" --target popsim
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
# The exported target names its include directory once.
includes="$(grep -h 'INTERFACE_INCLUDE_DIRECTORIES' "$work"/prefix/lib*/cmake/popsim/popsimTargets.cmake)"
if [ "$(grep -o '_IMPORT_PREFIX}/include' <<<"$includes" | wc -l)" -ne 1 ]; then
  echo "popsim C++ API: the installed popsim::popsim target lists its include directory" \
       "other than once: $includes" >&2
  exit 1
fi
# Debian's LibTorch CMake package (libtorch-dev); torch.utils.cmake_prefix_path names a
# directory Debian's python3-torch does not ship.
torch_prefix="/usr/lib/$(gcc -dumpmachine)/cmake"
prefix_path="$work/prefix;$torch_prefix"
generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi

echo "popsim C++ API: exporting the tutorial network and Python's results"
POPSIM_PROGRESS=0 .venv/bin/python tests/cpp_api/make_reference.py "$work/fixtures"

echo "popsim C++ API: the GoogleTests, against the installed package"
cmake -S tests/cpp_api -B "$work/tests" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix_path" -DPOPSIM_SOURCE_DIR="$PWD" >/dev/null
cmake --build "$work/tests" >/dev/null
POPSIM_API_FIXTURES="$work/fixtures" "$work/tests/popsim_api_tests"

echo "popsim C++ API: the example (examples/cpp), against the installed package"
cmake -S examples/cpp -B "$work/example" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix_path" >/dev/null
cmake --build "$work/example" >/dev/null
for model in mnist_traced.pt mnist_scripted.pt; do
  "$work/example/mnist_inference" "$work/fixtures/$model"
done
echo "popsim C++ API: the installed package builds and runs the tests and the example"
