"""The ops of a squeeze-excitation block are no less accurate than eager
PyTorch's: long sums (global average pooling, sums and means over many
values, batch-norm statistics) and the logistic functions (sigmoid, SiLU),
measured against float64 over several draws. A float running sum over 1024
values is several times less accurate than ATen's cascade sum, and oneDNN's
logistic and swish are up to 2 ulp off: both made efficientnet training
steps drift past eager float32's (benchmarks/torchvision_coverage.py)."""

import pytest
import torch
import torch.nn.functional as F

import popsim
from models import Function

WEIGHT, BIAS = torch.rand(32) + 0.5, torch.randn(32)

CASES = {
    "global average pooling of 32x32": (lambda x: F.adaptive_avg_pool2d(x, 1), (8, 32, 32, 32)),
    "adaptive average pooling into 2x2": (lambda x: F.adaptive_avg_pool2d(x, 2), (4, 16, 32, 32)),
    "sum over height and width": (lambda x: x.sum((2, 3)), (8, 32, 32, 32)),
    "mean over 4096 rows": (lambda x: x.mean(0), (4096, 16)),
    "batch norm with batch statistics": (
        lambda x: F.batch_norm(x, None, None, WEIGHT.to(x.dtype), BIAS.to(x.dtype), training=True),
        (8, 32, 16, 16)),
    "sigmoid": (torch.sigmoid, (8, 32, 16, 16)),
    "silu": (F.silu, (8, 32, 16, 16)),
}


@pytest.mark.parametrize("case", CASES)
def test_long_sums_are_as_accurate_as_eager(case):
    function, shape = CASES[case]
    model = popsim.inferenceModel(Function(function))
    ours = eager = 0.0
    for seed in range(5):
        torch.manual_seed(seed)
        x = torch.randn(shape) + 3.0  # an offset makes a running float sum's rounding show
        exact = function(x.double())
        ours += (model(x).double() - exact).abs().mean().item()
        eager += (function(x).double() - exact).abs().mean().item()
    assert ours <= eager * (1 + 1e-6), f"popsim {ours / 5:.3g}, eager {eager / 5:.3g}"
