"""torch.autograd.Function in popsim models: the forward is traced as ordinary ops and the
backward is the gradient popsim's backward pass uses, so models train as eager PyTorch trains
them (weights judged against eager float32 and float64 by assert_sgd_steps_match_eager)."""

import contextlib
import glob
import os

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import popsim
from conftest import assert_close, line_in
from models import assert_sgd_steps_match_eager, assert_split_training_matches_one_ipu


class StraightThroughRound(torch.autograd.Function):
    """Rounds, and passes the gradient straight through (quantisation-aware training)."""

    @staticmethod
    def forward(ctx, x):
        return torch.round(x)

    @staticmethod
    def backward(ctx, grad):
        return grad


class ReverseGradient(torch.autograd.Function):
    """The identity whose gradient is negated and scaled (domain-adversarial training)."""

    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return -ctx.scale * grad, None


class MemoryEfficientSwish(torch.autograd.Function):
    """x * sigmoid(x) keeping only x for the backward (EfficientNet-PyTorch's)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * torch.sigmoid(x)

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        s = torch.sigmoid(x)
        return grad * (s * (1 + x * (1 - s)))


class ClippedGradient(torch.autograd.Function):
    """tanh with its gradient clipped elementwise: a backward not linear in the gradient."""

    @staticmethod
    def forward(ctx, x):
        y = torch.tanh(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad):
        y, = ctx.saved_tensors
        return (grad * (1 - y * y)).clamp(-0.01, 0.01)


class ScaleAndShift(torch.autograd.Function):
    """Two outputs, three tensor inputs (one broadcast), a number and a flag: the
    backward returns the bias gradient unsummed (eager sums it to the bias's shape), uses
    needs_input_grad, and returns None for the number and the flag."""

    @staticmethod
    def forward(ctx, x, weight, bias, power, flag):
        ctx.save_for_backward(x, weight)
        ctx.power = power
        return x * weight + bias, (x * weight) ** power

    @staticmethod
    def backward(ctx, grad_affine, grad_power):
        x, weight = ctx.saved_tensors
        grad_x = grad_weight = grad_bias = None
        inner = grad_affine + grad_power * ctx.power * (x * weight) ** (ctx.power - 1)
        if ctx.needs_input_grad[0]:
            grad_x = inner * weight
        if ctx.needs_input_grad[1]:
            grad_weight = (inner * x).sum(0)
        if ctx.needs_input_grad[2]:
            grad_bias = grad_affine  # (N, F) for a bias of (F,): eager sums it
        return grad_x, grad_weight, grad_bias, None, None


class SpikeWithSurrogate(torch.autograd.Function):
    """A spiking neuron: a step forward, a fast-sigmoid surrogate gradient backward; its
    second output (how many fired) is marked non-differentiable."""

    @staticmethod
    def forward(ctx, membrane):
        ctx.save_for_backward(membrane)
        spikes = (membrane > 0).to(membrane.dtype)
        fired = spikes.sum()
        ctx.mark_non_differentiable(fired)
        return spikes, fired

    @staticmethod
    def backward(ctx, grad_spikes, grad_fired):
        membrane, = ctx.saved_tensors
        return grad_spikes / (1 + 10 * membrane.abs()) ** 2


# Bound before popsim traces, as models often write it.
reverse_gradient = ReverseGradient.apply


class UsesEveryFunction(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = nn.Linear(6, 8)
        self.weight = nn.Parameter(torch.rand(8) + 0.5)
        self.bias = nn.Parameter(torch.randn(8))
        self.second = nn.Linear(8, 8)
        self.head = nn.Linear(8, 3)

    def forward(self, x, labels):
        h = MemoryEfficientSwish.apply(self.first(x))
        h = StraightThroughRound.apply(h * 4) / 4
        affine, squared = ScaleAndShift.apply(h, self.weight, self.bias, 2, True)
        h = ClippedGradient.apply(self.second(affine) + 0.1 * squared)
        spikes, fired = SpikeWithSurrogate.apply(h)
        h = reverse_gradient(h + spikes, 0.5)
        logits = self.head(h)
        return logits, F.cross_entropy(logits, labels) + 0 * fired


def batches(steps=3):
    torch.manual_seed(1)
    return [(torch.randn(5, 6), torch.randint(0, 3, (5,))) for _ in range(steps)]


def test_custom_functions_train_as_eager():
    torch.manual_seed(0)
    assert_sgd_steps_match_eager(UsesEveryFunction, batches())


class OneOutputUnused(torch.autograd.Function):
    """The loss reads only the first output: the backward gets zeros for the second, as
    eager's materialised gradients are, and adds something it must not drop."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * 2, x * 3

    @staticmethod
    def backward(ctx, grad_double, grad_triple):
        x, = ctx.saved_tensors
        return 2 * grad_double + 3 * grad_triple + 0.25 * x


class ReadsTheFirstOutput(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x, labels):
        double, _ = OneOutputUnused.apply(self.linear(x))
        return double, F.cross_entropy(double, labels)


def test_an_output_the_loss_does_not_read_gets_a_zero_gradient():
    torch.manual_seed(0)
    assert_sgd_steps_match_eager(
        ReadsTheFirstOutput, [(torch.randn(3, 4), torch.randint(0, 4, (3,)))] * 2)


class Quantised(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x):
        return StraightThroughRound.apply(self.linear(x) * 4) / 4


def test_an_inference_model_runs_the_forward():
    torch.manual_seed(0)
    model = Quantised()
    x = torch.randn(3, 4)
    assert_close(popsim.inferenceModel(model)(x), model(x))
    # Outside popsim's trace a Function is eager PyTorch's again, backward included.
    x.requires_grad_()
    StraightThroughRound.apply(x * 4).sum().backward()
    assert_close(x.grad, torch.full_like(x, 4.0))


class SwishBlocks(nn.Module):
    """Four layers with Functions, each layer a block of its own when `split`."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(6, 6) for _ in range(4))
        self.split = False

    def forward(self, x, labels):
        for index, layer in enumerate(self.layers):
            with popsim.Block(f"b{index}") if self.split else contextlib.nullcontext():
                x = MemoryEfficientSwish.apply(layer(x))
                x = ReverseGradient.apply(x, 0.5 + index)
                if index == len(self.layers) - 1:
                    return x, F.cross_entropy(x, labels)


@pytest.mark.parametrize("kind", ["pipelined", "sharded"])
def test_functions_on_several_ipus_train_as_on_one(kind):
    torch.manual_seed(0)
    reference = SwishBlocks()
    x, labels = torch.randn(16, 6), torch.randint(0, 6, (16,))

    assert_split_training_matches_one_ipu(
        reference, (x, labels), kind, accumulation=8, lr=0.1,
        split=lambda model, on: setattr(model, "split", on))


def test_a_model_with_functions_sizes_cost_only():
    model = UsesEveryFunction().half()
    report = popsim.sizeJob(model, (torch.randn(5, 6).half(), torch.randint(0, 3, (5,))),
                            popsim.Options(), torch.optim.SGD(model.parameters(), lr=0.1))
    assert report.fits and report.throughput > 0


class TanhRecomputingItsDerivative(torch.autograd.Function):
    """Keeps only x; its backward computes 1 / cosh(x)^2 from it."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.tanh(x)

    @staticmethod
    def backward(ctx, grad):
        x, = ctx.saved_tensors
        return grad / torch.cosh(x) ** 2


def test_what_backward_computes_from_saved_values_runs_in_the_backward_pass(
        tmp_path, monkeypatch):
    """As in eager autograd, the backward's ops on saved values run when the gradient is
    computed, so their results are not kept from the forward pass to the backward."""
    monkeypatch.setenv("POPSIM_DUMP_IR", str(tmp_path))
    model = Applies(TanhRecomputingItsDerivative.apply)
    popsim.trainingModel(model, None, torch.optim.SGD(model.parameters(), lr=0.1))(
        torch.randn(3, 4))
    program = sorted(glob.glob(os.path.join(tmp_path, "compile-*", "*.ir")))[-1]
    with open(program, encoding="utf-8") as text:
        cosh = [line for line in text if "cosh" in line]
    assert cosh and all("[backward]" in line for line in cosh), cosh


class WrongCount(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad * 2, grad


class WrongShape(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.sum(1)

    @staticmethod
    def backward(ctx, grad):
        return grad[:, None].expand(-1, 5)  # the input has 4 columns


class BranchesOnTheGradient(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        if grad.sum() > 0:  # branch: on the gradient
            return grad * 2
        return -grad


class WritesInPlace(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.mark_dirty(x)
        return x.mul_(2)

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


class Applies(nn.Module):
    """Calls a Function's apply bound before popsim traces (kept as an attribute)."""

    def __init__(self, apply):
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.apply_function = apply

    def forward(self, x):
        y = self.apply_function(self.linear(x))  # applied: custom Function
        return y, popsim.identity_loss(y.sum(), reduction="none")


@pytest.mark.parametrize("apply, message", [
    (WrongCount.apply,
     "The backward of the torch.autograd.Function WrongCount (applied at {where}) returned an "
     "incorrect number of gradients (expected 1, got 2): return one per argument of forward, "
     "None for the arguments without one."),
    (WrongShape.apply,
     "The backward of the torch.autograd.Function WrongShape (applied at {where}) returned an "
     "invalid gradient at index 0: got [3, 5] but expected shape compatible with [3, 4] (eager "
     "PyTorch raises here too). Return a gradient of the input's shape."),
    (BranchesOnTheGradient.apply,
     "The backward of the torch.autograd.Function BranchesOnTheGradient reads a Python value "
     "from a gradient at {branch} (an if on it, int(), item()). popsim traces backward once, "
     "on stand-ins for the gradients, so that value would stay what the stand-in gave: "
     "compute it with tensor ops instead (torch.where(grad.sum() > 0, 2 * grad, -grad) for an "
     "if)."),
    (WritesInPlace.apply,
     "The torch.autograd.Function WritesInPlace writes its input in place (ctx.mark_dirty). "
     "popsim traces a Function's forward and backward as separate ops: write forward out of "
     "place (return a new tensor instead of modifying the input)."),
])
def test_a_function_popsim_cannot_keep_is_named(apply, message):
    model = Applies(apply)
    trainer = popsim.trainingModel(model, None, torch.optim.SGD(model.parameters(), lr=0.1))
    with pytest.raises(popsim.CompilationError) as error:
        trainer(torch.randn(3, 4))
    where = f"{__file__}:{line_in(__file__, 'applied: custom Function')}"
    branch = f"{__file__}:{line_in(__file__, 'branch: on the gradient')}"
    assert message.format(where=where, branch=branch) in str(error.value)


class SavesANumber(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x, 3)
        return x * 3

    @staticmethod
    def backward(ctx, grad):
        return grad * 3


def test_saving_what_is_not_a_tensor_is_eager_pytorchs_type_error():
    model = Applies(SavesANumber.apply)
    trainer = popsim.trainingModel(model, None, torch.optim.SGD(model.parameters(), lr=0.1))
    with pytest.raises(TypeError, match="save_for_backward can only save variables, but "
                                        "argument 1 is of type int"):
        trainer(torch.randn(3, 4))
