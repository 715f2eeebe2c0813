"""The test table of the ops that rearrange elements
(frontend/lowerings/rearrangement.cpp, and in shape.cpp swapaxes, narrow_copy,
the NumPy-style stacks, ravel and select/slice_scatter): repeat, tile,
broadcast_to, meshgrid, repeat_interleave, flip (fliplr, flipud), roll, unbind,
unflatten, movedim, swapaxes, narrow_copy, tensor_split (hsplit, vsplit,
dsplit), hstack, vstack, dstack, column_stack, ravel, positive, conj_physical,
isreal, the in-place layout changes (unsqueeze_, squeeze_, transpose_,
swapdims_, swapaxes_, t_), diagonal (linalg.diagonal, diagonal_scatter),
select_scatter, slice_scatter, diagflat, diag, triu, tril (and their in-place
forms), fill_diagonal_,
pixel_shuffle, pixel_unshuffle, channel_shuffle, Tensor.unfold, F.unfold
and F.fold, trace, cross, diff, atleast_1d/2d/3d, cartesian_prod, combinations,
block_diag, vander and linalg.vander, and as_strided (strided_views.cpp), on
random shapes. test_ops.py runs each case forward,
test_gradients.py backward and test_nonfinite.py with NaN/Inf, against
eager PyTorch."""

import torch
import torch.nn as nn
import torch.nn.functional as F

from pointwise_cases import Elementwise


def _shape(rng, rank=None, smallest=1):
    return [rng.randint(smallest, 4) for _ in range(rank or rng.randint(1, 3))]


def _on(fn, rank=None, smallest=1):
    """fn(x, rng-drawn arguments) of a random tensor: make(rng, shape) -> fn."""
    def case(rng):
        shape = _shape(rng, rank, smallest)
        return Elementwise(fn(rng, shape)), [torch.randn(*shape)]
    return case


def _dim(rng, shape):
    return rng.randrange(len(shape)) - (len(shape) if rng.random() < 0.3 else 0)


def _sum_all(parts):
    return torch.cat([p.flatten() for p in parts])


def _as_strided(view):
    """as_strided windows of w rows every `step` rows over a random [n, d]
    tensor: view(t, sizes, strides, (n, d)) -> the tensor the case returns."""
    def case(rng):
        n, d = rng.randint(2, 6), rng.randint(1, 3)
        w = rng.randint(1, n)
        step = rng.randint(1, w)
        windows = (n - w) // step + 1
        return (Elementwise(lambda t: view(t, (windows, w, d), (step * d, d, 1), (n, d)) * 2),
                [torch.randn(n, d)])
    return case


