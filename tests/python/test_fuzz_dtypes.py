"""Differential fuzzing of dtypes: ops with operands of random dtypes, random
`dtype=` and `out=` arguments, and indexing with index tensors and masks of
every index dtype, against eager PyTorch.

Each example must give eager's result dtype and values; where eager refuses
the combination, popsim must refuse it too, with one of its own errors,
never a value. float16 follows popsim's documented rule (each op computed in
float32, its result rounded to float16), so the reference runs eagerly under
HalfOnCpu, which is that rule on a CPU without float16 kernels. Reading
through a boolean mask has a data-dependent shape, which popsim refuses by
design (as PopTorch does): those examples must raise that error.

`make test` runs a fixed-seed slice; POPSIM_FUZZ_EXAMPLES=N runs N fresh
examples (`make fuzz`).
"""

import os
import warnings

import pytest
import torch
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import popsim
from models import Function
from popsim.frontend.half_tracing import HalfOnCpu

EXAMPLES = int(os.environ.get("POPSIM_FUZZ_EXAMPLES", "0"))
FUZZ = settings(max_examples=EXAMPLES or 150, derandomize=EXAMPLES == 0, database=None,
                deadline=None, suppress_health_check=[HealthCheck.too_slow])

DTYPES = [torch.bool, torch.int32, torch.int64, torch.float16, torch.float32]
INDEX_DTYPES = [torch.bool, torch.uint8, torch.int32, torch.int64]
SHAPE = (3, 4)

pytestmark = pytest.mark.timeout(600)

# Ops of one or two tensors (and numbers). Each takes its operands positionally.
UNARY = {
    "neg": torch.neg, "abs": torch.abs, "exp": torch.exp, "sqrt": lambda x: torch.sqrt(x.abs()),
    "sign": torch.sign, "floor": torch.floor, "round": torch.round, "relu": torch.relu,
    "sigmoid": torch.sigmoid, "logical_not": torch.logical_not,
    "bitwise_not": torch.bitwise_not, "clamp": lambda x: torch.clamp(x, min=-1),
    "square": torch.square, "reciprocal": torch.reciprocal, "isnan": torch.isnan,
    "add_number": lambda x: x + 2, "mul_float": lambda x: x * 2.5, "div_number": lambda x: x / 3,
    "gt_float": lambda x: x > 1.5, "pow_number": lambda x: x ** 2,
}
BINARY = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
    "floor_divide": torch.floor_divide, "remainder": torch.remainder,
    "maximum": torch.maximum, "minimum": torch.minimum, "eq": torch.eq, "lt": torch.lt,
    "logical_and": torch.logical_and, "bitwise_and": torch.bitwise_and, "atan2": torch.atan2,
    "pow": lambda x, y: torch.pow(x.abs(), y), "add_alpha": lambda x, y: torch.add(x, y, alpha=2),
}
# Ops with a dtype= argument: the operand is converted to it before computing.
WITH_DTYPE = {
    "sum": lambda x, d: torch.sum(x, dtype=d), "sum_dim": lambda x, d: x.sum(1, dtype=d),
    "prod": lambda x, d: torch.prod(x, 1, dtype=d), "mean": lambda x, d: x.mean(1, dtype=d),
    "cumsum": lambda x, d: torch.cumsum(x, 0, dtype=d),
    "cumprod": lambda x, d: torch.cumprod(x, 1, dtype=d),
    "softmax": lambda x, d: torch.softmax(x, 1, dtype=d),
    "log_softmax": lambda x, d: torch.log_softmax(x, 1, dtype=d),
    "nansum": lambda x, d: torch.nansum(x, 1, dtype=d),
}
# Ops with an out= argument: eager computes in the result's dtype and casts
# it into the out tensor, refusing a cast to a lower category.
WITH_OUT = {
    "add": lambda x, y, o: torch.add(x, y, out=o), "mul": lambda x, y, o: torch.mul(x, y, out=o),
    "maximum": lambda x, y, o: torch.maximum(x, y, out=o),
    "neg": lambda x, y, o: torch.neg(x, out=o), "abs": lambda x, y, o: torch.abs(x, out=o),
    "exp": lambda x, y, o: torch.exp(x, out=o),
    "sum": lambda x, y, o: torch.sum(x, 1, out=o[:, 0]),
    "cumsum": lambda x, y, o: torch.cumsum(x, 1, out=o),
    "clamp": lambda x, y, o: torch.clamp(x, min=0, out=o),
    "where": lambda x, y, o: torch.where(x > 0, x, y, out=o),
}


def operand(draw, dtype, label):
    """A SHAPE tensor of `dtype` with values from -4 to 4, never 0 for integers
    (eager's integer division by zero raises where a device gives a value)."""
    if dtype == torch.bool:
        values = draw(st.lists(st.booleans(), min_size=12, max_size=12), label)
        return torch.tensor(values).view(SHAPE)
    if dtype.is_floating_point:
        values = draw(st.lists(st.floats(-4, 4, width=16), min_size=12, max_size=12), label)
    else:
        values = draw(st.lists(st.integers(1, 4).map(lambda v: v * draw(st.sampled_from([-1, 1]))),
                               min_size=12, max_size=12), label)
    return torch.tensor(values).to(dtype).view(SHAPE)


