"""Every supported op, forward, against eager PyTorch on random shapes.

Each case is a small module applying one op; shapes and op arguments are drawn
from a seeded generator, eight draws per case. popsim's result must equal
eager PyTorch's within fp32 tolerance (1e-5 relative).
"""

import random

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import popsim
from models import Function
from binary_cases import BINARY
from pointwise_cases import POINTWISE
from loss_cases import LOSSES
from normalization_cases import NORMALIZATIONS
from reduction_cases import REDUCTIONS
from window_cases import WINDOWS
from indexing_cases import INDEXING
from rearrangement_cases import REARRANGEMENTS
from recurrent_cases import RECURRENT
from conftest import assert_close

DRAWS = 8


class Fn(nn.Module):
    """A module around a function of the inputs (and optional parameters)."""

    def __init__(self, fn, **modules):
        super().__init__()
        self.fn = fn
        for name, module in modules.items():
            setattr(self, name, module)

    def forward(self, *inputs):
        return self.fn(self, *inputs)


def randint(rng, low, high):
    return rng.randint(low, high)


# Each case: name -> function(rng) returning (module, inputs).
def conv2d_case(rng):
    groups = rng.choice([1, 2, 3])
    cin, cout = groups * randint(rng, 1, 3), groups * randint(rng, 1, 3)
    k = rng.choice([1, 3, 5])
    stride, padding, dilation = rng.choice([1, 2]), rng.choice([0, 1, 2]), rng.choice([1, 2])
    size = randint(rng, (k - 1) * dilation + 1, 14)
    conv = nn.Conv2d(cin, cout, k, stride=stride, padding=padding, dilation=dilation,
                     groups=groups, bias=rng.choice([True, False]))
    return Fn(lambda m, x: m.conv(x), conv=conv), [torch.randn(randint(rng, 1, 3), cin, size, size + 1)]


def conv1d_case(rng):
    groups = rng.choice([1, 2, 3])
    cin, cout = groups * randint(rng, 1, 3), groups * randint(rng, 1, 3)
    k = rng.choice([1, 3, 5])
    stride, padding, dilation = rng.choice([1, 2]), rng.choice([0, 1, 2]), rng.choice([1, 2])
    size = randint(rng, (k - 1) * dilation + 1, 20)
    conv = nn.Conv1d(cin, cout, k, stride=stride, padding=padding, dilation=dilation,
                     groups=groups, bias=rng.choice([True, False]))
    shape = [cin, size] if rng.random() < 0.25 else [randint(rng, 1, 3), cin, size]  # unbatched
    return Fn(lambda m, x: m.conv(x), conv=conv), [torch.randn(*shape)]


def conv3d_case(rng):
    groups = rng.choice([1, 2])
    cin, cout = groups * randint(rng, 1, 2), groups * randint(rng, 1, 3)
    k = rng.choice([1, 2, 3])
    stride, padding, dilation = rng.choice([1, 2]), rng.choice([0, 1]), rng.choice([1, 2])
    conv = nn.Conv3d(cin, cout, k, stride=stride, padding=padding, dilation=dilation,
                     groups=groups, bias=rng.choice([True, False]))
    spatial = [randint(rng, (k - 1) * dilation + 1, 7) for _ in range(3)]
    batch = [] if rng.random() < 0.25 else [randint(rng, 1, 2)]
    return Fn(lambda m, x: m.conv(x), conv=conv), [torch.randn(*batch, cin, *spatial)]


def conv_transpose_case(dims):
    def case(rng):
        groups = rng.choice([1, 2])
        cin, cout = groups * randint(rng, 1, 3), groups * randint(rng, 1, 3)
        k = rng.choice([1, 2, 3])
        stride, dilation = rng.choice([1, 2, 3]), rng.choice([1, 2])
        padding = rng.choice([0, 1])
        output_padding = rng.randrange(stride)  # popsim needs it below the stride
        if dilation * (k - 1) < padding * 2 - output_padding:  # an empty output
            padding = 0
        cls = {1: nn.ConvTranspose1d, 2: nn.ConvTranspose2d, 3: nn.ConvTranspose3d}[dims]
        conv = cls(cin, cout, k, stride=stride, padding=padding, output_padding=output_padding,
                   groups=groups, dilation=dilation, bias=rng.choice([True, False]))
        spatial = [randint(rng, 1, 7 if dims < 3 else 4) for _ in range(dims)]
        batch = [] if rng.random() < 0.25 else [randint(rng, 1, 3)]
        return Fn(lambda m, x: m.conv(x), conv=conv), [torch.randn(*batch, cin, *spatial)]
    return case


