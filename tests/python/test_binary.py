"""The binary functions' table (csrc/ir/binary_functions.cpp) against its
tests (binary_cases.py, run forward by test_ops.py, backward by
test_gradients.py and with NaN/Inf by test_nonfinite.py), and what a user
moving a model meets: NaN, zeros and integer division by zero as in
PyTorch, type promotion, the errors, and training through these ops."""

import pytest
import torch

import popsim
from binary_cases import BINARY
from models import Function, assert_sgd_steps_match_eager

NAN, INF = float("nan"), float("inf")


def test_every_binary_function_has_a_test_case():
    tested = {function for function, _ in BINARY.values() if function is not None}
    assert tested == set(popsim._C.binary_functions())


SPECIAL = torch.tensor([NAN, INF, -INF, 0.0, -0.0, 1.5, -2.5, 3.0])


@pytest.mark.parametrize("function", [
    torch.maximum, torch.minimum, torch.fmax, torch.fmin, torch.remainder, torch.fmod,
    torch.atan2, torch.pow, torch.eq, torch.ne, torch.lt, torch.ge, torch.logical_xor,
    lambda a, b: torch.div(a, b, rounding_mode="floor"),
    lambda a, b: torch.div(a, b, rounding_mode="trunc"),
], ids=["maximum", "minimum", "fmax", "fmin", "remainder", "fmod", "atan2", "pow", "eq", "ne",
        "lt", "ge", "logical_xor", "div_floor", "div_trunc"])
def test_special_values_give_what_eager_gives(function):
    """Every pair of NaN, infinities, signed zeros and numbers: the same values,
    NaN and signs of zero as eager."""
    a = SPECIAL.repeat_interleave(len(SPECIAL))
    b = SPECIAL.repeat(len(SPECIAL))
    expected = function(a, b)
    actual = popsim.inferenceModel(Function(function))(a, b)
    assert actual.dtype == expected.dtype
    if expected.is_floating_point():
        torch.testing.assert_close(actual, expected, equal_nan=True, rtol=1e-6, atol=0)
        same_sign = torch.signbit(actual) == torch.signbit(expected)
        # (maximum and minimum of 0 and -0 differ between eager's own loops.)
        if function not in (torch.maximum, torch.minimum):
            assert same_sign[expected == 0].all(), "signed zeros differ"
    else:
        assert torch.equal(actual, expected)


def test_integer_division_by_zero_is_an_error_as_in_eager():
    model = popsim.inferenceModel(Function(lambda a, b: a // b))
    model(torch.tensor([3, 4]), torch.tensor([1, 2]))
    with pytest.raises(popsim.ExecutionError,
                       match=r"div_floor divided an integer by zero \(PyTorch raises "
                             r"ZeroDivisionError for it\); make the divisor non-zero"):
        model(torch.tensor([3, 4]), torch.tensor([1, 0]))


def test_type_promotion_follows_pytorch():
    """Dimensioned tensors decide within a category; 0-d tensors and numbers
    only when of a higher category."""
    int32 = torch.tensor([3, -4], dtype=torch.int32)
    cases = [
        lambda t: t + torch.full((), 5),                # int32: the 0-d int64 does not widen it
        lambda t: t * torch.full((), 2.5),              # float32: a higher category
        lambda t: t % 3,                                # int32
        lambda t: t / 2,                                # true division: float32
        lambda t: torch.maximum(t, torch.ones(2, dtype=torch.int64)),  # int64: both dimensioned
        lambda t: (t > 0) & (t < 4),                    # bool
        lambda t: (t > 0) + 1,                          # int64
        lambda t: torch.atan2(t, t + 10),               # float32 from integers
    ]
    for function in cases:
        expected = function(int32)
        actual = popsim.inferenceModel(Function(function))(int32)
        assert actual.dtype == expected.dtype
        torch.testing.assert_close(actual, expected)


@pytest.mark.parametrize("function,message", [
    (lambda x: torch.where(x > 0), r"aten::where at .*: torch.where\(condition\) with one "
                                   r"argument \(its output shape depends on the data\)"),
])
def test_unsupported_forms_are_refused_with_the_reason(function, message):
    with pytest.raises(popsim.UnsupportedOperationError, match=message):
        popsim.inferenceModel(Function(function))(torch.rand(2, 3))


class Gated(torch.nn.Module):
    """Where, masked_fill, maximum, clamp with tensor bounds, comparisons in
    arithmetic, an int64 buffer added to a float and a pow loss."""

    def __init__(self):
        super().__init__()
        self.first = torch.nn.Linear(6, 8)
        self.second = torch.nn.Linear(8, 4)
        self.register_buffer("offset", torch.arange(8))

    def forward(self, x, target):
        h = self.first(x)
        h = torch.where(h > 0, h, 0.1 * h) + self.offset / 8
        h = torch.maximum(h, h.mean(dim=0) * 0.5).masked_fill(h.abs() < 0.05, 0.0)
        h = h.clamp(min=-h.mean(dim=-1, keepdim=True).abs(), max=h.abs() + 1)
        out = self.second(h * (h >= 0.2).float() + torch.fmod(h, 0.7))
        return out, popsim.identity_loss(((out - target) ** 2).mean(), "none")


def test_training_through_binary_ops_matches_eager():
    torch.manual_seed(5)
    batches = [(torch.randn(5, 6), torch.randn(5, 4)) for _ in range(4)]
    assert_sgd_steps_match_eager(Gated, batches)


class FloorDivided(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(3, 3)

    def forward(self, x):
        return popsim.identity_loss(torch.floor_divide(self.linear(x), 0.5).sum(), "none")


def test_training_through_floor_divide_is_refused_as_eager_backward_refuses_it():
    """PyTorch has no derivative for floor_divide (its backward raises); popsim
    refuses to train through it instead of giving a zero gradient."""
    with pytest.raises(popsim.UnsupportedOperationError,
                       match=r"Unsupported op in the backward pass: floor_divide at "
                             r".*test_binary.py:\d+ has no derivative .*rounding_mode='floor'"):
        popsim.trainingModel(FloorDivided())(torch.randn(2, 3))
