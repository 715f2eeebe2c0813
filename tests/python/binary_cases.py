"""The test table of the binary functions (csrc/ir/binary_functions.cpp) and
the ops built on them (where, masked_fill, the isnan family, clamp with tensor
bounds, lerp, addcmul, addcdiv, integer arithmetic and type promotion): each
case names the C++ function it exercises (None for ops of other IR ops) and
draws a module and its inputs: operands of random shapes that broadcast
against each other, 0-d tensors and Python numbers. test_ops.py runs each
case forward and test_gradients.py backward (except NOT_DIFFERENTIABLE)
against eager PyTorch; test_binary.py checks that every C++ function has a
case."""

import torch
import torch.nn.functional as F

from pointwise_cases import Elementwise, _nonfinite


class Binary(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *operands):
        return self.fn(*operands)


def _shapes(rng, count):
    """`count` shapes that broadcast together: each drops some leading
    dimensions of a random output shape and sets some others to 1."""
    out = [rng.randint(1, 5) for _ in range(rng.randint(1, 4))]
    shapes = []
    for _ in range(count):
        shape = [1 if rng.random() < 0.3 else d for d in out]
        shapes.append(shape[rng.randint(0, len(shape) - 1):] if rng.random() < 0.3 else shape)
    return shapes


def _floats(shape, low, high, away_from_zero=False):
    x = low + (high - low) * torch.rand(*shape)
    if away_from_zero:  # |x| in [low, high] with a random sign
        x = x * torch.where(torch.rand(*shape) < 0.5, -1.0, 1.0)
    return x


def _pair(fn, a=(-3.0, 3.0), b=(-3.0, 3.0), b_away_from_zero=False, whole=False):
    """Two float tensors that broadcast, drawn from the intervals `a` and `b`
    (rounded to whole numbers when `whole`, so that comparisons meet ties)."""
    def case(rng):
        sa, sb = _shapes(rng, 2)
        x = _floats(sa, *a)
        y = _floats(sb, *b, away_from_zero=b_away_from_zero)
        if whole:
            x, y = x.round(), y.round()
        return Binary(fn), [x, y]
    return case


def _integers(fn, low=-6, high=6, b_nonzero=False, dtype=torch.int64):
    def case(rng):
        sa, sb = _shapes(rng, 2)
        x = torch.randint(low, high + 1, sa, dtype=dtype)
        y = torch.randint(low, high + 1, sb, dtype=dtype)
        if b_nonzero:
            y = torch.where(y == 0, torch.ones_like(y), y)
        return Binary(fn), [x, y]
    return case


def _bools(fn):
    def case(rng):
        sa, sb = _shapes(rng, 2)
        return Binary(fn), [torch.rand(*sa) < 0.5, torch.rand(*sb) < 0.5]
    return case


def _unary(fn, low=-3.0, high=3.0, dtype=torch.float32):
    def case(rng):
        (shape,) = _shapes(rng, 1)
        if dtype.is_floating_point:
            return Elementwise(fn), [_floats(shape, low, high)]
        return Elementwise(fn), [torch.randint(int(low), int(high) + 1, shape, dtype=dtype)]
    return case


def _triple(fn, c=(-3.0, 3.0)):
    def case(rng):
        shapes = _shapes(rng, 3)
        return Binary(fn), [_floats(shapes[0], -3.0, 3.0), _floats(shapes[1], -3.0, 3.0),
                            _floats(shapes[2], *c)]
    return case


class IntegerBuffer(torch.nn.Module):
    """x + buffer, with an int64 buffer of dimensions or a 0-d one."""

    def __init__(self, zero_dim):
        super().__init__()
        self.register_buffer("offset", torch.tensor(3) if zero_dim else torch.arange(4))

    def forward(self, x):
        return x * 0.5 + self.offset


def _buffer(zero_dim):
    def case(rng):
        return IntegerBuffer(zero_dim), [torch.randn(rng.randint(1, 3), 4)]
    return case


def _prelu(channels):
    """nn.PReLU with random weights (one, or one per channel) on a batch."""
    def case(rng):
        shape = [rng.randint(1, 3), 3] + [rng.randint(1, 4) for _ in range(rng.randint(0, 2))]
        module = torch.nn.PReLU(3 if channels else 1)
        with torch.no_grad():
            module.weight.uniform_(-0.5, 0.5)
        return module, [_floats(shape, -3.0, 3.0)]
    return case


