"""The test table of the reductions: the extremum-based ones and the
variances (frontend/lowerings/extremum.cpp), the vector norms (norms.cpp),
sums and products (reduction.cpp): amax, amin, max and min (over everything
and along a dimension, with indices), argmax, argmin, median, nanmedian, mode,
logsumexp, var, std, var_mean, std_mean, all, any, p-norms (p = 0, 1, 2, 3, inf, -inf; zero
vectors included), cumsum, cumprod, prod (with zeros), nansum, sum_to_size,
cov, corrcoef, histc, trapezoid, cumulative_trapezoid, gradient, renorm, quantile and nanquantile
(all their interpolations, with NaNs),
count_nonzero, and sums of integer and bool tensors, over random dims of
random shapes, with ties (whole numbers) where the gradient must share or
pick as PyTorch does. test_ops.py runs each
case forward, test_gradients.py backward (except NOT_DIFFERENTIABLE) and
test_nonfinite.py with NaN/Inf, against eager PyTorch."""

import math

import torch
import torch.nn.functional as F

from binary_cases import Binary
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


def _sum_to_size(rng):
    """sum_to_size to a size that broadcasts to x's shape: some leading dims dropped, some
    others made 1."""
    x = _input(rng, False)
    kept = rng.randint(0, x.dim())
    size = [1 if rng.random() < 0.5 else n for n in x.shape[x.dim() - kept:]]
    return Elementwise(lambda t: t.sum_to_size(size) * 1), [x]


def _statistic(fn, one_variable=False):
    """fn(x) of 1 to 4 variables (rows) of 2 to 6 observations, or of one 1-D one."""
    def case(rng):
        shape = [rng.randint(2, 6)] if one_variable else [rng.randint(1, 4), rng.randint(2, 6)]
        return Elementwise(fn), [torch.randn(*shape)]
    return case


def _trapezoid(fn, points):
    """fn(y, x or None, dim) along a random dim of y, with sample points x (1-D or shaped
    as y, increasing) or none."""
    def case(rng):
        y = _input(rng, False, smallest=2)
        dim = rng.randrange(y.dim()) - (y.dim() if rng.random() < 0.3 else 0)
        if not points:
            return Elementwise(lambda t: fn(t, None, dim)), [y]
        n = y.shape[dim]
        x = torch.rand(n).cumsum(0) if rng.random() < 0.5 else torch.rand(*y.shape).cumsum(dim)
        return Binary(lambda t, u: fn(t, u, dim)), [y, x]
    return case


def _gradient(fn, smallest, coordinates=False):
    """torch.gradient (its derivatives flattened into one tensor) of x whose dims have
    `smallest` samples or more, by fn(x, dim, rng), or along a random dim with increasing
    coordinates (a second input) as fn(x, coordinates, dim)."""
    def case(rng):
        x = _input(rng, False, smallest)
        if coordinates:
            dim = rng.randrange(x.dim())
            points = (torch.rand(x.shape[dim]) + 0.2).cumsum(0)
            return Binary(lambda t, u: torch.cat([g.flatten() for g in fn(t, u, dim)])), [x, points]
        dim = rng.randrange(x.dim())
        return Elementwise(lambda t: torch.cat([g.flatten() for g in fn(t, dim, rng)])), [x]
    return case


