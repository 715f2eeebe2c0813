"""The test table of indexing by tensors (frontend/lowerings/indexing.cpp):
index_select, take and put, gather, take_along_dim, scatter (src, value, reduce='add'),
scatter_add, index_add (alpha), index_copy, index_fill, advanced indexing
(one or several index tensors, adjacent or not, negative indices, mixed with
slices and None) and index_put_ (with accumulate; x[mask] = v with a
boolean mask, and x[mask] = src[mask]), one_hot; indices repeat
where PyTorch sums them (their gradients accumulate). The indices are
buffers; test_ops.py runs each case forward, test_gradients.py backward and
test_nonfinite.py with NaN/Inf, against eager PyTorch."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Indexed(nn.Module):
    """fn(*inputs, *indices) with the index tensors as buffers."""

    def __init__(self, fn, indices):
        super().__init__()
        self.fn = fn
        for i, index in enumerate(indices):
            self.register_buffer(f"index{i}", index)
        self.count = len(indices)

    def forward(self, *inputs):
        return self.fn(*inputs, *[getattr(self, f"index{i}") for i in range(self.count)])


def _renormed_lookup(max_norm, norm_type):
    def lookup(w, i):
        copy = w * 1.0
        rows = F.embedding(i, copy, max_norm=max_norm, norm_type=norm_type)
        return torch.cat([rows.flatten(), copy.flatten()])
    return lookup


def _masked_copy(x, src):
    y = x * 1
    mask = src > 0.3
    y[mask] = src[mask]
    return y


def _masked_copy_into_a_view(x, src):
    y = x * 1
    window = y[:, 1:4]
    mask = x[:, 0] > 0
    window[mask] = src[mask]
    return y


def _masked_middle_dims(x, v):
    """x[:, mask] = v with a 2-D mask over x's dims 1 and 2."""
    y = x.clone()
    y[:, x[0, :, :, 0] > 0] = v
    return y


def _shape(rng, rank=None):
    return [rng.randint(1, 5) for _ in range(rank or rng.randint(1, 3))]


def _along(make):
    """make(rng, x shape, dim) -> (fn, indices, extra inputs)."""
    def case(rng):
        shape = _shape(rng)
        dim = rng.randrange(len(shape))
        fn, indices, extra = make(rng, shape, dim)
        return Indexed(fn, indices), [torch.randn(*shape)] + extra
    return case


def _element_index(rng, shape, dim):
    """An index for gather/scatter: no larger than `shape` off dim, values in range."""
    index_shape = [rng.randint(1, s) if d != dim else rng.randint(1, 5)
                   for d, s in enumerate(shape)]
    return torch.randint(0, shape[dim], index_shape)


def _broadcasting_index(rng, shape, dim):
    """An index for take_along_dim: each dim off `dim` the input's size or 1."""
    index_shape = [rng.randint(1, 4) if d == dim else rng.choice([1, s])
                   for d, s in enumerate(shape)]
    return torch.randint(0, shape[dim], index_shape)


def _with_source(fn):
    """fn(x, src, index, dim) for a scatter that sums: src of the index's shape
    (autograd needs it; repeated targets sum)."""
    def case(rng):
        shape = _shape(rng)
        dim = rng.randrange(len(shape))
        index = _element_index(rng, shape, dim)
        return (Indexed(lambda x, src, i: fn(x, src, i, dim), [index]),
                [torch.randn(*shape), torch.randn(*index.shape)])
    return case


def _unique_element_index(shape, dim):
    """A scatter index with no repeated target (each slice a permutation)."""
    index = torch.argsort(torch.rand(*shape), dim=dim)
    return index


