"""How a call's Python arguments reach forward(): keyword arguments that skip
optional parameters, defaults, None and non-tensor values bind exactly as
Python binds them in eager PyTorch."""

import collections

import pytest
import torch

import popsim
from conftest import assert_close


class ScalarBeforeOptional(torch.nn.Module):
    def forward(self, t1, scalar=2, t2_opt=None):
        return t2_opt * scalar + t1 * scalar if t2_opt is not None else t1 * scalar


class OptionalChain(torch.nn.Module):
    def forward(self, x, y=None, z=None, t=None):
        r = x
        if y is not None:
            r = (r + y) * 3
        if z is not None:
            r = (r + z) * 4
        if t is not None:
            r = (r + t) * 5
        return r


class Starred(torch.nn.Module):
    def forward(self, x, *rest, scale=1.0, **named):
        out = x * scale
        for i, extra in enumerate(rest):
            out = out + (i + 1) * extra
        for key in sorted(named):
            out = out - named[key] * len(key)
        return out


def check(module, *args, **kwargs):
    expected = module(*args, **kwargs)
    assert_close(popsim.inferenceModel(module)(*args, **kwargs), expected)


def test_a_keyword_argument_skipping_an_optional_parameter_binds_to_its_own_name():
    check(ScalarBeforeOptional(), torch.tensor([3.0]), t2_opt=torch.tensor([5.0]))
    check(ScalarBeforeOptional(), torch.tensor([3.0]), 7, t2_opt=torch.tensor([5.0]))
    check(ScalarBeforeOptional(), t2_opt=torch.tensor([5.0]), t1=torch.tensor([3.0]))


def test_keyword_arguments_in_any_order_with_none_and_gaps():
    x, y, z, t = (torch.randn(2, 3) for _ in range(4))
    check(OptionalChain(), x=x, t=t)
    check(OptionalChain(), z=z, t=None, x=x)
    check(OptionalChain(), x, None, z)
    check(OptionalChain(), x, y, t=t)
    check(OptionalChain(), t=t, y=y, x=x, z=z)


def test_variadic_positional_and_keyword_arguments():
    x, a, b, c = (torch.randn(4) for _ in range(4))
    check(Starred(), x, a, b, scale=2.0, cc=c)
    check(Starred(), x, scale=3.0, c=c, bbb=b)
    check(Starred(), x, a)


class TensorDefaults(torch.nn.Module):
    def forward(self, t1, t2, t3=torch.ones(1, 3), t4=torch.zeros(1, 3)):
        return t1 * t3 + t2 * t4


@pytest.mark.parametrize("device_iterations", [1, 2])
def test_tensor_defaults_are_inputs_a_later_call_may_pass(device_iterations):
    """As PopTorch's: forward()'s tensor defaults are inputs, so calls may pass them or
    leave them out whichever call compiled. A default is one micro-batch's value; a passed
    one has the call's micro-batches, as every input has."""
    model, eager = TensorDefaults(), TensorDefaults()
    ipu = popsim.inferenceModel(model, popsim.Options().deviceIterations(device_iterations))
    t1, t2, t4 = (torch.randn(2 * device_iterations, 3) for _ in range(3))
    assert_close(ipu(t1, t2), eager(t1, t2))
    micro = [slice(2 * i, 2 * i + 2) for i in range(device_iterations)]
    passed = torch.randn(device_iterations, 3)  # one row per micro-batch
    expected = torch.cat([eager(t1[m], t2[m], t4=passed[i:i + 1]) for i, m in enumerate(micro)])
    assert_close(ipu(t1, t2, t4=passed), expected)
    assert_close(ipu(t4=passed, t1=t1, t2=t2), expected)
    assert_close(ipu(t1, t2, torch.full((device_iterations, 3), 2.0)), eager(t1, t2, 2.0))


def test_a_default_passed_by_the_compiling_call_may_be_left_out_later():
    ipu = popsim.inferenceModel(TensorDefaults())
    t1, t2, t3 = (torch.randn(2, 3) for _ in range(3))
    assert_close(ipu(t1, t2, t3[:1]), TensorDefaults()(t1, t2, t3[:1]))
    assert_close(ipu(t1, t2), TensorDefaults()(t1, t2))


def test_a_scalar_default_of_several_micro_batches_stays_a_constant():
    class Scaled(torch.nn.Module):
        def forward(self, x, scale=torch.tensor(3.0)):
            return x * scale

    ipu = popsim.inferenceModel(Scaled(), popsim.Options().deviceIterations(2))
    x = torch.randn(4, 2)
    assert_close(ipu(x), x * 3.0)
    with pytest.raises(popsim.InputError, match="The model was compiled for inputs structured "
                                                "as"):
        ipu(x, torch.tensor(2.0))


class Counter(torch.nn.Module):
    """Counts its calls in a 0-d buffer; takes no inputs."""

    def __init__(self):
        super().__init__()
        self.register_buffer("calls", torch.zeros(()))
        self.register_buffer("base", torch.arange(4.0))

    def forward(self):
        self.calls += 1
        return self.base * self.calls


