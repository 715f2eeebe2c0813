"""Dtype conversions and narrow integer inputs, against eager PyTorch.

Casts follow PyTorch on x86-64 exactly: floats truncate toward zero, NaN and
out-of-range values give the integer type's minimum, int64 narrows to int32
by wrapping, anything non-zero is True. uint8, int8 and int16 inputs reach
the device widened to int32, which is exact for conversions and views;
arithmetic on them (which would wrap in eager PyTorch) is refused.
"""

import copy
import warnings

import pytest
import torch

import popsim
from conftest import assert_close
from models import Function, WithLoss, assert_sgd_steps_match_eager
from popsim.frontend.half_tracing import HalfOnCpu

SPECIAL = torch.tensor([[1.7, -2.9, float("nan"), 3e10, -3e10, 0.0, -0.0, float("inf"),
                         -float("inf"), 2147483520.0, -2147483648.0, 0.5]])


def assert_same(function, *inputs, options=None):
    expected = function(*[x.clone() for x in inputs])
    actual = popsim.inferenceModel(Function(function), options)(*inputs)
    if isinstance(expected, torch.Tensor):
        expected, actual = [expected], [actual]
    for e, a in zip(expected, actual):
        assert a.dtype == e.dtype
        assert torch.equal(a, e) or torch.allclose(a, e, equal_nan=True), (a, e)


@pytest.mark.parametrize("target", [torch.int32, torch.int64, torch.bool, torch.float32])
def test_float_casts_match_eager_on_special_values(target):
    assert_same(lambda x: x.to(target), SPECIAL)


@pytest.mark.parametrize("source", [torch.int32, torch.int64, torch.bool])
@pytest.mark.parametrize("target", [torch.int32, torch.int64, torch.bool, torch.float32])
def test_integer_and_bool_casts_match_eager(source, target):
    values = torch.tensor([[0, 1, -1, 7, 2**31 - 1, -2**31, 123456789]], dtype=torch.int64)
    if source == torch.int64:
        values = torch.cat([values, torch.tensor([[2**40 + 5, -2**35 - 3, 2**62, 0, 0, 0, 3]])])
    assert_same(lambda x: x.to(target), values.to(source))


def test_type_as_and_the_tensor_methods():
    ints = torch.tensor([[3, -4, 5]], dtype=torch.int32)
    floats = torch.tensor([[0.25, -1.5, 2.0]])
    assert_same(lambda i, f: (i.float() * f, f.long(), f.int().type_as(f), i.type_as(f)),
                ints, floats)


def test_a_cast_in_training_passes_gradients_around_it():
    class Masked(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(4, 4)

        def forward(self, x, target):
            y = self.layer(x)
            keep = y.bool().float()  # no gradient through the mask, as eagerly
            out = y * keep + x.int().float()
            return out, torch.nn.functional.mse_loss(out, target)

    torch.manual_seed(0)
    model = Masked()
    eager = Masked()
    eager.load_state_dict(model.state_dict())
    x, target = torch.randn(3, 4) * 3, torch.randn(3, 4)
    optimizer = torch.optim.SGD(eager.parameters(), lr=0.1)
    eager(x, target)[1].backward()
    optimizer.step()
    trainer = popsim.trainingModel(model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1))
    trainer(x, target)
    trainer.copyWeightsToHost()
    for name, value in eager.state_dict().items():
        torch.testing.assert_close(model.state_dict()[name], value, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16])
def test_narrow_integer_inputs_convert_and_view_exactly(dtype):
    info = torch.iinfo(dtype)
    x = torch.randint(info.min, info.max + 1, (6, 5), dtype=dtype)
    options = popsim.Options().deviceIterations(3)
    assert_same(lambda x: (x.float() / 255, x.long(), x[:, 1:3], x[:, ::2].int(), x.clone()), x,
                options=options)


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16])
def test_bitwise_ops_comparisons_extremes_and_selections_of_narrow_integers_are_exact(dtype):
    """Their results are values of the narrow type (or booleans), so the widened int32
    values give eager's, in the narrow dtype."""
    info = torch.iinfo(dtype)
    x, y = (torch.randint(info.min, info.max + 1, (4, 7), dtype=dtype) for _ in range(2))
    assert_same(lambda x, y: (x & y, x | y, x ^ y, torch.bitwise_and(x, y), x > y, x <= y,
                              x == y, torch.maximum(x, y), torch.minimum(x, y),
                              x.index_select(1, torch.tensor([4, 0]))), x, y)
    start = torch.tensor([2])
    assert_same(lambda x, start: x[:, start:start + 3], x, start)  # a slice bounded by data


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16])
def test_selections_of_narrow_integers_and_numbers_in_their_range_are_exact(dtype):
    """Each result element is an element of an operand (or a comparison with a number the
    narrow type holds), so the widened values give eager's, in the narrow dtype."""
    info = torch.iinfo(dtype)
    x, y = (torch.randint(info.min, info.max + 1, (4, 7), dtype=dtype) for _ in range(2))
    index = torch.tensor([[1, 0], [6, 6], [0, 3], [2, 5]])
    assert_same(lambda x, y: (
        x.flip(1), x.roll(2, 1), x[:, [3, 0]], x.gather(1, index), x.take(index),
        torch.where(x > y, x, y), x.max(1).values, x.max(), x.amin(0), x.sort(1).values,
        x.topk(2).values, torch.cat([x, y]), torch.stack([x, y]), x.tril(), x.repeat(2, 1),
        x.cummax(1).values, x.median(1).values), x, y)
    assert_same(lambda x: (x > 5, x == 0, x <= info.max, x & 3, x | 64, x ^ info.min,
                           torch.where(x > 0, x, 7), x > 2.5), x)