@st.composite
def examples(draw):
    """(name, function, operands): one op with operands of random dtypes."""
    kind = draw(st.sampled_from(["unary", "binary", "dtype", "out", "cast"]), "kind")
    first = operand(draw, draw(st.sampled_from(DTYPES), "dtype of x"), "x")
    if kind == "unary":
        name = draw(st.sampled_from(sorted(UNARY)), "op")
        return name, UNARY[name], (first,)
    if kind == "cast":
        target = draw(st.sampled_from(DTYPES), "target dtype")
        return f"to({target})", lambda x: x.to(target) * 1, (first,)
    second = operand(draw, draw(st.sampled_from(DTYPES), "dtype of y"), "y")
    if kind == "binary":
        name = draw(st.sampled_from(sorted(BINARY)), "op")
        return name, BINARY[name], (first, second)
    if kind == "dtype":
        name = draw(st.sampled_from(sorted(WITH_DTYPE)), "op")
        dtype = draw(st.sampled_from(DTYPES), "dtype=")
        return f"{name}(dtype={dtype})", lambda x: WITH_DTYPE[name](x, dtype), (first,)
    name = draw(st.sampled_from(sorted(WITH_OUT)), "op")
    out_dtype = draw(st.sampled_from(DTYPES), "out dtype")

    def with_out(x, y):
        out = torch.zeros(SHAPE, dtype=out_dtype)
        result = WITH_OUT[name](x, y, out)
        return out, result

    return f"{name}(out={out_dtype})", with_out, (first, second)


def eager(function, operands):
    """Eager's result, or the exception it raises."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            with HalfOnCpu(downcast_mixed=False):
                return function(*[t.clone() for t in operands])
        except (RuntimeError, TypeError, IndexError, ValueError) as error:
            return error


def assert_matches(actual, expected, what):
    if isinstance(expected, torch.Tensor):
        expected, actual = [expected], [actual]
    assert len(actual) == len(expected), what
    for a, e in zip(actual, expected):
        assert a.dtype == e.dtype, f"{what}: dtype {a.dtype}, eager {e.dtype}"
        assert a.shape == e.shape, what
        if e.dtype.is_floating_point:
            tolerance = 1e-3 if e.dtype == torch.float16 else 1e-5
            torch.testing.assert_close(a, e, rtol=tolerance, atol=tolerance, equal_nan=True,
                                       msg=what)
        else:
            assert torch.equal(a, e), f"{what}: {a} != eager {e}"


def run_popsim(function, operands):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return popsim.inferenceModel(Function(function))(*[t.clone() for t in operands])


def assert_refused(function, operands, eager_error):
    """popsim refuses what eager refuses: with one of its errors, or with
    eager's own (tracing runs the model, so PyTorch's checks speak first)."""
    with pytest.raises((popsim.Error, eager_error)):
        run_popsim(function, operands)


@FUZZ
@given(examples())
def test_ops_with_operands_of_random_dtypes_match_eager(example):
    name, function, operands = example
    what = f"{name} of {[t.dtype for t in operands]}"
    note(what)
    if os.environ.get("POPSIM_FUZZ_TRACE"):
        print(what, [t.tolist() for t in operands], flush=True)
    expected = eager(function, operands)
    if isinstance(expected, Exception):
        assert_refused(function, operands, type(expected))
        return
    assert_matches(run_popsim(function, operands), expected, what)


@st.composite
def index_examples(draw):
    """(name, function, operands, refused): indexing of a float32 tensor with
    an index tensor or mask of a random index dtype."""
    x = operand(draw, torch.float32, "x")
    index_dtype = draw(st.sampled_from(INDEX_DTYPES), "index dtype")
    if index_dtype in (torch.bool, torch.uint8):
        mask = operand(draw, torch.bool, "mask").to(index_dtype)
        kind = draw(st.sampled_from(["put", "put_row", "get", "masked_fill", "where"]), "op")
        if kind == "put":
            return f"x[mask {index_dtype}] = 7", _put(lambda x, m: (m,), 7.0), (x, mask), False
        if kind == "put_row":
            rows = mask[:, 0]
            return (f"x[rows {index_dtype}] = -1", _put(lambda x, m: (m,), -1.0), (x, rows),
                    False)
        if kind == "get":
            return f"x[mask {index_dtype}]", lambda x, m: x[m] * 1, (x, mask), True
        if kind == "masked_fill":
            return (f"masked_fill(mask {index_dtype})", lambda x, m: x.masked_fill(m, 5.0),
                    (x, mask), False)
        return f"where(mask {index_dtype})", lambda x, m: torch.where(m, x, -x), (x, mask), False
    positions = torch.tensor(draw(st.lists(st.integers(-3, 2), min_size=1, max_size=5),
                                  "positions"), dtype=index_dtype)
    kind = draw(st.sampled_from(["get", "put", "index_select", "gather", "accumulate"]), "op")
    if kind == "get":
        return f"x[index {index_dtype}]", lambda x, i: x[i] * 1, (x, positions), False
    if kind == "put":
        return f"x[index {index_dtype}] = 2", _put(lambda x, i: (i,), 2.0), (x, positions), False
    if kind == "accumulate":
        return (f"index_put_(accumulate, {index_dtype})",
                lambda x, i: x.clone().index_put_((i,), torch.ones(4), accumulate=True),
                (x, positions.remainder(3)), False)
    if kind == "index_select":
        return (f"index_select({index_dtype})", lambda x, i: torch.index_select(x, 1, i),
                (x, positions.remainder(4)), False)
    gather_index = positions.remainder(4)[:1].expand(3, 2).contiguous()
    return f"gather({index_dtype})", lambda x, i: torch.gather(x, 1, i), (x, gather_index), False


def _put(indices, value):
    def put(x, index):
        y = x.clone()
        y[indices(y, index)] = value
        return y
    return put


@FUZZ
@given(index_examples())
def test_indexing_with_index_tensors_and_masks_of_every_index_dtype_matches_eager(example):
    name, function, operands, refused = example
    note(name)
    expected = eager(function, operands)
    if refused or isinstance(expected, Exception):
        assert_refused(function, operands, type(expected) if not refused else popsim.Error)
        return
    assert_matches(run_popsim(function, operands), expected, name)