# case name -> (C++ binary function or None, case)
BINARY = {
    # Comparisons, with ties, numbers and 0-d tensors; in-place forms keep the dtype.
    "eq": ("eq", _pair(torch.eq, whole=True)),
    "ne": ("ne", _pair(torch.ne, whole=True)),
    "lt": ("lt", _pair(torch.lt, whole=True)),
    "le": ("le", _pair(lambda a, b: a <= b, whole=True)),
    "gt_number": ("gt", _unary(lambda a: a > 0.5)),
    "ge_0d": ("ge", _unary(lambda a: a >= torch.full((), 0.25))),
    "gt_": ("gt", _unary(lambda a: a.clone().gt_(a.round() * 0.5))),
    "eq_int": ("eq", _integers(torch.eq, -2, 2)),
    "lt_int_float": ("lt", _unary(lambda a: a < 1.5, dtype=torch.int64)),
    "compare_in_arithmetic": ("gt", _pair(lambda a, b: (a > b) * a + (a <= b).float())),
    # maximum and minimum (also as max/min of two tensors); fmax and fmin.
    "maximum": ("maximum", _pair(torch.maximum)),
    "minimum": ("minimum", _pair(torch.minimum)),
    "max_of_two": ("maximum", _pair(torch.max)),
    "min_of_two": ("minimum", _pair(torch.min)),
    "maximum_int": ("maximum", _integers(torch.maximum)),
    "fmax": ("fmax", _pair(torch.fmax)),
    "fmin": ("fmin", _pair(torch.fmin)),
    # Remainders and rounded divisions, floats and integers.
    "remainder": ("remainder", _pair(torch.remainder, (-5.0, 5.0), (0.5, 3.0), True)),
    "remainder_number": ("remainder", _unary(lambda a: a % 1.5, -5.0, 5.0)),
    "remainder_int": ("remainder", _integers(torch.remainder, b_nonzero=True)),
    "fmod": ("fmod", _pair(torch.fmod, (-5.0, 5.0), (0.5, 3.0), True)),
    "fmod_int": ("fmod", _integers(torch.fmod, b_nonzero=True)),
    "div_floor": ("div_floor", _pair(lambda a, b: torch.div(a, b, rounding_mode="floor"),
                                     (-5.0, 5.0), (0.5, 3.0), True)),
    "floor_divide_float": ("div_floor", _pair(torch.floor_divide, b_away_from_zero=True)),
    "floor_divide_int": ("div_floor", _integers(lambda a, b: a // b, b_nonzero=True)),
    "div_trunc": ("div_trunc", _pair(lambda a, b: torch.div(a, b, rounding_mode="trunc"),
                                     (-5.0, 5.0), (0.5, 3.0), True)),
    "div_trunc_int": ("div_trunc", _integers(
        lambda a, b: torch.div(a, b, rounding_mode="trunc"), b_nonzero=True)),
    "true_divide_int": (None, _integers(torch.div, b_nonzero=True)),
    # atan2 and pow of two tensors.
    "atan2": ("atan2", _pair(torch.atan2, b=(0.3, 3.0), b_away_from_zero=True)),
    "atan2_int": ("atan2", _integers(torch.atan2, b_nonzero=True)),
    # log(exp(a) + exp(b)) without overflow, with ties; a * log(b) with zeros of a.
    "logaddexp": ("logaddexp", _pair(torch.logaddexp, (-30.0, 30.0), (-30.0, 30.0))),
    "logaddexp_ties": ("logaddexp", _pair(torch.logaddexp, whole=True)),
    "hypot": ("hypot", _pair(torch.hypot)),
    "hypot_large_": ("hypot", _pair(lambda a, b: torch.broadcast_tensors(a, b)[0].clone()
                                    .hypot_(b), (-3e30, 3e30), (-3e30, 3e30))),
    "xlogy": ("xlogy", _pair(lambda a, b: torch.xlogy(a.round(), b), b=(0.2, 3.0))),
    "special_xlogy_number": ("xlogy", _unary(lambda a: torch.special.xlogy(a, 2.5))),
    # float_power: pow in double, whose float64 result popsim computes as float32
    # (the cases compare it as float32, eager's rounded).
    "float_power": ("pow", _pair(lambda a, b: torch.float_power(a.abs() + 0.1, b).float())),
    "float_power_number": (None, _unary(lambda a: torch.float_power(a, 3).float())),
    "float_power_base": (None, _unary(lambda a: torch.float_power(2.5, a).float())),
    "special_xlog1py": ("xlog1py", _pair(lambda a, b: torch.special.xlog1py(a.round(), b),
                                         b=(-0.8, 3.0))),
    "special_xlog1py_number": ("xlog1py", _unary(lambda a: torch.special.xlog1py(a, 1.5))),
    "pow_tensors": ("pow", _pair(torch.pow, (0.2, 3.0), (-2.0, 2.0))),
    "pow_int": ("pow", _integers(torch.pow, 0, 4)),
    "pow_int_number": ("pow", _unary(lambda a: a ** 2, dtype=torch.int64)),
    # Integer add, sub and mul (alpha, numbers, in place) and promotion to float.
    "add_int": ("add", _integers(lambda a, b: torch.add(a, b, alpha=3))),
    "sub_int": ("sub", _integers(torch.sub)),
    "mul_int": ("mul", _integers(lambda a, b: a * b, dtype=torch.int32)),
    "int_times_float": (None, _unary(lambda a: a * 2.5, dtype=torch.int64)),
    "float_plus_int": (None, _integers(lambda a, b: a.float() + b)),
    "int32_plus_int64_0d": (None, _unary(lambda a: a + torch.full((), 7), dtype=torch.int32)),
    # A Python number keeps a 0-d int32 tensor's dtype, as it keeps a tensor's.
    "int32_0d_times_number": (None, _unary(lambda a: a.flatten()[0] * 3 - 1, dtype=torch.int32)),
    "int_buffer": (None, _buffer(zero_dim=False)),
    "int_0d_buffer": (None, _buffer(zero_dim=True)),
    "neg_int": (None, _unary(lambda a: -a, dtype=torch.int64)),
    # Logical and bitwise functions.
    "logical_and": ("logical_and", _pair(torch.logical_and, whole=True)),
    "logical_or": ("logical_or", _bools(torch.logical_or)),
    "logical_xor": ("logical_xor", _bools(torch.logical_xor)),
    "logical_not": ("eq", _unary(torch.logical_not, -1.0, 1.0, dtype=torch.int64)),
    # gcd and lcm of integers of both signs and zeros.
    "gcd": ("gcd", _integers(torch.gcd, -30, 30)),
    "gcd_int32": ("gcd", _integers(torch.gcd, -1000, 1000, dtype=torch.int32)),
    "lcm": ("lcm", _integers(torch.lcm, -12, 12)),
    "bitwise_and": ("bitwise_and", _integers(lambda a, b: a & b)),
    "bitwise_or": ("bitwise_or", _bools(lambda a, b: a | b)),
    "bitwise_xor": ("bitwise_xor", _integers(torch.bitwise_xor)),
    "bitwise_not": (None, _unary(lambda a: ~a, dtype=torch.int64)),
    # Shifts by counts within the bit width and beyond it (taken modulo the width,
    # as PyTorch 1.13's CPU kernels take them), of both signs; in place and by numbers.
    "bitwise_left_shift": ("bitwise_left_shift", _integers(torch.bitwise_left_shift, -70, 70)),
    "bitwise_right_shift": ("bitwise_right_shift", _integers(
        lambda a, b: torch.bitwise_right_shift(a * 1000003, b), -70, 70)),
    "shift_int32_operators": ("bitwise_left_shift", _integers(
        lambda a, b: (a * 40009 << b) + (a * 7 >> b.abs()), -40, 40, dtype=torch.int32)),
    "shift_in_place_numbers": ("bitwise_right_shift", _integers(
        lambda a, b: (lambda x, y: x.clone().bitwise_left_shift_(y.abs()).__irshift__(1).__ilshift__(2)
                      + (y << 3) + (x >> 2))(*torch.broadcast_tensors(a, b)))),
    "mask_not": ("eq", _pair(lambda a, b: torch.where(~(a > b), a, b))),
    # where and masked_fill, with numbers, 0-d tensors and broadcasting.
    "where": (None, _triple(lambda a, b, c: torch.where(c > 0, a, b))),
    "where_number": (None, _unary(lambda a: torch.where(a > 0, a, 0.0))),
    "masked_fill": (None, _unary(lambda a: a.masked_fill(a[..., :1] > 0, -1.5))),
    "masked_fill_0d": (None, _unary(lambda a: a.clone().masked_fill_(a < 0, torch.full((), 2.0)))),
    # Tests for NaN and infinities, and their replacement.
    "isnan": ("ne", _nonfinite(lambda a: torch.where(torch.isnan(a), 1.0, a))),
    "isinf": ("eq", _nonfinite(torch.isinf)),
    "isposinf": ("eq", _nonfinite(torch.isposinf)),
    "isneginf": ("eq", _nonfinite(torch.isneginf)),
    "isfinite": ("lt", _nonfinite(torch.isfinite)),
    "isnan_int": (None, _unary(torch.isnan, dtype=torch.int64)),
    # isclose of near values, equal ones and (with equal_nan) NaNs; isin of whole numbers.
    "isclose": (None, _nonfinite(lambda a: torch.isclose(
        a, a * 1.001 + (a > 0.5).to(a.dtype) * 1e-3))),
    "isclose_equal_nan": (None, _nonfinite(lambda a: torch.isclose(
        a, a.flip(-1), rtol=0.1, atol=0.5, equal_nan=True))),
    "isin": (None, _integers(lambda a, b: torch.isin(a, b))),
    "isin_invert_number": (None, _unary(lambda a: torch.isin(a.round(), 1.0, invert=True))),
    # Activations PyTorch writes with the ops above.
    "softsign": (None, _unary(torch.nn.functional.softsign)),
    "tanhshrink": (None, _unary(torch.nn.functional.tanhshrink)),
    "softmin": (None, _unary(lambda a: torch.nn.functional.softmin(a, dim=-1))),
    "prelu": ("prelu", _prelu(channels=False)),
    "prelu_channels": ("prelu", _prelu(channels=True)),
    # Ops built from several IR ops.
    # (x is broadcast first: eager's backward fails when a bound is larger than x.)
    "clamp_tensors": ("clamp_max", _triple(
        lambda x, lo, hi: (x + 0 * (lo + hi)).clamp(min=lo, max=lo + hi.abs()))),
    "clamp_min_tensor": ("clamp_min", _pair(lambda x, lo: torch.clamp_min(x + 0 * lo, lo))),
    "lerp_near": (None, _pair(lambda a, b: torch.lerp(a, b, 0.3))),
    "lerp_far": (None, _pair(lambda a, b: torch.lerp(a, b, 0.8))),
    "lerp_tensor_weight": (None, _triple(torch.lerp, c=(-0.5, 1.5))),
    "lerp_tensor_weight_": (None, _triple(
        lambda a, b, c: torch.broadcast_tensors(a, b, c)[0].clone().lerp_(b, c), c=(-1.5, 1.5))),
    "addcmul": (None, _triple(lambda a, b, c: torch.addcmul(a, b, c, value=0.5))),
    "deg2rad_rad2deg": (None, _unary(lambda a: torch.deg2rad(a) + torch.rad2deg(a).clone()
                                     .deg2rad_())),
    "deg2rad_int": (None, _unary(torch.deg2rad, dtype=torch.int64)),
    "logaddexp2": (None, _pair(torch.logaddexp2)),
    "ldexp": (None, _unary(lambda a: torch.ldexp(a, torch.arange(a.shape[-1]) - 2))),
    "ldexp_float_exponent_": (None, _pair(lambda a, b: torch.broadcast_tensors(a, b)[0].clone()
                                          .ldexp_(b.round()))),
    "heaviside": (None, _unary(lambda a: torch.heaviside(a.round(), a.flip(-1)))),
    "heaviside_int": (None, _integers(torch.heaviside)),
    "addcdiv": (None, _triple(lambda a, b, c: torch.addcdiv(a, b, c, value=-2.0), (0.5, 2.0))),
    # copysign with zeros of both signs (rounding makes -0.0), numbers, integers, NaN and
    # infinities; signbit sees -0.0 (but not NaN) as negative.
    "copysign": ("copysign", _pair(torch.copysign)),
    "copysign_zeros": ("copysign", _pair(lambda a, b: torch.copysign(a.round(), b.round()))),
    "copysign_number_": ("copysign", _unary(lambda a: a.clone().copysign_(-1.5))),
    "copysign_int": ("copysign", _integers(torch.copysign)),
    "signbit": (None, _unary(lambda a: torch.signbit(a.round()))),
    # Products keep the sign of a zero, sums with a number 0.0 do not, as in PyTorch: 1 / -x
    # of 0.0 is -inf.
    "signbit_of_products": (None, _unary(lambda a: torch.stack([
        torch.signbit(-a.round()), torch.signbit(a.round() * -2.0), torch.signbit(-a.round() + 0.0),
        torch.signbit(a.round() * 0.5 - 0.0), torch.signbit(0.0 - a.round())]))),
    "reciprocal_of_negated_zeros": (None, _unary(lambda a: 1.0 / -(a.round() * 0.0))),
    "signbit_int": (None, _unary(torch.signbit, dtype=torch.int64)),
    "signbit_bool": (None, _bools(lambda a, b: torch.signbit(a) | b)),
}

# Unary functions of integer and bool tensors: floating-point functions of
# them as float32, as PyTorch converts them; exact ones in their dtype.
INTEGER_UNARY = {
    "sqrt_int64": _integers(lambda a, b: a.sqrt() + torch.exp(b), low=0),
    "log_int32_sin": _integers(lambda a, b: torch.log(a) * b.sin(), low=1, dtype=torch.int32),
    "sigmoid_tanh_bool": _bools(lambda a, b: a.sigmoid() + torch.tanh(b) + a.erf()),
    "reciprocal_rsqrt_int": _integers(lambda a, b: a.reciprocal() - b.rsqrt(), low=1),
    "relu_abs_int": _integers(lambda a, b: torch.relu(a) * b.abs()),
    "abs_int32_": _integers(lambda a, b: a.clone().abs_() + b, dtype=torch.int32),
    "sign_square_int": _integers(lambda a, b: torch.sign(a) * b.square()),
    "rounding_int": _integers(lambda a, b: a.floor() + b.ceil() + a.round() + b.trunc()),
    "clamp_relu6_int": _integers(lambda a, b: a.clamp(-2, 3) + F.relu6(b) + a.clamp(max=1)),
    "clamp_fraction_int": _integers(lambda a, b: a.clamp(min=0.5) + b),
    "square_bool": _bools(lambda a, b: a.square() + torch.sign(b)),
}
BINARY.update({name: (None, case) for name, case in INTEGER_UNARY.items()})

# Cases with no float input to differentiate, or a bool output.
NOT_DIFFERENTIABLE = set(INTEGER_UNARY) | {
    "eq", "ne", "lt", "le", "gt_number", "ge_0d", "gt_", "eq_int", "lt_int_float",
    "maximum_int", "remainder_int", "fmod_int", "floor_divide_int", "floor_divide_float", "div_trunc_int",
    "true_divide_int", "atan2_int", "pow_int", "pow_int_number", "add_int", "sub_int", "mul_int",
    "int_times_float", "float_plus_int", "int32_plus_int64_0d", "int32_0d_times_number",
    "neg_int", "logical_and", "gcd", "gcd_int32", "lcm",
    "logical_or", "logical_xor", "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_not", "bitwise_left_shift", "bitwise_right_shift", "shift_int32_operators",
    "shift_in_place_numbers", "isinf", "isposinf", "isneginf", "isfinite", "isnan_int",
    "isclose", "isclose_equal_nan", "isin", "isin_invert_number", "deg2rad_int", "heaviside",
    "heaviside_int", "copysign_int", "signbit", "signbit_of_products", "signbit_int",
    "signbit_bool",
    "reciprocal_of_negated_zeros",  # infinite gradients at the zeros it is about
    # eager's in-place ldexp_ is mul_out, which autograd refuses; popsim refuses it too
    "ldexp_float_exponent_",
}