def _histc(given_range, equal=False):
    """torch.histc of x with some elements on the bins' edges and some outside the
    range: between given min and max, or (min == max) the data's extremes, equal
    values among them when `equal`. The bin counts avoid bins + 1 a multiple of 8,
    where PyTorch 1.13 loses the last edge (see statistics.cpp's lowerHistc)."""
    def case(rng):
        bins = rng.choice([b for b in range(1, 40) if (b + 1) % 8 != 0])
        x = _input(rng, False)
        low, high = (-rng.uniform(0.5, 3.0), rng.uniform(0.5, 3.0)) if given_range else (0, 0)
        if equal:
            x = torch.full_like(x, rng.uniform(-2.0, 2.0))
        else:
            edges = torch.linspace(low, high, bins + 1) if given_range else torch.linspace(
                x.min().item(), x.max().item(), bins + 1)
            flat = x.view(-1)
            chosen = rng.sample(range(flat.numel()), flat.numel() // 3)
            flat[chosen] = edges[torch.randint(0, bins + 1, (len(chosen),))]
        return Elementwise(lambda t: torch.histc(t, bins, low, high)), [x]
    return case


def _quantile(fn, nans=False):
    """fn(x, q, dim, keepdim, interpolation) with q a number or a 1-D tensor, along a
    random dim or all of x; with NaNs among x's values when `nans` (nanquantile)."""
    def case(rng):
        x = _input(rng, False)
        dim = rng.choice([None, rng.randrange(x.dim())])
        if nans:  # (not the first element of a slice: a slice of NaNs is test_nonfinite's)
            nan = torch.rand(x.shape) < 0.3
            (nan.flatten()[:1] if dim is None else nan.select(dim, 0)).fill_(False)
            x = torch.where(nan, torch.tensor(float("nan")), x)
        q = rng.choice([0.0, 0.25, 0.5, 0.9, 1.0, torch.tensor([0.1, 0.5, 0.75])])
        keepdim = rng.random() < 0.5
        mode = rng.choice(["linear", "lower", "higher", "midpoint", "nearest"])
        return Elementwise(lambda t: fn(t, q, dim=dim, keepdim=keepdim,
                                        interpolation=mode)), [x]
    return case


def _renorm(rng):
    """renorm of x's slices along a random dim to a max norm some exceed, some not."""
    x = _input(rng, False)
    x = x if x.dim() >= 2 else x.reshape(1, -1)  # (renorm takes 2 or more dimensions)
    dim = rng.randrange(x.dim())
    p = rng.choice([1.0, 2.0, 3.0])
    maxnorm = float(x.abs().max()) * rng.uniform(0.3, 1.5)
    return Elementwise(lambda t: torch.renorm(t, p, dim, maxnorm)), [x]


REDUCTIONS = {
    "sum_to_size": _sum_to_size,
    "renorm": _renorm,
    "quantile": _quantile(torch.quantile),
    "nanquantile": _quantile(torch.nanquantile, nans=True),
    "cov": _statistic(torch.cov),
    "cov_correction_0_one_variable": _statistic(lambda t: torch.cov(t, correction=0),
                                                one_variable=True),
    "corrcoef": _statistic(torch.corrcoef),
    "trapezoid_dx": _trapezoid(lambda y, x, d: torch.trapezoid(y, dx=0.5, dim=d), False),
    "trapezoid_x": _trapezoid(lambda y, x, d: torch.trapezoid(y, x, dim=d), True),
    "trapz": _trapezoid(lambda y, x, d: torch.trapz(y, dim=d), False),
    "cumulative_trapezoid_dx": _trapezoid(
        lambda y, x, d: torch.cumulative_trapezoid(y, dx=2.0, dim=d), False),
    "cumulative_trapezoid_x": _trapezoid(
        lambda y, x, d: torch.cumulative_trapezoid(y, x, dim=d), True),
    # histc: between given bounds, between the data's extremes, of equal values (then
    # widened by 1 each way).
    "histc_range": _histc(True),
    "histc_data_range": _histc(False),
    "histc_equal_values": _histc(False, equal=True),
    # torch.gradient: every dim, one dim, two dims, coordinates; edge orders 1 and 2 (a list
    # of numbers as spacing fails in PyTorch's tracer: "a list of arbitrary type").
    "gradient": _gradient(lambda t, d, rng: torch.gradient(t), 2),
    "gradient_spacing_edge_order_2": _gradient(
        lambda t, d, rng: torch.gradient(t, spacing=0.3, dim=d, edge_order=2), 3),
    "gradient_dims": _gradient(lambda t, d, rng: torch.gradient(
        t, spacing=2.0, dim=[d, -1] if d != t.dim() - 1 else [d]), 2),
    "gradient_coordinates": _gradient(lambda t, u, d: torch.gradient(
        t, spacing=(u,), dim=d), 2, coordinates=True),
    "gradient_coordinates_edge_order_2": _gradient(lambda t, u, d: torch.gradient(
        t, spacing=(u,), dim=d, edge_order=2), 3, coordinates=True),
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
    # Both outputs in one expression, so each has a gradient to check.
    "var_mean": _over_dims(lambda t, d, k: (lambda vm: vm[0] * 2 + vm[1])(
        torch.var_mean(t, d, keepdim=k)), smallest=2),
    "std_mean_biased_all": _whole(lambda t: (lambda sm: sm[0] - 3 * sm[1])(
        torch.std_mean(t, unbiased=False)), smallest=2),
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
    "vector_norm_half_zero_rows": _with_zero_rows(
        lambda t: torch.linalg.vector_norm(t, 0.5, dim=1)),
    "vector_norm_negative": _over_dims(lambda t, d, k: torch.linalg.vector_norm(t, -1.5, d, k)),
})