def test_a_model_without_inputs_runs_each_device_iteration():
    model = Counter()
    ipu_model = popsim.inferenceModel(model, popsim.Options().deviceIterations(3))
    # Tracing ran forward() once: the host buffer must not have counted it.
    first, second = ipu_model(), ipu_model()
    assert model.calls.item() == 0
    eager = Counter()
    expected = torch.cat([eager() for _ in range(6)])
    assert torch.equal(torch.cat([first, second]), expected)


def test_an_inference_trace_leaves_buffers_and_random_stream_alone():
    class Noisy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("calls", torch.zeros(()))

        def forward(self, x):
            self.calls += 1
            return x * self.calls + torch.rand(())

    model = Noisy()
    torch.manual_seed(3)
    popsim.inferenceModel(model).compile(torch.ones(2))
    assert model.calls.item() == 0
    after_compile = torch.rand(1)
    torch.manual_seed(3)
    assert torch.equal(after_compile, torch.rand(1))


def test_training_without_inputs_and_with_a_scalar_input():
    class Quadratic(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.tensor([3.0, -1.0]))

        def forward(self, scale=None):
            loss = (self.w ** 2).sum()
            return popsim.identity_loss(loss if scale is None else loss * scale, "none")

    for args in [(), (torch.tensor(0.5),)]:
        model = Quadratic()
        eager = Quadratic()
        trainer = popsim.trainingModel(model, popsim.Options(),
                                       torch.optim.SGD(model.parameters(), lr=0.1))
        optimizer = torch.optim.SGD(eager.parameters(), lr=0.1)
        for _ in range(3):
            loss = trainer(*args)
            optimizer.zero_grad()
            eager_loss = eager(*args)
            eager_loss.backward()
            optimizer.step()
            assert_close(loss, eager_loss.detach())
        assert_close(model.w, eager.w)


class UpdatesInPlace(torch.nn.Module):
    """Returns nothing: its result is the update of its input, as PopTorch allows."""

    def forward(self, x):
        x.mul_(2).add_(1)


class PartlyNone(torch.nn.Module):
    def forward(self, x):
        return x * 3, None, {"kept": x + 1, "absent": None}


def test_a_model_that_returns_none_updates_its_inputs_and_returns_none():
    x = torch.arange(6.0).view(3, 2)
    expected = x.clone()
    UpdatesInPlace()(expected)
    result = popsim.inferenceModel(UpdatesInPlace())(x)
    assert result is None
    assert torch.equal(x, expected)


def test_none_among_the_outputs_comes_back_as_none():
    x = torch.arange(4.0).view(2, 2)
    result = popsim.inferenceModel(PartlyNone())(x)
    expected = PartlyNone()(x)
    assert result[1] is None and result[2]["absent"] is None
    assert torch.equal(result[0], expected[0]) and torch.equal(result[2]["kept"],
                                                               expected[2]["kept"])


ONES = torch.ones(2, 3)


class DefaultWhenNone(torch.nn.Module):
    def forward(self, x=None, y=ONES):
        if y is None:
            return ONES  # made outside forward(): no op of the trace computes it
        return x + y


def test_a_tensor_returned_as_it_was_made_outside_forward_comes_back():
    x = torch.randn(2, 3)
    assert torch.equal(popsim.inferenceModel(DefaultWhenNone())(x, None), ONES)
    assert_close(popsim.inferenceModel(DefaultWhenNone())(x), x + ONES)
    trainer = popsim.trainingModel(TrainedWithConstant())
    output, loss = trainer(x)
    assert torch.equal(output, ONES) and loss.item() > 0


class TrainedWithConstant(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(3, 3)

    def forward(self, x):
        return ONES, torch.nn.functional.mse_loss(self.linear(x), ONES)


class Record(collections.OrderedDict):
    """An OrderedDict subclass, as model outputs (transformers' ModelOutput) use."""


class RecordModel(torch.nn.Module):
    def forward(self, inputs):
        assert type(inputs) is Record  # the model sees the caller's class
        return Record(doubled=inputs["x"] * 2, plain={"y": inputs["x"] + 1})


def test_ordered_dict_subclasses_keep_their_class_in_and_out():
    x = torch.arange(4.0).view(2, 2)
    result = popsim.inferenceModel(RecordModel())(Record(x=x))
    assert type(result) is Record and list(result) == ["doubled", "plain"]
    assert type(result["plain"]) is dict
    torch.testing.assert_close(result["doubled"], x * 2)
    torch.testing.assert_close(result["plain"]["y"], x + 1)


def test_a_call_forward_cannot_take_is_refused_as_eager_refuses_it():
    """A missing argument is named as Python names it, not as popsim's internal names."""
    class TwoInputs(torch.nn.Module):
        def forward(self, x, target):
            return x + target

    model = popsim.inferenceModel(TwoInputs())
    with pytest.raises(popsim.ArgumentError, match=r"The model's forward\(\) cannot take this "
                       r"call: missing 1 required positional argument: 'target' \(Mandatory "
                       r"parameter target missing\)"):
        model(torch.ones(2))
    with pytest.raises(TypeError, match="got an unexpected keyword argument 'scale'"):
        model(torch.ones(2), torch.ones(2), scale=2.0)