REARRANGEMENTS = {
    "repeat": _on(lambda rng, s: (lambda r: lambda t: t.repeat(*r))(
        [rng.randint(1, 3) for _ in s] + [2])),
    "tile": _on(lambda rng, s: lambda t: torch.tile(t, (2,))),
    "meshgrid_ij": lambda rng: (Elementwise(lambda t: _sum_all(torch.meshgrid(
        t[0], t[1, :3], t[2, 1], indexing="ij")) * 2), [torch.randn(3, 4)]),
    "meshgrid_xy": lambda rng: (Elementwise(lambda t: _sum_all(torch.meshgrid(
        t[0, :2], t[1], t[2, :3], indexing="xy")) + 1), [torch.randn(3, 4)]),
    # (Wide and square matrices: for a tall one, eager PyTorch 1.13's backward
    # also fills elements below the diagonal the forward never read, where
    # popsim's gradient is the true one, zero.)
    "trace": lambda rng: (lambda m: (Elementwise(lambda t: torch.trace(t) * 1),
                                     [torch.randn(m, rng.randint(m, 5))]))(rng.randint(1, 4)),
    "cross": lambda rng: (lambda shape, dim: (
        Elementwise(lambda t: torch.cross(t[0], t[1], dim=dim)), [torch.randn(2, *shape)]))(
            *(lambda s: (s, rng.choice([d for d, n in enumerate(s) if n == 3])))(
                [3] + _shape(rng, rng.randint(0, 2)) if rng.random() < 0.5
                else _shape(rng, rng.randint(0, 2)) + [3])),
    "linalg_cross": lambda rng: (Elementwise(lambda t: torch.linalg.cross(t[0], t[1, :1])),
                                 [torch.randn(2, rng.randint(1, 3), 3)]),
    "diff": _on(lambda rng, s: (lambda d, n: lambda t: torch.diff(t, n=n, dim=d))(
        _dim(rng, s), rng.randint(1, 2))),
    "diff_prepend_append": lambda rng: (Elementwise(lambda t: torch.diff(
        t[1:], dim=0, prepend=t[:1], append=t[:1] * 2)), [torch.randn(rng.randint(2, 4), 3)]),
    "atleast_1d": _on(lambda rng, s: lambda t: torch.atleast_1d(t.sum()) + torch.atleast_1d(t).sum()),
    "atleast_2d": _on(lambda rng, s: lambda t: _sum_all([torch.atleast_2d(t.sum()),
                                                        torch.atleast_2d(t[..., 0]),
                                                        torch.atleast_2d(t)])),
    "atleast_3d": _on(lambda rng, s: lambda t: _sum_all([torch.atleast_3d(t.sum()),
                                                        torch.atleast_3d(t.flatten()),
                                                        torch.atleast_3d(t.reshape(1, -1)),
                                                        torch.atleast_3d(t)])),
    "cartesian_prod": lambda rng: (lambda k: (Elementwise(lambda t: torch.cartesian_prod(
        t[0], t[1, :k], t[2, :2]) * 1), [torch.randn(3, 4)]))(rng.randint(1, 4)),
    "combinations": lambda rng: (lambda r, replace: (Elementwise(lambda t: torch.combinations(
        t, r, with_replacement=replace) * 2), [torch.randn(rng.randint(r, 5))]))(
            rng.randint(1, 3), rng.random() < 0.5),
    "block_diag": lambda rng: (Elementwise(lambda t: torch.block_diag(
        t[0, :2, :3], t[1, 0, :2], t[2, 1, 1], t[3, 1:]) * 1), [torch.randn(4, 3, 4)]),
    "vander": lambda rng: (lambda n, increasing: (Elementwise(lambda t: torch.vander(
        t, n, increasing=increasing) * 1), [torch.randn(rng.randint(1, 4))]))(
            rng.choice([None, 1, 2, 4]), rng.random() < 0.5),
    # The NumPy-style stacks, of tensors of mixed ranks.
    "hstack": lambda rng: (Elementwise(lambda t: torch.hstack([t[0], t[1, :, :2], t[2]]) * 1),
                           [torch.randn(3, rng.randint(1, 4), rng.randint(2, 4))]),
    "hstack_vectors": lambda rng: (Elementwise(lambda t: torch.hstack(
        [t[0, 0], t[1, :, 0], t[2, 1, 1]]) * 1), [torch.randn(3, 2, rng.randint(2, 4))]),
    "vstack": lambda rng: (Elementwise(lambda t: torch.vstack([t[0, 0], t[1, :2], t[2, 1]]) * 1),
                           [torch.randn(3, 2, rng.randint(1, 4))]),
    "row_stack": lambda rng: (Elementwise(lambda t: torch.row_stack([t[0], t[1, 0]]) * 1),
                              [torch.randn(2, rng.randint(1, 3), 3)]),
    "dstack": lambda rng: (Elementwise(lambda t: torch.dstack([t[0], t[1], t[2, :, :, None]]) * 1),
                           [torch.randn(3, rng.randint(1, 3), rng.randint(1, 4))]),
    "dstack_vectors": lambda rng: (Elementwise(lambda t: torch.dstack([t[0], t[1], t[1, 0]]) * 1),
                                   [torch.randn(2, 1, rng.randint(1, 4))]),
    "column_stack": lambda rng: (Elementwise(lambda t: torch.column_stack(
        [t[0, :, 0], t[1, :, :2], t[2, 0, 0].expand(t.shape[1]), t[2]]) * 1),
                                 [torch.randn(3, rng.randint(1, 4), 2)]),
    # Their splits: into equal sections, at positions (one counted from the end).
    "hsplit": lambda rng: (Elementwise(lambda t: _sum_all(torch.hsplit(t, 2)) * 2),
                           [torch.randn(rng.randint(1, 3), 4, 2)]),
    "hsplit_vector_indices": _on(lambda rng, s: lambda t: torch.hsplit(t, [1, -1])[1] * 2,
                                 rank=1, smallest=3),
    "vsplit": lambda rng: (Elementwise(lambda t: torch.vsplit(t, [2])[1] * 2),
                           [torch.randn(rng.randint(3, 5), 2)]),
    "dsplit": lambda rng: (Elementwise(lambda t: _sum_all(torch.dsplit(t, 3)[::2]) * 2),
                           [torch.randn(2, 1, 6)]),
    "fliplr": _on(lambda rng, s: lambda t: torch.fliplr(t) * 2, rank=2),
    "flipud": _on(lambda rng, s: lambda t: torch.flipud(t) * 2),
    "ravel": _on(lambda rng, s: lambda t: t.transpose(0, -1).ravel() * 2),
    "positive_resolve": _on(lambda rng, s: lambda t: torch.positive(t) * 2 + t.resolve_conj()
                            + t.resolve_neg()),
    "conj_physical_isreal": _on(lambda rng, s: lambda t: torch.conj_physical(t) * 2
                                + torch.isreal(t) + (t * 3).conj_physical_()),
    # In-place layout changes: the tensor becomes a view of its own memory.
    "layout_in_place": _on(lambda rng, s: lambda t: (t * 1).unsqueeze_(1).transpose_(0, 1)
                           .squeeze_(0).swapdims_(0, -1).swapaxes_(-1, 0).t_() * 2, rank=2),
    # as_strided reads the memory eager PyTorch laid the tensor out in:
    # overlapping windows of a contiguous tensor (Longformer's chunks), of its
    # transpose (whose memory is the tensor's), of a row slice (which starts
    # where its first row is), from an explicit offset into an op's result, and
    # of a broadcast (several elements at each position).
    "as_strided_windows": _as_strided(lambda t, size, stride, nd: t.as_strided(size, stride)),
    "as_strided_transposed": _as_strided(
        lambda t, size, stride, nd: t.t().as_strided(size, stride).transpose(1, 2)),
    "as_strided_of_slice": _as_strided(lambda t, size, stride, nd: torch.cat([t, t[:1]])[1:]
                                       .as_strided(size, stride)),
    "as_strided_offset": _as_strided(lambda t, size, stride, nd: torch.cat([t[:1], t])
                                     .as_strided(size, stride, nd[1])),
    "as_strided_broadcast": _as_strided(lambda t, size, stride, nd: t[:1].expand(*nd)
                                        .as_strided(size[1:], (0, 1))),
    "fill_diagonal_": lambda rng: (lambda shape, wrap: (
        Elementwise(lambda t: (t * 2).fill_diagonal_(-1.5, wrap=wrap)), [torch.randn(*shape)]))(
            rng.choice([[rng.randint(1, 6), rng.randint(1, 6)], [3, 3, 3], [2, 2, 2, 2]]),
            rng.random() < 0.5),
    "diagflat": lambda rng: (lambda o: (Elementwise(lambda t: torch.diagflat(t, o)),
                                        [torch.randn(2, rng.randint(1, 3))]))(rng.randint(-2, 2)),
    "linalg_diagonal": _on(lambda rng, s: (lambda o: lambda t: torch.linalg.diagonal(
        t, offset=o) * 2)(rng.randint(-2, 2)), rank=3),
    # The functional forms of writing through a view: the view's values
    # replaced by a function of the view itself (both reach the gradient).
    "select_scatter": _on(lambda rng, s: (lambda d, i: lambda t: torch.select_scatter(
        t, t.select(d, i) * 3 + 1, d, i))(*(lambda d: (d, rng.randint(-s[d], s[d] - 1)))(
            rng.randrange(len(s))))),
    "slice_scatter": _on(lambda rng, s: (lambda start, step: lambda t: torch.slice_scatter(
        t, t[start::step] * -2, dim=0, start=start, end=None, step=step))(
            rng.randint(0, s[0] - 1), rng.randint(1, 2))),
    "slice_scatter_bounds": _on(lambda rng, s: lambda t: torch.slice_scatter(
        t, t[:, 1:-1] * 3, dim=1, start=1, end=-1, step=1), rank=2, smallest=3),
    "diagonal_scatter": _on(lambda rng, s: (lambda o, d1, d2: lambda t: torch.diagonal_scatter(
        t, torch.diagonal(t, o, d1, d2).exp(), o, d1, d2))(
            rng.randint(-2, 2), *rng.sample(range(3), 2)), rank=3),
    "linalg_vander": _on(lambda rng, s: (lambda n: lambda t: torch.linalg.vander(t, N=n) * 1)(
        rng.choice([None, 2, 4]))),
    "linalg_vander_int": lambda rng: (Elementwise(lambda t: torch.linalg.vander(
        torch.tensor([[1, -2, 3], [0, 4, 5]], dtype=torch.int32), N=4) * t), [torch.randn(4)]),
    "broadcast_to": _on(lambda rng, s: lambda t: torch.broadcast_to(t[..., :1], (2, *s[:-1], 3)) * 1),
    "broadcast_to_keeping": _on(lambda rng, s: lambda t: torch.broadcast_to(t, (3, *[-1] * len(s))) + 0),
    "repeat_interleave": _on(lambda rng, s: (lambda d: lambda t: t.repeat_interleave(2, dim=d))(
        _dim(rng, s))),
    "repeat_interleave_flat": _on(lambda rng, s: lambda t: torch.repeat_interleave(t, 3)),
    "repeat_interleave_counts": _on(lambda rng, s: lambda t: t.repeat_interleave(
        torch.tensor([2, 0, 1, 3][:s[0]]), dim=0), smallest=1),
    "flip": _on(lambda rng, s: (lambda d: lambda t: torch.flip(t, [d]))(_dim(rng, s))),
    "flip_all": _on(lambda rng, s: lambda t: t.flip(list(range(len(s))))),
    "roll": _on(lambda rng, s: (lambda d, k: lambda t: torch.roll(t, k, d))(
        _dim(rng, s), rng.randint(-5, 5))),
    "roll_flat": _on(lambda rng, s: lambda t: t.roll(-3)),
    "roll_two_dims": _on(lambda rng, s: lambda t: torch.roll(t, (1, -2), (0, 1)), rank=2),
    "unbind": _on(lambda rng, s: (lambda d: lambda t: _sum_all(torch.unbind(t, d)))(_dim(rng, s))),
    "unflatten": _on(lambda rng, s: (lambda sizes: lambda t: t.reshape(-1).unflatten(0, sizes) * 2)(
        (-1, 1) if rng.random() < 0.5 else (1, -1))),
    "nn_unflatten": lambda rng: (nn.Unflatten(1, (2, 3)), [torch.randn(2, 6)]),
    "movedim": _on(lambda rng, s: lambda t: torch.movedim(t, 0, -1) * 1, rank=3),
    "movedim_lists": _on(lambda rng, s: lambda t: t.movedim((0, 1), (2, 0)) + 0, rank=3),
    "swapaxes": _on(lambda rng, s: lambda t: torch.swapaxes(t, 0, 2) * 1, rank=3),
    "narrow_copy": _on(lambda rng, s: lambda t: t.narrow_copy(0, 0, 1), smallest=2),
    "tensor_split_sections": _on(lambda rng, s: lambda t: _sum_all(torch.tensor_split(t, 3, dim=-1) * 2)),
    "tensor_split_indices": _on(lambda rng, s: lambda t: torch.tensor_split(t, [1, -1], dim=0)[1]
                                * 2, smallest=3),
    "diagonal": _on(lambda rng, s: (lambda o: lambda t: torch.diagonal(t, o, 0, -1) * 2)(
        rng.randint(-2, 2)), rank=3),
    "diag_matrix": _on(lambda rng, s: lambda t: torch.diag(t, 1) * 3, rank=2),
    "diag_vector": _on(lambda rng, s: (lambda o: lambda t: torch.diag(t, o))(rng.randint(-2, 2)),
                       rank=1),
    # A vector's diagonal matrix at two of the result's dims, on a diagonal off the main one.
    "diag_embed": _on(lambda rng, s: (lambda o, d1, d2: lambda t: torch.diag_embed(t, o, d1, d2))(
        rng.randint(-2, 2), *(d - (len(s) + 1 if rng.random() < 0.3 else 0)
                              for d in rng.sample(range(len(s) + 1), 2))), rank=2),
    "diag_embed_default": _on(lambda rng, s: lambda t: torch.diag_embed(t) * 2),
    # Quarter turns, either way, over any two dims.
    "rot90": _on(lambda rng, s: (lambda k, dims: lambda t: torch.rot90(t, k, dims))(
        rng.randint(-5, 5), rng.sample(range(len(s)), 2)), rank=3),
    "triu": _on(lambda rng, s: (lambda o: lambda t: torch.triu(t, o))(rng.randint(-1, 1)), rank=3),
    "tril": _on(lambda rng, s: (lambda o: lambda t: t.tril(o))(rng.randint(-1, 1)), rank=2),
    "triu_tril_in_place": _on(lambda rng, s: (lambda o: lambda t: (t * 1).triu_(o).tril_(o + 1))(
        rng.randint(-1, 1)), rank=3),
    "pixel_shuffle": lambda rng: (nn.PixelShuffle(2), [torch.randn(2, 8, 3, 2)]),
    "pixel_unshuffle": lambda rng: (nn.PixelUnshuffle(2), [torch.randn(1, 3, 4, 6)]),
    "channel_shuffle": lambda rng: (nn.ChannelShuffle(2), [torch.randn(2, 6, 3, 2)]),
    "tensor_unfold": _on(lambda rng, s: (lambda step: lambda t: t.unfold(0, 2, step) * 1)(
        rng.randint(1, 2)), smallest=2),
    "im2col": lambda rng: (Elementwise(lambda t: F.unfold(t, (2, 3), dilation=(1, 2), padding=1,
                                                          stride=(2, 1))),
                           [torch.randn(2, 3, 5, 6)]),
    "col2im": lambda rng: (Elementwise(lambda t: F.fold(t, (4, 5), 2, padding=(1, 0), stride=1)),
                           [torch.randn(2, 3 * 4, 20)]),
}

# PyTorch has no derivative for these (popsim refuses to train through them).
NOT_DIFFERENTIABLE = {"channel_shuffle", "narrow_copy",
                      # PyTorch 1.13 writes vander's powers into a slice in place, which
                      # its backward refuses; popsim refuses training through it too
                      "vander"}