def linear_case(rng):
    features = randint(rng, 1, 40)
    lin = nn.Linear(features, randint(rng, 1, 30), bias=rng.choice([True, False]))
    lead = [randint(rng, 1, 4) for _ in range(randint(rng, 1, 3))]
    return Fn(lambda m, x: m.lin(x), lin=lin), [torch.randn(*lead, features)]


def matmul_case(rng):
    m, k, n = randint(rng, 1, 9), randint(rng, 1, 9), randint(rng, 1, 9)
    kind = rng.choice(["2d", "batched", "broadcast", "vector_left", "vector_right", "dot"])
    shapes = {
        "2d": ([m, k], [k, n]),
        "batched": ([3, m, k], [3, k, n]),
        "broadcast": ([2, 1, m, k], [3, k, n]),
        "vector_left": ([k], [2, k, n]),
        "vector_right": ([2, m, k], [k]),
        "dot": ([k], [k]),
    }[kind]
    a, b = (torch.randn(*s) for s in shapes)
    return Fn(lambda _, x, y: torch.matmul(x, y)), [a, b]


def addmm_case(rng):
    m, k, n = randint(rng, 1, 9), randint(rng, 1, 9), randint(rng, 1, 9)
    # alpha 0 leaves the product out, beta 0 the bias (eager's special cases, which
    # test_nonfinite.py checks with NaN and infinities in the left-out operand).
    beta, alpha = rng.choice([1.0, 0.5, 0.0]), rng.choice([1.0, 2.0, 0.0])
    return (Fn(lambda _, b, x, y: torch.addmm(b, x, y, beta=beta, alpha=alpha)),
            [torch.randn(n), torch.randn(m, k), torch.randn(k, n)])


def addmv_case(rng):
    m, k = randint(rng, 1, 9), randint(rng, 1, 9)
    beta, alpha = rng.choice([1.0, 0.5, 0.0]), rng.choice([1.0, 2.0, 0.0])
    return (Fn(lambda _, b, x, v: torch.addmv(b, x, v, beta=beta, alpha=alpha)),
            [torch.randn(m), torch.randn(m, k), torch.randn(k)])


# einsum equations: products, batches, transposes, sums, "...", three
# operands, implicit outputs; each label's size drawn per case.
EINSUMS = ["ij,jk->ik", "bij,bjk->bik", "bhqd,bhkd->bhqk", "i,j->ij", "ij->ji", "ij->",
           "bi,bi->b", "...ij,...jk->...ik", "ijk,ik->j", "ij,jk,kl->il", "ij,jk", "i,i",
           "bn,anm,bm->ba", "ik,k->i"]


def einsum_case(rng):
    equation = rng.choice(EINSUMS)
    sizes = {label: randint(rng, 1, 5) for label in "abcdhijklmnqr"}
    ellipsis = [randint(rng, 1, 3) for _ in range(randint(rng, 0, 2))]
    terms = equation.split("->")[0].split(",")

    def operand(term):
        shape = [sizes[label] for label in term.replace("...", "")]
        return torch.randn((ellipsis if "..." in term else []) + shape)

    return Fn(lambda _, *xs: torch.einsum(equation, *xs)), [operand(t) for t in terms]


def tensordot_case(rng):
    a_shape = [randint(rng, 1, 4) for _ in range(randint(rng, 1, 3))]
    pairs = randint(rng, 0, len(a_shape))
    paired = rng.sample(range(len(a_shape)), pairs)
    # (b keeps a dimension: a 0-d input has no batch dimension to split)
    b_extra = [randint(rng, 1, 4) for _ in range(randint(rng, 0 if pairs else 1, 2))]
    b_shape = [a_shape[d] for d in paired] + b_extra
    order = list(range(len(b_shape)))
    rng.shuffle(order)
    b_shape = [b_shape[i] for i in order]
    dims_b = [order.index(i) for i in range(pairs)]
    if rng.random() < 0.3 and paired == list(range(len(a_shape) - pairs, len(a_shape))) \
            and dims_b == list(range(pairs)):
        dims = pairs  # the int form
    else:
        dims = (paired, dims_b)
    return (Fn(lambda _, x, y: torch.tensordot(x, y, dims=dims)),
            [torch.randn(a_shape), torch.randn(b_shape)])