INDEXING = {
    "index_select": _along(lambda rng, s, d: (
        lambda x, i: torch.index_select(x, d, i), [torch.randint(0, s[d], (rng.randint(1, 6),))], [])),
    "gather": _along(lambda rng, s, d: (
        lambda x, i: torch.gather(x, d, i), [_element_index(rng, s, d)], [])),
    "take_along_dim": _along(lambda rng, s, d: (
        lambda x, i: torch.take_along_dim(x, i, d), [_broadcasting_index(rng, s, d)], [])),
    "take": _along(lambda rng, s, d: (
        lambda x, i: torch.take(x, i),
        [torch.randint(-math.prod(s), math.prod(s), (rng.randint(1, 3), rng.randint(1, 4)))], [])),
    # put writes distinct flat positions (some counted from the end); with accumulate,
    # repeated ones add up.
    "put": _along(lambda rng, s, d: (lambda n, k: (
        lambda x, src, i: x.put(i, src),
        [torch.randperm(n)[:k] - n * (torch.rand(k) < 0.5).long()], [torch.randn(k)]))(
            math.prod(s), rng.randint(1, math.prod(s)))),
    "put_accumulate_": _along(lambda rng, s, d: (lambda n: (
        lambda x, src, i: x.clone().put_(i, src, accumulate=True),
        [torch.randint(-n, n, (2, 3))], [torch.randn(2, 3)]))(math.prod(s))),
    "take_along_dim_flat": _along(lambda rng, s, d: (
        lambda x, i: torch.take_along_dim(x, i), [torch.randint(0, math.prod(s), (3,))], [])),
    "scatter_src": _along(lambda rng, s, d: (
        lambda x, src, i: torch.scatter(x, d, i, src), [_unique_element_index(s, d)],
        [torch.randn(*s)])),
    "scatter_value_": _along(lambda rng, s, d: (
        lambda x, i: x.clone().scatter_(d, i, 2.5), [_element_index(rng, s, d)], [])),
    "scatter_add": _with_source(lambda x, src, i, d: x.scatter_add(d, i, src)),
    "scatter_reduce_add": _with_source(
        lambda x, src, i, d: torch.scatter(x, d, i, src, reduce="add")),
    "index_add_alpha": _along(lambda rng, s, d: (
        lambda x, src, i: x.index_add(d, i, src, alpha=-0.5), [torch.randint(0, s[d], (4,))],
        [torch.randn(*[4 if k == d else n for k, n in enumerate(s)])])),
    "index_copy_": _along(lambda rng, s, d: (
        lambda x, src, i: x.clone().index_copy_(d, i, src), [torch.randperm(s[d])],
        [torch.randn(*s)])),
    "index_fill": _along(lambda rng, s, d: (
        lambda x, i: torch.index_fill(x, d, i, -1.0), [torch.randint(0, s[d], (2,))], [])),
    "index_one_tensor": _along(lambda rng, s, d: (
        lambda x, i: x[i] * 2, [torch.randint(-s[0], s[0], (3, 2))], [])),
    "index_after_slice": lambda rng: (
        Indexed(lambda x, i: x[:, i], [torch.randint(-4, 4, (2, 3))]), [torch.randn(3, 4, 2)]),
    "index_two_tensors": lambda rng: (
        Indexed(lambda x, i, j: x[i, j], [torch.randint(0, 3, (4, 1)), torch.randint(0, 4, (5,))]),
        [torch.randn(3, 4, 2)]),
    "index_not_adjacent": lambda rng: (
        Indexed(lambda x, i, j: x[i, :, j], [torch.tensor([0, 2, 2]), torch.tensor([1, 0, -1])]),
        [torch.randn(3, 4, 2)]),
    "index_with_none": lambda rng: (
        Indexed(lambda x, i: x[None, ..., i], [torch.tensor([[1, 0], [1, 1]])]),
        [torch.randn(2, 3, 2)]),
    "index_put_": lambda rng: (
        Indexed(lambda x, v, i: x.clone().index_put_((i,), v), [torch.randperm(4)[:3]]),
        [torch.randn(4, 3), torch.randn(3, 3)]),
    "index_put_accumulate": lambda rng: (
        Indexed(lambda x, v, i, j: x.index_put((i, j), v, accumulate=True),
                [torch.tensor([0, 1, 1, 0]), torch.tensor([2, 0, 0, 2])]),
        [torch.randn(2, 3), torch.randn(4)]),
    "setitem_columns": lambda rng: (
        Indexed(lambda x, i: _assign(x.clone(), i), [torch.tensor([2, 0])]),
        [torch.randn(3, 4)]),
    # Source elements in order into the true positions; a source with more elements than
    # the mask takes leaves the rest unused (and without gradient).
    "masked_scatter": _along(lambda rng, s, d: (
        lambda x, src, m: x.masked_scatter(m, src), [torch.rand(*s) > 0.4],
        [torch.randn(math.prod(s) + rng.randint(0, 3))])),
    # x[mask] = values, one value (or row) per selected element, and += of them.
    "masked_put_elements": lambda rng: (
        Indexed(lambda x, v, m: _put_in_order(x, m, v),
                [torch.tensor([[True, False], [True, True]])]),
        [torch.randn(2, 2), torch.randn(3)]),
    "masked_put_rows_accumulate": lambda rng: (
        Indexed(lambda x, v, m: x.index_put((m,), v, accumulate=True),
                [torch.tensor([False, True, True])]),
        [torch.randn(3, 2, 2), torch.randn(2, 2, 2)]),
    "masked_scatter_broadcast_": _along(lambda rng, s, d: (
        lambda x, src, m: x.clone().masked_scatter_(m, src * 2), [torch.rand(s[-1]) > 0.5],
        [torch.randn(*s)])),
}