def _matrices(fn, whole=True):
    """fn(x, dims, keepdim) of a tensor of rank 2 or 3 over two of its dims
    in either order (whole numbers: ties among the sums)."""
    def case(rng):
        x = _input(rng, whole)
        while x.dim() < 2:
            x = x.unsqueeze(0).expand(2, *x.shape).clone()
        dims = rng.sample(range(x.dim()), 2)
        keepdim = rng.random() < 0.5
        return Elementwise(lambda t: fn(t, dims, keepdim)), [x]
    return case


REDUCTIONS.update({
    "matrix_norm_1": _matrices(lambda t, d, k: torch.linalg.matrix_norm(t, 1, d, k)),
    "matrix_norm_minus_1": _matrices(lambda t, d, k: torch.linalg.norm(t, -1, d, k)),
    "matrix_norm_inf": _matrices(lambda t, d, k: torch.linalg.norm(t, float("inf"), d, k)),
    "matrix_norm_minus_inf": _matrices(
        lambda t, d, k: torch.linalg.matrix_norm(t, -float("inf"), d, k)),
    "matrix_norm_fro": _matrices(lambda t, d, k: torch.linalg.matrix_norm(t, "fro", d, k),
                                 whole=False),
    "matrix_norm_of_a_matrix": _matrices(lambda t, d, k: torch.linalg.norm(t.reshape(-1, t.shape[-1]), 1)),
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


def _with_zeros(fn, zeros_per_row):
    """fn(x, dim) of x whose rows along a random dim have `zeros_per_row` zeros
    (a product's gradient then comes from the other elements)."""
    def case(rng):
        shape = [rng.randint(2, 5) for _ in range(rng.randint(1, 3))]
        dim = rng.randrange(len(shape))
        x = torch.randn(*shape).movedim(dim, -1).contiguous()
        for row in x.view(-1, x.shape[-1]):
            row[rng.sample(range(row.numel()), min(zeros_per_row, row.numel()))] = 0.0
        x = x.movedim(-1, dim).contiguous()
        return Elementwise(lambda t: fn(t, dim)), [x]
    return case


def _with_nans(fn):
    """fn(x, dim) of x with NaN in about a third of its elements (the first
    along dim excepted: a row of NaNs has no median)."""
    def case(rng):
        shape = [rng.randint(1, 5) for _ in range(rng.randint(1, 3))]
        dim = rng.randrange(len(shape))
        x = torch.randn(*shape)
        nans = torch.rand(*shape) < 0.3
        nans.select(dim, 0).fill_(False)
        x[nans] = float("nan")
        return Elementwise(lambda t: fn(t, dim)), [x]
    return case


# Products, sums of integers and the order statistics of sorting.
REDUCTIONS.update({
    "prod_all": _whole(torch.prod),
    "prod_dim": _along_dim(lambda t, d, k: t.prod(d, keepdim=k)),
    "prod_one_zero_per_row": _with_zeros(lambda t, d: t.prod(d), 1),
    "prod_two_zeros_per_row": _with_zeros(lambda t, d: torch.prod(t, d, keepdim=True), 2),
    "prod_all_one_zero": _with_zeros(lambda t, d: t.flatten()[1:].prod() * t.flatten()[0], 1),
    "prod_int64": _integers(lambda t, d: t.prod(d) + t.prod(), torch.int64),
    "prod_bool_to_float": _integers(lambda t, d: torch.prod(t > 0, d, dtype=torch.float32),
                                    torch.int64),
    "cumprod": _along_dim(lambda t, d, k: torch.cumprod(t, d)),
    "cumprod_one_zero_per_row": _with_zeros(lambda t, d: t.cumprod(d), 1),
    "cumprod_two_zeros_per_row": _with_zeros(lambda t, d: t.cumprod(d), 2),
    "cumprod_int32_": _integers(lambda t, d: t.clone().cumprod_(d), torch.int32),
    # Running extrema of whole numbers (ties take the later position, and
    # the gradient follows it), with NaN, of integers and bools, of a 0-d tensor.
    "cummax": _along_dim(lambda t, d, k: torch.cummax(t, d).values, whole=True),
    "cummax_indices": _along_dim(lambda t, d, k: torch.cummax(t, d).indices, whole=True),
    "cummin_both": _along_dim(
        lambda t, d, k: (lambda r: r.values * r.indices)(torch.cummin(t, d)), whole=True),
    # (NaN compared as a number here; test_nonfinite.py compares NaN itself.)
    "cummax_nans": _with_nans(lambda t, d: torch.cummax(t, d)[0].nan_to_num(-9.0)),
    "cummin_nans_indices": _with_nans(lambda t, d: torch.cummin(t, d)[1]),
    "cummin_int32": _integers(lambda t, d: (lambda r: r[0] * 2 + r[1])(torch.cummin(t, d)),
                              torch.int32),
    "cummax_bool": _integers(lambda t, d: torch.cummax(t > 0, d).values, torch.int64),
    "cummax_of_0d": _whole(lambda t: torch.cummax(t.sum(), -1).values * t),
    "logcumsumexp": _along_dim(lambda t, d, k: torch.logcumsumexp(t, d)),
    # Exponents far beyond float's range, which a plain exp-cumsum-log loses.
    "logcumsumexp_wide_range": _whole(lambda t: torch.logcumsumexp(t * 60.0, -1)),
    "nansum": _with_nans(lambda t, d: torch.nansum(t, d)),
    "nanmean": _with_nans(lambda t, d: torch.nanmean(t, d)),
    "nanmean_all_keepdim": _with_nans(lambda t, d: t.nanmean(dim=None, keepdim=True) * 2),
    "aminmax_dim": _along_dim(lambda t, d, k: (lambda r: r.min * 2 + r.max)(
        torch.aminmax(t, dim=d, keepdim=k)), whole=True),
    "aminmax_all": _whole(lambda t: (lambda r: r[0] - 3 * r[1])(torch.aminmax(t)), whole=True),
    "nansum_all": _with_nans(lambda t, d: t.nansum()),
    "count_nonzero": _integers(lambda t, d: torch.count_nonzero(t, d), torch.int64),
    "count_nonzero_floats": _over_dims(lambda t, d, k: torch.count_nonzero(t, d), whole=True),
    "sum_int32": _integers(lambda t, d: t.sum(d) + t.sum(), torch.int32),
    "sum_bool_keepdim": _integers(lambda t, d: (t > 0).sum(d, keepdim=True), torch.int64),
    "sum_int64_to_float": _integers(lambda t, d: torch.sum(t, d, dtype=torch.float32),
                                    torch.int64),
    "mean_int_as_float": _integers(lambda t, d: t.mean(d, dtype=torch.float32), torch.int64),
    # Order statistics of integers and bools (token ids, masks), with ties.
    "argmax_int64": _integers(lambda t, d: t.argmax(d), torch.int64),
    "argmin_int32_flat": _integers(lambda t, d: t.argmin(), torch.int32),
    "amax_int32": _integers(lambda t, d: t.amax(d) * 2, torch.int32),
    "max_dim_int64_indices": _integers(
        lambda t, d: (lambda r: r.values * 3 + r.indices)(t.max(d)), torch.int64),
    "min_all_int64": _integers(lambda t, d: t.min() - t, torch.int64),
    "max_all_bool": _integers(lambda t, d: (t > 1).max(), torch.int64),
    "amin_bool_dim": _integers(lambda t, d: torch.amin(t > 0, d, keepdim=True), torch.int32),
    "median_dim_int64": _integers(
        lambda t, d: (lambda r: r.values * 3 + r.indices)(t.median(d)), torch.int64),
    "median_all_int32": _integers(lambda t, d: t.median() + t, torch.int32),
    "median_all": _whole(torch.median, whole=True),
    "median_dim": _along_dim(lambda t, d, k: t.median(d, keepdim=k).values, whole=True),
    "median_dim_indices": _along_dim(lambda t, d, k: torch.median(t, d, k).indices,
                                     whole=True),
    # mode of whole numbers (ties in value and in frequency), in rows of up to 16,
    # where PyTorch's sort keeps equal values in order.
    "mode": _along_dim(lambda t, d, k: torch.mode(t, d, k).values * 2, whole=True),
    "mode_indices": _along_dim(lambda t, d, k: torch.mode(t, d, keepdim=k).indices, whole=True),
    "mode_rows_of_16": lambda rng: (Elementwise(lambda t: (lambda r: r.values * 2 + r.indices)(
        t.mode())), [torch.randint(-2, 3, (rng.randint(1, 3), 16)).float()]),
    "mode_int64": _integers(lambda t, d: (lambda r: r.values * 3 + r.indices)(t.mode(d)),
                            torch.int64),
    "nanmedian_all": _with_nans(lambda t, d: t.nanmedian()),
    "nanmedian_dim": _with_nans(lambda t, d: torch.nanmedian(t, d)[0]),
    "nanmedian_dim_indices": _with_nans(lambda t, d: torch.nanmedian(t, d).indices),
})

NOT_DIFFERENTIABLE = {"aminmax_dim", "aminmax_all",  # (no derivative in PyTorch 1.13)
                      "histc_range", "histc_data_range", "histc_equal_values",
                      "prod_int64", "prod_bool_to_float", "cumprod_int32_", "count_nonzero",
                      "count_nonzero_floats", "sum_int32", "sum_bool_keepdim",
                      "sum_int64_to_float", "mean_int_as_float", "median_dim_indices",
                      "nanmedian_dim_indices", "mode_indices", "mode_int64",
                      "cumsum_int64_positions", "cumsum_bool_mask", "cumsum_int32_to_float",
                      "max_dim_indices", "argmax", "argmin_flat", "argmax_flat_keepdim", "all",
                      "any_dim", "all_floats_dim", "argmax_int64", "argmin_int32_flat",
                      "amax_int32", "max_dim_int64_indices", "min_all_int64", "max_all_bool",
                      "amin_bool_dim", "median_dim_int64", "median_all_int32", "cummax_indices", "cummin_nans_indices",
                      "cummin_int32", "cummax_bool"}


def _distinct(fn, rank=None):
    """fn(x, dim) of x with distinct values (PyTorch leaves the order of equal
    values to its unstable sort) along a random dim."""
    def case(rng):
        shape = [rng.randint(1, 5) for _ in range(rank or rng.randint(1, 3))]
        x = torch.randperm(math.prod(shape)).float().reshape(shape) * 0.37 - 1.0
        dim = rng.randrange(len(shape))
        return Elementwise(lambda t: fn(t, dim)), [x]
    return case


# Sorting and selection (frontend/lowerings/sorting.cpp).
REDUCTIONS.update({
    "sort": _distinct(lambda t, d: torch.sort(t, d).values),
    "sort_descending_indices": _distinct(lambda t, d: t.sort(d, descending=True).indices),
    "sort_stable_ties": _along_dim(lambda t, d, k: torch.sort(t, dim=d, stable=True)[1] * 1,
                                   whole=True),
    "argsort": _distinct(lambda t, d: torch.argsort(t, d, descending=True)),
    "msort": _distinct(lambda t, d: torch.msort(t) * 2),
    "topk": _distinct(lambda t, d: torch.topk(t, 1, d).values * 2),
    "topk_smallest_indices": _distinct(lambda t, d: t.topk(1, d, largest=False).indices),
    "kthvalue": _distinct(lambda t, d: torch.kthvalue(t, 1, d, keepdim=True).values * 2),
    "kthvalue_indices": _distinct(lambda t, d: torch.kthvalue(t, 1, d).indices),
})
NOT_DIFFERENTIABLE |= {"sort_descending_indices", "sort_stable_ties", "argsort",
                       "topk_smallest_indices", "kthvalue_indices"}
