#!/usr/bin/env bash
# Runs the CPU-sensitive tests (kernels against their references, every op
# forward and backward, NaN and Inf, training parity, float16) once per instruction set
# below this CPU's: capped at AVX2 where the CPU has AVX-512, and at the x86-64
# baseline (SSE4.1, ATen's scalar "default") everywhere. ONEDNN_MAX_CPU_ISA
# caps oneDNN (and popsim's own vectorised kernels, which follow it);
# ATEN_CPU_CAPABILITY caps eager PyTorch's kernels.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="$1"
tests=(tests/python/test_ops.py tests/python/test_gradients.py tests/python/test_nonfinite.py
       tests/python/test_training.py tests/python/test_kernel_choice.py tests/python/test_concurrency.py
       tests/python/test_half_precision_ops.py tests/python/test_half_precision.py)

caps=()
if grep -qw avx512f /proc/cpuinfo; then
  caps+=("AVX2 avx2")
fi
caps+=("SSE41 default")
for cap in "${caps[@]}"; do
  read -r onednn aten <<<"$cap"
  echo "popsim tests: as on a CPU with ${onednn} (ONEDNN_MAX_CPU_ISA=${onednn}, ATEN_CPU_CAPABILITY=${aten})"
  ONEDNN_MAX_CPU_ISA="$onednn" ATEN_CPU_CAPABILITY="$aten" \
    "$build_dir/tests/cpp/popsim_core_tests" --gtest_brief=1 --gtest_filter='*Kernel*:*MaxPool*:*HalfRounding*:*HalfPartials*'
  ONEDNN_MAX_CPU_ISA="$onednn" ATEN_CPU_CAPABILITY="$aten" \
    .venv/bin/python -m pytest -q -n auto "${tests[@]}"
done