def test_numbers_a_narrow_type_does_not_hold_are_refused():
    # Eager wraps an integer into the tensor's type first (uint8 & 300 is uint8 & 44).
    images = torch.randint(0, 256, (2, 4), dtype=torch.uint8)
    for function in (lambda x: x & 300, lambda x: x > 300, lambda x: x == -1,
                     lambda x: torch.where(x > 0, x, 1.5)):
        with pytest.raises(popsim.UnsupportedOperationError, match="arithmetic on an uint8 tensor"):
            popsim.inferenceModel(Function(function))(images)

    class Threshold(torch.nn.Module):  # a buffer's read, which a trace types without dtype
        def __init__(self):
            super().__init__()
            self.register_buffer("levels", torch.tensor([3, 200], dtype=torch.uint8))

        def forward(self, x):
            return x * (self.levels > 256).float()

    with pytest.raises(popsim.UnsupportedOperationError,
                       match=r"arithmetic on buffer 'levels' \(uint8\)"):
        popsim.inferenceModel(Threshold())(torch.ones(2))


def test_arithmetic_on_narrow_integers_is_refused_with_the_fix():
    images = torch.randint(0, 256, (2, 4), dtype=torch.uint8)
    with pytest.raises(popsim.UnsupportedOperationError,
                       match=r"aten::add at .*test_dtypes.py:\d+ \(in <lambda>\): arithmetic on a"
                       r"n uint8 tensor; popsim holds uint8, int8 and int16 inputs and buffers as "
                       r"int32, so it computes with them only after a conversion \(x.float\(\), "
                       r"x.long\(\), "
                       r"x.int\(\)\), which gives eager PyTorch's numbers"):
        popsim.inferenceModel(Function(lambda x: (x + 200).float()))(images)
    # A Python number beyond the narrow range would first wrap into it in eager PyTorch.
    with pytest.raises(popsim.UnsupportedOperationError, match=r"aten::__and__ at .*arithmetic "
                                                               r"on an uint8 tensor"):
        popsim.inferenceModel(Function(lambda x: x & 256))(images)


def test_other_dtypes_are_refused_with_a_hint():
    with pytest.raises(popsim.InputError, match=r"Input 'args\[0\]' has dtype torch.bfloat16; "
                       r"popsim takes float32, float16, int32, int64, bool, uint8, int8 and int16 "
                       r"tensors"):
        popsim.inferenceModel(Function(lambda x: x * 2))(torch.ones(2, 2, dtype=torch.bfloat16))
    # Inside the model, any op given a dtype: the dtype named, with what to use (and for
    # bfloat16, that torch.autocast converts to it).
    with pytest.raises(popsim.UnsupportedOperationError,
                       match=r"aten::to at .*: torch.bfloat16, a dtype popsim does not compute with; "
                             r"it computes with float16, float32, int32, int64 and bool tensors "
                             r"\(float64 as float32\): convert to one of them \(torch.autocast "
                             r"converts to bfloat16 on the CPU unless given dtype=torch.float16\)"):
        popsim.inferenceModel(Function(lambda x: x.to(torch.bfloat16)))(torch.ones(2, 2))
    with pytest.raises(popsim.UnsupportedOperationError,
                       match=r"aten::zeros_like at .*: torch.int8, a dtype popsim does not "
                             r"compute with; .*convert to one of them\n"):
        popsim.inferenceModel(Function(lambda x: torch.zeros_like(x, dtype=torch.int8)))(
            torch.ones(2, 2))


