"""The test table of the pointwise functions (csrc/ir/pointwise_formulas.h):
each case names the C++ function it exercises, a PyTorch expression and the
interval its input is drawn from (where the function is defined and away from
its poles). test_ops.py runs each case forward and test_gradients.py backward
against eager PyTorch; test_pointwise.py checks that every C++ function has a
case."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Elementwise(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


def _sized(rng):
    return [rng.randint(1, 6) for _ in range(rng.randint(1, 4))]


def _case(fn, low, high, symmetric=False):
    """Inputs uniform in [low, high] (with a random sign when `symmetric`)."""
    def case(rng):
        x = low + (high - low) * torch.rand(*_sized(rng))
        if symmetric:
            x = x * torch.where(torch.rand_like(x) < 0.5, -1.0, 1.0)
        module = fn() if isinstance(fn, type) else Elementwise(fn)
        return module, [x]
    return case


def _polynomial(name, low, high, ends):
    """torch.special's orthogonal polynomial `name` of a random degree up to 2 (a
    number, or sometimes a 0-d tensor written in the model), at points in [low, high]
    with the special points `ends` among them. (Eager's float32 recurrence loses
    digits near the roots of higher degrees: test_pointwise.py judges those against
    float64.)"""
    function = getattr(torch.special, name)

    def case(rng):
        x = low + (high - low) * torch.rand(*_sized(rng))
        flat = x.view(-1)
        for end in ends:
            flat[rng.randrange(flat.numel())] = end
        degree = rng.choice([-1, 0, 1, 2])
        if rng.random() < 0.3:
            return Elementwise(lambda t: function(t, torch.tensor(degree))), [x]
        return Elementwise(lambda t: function(t, degree)), [x]
    return case


def _nonfinite(fn):
    """Floats in [-3, 3] with NaN, inf, -inf and 0 among them."""
    def case(rng):
        x = -3.0 + 6.0 * torch.rand(*_sized(rng))
        special = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0])
        pick = torch.randint(0, 8, x.shape)
        x = torch.where(pick < 4, special[pick.clamp(max=3)], x)
        return Elementwise(fn), [x]
    return case


def _module(make, low=-4.0, high=4.0):
    """An nn module's case; in-place modules write a copy (autograd refuses
    in-place writes into the leaf that the gradient tests differentiate)."""
    def case(rng):
        module = make()
        copy = getattr(module, "inplace", False)
        return _case(lambda t: module(t * 1 if copy else t), low, high)(rng)
    return case


# case name -> (C++ function, case)
POINTWISE = {
    "reciprocal": ("reciprocal", _case(torch.reciprocal, 0.2, 4.0, symmetric=True)),
    "rsqrt": ("rsqrt", _case(torch.rsqrt, 0.2, 4.0)),
    "expm1": ("expm1", _case(torch.expm1, -3.0, 3.0)),
    "log": ("log", _case(torch.log, 0.05, 5.0)),  # the log op runs this formula
    "log1p": ("log1p", _case(torch.log1p, -0.9, 4.0)),
    "log2": ("log2", _case(torch.log2, 0.1, 5.0)),
    "log10": ("log10", _case(torch.log10, 0.1, 5.0)),
    "sin": ("sin", _case(torch.sin, -6.0, 6.0)),
    "sin_": ("sin", _case(lambda t: t.clone().sin_(), -6.0, 6.0)),
    "cos": ("cos", _case(torch.cos, -6.0, 6.0)),
    "tan": ("tan", _case(torch.tan, -1.3, 1.3)),
    "asin": ("asin", _case(torch.asin, -0.95, 0.95)),
    "acos": ("acos", _case(torch.acos, -0.95, 0.95)),
    "atan": ("atan", _case(torch.atan, -5.0, 5.0)),
    "sinh": ("sinh", _case(torch.sinh, -4.0, 4.0)),
    "cosh": ("cosh", _case(torch.cosh, -4.0, 4.0)),
    "asinh": ("asinh", _case(torch.asinh, -5.0, 5.0)),
    "acosh": ("acosh", _case(torch.acosh, 1.05, 5.0)),
    "atanh": ("atanh", _case(torch.atanh, -0.95, 0.95)),
    "erf": ("erf", _case(torch.erf, -3.0, 3.0)),
    "erfc": ("erfc", _case(torch.erfc, -3.0, 3.0)),
    "erfinv": ("erfinv", _case(torch.erfinv, -0.95, 0.95)),
    "lgamma": ("lgamma", _case(torch.lgamma, 0.1, 8.0)),
    "lgamma_negative": ("lgamma", _case(torch.special.gammaln, -2.9, -2.1)),
    # The multivariate log-gamma: every element above (p - 1) / 2.
    "mvlgamma": ("lgamma", _case(lambda x: torch.mvlgamma(x, 3), 1.01, 6.0)),
    "mvlgamma_": ("lgamma", _case(lambda x: x.clone().mvlgamma_(2) * 1.0, 0.51, 4.0)),
    "multigammaln_p1": ("lgamma", _case(lambda x: torch.special.multigammaln(x, 1), 0.05, 4.0)),
    "digamma": ("digamma", _case(torch.digamma, 0.1, 8.0)),
    "digamma_negative_": ("digamma", _case(lambda t: t.clone().digamma_(), -3.9, -3.1)),
    "digamma_large": ("digamma", _case(torch.special.psi, 20.0, 5000.0)),
    "logit": ("logit", _case(torch.logit, 0.02, 0.98)),
    "logit_eps_": ("logit", _case(lambda t: t.clone().logit_(eps=0.2), 0.0, 1.0)),
    "special_logit_outside": ("logit", _case(lambda t: torch.special.logit(t, 0.1), -0.5, 1.5)),
    # The modified Bessel functions on both sides of |x| = 20, where popsim
    # switches from the power series to the asymptotic expansion.
    "i0": ("i0", _case(torch.i0, -11.0, 11.0)),
    "i0_large": ("i0", _case(torch.i0, 19.0, 30.0, symmetric=True)),
    "i0_": ("i0", _case(lambda t: t.clone().i0_(), -4.0, 4.0)),
    "special_i0": ("i0", _case(torch.special.i0, -4.0, 4.0)),
    "i0e": ("i0e", _case(torch.special.i0e, -30.0, 30.0)),
    "i1": ("i1", _case(torch.special.i1, -30.0, 30.0)),
    "i1_small": ("i1", _case(torch.special.i1, -1e-3, 1e-3)),
    "i1e": ("i1e", _case(torch.special.i1e, -30.0, 30.0)),
    # PyTorch 1.13's second spelling, without a derivative (constants to autograd).
    "modified_bessel_i0": ("i0", _case(torch.special.modified_bessel_i0, -11.0, 11.0)),
    "modified_bessel_i1": ("i1", _case(torch.special.modified_bessel_i1, -11.0, 11.0)),
    # torch.special's other Bessel functions, over their series and Hankel ranges
    # (Y and K from near 0, where they grow without bound).
    "bessel_j0": ("bessel_j0", _case(torch.special.bessel_j0, -25.0, 25.0)),
    "bessel_j1": ("bessel_j1", _case(torch.special.bessel_j1, -25.0, 25.0)),
    "bessel_y0": ("bessel_y0", _case(torch.special.bessel_y0, 0.1, 25.0)),
    "bessel_y1": ("bessel_y1", _case(torch.special.bessel_y1, 0.1, 25.0)),
    "modified_bessel_k0": ("modified_bessel_k0", _case(torch.special.modified_bessel_k0, 0.05,
                                                       30.0)),
    "modified_bessel_k1": ("modified_bessel_k1", _case(torch.special.modified_bessel_k1, 0.05,
                                                       30.0)),
    "scaled_modified_bessel_k0": ("scaled_modified_bessel_k0", _case(
        torch.special.scaled_modified_bessel_k0, 0.05, 40.0)),
    "scaled_modified_bessel_k1": ("scaled_modified_bessel_k1", _case(
        torch.special.scaled_modified_bessel_k1, 0.05, 40.0)),
    "spherical_bessel_j0": ("spherical_bessel_j0", _case(torch.special.spherical_bessel_j0, -12.0,
                                                         12.0)),
    # Ai where eager's float32 values are within 1e-6 of the exact ones: on [-10, -5]
    # and [0, 6] (elsewhere below 0 they drift up to 3e-6, beyond -36 to 2e-5;
    # test_pointwise.py judges popsim against the exact values there).
    "airy_ai": ("airy_ai", lambda rng: (Elementwise(torch.special.airy_ai), [(
        lambda u, left: torch.where(left, -5.0 - 5.0 * u, 6.0 * u))(
            torch.rand(*_sized(rng)), torch.rand(1) < 0.5)])),
    # The orthogonal polynomials, with the ends of [-1, 1] (of [0, 1] when shifted).
    **{name: (name, _polynomial(name, -1.2, 1.2, [1.0, -1.0, 0.0])) for name in [
        "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
        "chebyshev_polynomial_w", "legendre_polynomial_p"]},
    **{name: (name, _polynomial(name, -0.1, 1.1, [1.0, 0.0, 0.5])) for name in [
        "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
        "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w"]},
    **{name: (name, _polynomial(name, -1.5, 1.5, [0.0])) for name in [
        "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l"]},
    # polygamma of orders 1 to 4, above zero and below it (the reflection), in place
    # and as torch.special's; order 0 is digamma.
    "polygamma_1": ("polygamma", _case(lambda t: torch.polygamma(1, t), 0.1, 8.0)),
    "polygamma_2": ("polygamma", _case(lambda t: torch.polygamma(2, t), 0.2, 30.0)),
    "polygamma_3_negative": ("polygamma", _case(lambda t: torch.polygamma(3, t), -1.8, -1.2)),
    "polygamma_2_": ("polygamma", _case(lambda t: t.clone().polygamma_(2), -0.8, -0.2)),
    "special_polygamma_4": ("polygamma", _case(
        lambda t: torch.special.polygamma(4, t), 0.5, 20.0)),
    "polygamma_0": ("digamma", _case(lambda t: torch.polygamma(0, t), 0.5, 5.0)),
    # torch.special's entropy term and normal-distribution functions, each over the
    # switches between its formulas (erfcx's at 26, log_ndtr's at -1, ndtri's at 0.5).
    "special_entr": ("entr", _case(torch.special.entr, 0.05, 5.0)),
    "special_erfcx": ("erfcx", _case(torch.special.erfcx, -3.0, 8.0)),
    "special_erfcx_large": ("erfcx", _case(torch.special.erfcx, 20.0, 40.0)),
    "special_log_ndtr": ("log_ndtr", _case(torch.special.log_ndtr, -8.0, 5.0)),
    # (Further out, eager's float32 gradient exp(-(log_ndtr(x) + x^2 / 2)) loses
    # digits to the cancellation: between -40 and -10 it is up to 1.7e-5 from
    # float64's, popsim's 4e-8.)
    "special_log_ndtr_far": ("log_ndtr", _case(torch.special.log_ndtr, -12.5, -3.0)),
    "special_ndtri": ("ndtri", _case(torch.special.ndtri, 0.001, 0.999)),
    "special_ndtri_tail": ("ndtri", _case(torch.special.ndtri, 1e-6, 0.01)),
    "sinc": ("sinc", _case(torch.sinc, -3.0, 3.0)),
    "ndtr": ("ndtr", _case(torch.special.ndtr, -5.0, 5.0)),
    "exp2": ("rpow", _case(torch.exp2, -3.0, 3.0)),
    "neg": ("neg", _case(torch.neg, -5.0, 5.0)),
    "neg_": ("neg", _case(lambda x: x.clone().neg_() * 2.0, -5.0, 5.0)),
    "sign": ("sign", _case(torch.sign, -5.0, 5.0)),
    "sgn": ("sign", _case(torch.sgn, -5.0, 5.0)),
    # frexp's mantissa (its gradient 1 / 2^e) and exponent, over many binades.
    "frexp": ("frexp_mantissa", _case(lambda x: (lambda r: r.mantissa * 2 + r.exponent)(
        torch.frexp(x * x.abs())), -40.0, 40.0)),
    "frexp_exponent": ("frexp_exponent", _case(lambda x: torch.frexp(x * 1e-3).exponent * 1,
                                                -5.0, 5.0)),
    # angle of real numbers: pi below zero, 0 at -0.0 (from rounding) and above
    # (test_nonfinite adds NaN and infinities).
    "angle": ("angle", _case(lambda x: torch.angle(x.round()) + torch.angle(x), -3.0, 3.0)),
    "floor": ("floor", _case(torch.floor, -5.0, 5.0)),
    "ceil": ("ceil", _case(torch.ceil, -5.0, 5.0)),
    "round": ("round", _case(torch.round, -5.0, 5.0)),
    "trunc": ("trunc", _case(torch.trunc, -5.0, 5.0)),
    "frac": ("frac", _case(torch.frac, -5.0, 5.0)),
    "square": ("pow", _case(torch.square, -3.0, 3.0)),
    "pow_cube": ("pow", _case(lambda t: t ** 3, -2.0, 2.0)),
    "pow_half_": ("pow", _case(lambda t: t.clone().pow_(0.5), 0.1, 4.0)),
    "rpow": ("rpow", _case(lambda t: 2.0 ** t, -3.0, 3.0)),
    "clamp": ("clamp", _case(lambda t: t.clamp(-0.5, 0.7), -2.0, 2.0)),
    "clamp_crossed_bounds": ("clamp", _case(lambda t: t.clamp(0.5, -0.5), -2.0, 2.0)),
    "clamp_min_": ("clamp", _case(lambda t: t.clone().clamp_(min=0.1), -2.0, 2.0)),
    "clip_max": ("clamp", _case(lambda t: torch.clip(t, max=0.3), -2.0, 2.0)),
    "hardtanh": ("hardtanh", _case(lambda t: F.hardtanh(t, -0.5, 1.5), -2.0, 2.0)),
    "relu6_inplace": ("hardtanh", _module(lambda: nn.ReLU6(inplace=True), -2.0, 8.0)),
    "silu": ("silu", _case(F.silu, -6.0, 6.0)),
    "silu_inplace": ("silu", _module(lambda: nn.SiLU(inplace=True), -6.0, 6.0)),
    "mish": ("mish", _module(nn.Mish, -6.0, 6.0)),
    # GELU's gradients run these formulas (its forward is oneDNN's)
    "gelu_formula": ("gelu", _case(F.gelu, -5.0, 5.0)),
    "gelu_tanh_formula": ("gelu_tanh", _case(lambda t: F.gelu(t, approximate="tanh"), -5.0, 5.0)),
    "hardswish_inplace": ("hardswish", _module(lambda: nn.Hardswish(inplace=True), -5.0, 5.0)),
    "hardsigmoid": ("hardsigmoid", _module(nn.Hardsigmoid, -5.0, 5.0)),
    "elu": ("elu", _module(lambda: nn.ELU(alpha=0.7))),
    "selu": ("selu", _module(nn.SELU)),
    "celu": ("celu", _module(lambda: nn.CELU(alpha=1.3))),
    "leaky_relu": ("leaky_relu", _module(lambda: nn.LeakyReLU(0.2))),
    "leaky_relu_inplace": ("leaky_relu", _module(lambda: nn.LeakyReLU(inplace=True))),
    "softplus": ("softplus", _module(lambda: nn.Softplus(beta=2.0, threshold=3.0))),
    "logsigmoid": ("log_sigmoid", _module(nn.LogSigmoid, -8.0, 8.0)),
    "hardshrink": ("hardshrink", _module(lambda: nn.Hardshrink(0.4), -2.0, 2.0)),
    "softshrink": ("softshrink", _module(lambda: nn.Softshrink(0.4), -2.0, 2.0)),
    "threshold": ("threshold", _module(lambda: nn.Threshold(0.2, -1.0), -2.0, 2.0)),
    "rrelu_eval": ("leaky_relu", _module(lambda: nn.RReLU(0.1, 0.3).eval())),
    "vector_norm": ("norm_root", _case(lambda t: torch.linalg.vector_norm(t, dim=-1), -2.0, 2.0)),
    "cosine_similarity": ("root_of_floored", _case(
        lambda t: torch.nn.functional.cosine_similarity(t, t * t - 1.0, dim=-1), -2.0, 2.0)),
    "vector_norm_p_half": ("magnitude_pow", _case(
        lambda t: torch.linalg.vector_norm(t, 0.5, dim=-1), -2.0, 2.0)),
    "cdist_p1": ("magnitude", _case(
        lambda t: torch.cdist(t.reshape(-1, 1), t.reshape(-1, 1) * 0.5 - 0.3, p=1), -2.0, 2.0)),
    "nan_to_num": ("nan_to_num", _nonfinite(torch.nan_to_num)),
    # (nansum and nanmean skip NaN through it.)
    "nansum_of_nonfinite": ("nan_to_zero", _nonfinite(lambda t: torch.nansum(t.abs(), -1))),
    "nan_to_num_values_": ("nan_to_num", _nonfinite(
        lambda t: t.clone().nan_to_num_(nan=1.5, posinf=4.0, neginf=-2.0))),
    # A 0-d tensor inside the model, broadcast against a batched one.
    "sin_of_0d": ("sin", _case(lambda t: t * torch.sin(t.sum()), -1.0, 1.0)),
}

# Cases whose result PyTorch does not differentiate (autograd treats it as a constant).
# (PyTorch 1.13 defines no derivative for these two families: their results do not
# require grad.)
ORTHOGONAL_POLYNOMIALS = {
    "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
    "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "hermite_polynomial_h",
    "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p"}
BESSEL_WITHOUT_DERIVATIVE = {
    "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_k0", "modified_bessel_k1",
    "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0", "airy_ai"}
NOT_DIFFERENTIABLE = ({"modified_bessel_i0", "modified_bessel_i1", "frexp_exponent"}
                      | ORTHOGONAL_POLYNOMIALS
                      | BESSEL_WITHOUT_DERIVATIVE)
