"""NaN, +Inf and -Inf through every op family, forward and backward, as in
eager PyTorch: a user debugging a diverging model must see the same NaN and
Inf where PyTorch has them.

Each op case of test_ops.py gets some elements of its float inputs (or, with
none, of its weights) replaced by NaN, +Inf or -Inf (the first element and
about 10% of the others); popsim's
outputs and gradients must have NaN and infinities exactly where eager
PyTorch's do, and agree elsewhere within fp32 tolerance.
"""

import random

import pytest
import torch

import popsim
from popsim.compile.gradients import gradients
from test_gradients import NOT_DIFFERENTIABLE, Projected, autograd_gradients
from test_ops import CASES

DRAWS = 3
SPECIAL_VALUES = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}

# Where eager PyTorch's gradient at a NaN input depends on the loop that
# computes it: its vectorised loop (the bulk of a large tensor) and its scalar
# loop (small tensors and the tail) take different branches for NaN
# (elu's gradient of NaN is NaN in the first and 1 in the second, hardtanh's 0
# and 1). popsim follows the scalar loop; these cases compare the gradient
# only where the input is not NaN.
GRADIENT_OF_NAN_UNSPECIFIED = {
    f"pointwise_{name}" for name in ("elu", "selu", "celu", "hardtanh", "relu6_inplace",
                                     "hardswish_inplace", "hardshrink", "softshrink",
                                     "logit_eps_", "special_logit_outside")} | {
    "loss_smooth_l1_beta0",  # an l1 loss: abs's gradient of NaN (sgn) differs between the loops
}


# Cases whose eager op refuses some special values ("all elements of input
# should be between 0 and 1", "var has negative entries"), so there is
# nothing to compare with.
EAGER_REFUSES_SPECIAL_VALUES = {"pointwise_mvlgamma": {"nan", "-inf"},
                                "pointwise_mvlgamma_": {"nan", "-inf"},
                                "pointwise_multigammaln_p1": {"nan", "-inf"},
                                "loss_bce": {"nan", "inf", "-inf"},
                                "loss_bce_weight": {"nan", "inf", "-inf"},
                                "loss_bce_broadcast_weight": {"nan", "inf", "-inf"},
                                "loss_gaussian_nll": {"-inf"},
                                # histc between the data's extremes: "range of [1, inf] is
                                # not finite" (popsim's run-time check names the element)
                                "reduction_histc_data_range": {"nan", "inf", "-inf"},
                                "reduction_histc_equal_values": {"nan", "inf", "-inf"}}

# PyTorch 1.13's histc counts NaN in the first bin; its later documentation
# says NaN elements are ignored, as popsim ignores them (test_reductions.py
# checks that). Infinities are compared as usual (outside the range, not counted).
NAN_COUNTED_BY_EAGER = {"reduction_histc_range"}

# Linear and cubic interpolation of infinite inputs: where a tap's weight is
# exactly 0 popsim computes inf x 0 = NaN, as PyTorch's formula says, but
# eager's CPU kernel gives +-inf at some of those positions (at the last
# output position it reads the element after the row, times 0). NaN inputs
# are compared as usual.
INFINITE_TAPS_DIFFER = {f"window_interpolate_{mode}" for mode in (
    "linear_1d", "bilinear", "bilinear_align_corners", "trilinear", "bicubic",
    "bicubic_align_corners", "bilinear_antialias", "bilinear_antialias_align_corners",
    "bicubic_antialias", "bicubic_antialias_align_corners")} | {"window_upsample_module"}

# Which of several equal values kthvalue's index names is left to PyTorch's
# quickselect (the special values make ties); the values themselves are compared.
INDEX_OF_TIES_UNSPECIFIED = {"reduction_kthvalue_indices"}

# mode sorts each row with std::sort, which leaves NaN (unordered against
# every number) anywhere; the runs it then counts are unspecified.
NAN_ORDER_UNSPECIFIED = {"reduction_mode", "reduction_mode_indices", "reduction_mode_rows_of_16"}

# binary_cross_entropy_with_logits with pos_weight at an input of -inf, where
# the loss is NaN in eager as in popsim: eager's closed-form gradient is
# finite there, popsim's (through the loss's own formula) NaN.
GRADIENT_AT_MINUS_INFINITY_DIFFERS = {"loss_bce_logits_pos_weight"}

# Bicubic grid_sample of an image with infinite pixels: the grid's gradient
# sums infinite pixels times the weights' derivatives, which take both signs;
# eager's closed-form sum and popsim's chain rule add them in different orders
# (NaN in one, +-inf in the other). The image's gradient is compared.
GRID_GRADIENT_WITH_INFINITE_PIXELS_DIFFERS = {
    f"window_grid_sample_bicubic_{padding}" + align for padding in ("zeros", "border", "reflection")
    for align in ("", "_align_corners")}