def outer_case(rng):
    return (Fn(lambda _, x, y: torch.outer(x, y)),
            [torch.randn(randint(rng, 1, 6)), torch.randn(randint(rng, 1, 6))])


def addr_case(rng):
    m, n = randint(rng, 1, 6), randint(rng, 1, 6)
    beta, alpha = rng.choice([1.0, 0.5, 0.0]), rng.choice([1.0, 2.0])
    return (Fn(lambda _, b, x, y: torch.addr(b, x, y, beta=beta, alpha=alpha)),
            [torch.randn(m, n), torch.randn(m), torch.randn(n)])


def addbmm_case(rng):
    b, m, k, n = randint(rng, 1, 4), randint(rng, 1, 5), randint(rng, 1, 5), randint(rng, 1, 5)
    beta, alpha = rng.choice([1.0, 0.5, 0.0]), rng.choice([1.0, 2.0])
    return (Fn(lambda _, c, x, y: torch.addbmm(c, x, y, beta=beta, alpha=alpha)),
            [torch.randn(n), torch.randn(b, m, k), torch.randn(b, k, n)])


def inner_case(rng):
    k = randint(rng, 1, 5)
    a = [randint(rng, 1, 3) for _ in range(randint(rng, 0, 2))] + [k]
    b = [randint(rng, 1, 3) for _ in range(randint(rng, 0, 2))] + [k]
    return Fn(lambda _, x, y: torch.inner(x, y)), [torch.randn(a), torch.randn(b)]


def kron_case(rng):
    a = [randint(rng, 1, 3) for _ in range(randint(rng, 1, 3))]
    b = [randint(rng, 1, 3) for _ in range(randint(rng, 1, 3))]
    return Fn(lambda _, x, y: torch.kron(x, y)), [torch.randn(*a), torch.randn(*b)]


def bilinear_case(rng):
    lead = [randint(rng, 1, 4) for _ in range(randint(rng, 1, 2))]
    i, j, o = randint(rng, 1, 5), randint(rng, 1, 5), randint(rng, 1, 4)
    layer = nn.Bilinear(i, j, o, bias=rng.choice([True, False]))
    return Fn(lambda m, x, y: m.layer(x, y), layer=layer), [torch.randn(*lead, i),
                                                             torch.randn(*lead, j)]


def bmm_case(rng):
    b, m, k, n = randint(rng, 1, 4), randint(rng, 1, 7), randint(rng, 1, 7), randint(rng, 1, 7)
    return Fn(lambda _, x, y: torch.bmm(x, y)), [torch.randn(b, m, k), torch.randn(b, k, n)]


def mv_case(rng):
    m, k = randint(rng, 1, 9), randint(rng, 1, 9)
    return Fn(lambda _, x, v: torch.mv(x, v)), [torch.randn(m, k), torch.randn(k)]


def dot_case(rng):
    n = randint(rng, 1, 9)
    dot = rng.choice([torch.dot, torch.vdot])
    return Fn(lambda _, x, y: dot(x, y)), [torch.randn(n), torch.randn(n)]


def matrix_power_case(rng):
    batch = [randint(rng, 1, 3) for _ in range(randint(rng, 0, 2))]
    size, n = randint(rng, 1, 4), randint(rng, 0, 6)
    power = rng.choice([torch.matrix_power, torch.linalg.matrix_power])
    # (Scaled so that A^6 stays near 1.)
    return Fn(lambda _, x: power(x, n)), [torch.randn(*batch, size, size) / (size + 1)]


def multi_dot_case(rng):
    """A chain of 2 to 5 matrices (multi_dot's ends may be vectors), whose
    sizes make PyTorch pick different orders of the products."""
    sizes = [randint(rng, 1, 6) for _ in range(randint(rng, 3, 6))]
    shapes = [[rows, columns] for rows, columns in zip(sizes, sizes[1:])]
    if rng.random() < 0.3:
        shapes[0] = shapes[0][1:]
    if rng.random() < 0.3 and len(shapes) > 1:
        shapes[-1] = shapes[-1][:1]
    chain = torch.linalg.multi_dot
    if len(shapes[0]) == len(shapes[-1]) == 2 and rng.random() < 0.3:
        chain = lambda matrices: torch.chain_matmul(*matrices)  # noqa: E731
    return Fn(lambda _, *m: chain(list(m))), [torch.randn(*shape) for shape in shapes]


