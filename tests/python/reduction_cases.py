"""The test table of the extremum-based reductions, the variances
(frontend/lowerings/extremum.cpp) and the vector norms (norms.cpp): amax, amin, max and min (over everything
and along a dimension, with indices), argmax, argmin, logsumexp, var, std,
all, any, cumsum and p-norms (p = 0, 1, 2, 3, inf, -inf; zero vectors included),
over random dims of random shapes, with ties (whole numbers)
where the gradient must share or pick as PyTorch does. test_ops.py runs each
case forward, test_gradients.py backward (except NOT_DIFFERENTIABLE) and
test_nonfinite.py with NaN/Inf, against eager PyTorch."""

import torch
import torch.nn.functional as F

from pointwise_cases import Elementwise


def _input(rng, whole, smallest=1):
    shape = [rng.randint(smallest, 5) for _ in range(rng.randint(1, 4))]
    x = torch.randn(*shape) * 2
    return x.round() if whole else x


def _over_dims(fn, whole=False, smallest=1):
    """fn(x, dims, keepdim) over a random non-empty set of x's dims (of at
    least `smallest` elements each)."""
    def case(rng):
        x = _input(rng, whole, smallest)
        dims = sorted(rng.sample(range(x.dim()), rng.randint(1, x.dim())))
        dims = [d - x.dim() if rng.random() < 0.3 else d for d in dims]  # negative dims too
        keepdim = rng.random() < 0.5
        return Elementwise(lambda t: fn(t, dims, keepdim)), [x]
    return case


def _along_dim(fn, whole=False):
    """fn(x, dim, keepdim) along one random dim."""
    def case(rng):
        x = _input(rng, whole)
        dim = rng.randrange(x.dim())
        keepdim = rng.random() < 0.5
        return Elementwise(lambda t: fn(t, dim, keepdim)), [x]
    return case


def _whole(fn, whole=False, smallest=1):
    def case(rng):
        return Elementwise(fn), [_input(rng, whole, smallest)]
    return case


REDUCTIONS = {
    "amax": _over_dims(lambda t, d, k: t.amax(d, k), whole=True),
    "amin": _over_dims(lambda t, d, k: torch.amin(t, d, keepdim=k), whole=True),
    "max_all": _whole(torch.max, whole=True),
    "min_all": _whole(torch.min, whole=True),
    "max_dim": _along_dim(lambda t, d, k: t.max(d, k).values, whole=True),
    "min_dim": _along_dim(lambda t, d, k: torch.min(t, d, keepdim=k)[0], whole=True),
    "max_dim_indices": _along_dim(lambda t, d, k: t.max(d, k).indices, whole=True),
    "argmax": _along_dim(lambda t, d, k: t.argmax(d, k), whole=True),
    "argmin_flat": _whole(torch.argmin, whole=True),
    "argmax_flat_keepdim": _whole(lambda t: t.argmax(keepdim=True), whole=True),
    "logsumexp": _over_dims(lambda t, d, k: torch.logsumexp(t, d, k)),
    # (Unbiased over one element is NaN in eager and popsim alike: dims of 2 or more.)
    "var": _over_dims(lambda t, d, k: t.var(d, keepdim=k), smallest=2),
    "var_biased_all": _whole(lambda t: t.var(unbiased=False)),
    "std": _over_dims(lambda t, d, k: torch.std(t, d, unbiased=True, keepdim=k), smallest=2),
    "std_correction": _over_dims(lambda t, d, k: t.std(d, correction=0, keepdim=k)),
    "all": _whole(lambda t: (t > -1).all(), whole=True),
    "any_dim": _along_dim(lambda t, d, k: torch.any(t > 1, d, keepdim=k), whole=True),
    "all_floats_dim": _along_dim(lambda t, d, k: t.all(d), whole=True),
}

def _with_zero_rows(fn):
    """fn of a [rows, n] tensor whose first row is zero (a zero norm)."""
    def case(rng):
        x = torch.randn(rng.randint(2, 4), rng.randint(1, 5))
        x[0] = 0.0
        return Elementwise(fn), [x]
    return case


REDUCTIONS.update({
    "norm": _along_dim(lambda t, d, k: torch.norm(t, dim=d, keepdim=k)),
    "norm_p1": _over_dims(lambda t, d, k: torch.norm(t, p=1, dim=d, keepdim=k)),
    "norm_all": _whole(torch.norm),
    "frobenius": _whole(lambda t: torch.linalg.norm(t)),
    "vector_norm_3": _over_dims(lambda t, d, k: torch.linalg.vector_norm(t, 3, d, k)),
    "vector_norm_inf": _over_dims(
        lambda t, d, k: torch.linalg.vector_norm(t, float("inf"), d, k), whole=True),
    "vector_norm_neg_inf": _over_dims(
        lambda t, d, k: torch.linalg.vector_norm(t, -float("inf"), d, k)),
    "vector_norm_0": _over_dims(lambda t, d, k: torch.linalg.vector_norm(t, 0, d, k), whole=True),
    "normalize": _over_dims(lambda t, d, k: F.normalize(t, dim=d[0])),
    "normalize_zero_rows": _with_zero_rows(lambda t: F.normalize(t, dim=1)),
    "norm_zero_rows_p3": _with_zero_rows(lambda t: torch.linalg.vector_norm(t, 3, dim=1)),
})

def _integers(fn, dtype):
    def case(rng):
        shape = [rng.randint(1, 5) for _ in range(rng.randint(1, 3))]
        x = torch.randint(0, 3, shape).to(dtype)
        dim = rng.randrange(len(shape))
        return Elementwise(lambda t: fn(t, dim)), [x]
    return case


REDUCTIONS.update({
    "cumsum": _along_dim(lambda t, d, k: torch.cumsum(t, d)),
    "cumsum_negative_dim_": _whole(lambda t: t.clone().cumsum_(-1)),
    "cumsum_int64_positions": _integers(lambda t, d: t.cumsum(d) * t, torch.int64),
    "cumsum_bool_mask": _integers(lambda t, d: torch.cumsum(t > 0, d), torch.int64),
    "cumsum_int32_to_float": _integers(lambda t, d: torch.cumsum(t, d, dtype=torch.float32),
                                       torch.int32),
})

NOT_DIFFERENTIABLE = {"cumsum_int64_positions", "cumsum_bool_mask", "cumsum_int32_to_float",
                      "max_dim_indices", "argmax", "argmin_flat", "argmax_flat_keepdim", "all",
                      "any_dim", "all_floats_dim"}
