"""Every supported op in float16, forward and backward, against eager PyTorch
computing each op in float32 and rounding its result to float16.

An IPU stores float16 values and rounds the result of every float16 op to
float16; popsim does the same (kernels compute in float32 on float16 values,
and each float16 result is rounded). The reference is eager PyTorch on the
same float16 module and inputs, under the dispatch mode popsim traces with
(popsim.frontend.half_tracing.HalfOnCpu): each aten op runs on float32 copies of its
float16 operands, and its result is rounded to float16, forward and backward.

The two agree exactly where both round one float32 result per op; where an op
is one aten op in PyTorch and several IR ops in popsim (or the reverse), or
where float32 sums run in another order, the results may differ by a
float16 rounding or two: the tolerance is a few float16 ulps (2^-10 relative)
of the element, or of the output's largest magnitude for elements produced by
cancellation. A gradient sums terms of the inputs' scale (the cases draw
them about 1): its roundings are relative to that scale, however small the sum.
"""

import random

import pytest
import torch

import popsim
from popsim.compile.gradients import gradients
from popsim.frontend.half_tracing import HalfOnCpu
from pointwise_cases import BESSEL_WITHOUT_DERIVATIVE, ORTHOGONAL_POLYNOMIALS
from test_gradients import NOT_DIFFERENTIABLE, Projected
from test_ops import CASES

FLOAT16_ULP = 2.0**-10


def pytorch_casting():
    """Options with PyTorch's promotion of mixed float16 and float32 operands, which
    the eager reference follows (test_half_precision.py covers PopTorch's default)."""
    opts = popsim.Options()
    opts.Precision.halfFloatCasting(popsim.HalfFloatCastingBehavior.HalfUpcastToFloat)
    return opts


def half_case(op, draw):
    """The op's case with its float inputs and parameters in float16 (index,
    mask and integer inputs keep their dtypes)."""
    rng = random.Random(f"{op}-{draw}")
    torch.manual_seed(rng.randint(0, 2**31))
    module, inputs = CASES[op](rng)
    module.eval()
    module.half()
    inputs = [x.half() if x.is_floating_point() else x for x in inputs]
    return module, inputs


def eager_half(fn):
    with HalfOnCpu(downcast_mixed=False):
        return fn()


def assert_half_close(actual, expected, ulps=4, scale_floor=0.0):
    """Within `ulps` float16 roundings of the element, or of the largest magnitude
    (at least `scale_floor`)."""
    if isinstance(expected, (tuple, list)):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_half_close(a, e, ulps, scale_floor)
        return
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    if not expected.is_floating_point():
        assert torch.equal(actual, expected)
        return
    scale = expected.float().abs().nan_to_num(0, 0, 0).max().item() if expected.numel() else 0
    scale = max(scale, scale_floor)
    rtol = ulps * FLOAT16_ULP
    torch.testing.assert_close(actual.float(), expected.float(), rtol=rtol,
                               atol=max(1e-6, rtol * scale), equal_nan=True,
                               msg=lambda m: f"{m}\nactual {actual}\nexpected {expected}")


# Cases the float16 reference cannot check, and why.
NO_FLOAT16_REFERENCE = {
    # PyTorch 1.13's CPU ctc_loss builds its length tensors in the
    # log-probabilities' dtype, which has no CPU float16 kernel.
    "loss_ctc_unbatched",
    # bincount sums float16 weights into float64, which popsim computes as float32.
    "indexing_bincount_weights",
    # PyTorch 1.13's quantile refuses float16 input (float and double only), in eager
    # and so in popsim's trace.
    "reduction_quantile", "reduction_nanquantile",
    # PyTorch 1.13's linalg.vander, orthogonal polynomials and Bessel functions of the
    # second kind (and others) refuse float16 input in eager and so in the trace.
    "rearrangement_linalg_vander",
} | {f"pointwise_{name}" for name in ORTHOGONAL_POLYNOMIALS | BESSEL_WITHOUT_DERIVATIVE}
# At a zero row the eps of normalize underflows to 0 in float16: the gradient
# there is 0/0, whose infinities or NaN depend on the order of the operations.
# PyTorch 1.13's logcumsumexp_backward is a composite that refuses float16
# before the reference's dispatch mode can run it in float32.
NO_FLOAT16_GRADIENT = NO_FLOAT16_REFERENCE | {"reduction_normalize_zero_rows",
                                              "reduction_logcumsumexp",
                                              "reduction_logcumsumexp_wide_range",
                                              # affine_grid's eager backward accumulates into
                                              # a broadcast float16 view, which the reference's
                                              # dispatch mode cannot redo in float32
                                              "window_spatial_transformer",
                                              "window_spatial_transformer_align_corners_border",
                                              # eager's sinc backward is a composite of float16
                                              # ops, (pi x cos(pi x) - sin(pi x)) / (pi x^2),
                                              # whose cancellation near 0 loses most bits;
                                              # popsim's one op keeps them
                                              "pointwise_sinc",
                                              # PyTorch 1.13's i1_backward and i1e_backward
                                              # dispatch on float and double only, before
                                              # the reference's dispatch mode can run them
                                              "pointwise_i1", "pointwise_i1_small",
                                              "pointwise_i1e",
                                              # i1 of |x| > 11.6 overflows float16: eager
                                              # rounds it to inf before multiplying by the
                                              # incoming gradient, popsim's one op after
                                              "pointwise_i0_large",
                                              # eager's log_ndtr backward rounds
                                              # log_ndtr(x) + x^2 / 2 to float16 before
                                              # the exp (-80 to a 1/16 step at x = -12)
                                              "pointwise_special_log_ndtr_far"}


@pytest.mark.parametrize("op", sorted(set(CASES) - NO_FLOAT16_REFERENCE))
def test_op_matches_eager_in_float16(op):
    module, inputs = half_case(op, 0)
    with torch.no_grad():
        expected = eager_half(lambda: module(*inputs))
    actual = popsim.inferenceModel(module, pytorch_casting())(*inputs)
    assert_half_close(actual, expected)


@pytest.mark.parametrize("op", sorted(set(CASES) - NOT_DIFFERENTIABLE - NO_FLOAT16_GRADIENT))
def test_op_gradients_match_autograd_in_float16(op):
    module, inputs = half_case(op, 0)
    with torch.no_grad():
        output = eager_half(lambda: module(*inputs))
    model = Projected(module, torch.randn(output.shape).half())
    input_grads, weight_grads = gradients(model, *inputs, options=pytorch_casting())
    leaves = [x.detach().clone().requires_grad_(x.is_floating_point()) for x in inputs]
    model.zero_grad()
    eager_half(lambda: model(*leaves).backward())
    float_leaves = [leaf for leaf in leaves if leaf.is_floating_point()]
    for actual, leaf in zip(input_grads.values(), float_leaves):
        expected = leaf.grad if leaf.grad is not None else torch.zeros_like(leaf)
        assert_half_close(actual, expected, scale_floor=1.0)
    for name, parameter in model.named_parameters():
        if parameter.requires_grad and name in weight_grads:
            expected = parameter.grad if parameter.grad is not None else torch.zeros_like(
                parameter)
            assert_half_close(weight_grads[name], expected, scale_floor=1.0)