def dist_case(rng):
    """dist of operands that broadcast, in the norms of every kind of order."""
    shape = [randint(rng, 1, 4) for _ in range(randint(rng, 1, 3))]
    p = rng.choice([2.0, 1.0, 3.0, 0.5, 0.0, float("inf"), -float("inf")])
    other = shape[rng.randrange(len(shape)):]
    return Fn(lambda _, x, y: torch.dist(x, y, p)), [torch.randn(shape), torch.randn(other)]


def vecdot_case(rng):
    shape = [randint(rng, 1, 4) for _ in range(randint(rng, 1, 3))]
    dim = rng.randrange(-len(shape), len(shape))
    other = [1 if rng.random() < 0.3 else n for n in shape]
    return Fn(lambda _, x, y: torch.linalg.vecdot(x, y, dim=dim)), [torch.randn(*shape),
                                                                    torch.randn(*other)]


def random_tensor(rng, low_rank=1, high_rank=4):
    return torch.randn(*[randint(rng, 1, 6) for _ in range(randint(rng, low_rank, high_rank))])


def unary_case(fn, positive=False):
    def case(rng):
        x = random_tensor(rng)
        if positive:
            x = x.abs() + 0.1
        return Fn(lambda _, t: fn(t)), [x]
    return case


def glu_case(rng):
    shape = [randint(rng, 1, 4) for _ in range(randint(rng, 1, 3))]
    dim = randint(rng, 0, len(shape) - 1)
    shape[dim] *= 2
    if rng.random() < 0.5:
        dim -= len(shape)  # the same dimension, counted from the end
    return Fn(lambda _, t: F.glu(t, dim=dim)), [torch.randn(*shape)]


def softmax_case(log):
    def case(rng):
        x = random_tensor(rng)
        dim = randint(rng, -x.dim(), x.dim() - 1)
        fn = F.log_softmax if log else F.softmax
        return Fn(lambda _, t: fn(t, dim=dim)), [x]
    return case