def _put_in_order(x, mask, values):
    y = x.clone()
    y[mask] = values * 2
    return y


def _assign(x, i):
    x[:, i] = x[:, i] * 3 + 1
    return x


ONE_HOT = {
    "one_hot": lambda rng: (
        Indexed(lambda x, i: F.one_hot(i, 5) * x.sum(), [torch.randint(0, 5, (3, 2))]),
        [torch.randn(2)]),
}
INDEXING.update(ONE_HOT)
INDEXING.update({
    # Counts (int64) and float weights into minlength bins, values repeating.
    "bincount_minlength": lambda rng: (
        Indexed(lambda x, i: torch.bincount(i, minlength=7) * x.sum(),
                [torch.randint(0, 7, (rng.randint(1, 12),))]), [torch.randn(2)]),
    "bincount_weights": lambda rng: (
        Indexed(lambda w, i: torch.bincount(i, weights=w, minlength=6),
                [torch.tensor([5, 0, 5, 2, 2, 2])]), [torch.randn(6)]),
})


def _boundaries(rng):
    return torch.sort(torch.randn(rng.randint(1, 5))).values


INDEXING.update({
    "bucketize": lambda rng: (lambda right: (
        Indexed(lambda x, b: torch.bucketize(x, b, right=right) * x.sign(), [_boundaries(rng)]),
        [torch.randn(3, 4)]))(rng.random() < 0.5),
    "searchsorted_batched": lambda rng: (
        Indexed(lambda x, s: torch.searchsorted(s, x, side="right") * x,
                [torch.sort(torch.randn(2, 5), dim=1).values]), [torch.randn(2, 3)]),
    "embedding_bag_offsets_mean": lambda rng: (
        Indexed(lambda w, i, o: F.embedding_bag(i, w, o, mode="mean"),
                [torch.randint(0, 6, (7,)), torch.tensor([0, 3, 3])]), [torch.randn(6, 4)]),
    "embedding_bag_rows_sum_weights": lambda rng: (
        Indexed(lambda w, p, i: F.embedding_bag(i, w, mode="sum", per_sample_weights=p),
                [torch.randint(0, 6, (3, 2))]), [torch.randn(6, 4), torch.rand(3, 2)]),
    "embedding_bag_padding_last_offset": lambda rng: (
        Indexed(lambda w, i, o: F.embedding_bag(i, w, o, mode="mean", padding_idx=1,
                                                include_last_offset=True),
                [torch.tensor([1, 0, 1, 2, 3]), torch.tensor([0, 2, 5])]), [torch.randn(5, 3)]),
    # max_norm: the rows looked up scaled in place to that norm (a copy of the input,
    # whose renormed rows, and those not looked up, are returned too)
    "embedding_max_norm": lambda rng: (lambda p: (
        Indexed(_renormed_lookup(rng.uniform(0.5, 2.0), p),
                [torch.randint(0, 6, (rng.randint(1, 3), rng.randint(1, 5)))]),
        [torch.randn(6, 4)]))(rng.choice([1.0, 2.0, 3.0])),
    # x[mask] = v: the mask from the data, v a number or broadcast over the selection
    "masked_put_number": lambda rng: (
        Indexed(lambda x: x.masked_fill(x > 0.5, 0.0).index_put((x < 0,), torch.tensor(2.0)),
                []), [torch.randn(*_shape(rng))]),
    "masked_put_rows": lambda rng: (
        Indexed(lambda x, v: x.index_put((x[:, 0] > 0,), v * 3), []),
        [torch.randn(5, 3), torch.randn(3)]),
    "masked_put_middle_dims": lambda rng: (
        Indexed(_masked_middle_dims, []), [torch.randn(2, 3, 4, 2), torch.randn(2, 1, 2)]),
    # x[mask] = src[mask] (frontend/masked_copies.cpp): each selected element takes src's
    # element at its position, elementwise, in place and as index_put; masks over all
    # dims or the leading ones, and through a view of x.
    "masked_copy": lambda rng: (lambda s: (
        Indexed(_masked_copy, []), [torch.randn(*s), torch.randn(*s)]))(_shape(rng)),
    "masked_copy_rows": lambda rng: (
        Indexed(lambda x, src: (lambda rows: x.index_put((rows,), src[rows]) * 2)(
            src[:, 0, 0] > 0), []), [torch.randn(5, 3, 2), torch.randn(5, 3, 2)]),
    "masked_copy_into_a_view": lambda rng: (
        Indexed(_masked_copy_into_a_view, []), [torch.randn(4, 5), torch.randn(4, 3)]),
    "masked_put_accumulate": lambda rng: (
        Indexed(lambda x, v: x.index_put((x[..., 0] > 0,), v, accumulate=True), []),
        [torch.randn(3, 4, 2), torch.randn(2)]),
    # whole numbers: maxima tied between rows (the first takes the gradient)
    "embedding_bag_offsets_max": lambda rng: (
        Indexed(lambda w, i, o: F.embedding_bag(i, w, o, mode="max"),
                [torch.randint(0, 6, (8,)), torch.tensor([0, 3, 3, 4])]),
        [torch.randn(6, 4).mul(1.5).round()]),
    "embedding_bag_rows_max_padding": lambda rng: (
        Indexed(lambda w, i: F.embedding_bag(i, w, mode="max", padding_idx=2),
                [torch.tensor([[2, 2, 2], [0, 2, 4], [3, 3, 1]])]), [torch.randn(5, 3)]),
    "embedding_bag_max_indices": lambda rng: (
        Indexed(lambda w, i, o: torch.ops.aten._embedding_bag(w, i, o, False, 2, False, None,
                                                              False, 1)[3],
                [torch.tensor([1, 0, 1, 4, 3, 1]), torch.tensor([0, 2, 2, 3])]),
        [torch.randn(5, 3).round()]),
})

