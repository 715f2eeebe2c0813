"""The pointwise functions' table (csrc/ir/pointwise_formulas.h) against its
tests (pointwise_cases.py, run forward by test_ops.py and backward by
test_gradients.py), and what the lowerings refuse."""

import pytest
import torch

import popsim
from models import Function, assert_sgd_steps_match_eager
from pointwise_cases import BESSEL_WITHOUT_DERIVATIVE, ORTHOGONAL_POLYNOMIALS, POINTWISE


def test_every_pointwise_function_has_a_test_case():
    tested = {function for function, _ in POINTWISE.values()}
    assert tested == set(popsim._C.pointwise_functions())


def test_torchvisions_activations_run_as_pointwise_ops():
    """mobilenet_v2's ReLU6, mobilenet_v3's Hardswish and Hardsigmoid and
    efficientnet's SiLU (all in place) compile to pointwise ops."""
    model = torch.nn.Sequential(torch.nn.ReLU6(inplace=True), torch.nn.Hardswish(inplace=True),
                                torch.nn.Hardsigmoid(), torch.nn.SiLU(inplace=True))
    compiled = popsim.inferenceModel(model)
    x = torch.randn(4, 8) * 4
    torch.testing.assert_close(compiled(x.clone()), model(x.clone()), rtol=1e-5, atol=1e-6)
    text = compiled._debug_ir()
    for function in ("hardtanh", "hardswish", "hardsigmoid", "silu"):
        assert f'function="{function}"' in text


def test_clamp_with_tensor_bounds_and_pow_of_tensors_run():
    """Bounds and exponents computed at runtime go through the binary functions."""
    x = torch.rand(2, 3) + 0.5
    for function in (lambda t: t.clamp(min=t.mean()), lambda t: t ** t):
        torch.testing.assert_close(popsim.inferenceModel(Function(function))(x), function(x))


class Activations(torch.nn.Module):
    """A small network through several pointwise activations and a pow loss."""

    def __init__(self):
        super().__init__()
        self.first = torch.nn.Linear(6, 8)
        self.second = torch.nn.Linear(8, 8)
        self.third = torch.nn.Linear(8, 3)

    def forward(self, x, target):
        h = torch.nn.functional.silu(self.first(x))
        h = torch.nn.functional.hardswish(self.second(h)) + torch.nn.functional.elu(h, 0.5)
        out = torch.nn.functional.softplus(self.third(torch.nn.functional.mish(h)))
        return out, popsim.identity_loss(((out - target) ** 2).mean(), "none")


def test_training_through_pointwise_activations_matches_eager():
    torch.manual_seed(3)
    batches = [(torch.randn(5, 6), torch.randn(5, 3)) for _ in range(4)]
    assert_sgd_steps_match_eager(Activations, batches)


@pytest.mark.parametrize("name", sorted(ORTHOGONAL_POLYNOMIALS))
def test_orthogonal_polynomials_are_no_further_from_float64_than_eager_float32(name):
    """Degrees up to 20, where eager's float32 evaluation (a recurrence, or for the
    Chebyshev kinds a trigonometric form) loses digits near the roots: popsim's
    recurrence in double is no further from eager's float64 values than eager's
    float32 ones are, within half an ulp of float32 rounding, with NaN and the
    infinities where float64 has them."""
    function = getattr(torch.special, name)
    shifted = name.startswith("shifted")
    low, high = (-0.1, 1.1) if shifted else (-1.2, 1.2)
    x = torch.cat([torch.linspace(low, high, 241), torch.tensor(
        [0.0, 0.5, 1.0, float("nan"), float("inf"), -float("inf")] + ([] if shifted else [-1.0]))])
    for degree in [-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 15, 20]:
        model = popsim.inferenceModel(Function(lambda t: function(t, degree)))
        ours = model(x).double()
        exact = function(x.double(), degree)
        eager = function(x, degree).double()
        assert torch.equal(ours.isnan(), exact.isnan()), (name, degree)
        finite = exact.isfinite()
        assert torch.equal(ours[~finite].nan_to_num(), exact[~finite].nan_to_num()), (name, degree)
        ulp = exact[finite].abs().float().double() * 2.0 ** -24
        ours_error = (ours[finite] - exact[finite]).abs()
        eager_error = (eager[finite] - exact[finite]).abs()
        assert (ours_error <= eager_error + ulp + 1e-300).all(), (name, degree)


def _exact_bessel(name):
    """The Bessel or Airy function `name` of torch.special at a float, from mpmath (a dependency of
    Debian's torch, through sympy) to 25 digits, with PyTorch's values at the ends."""
    import mpmath

    mpmath.mp.dps = 25
    order = int(name[-1]) if name[-1].isdigit() else 0
    if name == "spherical_bessel_j0":
        return lambda v: 1.0 if v == 0 else float(mpmath.sin(v) / v)
    if name == "airy_ai":
        return lambda v: float(mpmath.airyai(v))
    if name.startswith("bessel_j"):
        return lambda v: float(mpmath.besselj(order, v))
    at_zero = -float("inf") if name.startswith("bessel_y") else float("inf")

    def value(v):
        if v <= 0:
            return at_zero if v == 0 else float("nan")
        if name.startswith("bessel_y"):
            return float(mpmath.bessely(order, v))
        scale = mpmath.exp(v) if name.startswith("scaled") else 1
        return float(scale * mpmath.besselk(order, v))
    return value


@pytest.mark.parametrize("name", sorted(BESSEL_WITHOUT_DERIVATIVE))
def test_bessel_and_airy_functions_are_no_further_from_the_exact_values_than_eager_float32(
        name):
    """Over both sides of every switch between series, integral and Hankel forms and
    far out: popsim's values (computed in double) are no further from the exact ones
    than eager's float32 values, within half an ulp of float32 rounding. (PyTorch's
    own float64 values are not exact enough to judge by: its J0 is 4e-8 off at 6.1.)"""
    function = getattr(torch.special, name)
    x = torch.cat([torch.linspace(-45.0, 60.0, 526),
                   torch.tensor([1e-30, 1e-8, 2.0, 17.0, 20.0, 88.0, 100.0, 1e4])])
    ours = popsim.inferenceModel(Function(function))(x).double()
    eager = function(x).double()
    exact = torch.tensor([_exact_bessel(name)(v) for v in x.tolist()], dtype=torch.float64)
    assert torch.equal(ours.isnan(), eager.isnan()) and torch.equal(ours.isinf(), eager.isinf())
    finite = exact.isfinite() & eager.isfinite()
    ulp = exact[finite].abs().float().double() * 2.0 ** -24
    assert ((ours[finite] - exact[finite]).abs()
            <= (eager[finite] - exact[finite]).abs() + ulp + 1e-300).all()