def max_pool_case(rng):
    k = randint(rng, 1, 3)
    stride = rng.choice([None, 1, 2])
    padding = randint(rng, 0, k // 2)
    dilation = rng.choice([1, 2])
    ceil = rng.choice([False, True])
    size = randint(rng, (k - 1) * dilation + 1, 12)
    pool = nn.MaxPool2d(k, stride=stride, padding=padding, dilation=dilation, ceil_mode=ceil)
    return Fn(lambda m, x: m.pool(x), pool=pool), [torch.randn(randint(rng, 1, 3), 3, size, size)]


def avg_pool_case(rng):
    k = randint(rng, 1, 3)
    padding = randint(rng, 0, k // 2)
    pool = nn.AvgPool2d(k, stride=rng.choice([None, 1, 2]), padding=padding,
                        ceil_mode=rng.choice([False, True]),
                        count_include_pad=rng.choice([False, True]),
                        divisor_override=rng.choice([None, None, 3]))
    size = randint(rng, k, 12)
    return Fn(lambda m, x: m.pool(x), pool=pool), [torch.randn(randint(rng, 1, 3), 2, size, size)]


def adaptive_avg_pool_case(rng):
    out = (randint(rng, 1, 4), randint(rng, 1, 4))
    size = (randint(rng, out[0], 11), randint(rng, out[1], 11))
    pool = nn.AdaptiveAvgPool2d(out)
    return Fn(lambda m, x: m.pool(x), pool=pool), [torch.randn(2, 3, *size)]


def batch_norm_case(rng):
    channels = randint(rng, 1, 8)
    rank = rng.choice([2, 3, 4])
    norm = {2: nn.BatchNorm1d, 3: nn.BatchNorm1d, 4: nn.BatchNorm2d}[rank](
        channels, affine=rng.choice([True, False]))
    with torch.no_grad():
        norm.running_mean.uniform_(-1, 1)
        norm.running_var.uniform_(0.5, 2)
        if norm.affine:
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.uniform_(-1, 1)
    shape = [randint(rng, 1, 4), channels] + [randint(rng, 1, 6) for _ in range(rank - 2)]
    return Fn(lambda m, x: m.norm(x), norm=norm), [torch.randn(*shape)]


def layer_norm_case(rng):
    shape = [randint(rng, 1, 5) for _ in range(randint(rng, 2, 4))]
    normalized = shape[-randint(rng, 1, len(shape) - 1):]
    norm = nn.LayerNorm(normalized, elementwise_affine=rng.choice([True, False]))
    if norm.elementwise_affine:
        with torch.no_grad():
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.uniform_(-1, 1)
    return Fn(lambda m, x: m.norm(x), norm=norm), [torch.randn(*shape)]


def dropout_case(rng):
    drop = nn.Dropout(p=rng.choice([0.1, 0.5]))
    return Fn(lambda m, x: m.drop(x) * 2, drop=drop), [random_tensor(rng)]


def broadcast_pair(rng):
    shape = [randint(rng, 1, 5) for _ in range(randint(rng, 1, 4))]
    other = [d if rng.random() < 0.6 else 1 for d in shape][rng.randint(0, len(shape) - 1):]
    pair = [shape, other]
    rng.shuffle(pair)
    return torch.randn(*pair[0]), torch.randn(*pair[1])


def binary_case(fn):
    def case(rng):
        a, b = broadcast_pair(rng)
        if fn is torch.div:
            b = b.sign() * (b.abs() + 0.5)
        return Fn(lambda _, x, y: fn(x, y)), [a, b]
    return case


SCALAR_OPS = {
    "add": lambda t, c: t + c, "radd": lambda t, c: c + t, "sub": lambda t, c: t - c,
    "rsub": lambda t, c: c - t, "mul": lambda t, c: t * c, "rmul": lambda t, c: c * t,
    "div": lambda t, c: t / c, "neg": lambda t, c: -t,
    "add_alpha": lambda t, c: torch.add(t, t * 2, alpha=c),
}


def scalar_case(op):
    def case(rng):
        scalar = rng.choice([2.0, -0.5, 3])
        return Fn(lambda _, t: SCALAR_OPS[op](t, scalar)), [random_tensor(rng)]
    return case


LAYOUT_OPS = {
    "flatten": lambda t: torch.flatten(t, 1) + 1,
    "view": lambda t: t.view(t.size(0), -1) * 2,
    "reshape": lambda t: t.reshape(-1, t.shape[-1]) - 1,
    "permute": lambda t: t.permute(2, 0, 3, 1),
    "transpose": lambda t: t.transpose(1, -1).contiguous(),
    "contiguous": lambda t: t.contiguous() * 3,
    "unsqueeze": lambda t: t.unsqueeze(2) + t.unsqueeze(2),
    "squeeze": lambda t: t[:, :1].squeeze(1) * 2,
    "select": lambda t: t.select(1, -1) + t[:, 0],
    "slice": lambda t: t[:, 1:, ::2],
    "narrow": lambda t: t.narrow(3, 0, 1),
    "chunk": lambda t: sum(c.sum(dim=1) for c in t.chunk(2, dim=1)),
    "split": lambda t: torch.cat(list(reversed(t.split(2, dim=3))), dim=3),
    "t": lambda t: t.flatten(1).t() * 1.5,
    "expand": lambda t: t[:, :1].expand(-1, 3, -1, -1) * 2,
    "expand_as": lambda t: t[:1].expand_as(t) - t,
    "view_as": lambda t: t.flatten().view_as(t) * 2,
    "reshape_as": lambda t: (t.transpose(0, 1) * 2).reshape_as(t),
    "numpy_T": lambda t: t[0, 0].T * 2,
    "mT": lambda t: t.mT + 1,
    "mH_adjoint": lambda t: t.mH * 2 + t.adjoint(),
    "matrix_H": lambda t: t[0, 0].H - 1,
}


def layout_case(op):
    def case(rng):
        x = torch.randn(*[randint(rng, 1, 5) for _ in range(4)])
        return Fn(lambda _, t: LAYOUT_OPS[op](t)), [x]
    return case


# Tensors made like another one (constants: trace shapes are static).
CREATION_OPS = {
    "zeros_like": lambda t: t * 2 + torch.zeros_like(t),
    "ones_like": lambda t: t * torch.ones_like(t) - 1,
    "full_like": lambda t: t - torch.full_like(t, 2.5),
    "new_zeros": lambda t: t[:, 0] + t.new_zeros(t[:, 0].shape),
    "new_ones": lambda t: t.flatten(1) * t.new_ones(t.flatten(1).shape[1]),
    "new_full": lambda t: t + t.new_full(t.shape[-1:], -1.5),
}


def creation_case(op):
    def case(rng):
        x = torch.randn(*[randint(rng, 1, 5) for _ in range(3)])
        return Fn(lambda _, t: CREATION_OPS[op](t)), [x]
    return case


def cat_case(rng):
    dim = randint(rng, 0, 2)
    base = [randint(rng, 1, 4) for _ in range(3)]
    tensors = []
    for _ in range(randint(rng, 2, 4)):
        shape = list(base)
        shape[dim] = randint(rng, 1, 4)
        tensors.append(torch.randn(*shape))
    if rng.random() < 0.5:
        return Fn(lambda _, *ts: torch.cat(ts, dim=dim)), tensors
    same = [torch.randn(*base) for _ in tensors]
    return Fn(lambda _, *ts: torch.stack(ts, dim=dim)), same


def reduction_case(fn):
    def case(rng):
        x = random_tensor(rng, 2, 4)
        kind = rng.choice(["all", "dims"])
        if kind == "all":
            return Fn(lambda _, t: fn(t)), [x]
        dims = sorted(rng.sample(range(x.dim()), randint(rng, 1, x.dim())))
        keepdim = rng.choice([True, False])
        return Fn(lambda _, t: fn(t, dim=dims, keepdim=keepdim)), [x]
    return case


def embedding_case(rng):
    rows, width = randint(rng, 2, 20), randint(rng, 1, 8)
    emb = nn.Embedding(rows, width, padding_idx=rng.choice([None, 0]))
    ids = torch.randint(0, rows, (randint(rng, 1, 4), randint(rng, 1, 6)))
    return Fn(lambda m, i: m.emb(i) * 2, emb=emb), [ids]


CASES = {
    "conv1d": conv1d_case,
    "conv2d": conv2d_case,
    "conv_transpose1d": conv_transpose_case(1),
    "conv_transpose2d": conv_transpose_case(2),
    "conv3d": conv3d_case,
    "conv_transpose3d": conv_transpose_case(3),
    "linear": linear_case,
    "matmul": matmul_case,
    "addmm": addmm_case,
    "addmv": addmv_case,
    "einsum": einsum_case,
    "tensordot": tensordot_case,
    "outer": outer_case,
    "addr": addr_case,
    "addbmm": addbmm_case,
    "inner": inner_case,
    "kron": kron_case,
    "bilinear": bilinear_case,
    "bmm": bmm_case,
    "mv": mv_case,
    "dot": dot_case,
    "matrix_power": matrix_power_case,
    "multi_dot": multi_dot_case,
    "dist": dist_case,
    "vecdot": vecdot_case,
    # The shape as a tensor (torchvision's detection models read it while traced).
    "shape_as_tensor": lambda rng: (
        Fn(lambda _, x: x * torch._shape_as_tensor(x)[-1].float()), [random_tensor(rng)]),
    "relu": unary_case(F.relu),
    "gelu": unary_case(F.gelu),
    "gelu_tanh": unary_case(lambda t: F.gelu(t, approximate="tanh")),
    "sigmoid": unary_case(torch.sigmoid),
    "tanh": unary_case(torch.tanh),
    "exp": unary_case(torch.exp),
    "log": unary_case(torch.log, positive=True),
    "sqrt": unary_case(torch.sqrt, positive=True),
    "abs": unary_case(torch.abs),
    "glu": glu_case,
    "softmax": softmax_case(log=False),
    "log_softmax": softmax_case(log=True),
    "max_pool2d": max_pool_case,
    "avg_pool2d": avg_pool_case,
    "adaptive_avg_pool2d": adaptive_avg_pool_case,
    "batch_norm": batch_norm_case,
    "layer_norm": layer_norm_case,
    "dropout": dropout_case,
    "add": binary_case(torch.add),
    "sub": binary_case(torch.sub),
    "mul": binary_case(torch.mul),
    "div": binary_case(torch.div),
    **{f"scalar_{op}": scalar_case(op) for op in SCALAR_OPS},
    **{f"layout_{op}": layout_case(op) for op in LAYOUT_OPS},
    **{f"creation_{op}": creation_case(op) for op in CREATION_OPS},
    "cat_stack": cat_case,
    "mean": reduction_case(torch.mean),
    "sum": reduction_case(torch.sum),
    "embedding": embedding_case,
    **{f"pointwise_{name}": case for name, (_, case) in POINTWISE.items()},
    **{f"binary_{name}": case for name, (_, case) in BINARY.items()},
    **{f"reduction_{name}": case for name, case in REDUCTIONS.items()},
    **{f"normalization_{name}": case for name, case in NORMALIZATIONS.items()},
    **{f"loss_{name}": case for name, case in LOSSES.items()},
    **{f"window_{name}": case for name, case in WINDOWS.items()},
    **{f"indexing_{name}": case for name, case in INDEXING.items()},
    **{f"rearrangement_{name}": case for name, case in REARRANGEMENTS.items()},
    **{f"recurrent_{name}": case for name, case in RECURRENT.items()},
}


@pytest.mark.parametrize("draw", range(DRAWS))
@pytest.mark.parametrize("op", sorted(CASES))
def test_op_matches_eager(op, draw):
    rng = random.Random(f"{op}-{draw}")
    torch.manual_seed(rng.randint(0, 2**31))
    module, inputs = CASES[op](rng)
    module.eval()
    with torch.no_grad():
        expected = module(*inputs)
    model = popsim.inferenceModel(module)
    actual = model(*inputs)
    assert_close(actual, expected)


class _DivideByThree(nn.Module):
    def forward(self, x):
        return x / 3.0


class _MultiplyByAThird(nn.Module):
    def forward(self, x):
        return x * (1 / 3.0)


def test_a_division_by_a_number_divides_as_eager_and_the_ipu_do():
    """x / c is a division, not a multiply by 1 / c: PopTorch hands aten::div to PopART
    as a Div whatever its divisor, and eager divides. The results equal eager's bit for
    bit, and a float16 division costs the IPU's divide (PopLibs: 21 cycles per vector of
    4 values against a multiply's 3)."""
    x = torch.randn(4096)
    assert not torch.equal(x * (1 / 3.0), x / 3.0)  # a multiply would not match
    assert torch.equal(popsim.inferenceModel(_DivideByThree())(x), x / 3.0)
    half = torch.randn(64, 4096).half()
    programs = []
    for model in (_DivideByThree(), _MultiplyByAThird()):
        opts = popsim.Options()
        opts.Simulator.costOnly()
        executor = popsim.inferenceModel(model.half(), opts)
        executor(half)
        ops = [step.op for step in executor._executable.program()]
        programs.append((executor.cycleCount(), ops))
    (divide_cycles, divide_ops), (multiply_cycles, multiply_ops) = programs
    assert "div" in divide_ops and "div" not in multiply_ops
    assert divide_cycles > multiply_cycles


@pytest.mark.parametrize("mode", ["nearest", "bilinear"])
def test_grid_sample_reaches_voxels_past_floats_exact_integers(mode):
    """A volume of more than 2^24 voxels: the gather's positions are exact
    (popsim computes them in int64), so odd positions near the end are read."""
    positions = torch.arange(257 * 256 * 256, dtype=torch.int64)
    volume = (positions % 1000).float().reshape(1, 1, 257, 256, 256)
    # Voxel (z, y, x) = (256, 255, 255 - k) sits at position 2^24 + 2^16 - 1 - k.
    x = (2 * (255 - torch.arange(4.0)) + 1) / 256 - 1
    grid = torch.stack([x, torch.full((4,), 511 / 256 - 1), torch.full((4,), 513 / 257 - 1)],
                       dim=-1).reshape(1, 1, 1, 4, 3)

    def sample(volume, grid):
        return F.grid_sample(volume, grid, mode=mode, align_corners=False)

    expected = sample(volume, grid)
    assert expected.flatten().tolist() == [(2 ** 24 + 2 ** 16 - 1 - k) % 1000 for k in range(4)]
    actual = popsim.inferenceModel(Function(sample))(volume, grid)
    torch.testing.assert_close(actual, expected, rtol=0, atol=0)