def test_float64_inside_a_model_computes_as_float32_with_a_warning():
    """As PopTorch: .double(), float64 factories and dtype=torch.float64 compute
    in float32; outputs come back as float32; a warning names the ops."""
    def f(x):
        y = x.double() * 3 + torch.ones(3, dtype=torch.float64)
        return y, y.sum(dtype=torch.float64), y.float()

    x = torch.tensor([[0.1, 0.2, 0.3], [1.0, 2.0, 3.0]])
    with pytest.warns(UserWarning, match=r"The model uses torch.float64 \(ops aten::to .*popsim, "
                      r"like PopTorch on the IPU, computes float64 as float32"):
        actual = popsim.inferenceModel(Function(f))(x)
    expected = f(x.float())
    for a, e in zip(actual, expected):
        assert a.dtype == torch.float32
        torch.testing.assert_close(a, e.float(), rtol=1e-6, atol=1e-6)


def test_python_numbers_in_a_model_are_not_float64():
    """The tracer records x * 2.5 with a 0-d float64 constant, which promotes
    nothing: no warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        actual = popsim.inferenceModel(Function(lambda x: x * 2.5 + 0.25))(torch.ones(2))
    torch.testing.assert_close(actual, torch.full((2,), 2.75))


def test_a_float64_model_trains_in_float32_and_keeps_its_dtype_on_the_host():
    """model.double(): its weights live and train in float32 on the device; the
    host's stay float64 and receive the trained values; one step equals
    float32 SGD from the same weights."""
    torch.manual_seed(0)
    model = WithLoss(torch.nn.Linear(4, 3)).double()
    reference = copy.deepcopy(model).float()
    x, labels = torch.randn(6, 4, dtype=torch.float64), torch.tensor([0, 1, 2, 0, 1, 2])
    trainer = popsim.trainingModel(model, popsim.Options(),
                                   popsim.optim.SGD(model.parameters(), lr=0.5))
    with pytest.warns(UserWarning, match=r"parameters and buffers 'model.weight', 'model.bias'"):
        trainer(x, labels)
    optimizer = torch.optim.SGD(reference.parameters(), lr=0.5)
    optimizer.zero_grad()
    reference(x.float(), labels)[1].backward()
    optimizer.step()
    trainer.copyWeightsToHost()
    assert model.model.weight.dtype == torch.float64
    torch.testing.assert_close(model.model.weight.float(), reference.model.weight,
                               rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("op", ["cumsum", "sum", "add"])
def test_an_out_tensor_of_another_dtype_gives_its_dtype(op):
    """out= of another dtype: ops with a dtype= argument compute in the out
    tensor's dtype (as dtype= would), others cast their result into it, as
    eager PyTorch does."""
    class Out(torch.nn.Module):
        def forward(self, x):
            out = torch.zeros(4, dtype=torch.int32 if op != "add" else torch.float32)
            if op == "cumsum":
                return torch.cumsum(x, 0, out=out)
            if op == "sum":
                return torch.sum(x.reshape(4, 2), 1, out=out)
            return torch.add(x[:4].int(), 1, out=out)

    x = torch.tensor([1.5, 2.5, 3.5, 4.5, -1.25, 0.75, 2.0, 9.5])
    expected = Out()(x)
    result = popsim.inferenceModel(Out())(x)
    assert result.dtype == expected.dtype
    assert torch.equal(result, expected)


def test_nansum_computes_in_its_dtype_argument():
    class NanSum(torch.nn.Module):
        def forward(self, x):
            return torch.nansum(x, dtype=torch.float16)

    x = torch.tensor([1.0, float("nan"), 2.0 ** -12, 3.0])
    expected = NanSum()(x)
    result = popsim.inferenceModel(NanSum())(x)
    assert result.dtype == torch.float16
    assert torch.equal(result, expected)


@pytest.mark.parametrize("first", [torch.bool, torch.int32, torch.int64, torch.float32])
@pytest.mark.parametrize("second", [torch.bool, torch.int64, torch.float32])
def test_cat_and_stack_promote_mixed_dtypes(first, second):
    """torch.cat and torch.stack of tensors of different dtypes give PyTorch's
    promoted dtype (bool < int32 < int64 < float), values converted exactly."""
    a = torch.tensor([[0, 1, 2]]).to(first)
    b = torch.tensor([[3, 0, 5]]).to(second)
    assert_same(lambda x, y: (torch.cat([x, y]), torch.stack([y, x], dim=1)), a, b)


def test_reductions_into_bool_count_nonzero_values_as_eager():
    """dtype=torch.bool converts the input to bool first: sums are ORs,
    products ANDs."""
    x = torch.tensor([[-1.0, 1.0, 0.0], [0.0, 0.0, 0.5], [2.0, 0.0, 0.0]])
    assert_same(lambda x: (x.sum(1, dtype=torch.bool), torch.prod(x, 1, dtype=torch.bool),
                           torch.sum(x, dtype=torch.bool)), x)


def test_softmax_computes_in_its_dtype_argument():
    """dtype= converts the input first (float16 computed as popsim's float16
    rule says: in float32, rounded once)."""
    def softmaxes(x):
        return (torch.softmax(x, 1, dtype=torch.float16),
                torch.log_softmax(x.half(), 1, dtype=torch.float32),
                torch.softmax(torch.arange(4).view(2, 2), 0, dtype=torch.float32))

    x = torch.tensor([[1.0, 2.0, 3.0, 4.0], [-1.0, 0.5, 0.25, 8.0]])
    with HalfOnCpu(downcast_mixed=False):
        expected = softmaxes(x)
    actual = popsim.inferenceModel(Function(softmaxes))(x)
    for a, e in zip(actual, expected):
        assert a.dtype == e.dtype
        torch.testing.assert_close(a, e, rtol=1e-3 if e.dtype == torch.float16 else 1e-5,
                                   atol=1e-7)


def test_clamp_of_a_bool_tensor_by_whole_numbers_promotes_to_int64():
    x = torch.tensor([[True, False, True]])
    assert_same(lambda x: (torch.clamp(x, min=-1), torch.clamp(x, max=0), torch.clamp(x, 0.5)), x)


def test_a_uint8_mask_masks_as_a_bool_one_does_in_eager():
    """masked_fill and where read a uint8 mask as eager does (deprecated there):
    1 is True (eager refuses other values)."""
    x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    mask = torch.tensor([[1, 0, 1], [0, 1, 0]], dtype=torch.uint8)
    with pytest.warns(UserWarning):
        assert_same(lambda x, m: (x.masked_fill(m, -1.0), torch.where(m, x, -x)), x, mask)


class NarrowBuffers(torch.nn.Module):
    """A model reading uint8, int8 and int16 buffers (a lookup table, a mask,
    offsets) only through conversions, views, comparisons and selections."""

    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)
        self.register_buffer("table", torch.tensor([[0, 3, 255, 7], [200, 1, 2, 3]],
                                                   dtype=torch.uint8))
        self.register_buffer("offsets", torch.tensor([-128, 5, 127, -1], dtype=torch.int8))
        self.register_buffer("mask", torch.tensor([1, 0, 1, 0], dtype=torch.uint8))
        self.register_buffer("wide", torch.tensor([-30000, 5, 30000, -1], dtype=torch.int16))

    def forward(self, x, target):
        y = self.linear(x) * self.table[1].float() / 100 + self.offsets.float() + self.wide.half()
        y = y.masked_fill(self.mask, 0.0)[:, self.table[0].long() % 4]
        y = y + (self.offsets > self.wide[:1]).float() + torch.maximum(self.offsets,
                                                                       self.offsets[:1]).float()
        y = y + (self.offsets > -2).float() + self.table.flip(1)[0].float()
        return y, torch.nn.functional.mse_loss(y, target)


@pytest.mark.filterwarnings("ignore:masked_fill_ received a mask with dtype torch.uint8")
def test_narrow_integer_buffers_are_read_as_eager_reads_them():
    """uint8, int8 and int16 buffers are held as int32 on the device, like such
    inputs; after training, the host's buffers keep their dtype and values."""
    x, target = torch.randn(2, 4), torch.randn(2, 4)
    torch.manual_seed(0)
    model = NarrowBuffers()
    assert_close(popsim.inferenceModel(copy.deepcopy(model))(x, target)[0], model(x, target)[0])
    assert_sgd_steps_match_eager(lambda: (torch.manual_seed(0), NarrowBuffers())[1],
                                 [(x, target)] * 3, lr=0.01)
    trained = NarrowBuffers()
    popsim.trainingModel(trained, optimizer=torch.optim.SGD(trained.parameters(), lr=0.01))(
        x, target)
    assert trained.table.dtype == torch.uint8 and trained.offsets.dtype == torch.int8
    assert torch.equal(trained.wide, NarrowBuffers().wide)


def test_writes_into_narrow_integer_buffers_are_refused_naming_the_buffer():
    """The device holds the buffer as int32: an update would miss the narrow
    type's wrap-around, so it is refused with the fix."""

    class Counter(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("count", torch.tensor([250], dtype=torch.uint8))

        def forward(self, x):
            self.count.add_(10)
            return x * self.count.float()

    with pytest.raises(popsim.UnsupportedOperationError,
                       match=r"aten::add_ at .*test_dtypes.py:\d+ \(in forward\): a write into "
                             r"buffer 'count' \(uint8\); popsim holds uint8, int8 and int16 "
                             r"buffers as int32 and reads them only through conversions, views "
                             r"and comparisons, .*: register the buffer as torch.int32 or "
                             r"torch.int64 to compute with it or update it"):
        popsim.inferenceModel(Counter())(torch.ones(1))