def with_special_values(inputs, value, rng):
    """Copies of `inputs` with `value` at the first element and at about 10% of the
    others of every float input; None if no input is a float tensor."""
    result, changed = [], False
    for x in inputs:
        if x.is_floating_point() and x.numel() > 0:
            x = x.clone()
            flat = x.view(-1)
            positions = [0] + rng.sample(range(flat.numel()), max(1, flat.numel() // 10))
            flat[positions] = value
            changed = True
        result.append(x)
    return result if changed else None


def assert_same_with_special_values(actual, expected, what, scale=None):
    """NaN and +-Inf at the same positions; finite values within 1e-5 relative, with
    1e-5 x `scale` (default: the largest finite expected magnitude) as absolute slack."""
    assert actual.shape == expected.shape, what
    if not expected.is_floating_point():  # comparisons, integer arithmetic
        assert actual.dtype == expected.dtype and torch.equal(actual, expected), what
        return
    assert torch.equal(actual.isnan(), expected.isnan()), f"{what}: NaN at other positions"
    assert torch.equal(actual.isposinf(), expected.isposinf()), f"{what}: +Inf at other positions"
    assert torch.equal(actual.isneginf(), expected.isneginf()), f"{what}: -Inf at other positions"
    finite = expected.isfinite()
    if scale is None:
        scale = expected[finite].abs().max().item() if finite.any() else 0.0
    torch.testing.assert_close(actual[finite], expected[finite], rtol=1e-5,
                               atol=max(1e-6, 1e-5 * scale), msg=what)


def case(op, draw, special):
    """test_ops.py's draw of the op (whose finite results it checks): the module, its
    inputs, and the inputs with special values."""
    if special in EAGER_REFUSES_SPECIAL_VALUES.get(op, ()):
        pytest.skip("eager PyTorch refuses these inputs")
    if op in NAN_COUNTED_BY_EAGER and special == "nan":
        pytest.skip("PyTorch 1.13's histc counts NaN in the first bin")
    if op in NAN_ORDER_UNSPECIFIED and special == "nan":
        pytest.skip("PyTorch 1.13's mode sorts rows with NaN in no defined order")
    if op in INDEX_OF_TIES_UNSPECIFIED:
        pytest.skip("the index of equal values is unspecified in PyTorch")
    if op in INFINITE_TAPS_DIFFER and special != "nan":
        pytest.skip("eager's interpolation kernel multiplies infinities by zero weights "
                    "differently")
    rng = random.Random(f"{op}-{draw}")
    torch.manual_seed(rng.randint(0, 2**31))
    module, inputs = CASES[op](rng)
    module.eval()
    special_inputs = with_special_values(inputs, SPECIAL_VALUES[special], random.Random(special))
    if special_inputs is None:  # embedding: integer indices; the special values go in its table
        special_inputs = inputs
        parameters = [p for p in module.parameters() if p.is_floating_point()]
        if not parameters:  # integer arithmetic and comparisons: nothing to make special
            return module, inputs, special_inputs
        with torch.no_grad():
            for parameter, changed in zip(parameters, with_special_values(
                    parameters, SPECIAL_VALUES[special], random.Random(special))):
                parameter.copy_(changed)
    return module, inputs, special_inputs


def largest_magnitude(tensor):
    return tensor.abs().max().item() if tensor is not None and tensor.numel() else 0.0


@pytest.mark.parametrize("special", sorted(SPECIAL_VALUES))
@pytest.mark.parametrize("draw", range(DRAWS))
@pytest.mark.parametrize("op", sorted(CASES))
def test_forward_has_nan_and_inf_where_eager_has_them(op, draw, special):
    module, _, inputs = case(op, draw, special)
    with torch.no_grad():
        expected = module(*inputs)
    actual = popsim.inferenceModel(module)(*inputs)
    assert_same_with_special_values(actual, expected, f"{op} output")


@pytest.mark.parametrize("special", sorted(SPECIAL_VALUES))
@pytest.mark.parametrize("draw", range(DRAWS))
@pytest.mark.parametrize("op", sorted(set(CASES) - NOT_DIFFERENTIABLE))
def test_gradients_have_nan_and_inf_where_autograd_has_them(op, draw, special):
    if op in GRADIENT_AT_MINUS_INFINITY_DIFFERS and special == "-inf":
        pytest.skip("eager's closed-form gradient where the loss is NaN")
    module, finite_inputs, inputs = case(op, draw, special)
    if op in GRID_GRADIENT_WITH_INFINITE_PIXELS_DIFFERS and special != "nan":
        module.grid.requires_grad_(False)
    with torch.no_grad():
        output = module(*inputs)
    model = Projected(module, torch.randn(output.shape))
    # Finite gradient values are compared as test_gradients.py compares them: with
    # the largest gradient magnitude of the finite inputs as the absolute scale
    # (gradients that cancel, such as layer norm's, are exact only to that).
    # (autograd_gradients returns the parameters' .grad, which the next call reuses.)
    finite_leaves, finite_weights = autograd_gradients(model, finite_inputs)
    finite_weights = {name: grad.clone() for name, grad in finite_weights.items()}
    input_grads, weight_grads = gradients(model, *inputs)
    leaves, expected_weights = autograd_gradients(model, inputs)
    float_leaves = [(leaf, finite) for leaf, finite in zip(leaves, finite_leaves)
                    if leaf.is_floating_point()]
    for (name, actual), (leaf, finite) in zip(input_grads.items(), float_leaves):
        expected = leaf.grad if leaf.grad is not None else torch.zeros_like(leaf)
        if op in GRADIENT_OF_NAN_UNSPECIFIED:
            defined = ~leaf.detach().isnan()
            actual, expected = actual[defined], expected[defined]
        assert_same_with_special_values(actual, expected, f"{op} gradient of {name}",
                                        largest_magnitude(finite.grad))
    for name, expected in expected_weights.items():
        expected = expected if expected is not None else torch.zeros_like(weight_grads[name])
        assert_same_with_special_values(weight_grads[name], expected, f"{op} gradient of {name}",
                                        largest_magnitude(finite_weights[name]))