def _scatter_reduce(reduce, include_self, slices=False):
    """scatter_reduce (or index_reduce with `slices`) with repeated targets and
    whole numbers (ties for amax/amin)."""
    def case(rng):
        shape = _shape(rng)
        dim = rng.randrange(len(shape))
        if slices:
            index = torch.randint(0, shape[dim], (rng.randint(1, 5),))
            source = [n if d != dim else index.numel() for d, n in enumerate(shape)]
            fn = lambda x, src, i: x.index_reduce(dim, i, src, reduce, include_self=include_self)
        else:
            index = _element_index(rng, shape, dim)
            source = list(index.shape)
            fn = lambda x, src, i: x.scatter_reduce(dim, i, src, reduce, include_self=include_self)
        return (Indexed(fn, [index]),
                [torch.randn(*shape).mul(2).round(), torch.randn(*source).mul(2).round()])
    return case


INDEXING.update({
    f"scatter_reduce_{reduce}{'' if include_self else '_exclude_self'}":
        _scatter_reduce(reduce, include_self)
    for reduce in ("sum", "prod", "mean", "amax", "amin") for include_self in (True, False)})
INDEXING.update({
    "index_reduce_mean": _scatter_reduce("mean", True, slices=True),
    "index_reduce_amax_exclude_self": _scatter_reduce("amax", False, slices=True),
})

# PyTorch has no derivative for scatter with a reduce argument (popsim refuses
# to train through it, as test_indexing.py checks), nor for integer outputs.
NOT_DIFFERENTIABLE = {"scatter_reduce_add", "one_hot", "embedding_bag_max_indices",
                      "bincount_minlength", "bincount_weights"}
