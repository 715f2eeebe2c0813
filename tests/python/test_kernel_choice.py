"""No op of the audited models (the tutorial network, ResNet-18, a transformer
encoder layer; inference and training) runs one of oneDNN's reference
implementations: benchmarks/kernel_audit.py lists what each op runs.
make test runs this under every instruction set it checks (scripts/test_isas.sh)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
import kernel_audit  # noqa: E402


def test_the_slow_path_check_recognises_onednn_reference_implementations():
    assert kernel_audit.is_slow("onednn:simple_nchw:any")
    assert kernel_audit.is_slow("onednn:ref:any")
    assert kernel_audit.is_slow("onednn:jit:uni + onednn:lnorm_ref:any")
    assert kernel_audit.is_slow("onednn:simple:any")
    assert not kernel_audit.is_slow("onednn:simple_layer_normalization:any")
    assert not kernel_audit.is_slow("onednn:jit:avx2 + nan-passthrough")
    assert not kernel_audit.is_slow("vectorised:max_pool_avx2")
    assert not kernel_audit.is_slow("reference")


def test_no_op_runs_a_onednn_reference_implementation():
    table = kernel_audit.audit()
    assert "convolution" in table and "max_pool2d_train" in table and "softmax" in table
    slow = {op: sorted(impls) for op, impls in table.items()
            if any(kernel_audit.is_slow(impl) for impl in impls)}
    assert not slow


def test_sigmoid_and_silu_are_atens_formulas_with_exp_rounded_once():
    """ATen's float formulas, with exp(-x) rounded to float from double
    precision (more accurate than ATen's float exp, which efficientnet's
    squeeze-excitation gradients need), the same on every instruction set
    test_isas.sh covers, NaN and infinities included."""
    import torch
    import torch.nn.functional as F

    import popsim

    torch.manual_seed(0)
    x = torch.cat([torch.randn(4099) * 8, torch.tensor([0.0, -0.0, 88.5, -104.0, float("inf"),
                                                       float("-inf"), float("nan")])])
    e = torch.exp(-x.double()).float()
    for fn, formula in ((torch.sigmoid, 1.0 / (1.0 + e)), (F.silu, x / (1.0 + e))):
        class Model(torch.nn.Module):
            def forward(self, a):
                return fn(a)

        got = popsim.inferenceModel(Model())(x)
        assert torch.equal(got.isnan(), formula.isnan())
        finite = ~formula.isnan()
        assert torch.equal(got[finite], formula[finite]), fn
        # and within an ulp of eager's float exp
        torch.testing.assert_close(got, fn(x), rtol=2.5e-7, atol=0.0, equal_nan=True)
