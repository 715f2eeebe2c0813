"""Uses of a wrapped model that PopTorch refuses or warns about, in its words (code written for
it matches them) with popsim's reasons: backward() on a model's outputs, a forward() that
removes or rebinds a buffer or parameter, inputs that require a gradient. Updating a buffer in
place stays allowed."""

import logging

import pytest
import torch
import torch.nn as nn

import popsim

BACKWARD = (r"backward\(\) cannot be called explicitly on outputs of a PopTorch model\. If you're "
            r"using a trainingModel, the backwards pass is performed automatically when invoking "
            r"the model\. If you're using an inferenceModel, you should use a trainingModel "
            r"instead\.")


class LinearWithLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 2)

    def forward(self, x):
        out = self.linear(x)
        return out, popsim.identity_loss(out.pow(2), reduction="sum")


def test_backward_on_a_training_models_outputs_says_why_it_cannot_work():
    model = popsim.trainingModel(LinearWithLoss())
    out, loss = model(torch.ones(2, 3))
    for output in (out, loss):
        with pytest.raises(popsim.Error, match=BACKWARD):
            output.backward()
    # The outputs are still ordinary tensors for everything else.
    assert not out.requires_grad and torch.isfinite(loss)


def test_backward_on_an_inference_models_output_says_why_it_cannot_work():
    model = popsim.inferenceModel(nn.Linear(3, 2))
    for _ in range(2):  # every call's outputs, not only the first's
        with pytest.raises(popsim.Error, match=BACKWARD):
            model(torch.ones(2, 3)).backward(torch.ones(2, 2))


class Holder(nn.Module):
    """A module with a buffer `y` and a parameter `w`, whose forward() does `change`."""

    def __init__(self, change):
        super().__init__()
        self.register_buffer("y", torch.tensor([2.0]))
        self.w = nn.Parameter(torch.tensor([3.0]))
        self.change = change

    def forward(self, x):
        out = x * self.w + self.y
        self.change(self, x)
        return out


def _rebind_buffer(module, x):
    module.y = x


def _remove_buffer(module, x):
    del module._buffers["y"]


def _buffer_to_none(module, x):
    module.y = None


def _rebind_parameter(module, x):
    module.w = nn.Parameter(x.detach().clone())


REASSIGNED = (r"{} {} is reassigned within the model when calling the forward method\. This is "
              r"not supported\. Consider using self\.{}\.copy_\(src\) to copy data from a source "
              r"tensor, where src is the name of the source tensor\.")
REMOVED = r"{} {} is removed from the model when calling the forward method\."


@pytest.mark.parametrize("change, message", [
    (_rebind_buffer, REASSIGNED.format("Buffer", "y", "y")),
    (_remove_buffer, REMOVED.format("Buffer", "y")),
    (_buffer_to_none, REMOVED.format("Buffer", "y")),
    (_rebind_parameter, REASSIGNED.format("Parameter", "w", "w")),
])
@pytest.mark.parametrize("training", [False, True])
def test_a_forward_that_removes_or_rebinds_state_is_refused_and_undone(change, message,
                                                                       training):
    holder = Holder(change)
    y, w = holder.y, holder.w
    wrap = popsim.trainingModel if training else popsim.inferenceModel

    class Loss(nn.Module):
        def __init__(self):
            super().__init__()
            self.holder = holder

        def forward(self, x):
            return popsim.identity_loss(self.holder(x).sum(), reduction="none")

    model = Loss() if training else holder
    prefix = "holder." if training else ""
    with pytest.raises(popsim.CompilationError, match=message.replace(
            r"Buffer ", f"Buffer {prefix}").replace(r"Parameter ", f"Parameter {prefix}")):
        wrap(model)(torch.tensor([5.0]))
    # The user's model holds its own tensors again, with their values.
    assert holder.y is y and holder.w is w
    assert holder.y.item() == 2.0 and holder.w.item() == 3.0


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.tensor([1.0]))

    def forward(self, x):
        self.count += 1.0
        return x + self.count


def test_a_buffer_updated_in_place_is_kept_from_call_to_call():
    model = popsim.inferenceModel(Counter())
    assert [model(torch.zeros(1)).item() for _ in range(4)] == [2.0, 3.0, 4.0, 5.0]


class SilentCounter(Counter):
    def forward(self):
        self.count += 1.0


@pytest.mark.parametrize("device_iterations", [1, 3])
def test_a_model_that_returns_nothing_runs_and_returns_none(device_iterations):
    """As PopTorch's: a call of a model without outputs returns None; its buffer updates
    still happen, once per device iteration."""
    counter = SilentCounter()
    model = popsim.inferenceModel(counter, popsim.Options().deviceIterations(device_iterations))
    assert model() is None and model() is None
    model.copyWeightsToHost()
    assert counter.count.item() == 1.0 + 2 * device_iterations


@pytest.mark.parametrize("wrap", ["inference", "training"])
def test_inputs_requiring_grad_are_detached_with_one_warning(caplog, wrap):
    x = torch.ones(2, 3, requires_grad=True)
    with caplog.at_level(logging.WARNING, logger="popsim"):
        if wrap == "training":
            model = popsim.trainingModel(LinearWithLoss())
            out, _ = model(x)
            model(x)
        else:
            model = popsim.inferenceModel(nn.Linear(3, 2))
            out = model(x)
            model(x)
    warned = [r.getMessage() for r in caplog.records if "requires_grad=True" in r.getMessage()]
    name = "x" if wrap == "training" else "input"  # forward()'s name for it
    assert warned == [
        "Input tensor has requires_grad=True set. This tensor will be detached because backward "
        f"pass via inputs is not supported: popsim computes no gradient for input(s) '{name}' "
        "(a training model's backward pass ends at its parameters)."]
    assert x.grad is None and not out.requires_grad


def test_poptorchs_device_failure_errors_can_be_caught():
    # The simulated IPUs do not fail as hardware can: code that catches PopTorch's device
    # errors runs, and they are popsim errors.
    try:
        popsim.inferenceModel(nn.Linear(3, 2))(torch.ones(2, 3))
    except popsim.RecoverableError as error:  # pragma: no cover - never raised
        pytest.fail(f"raised {error.recovery_action}")
    except popsim.UnrecoverableError:  # pragma: no cover - never raised
        pytest.fail("raised")
    assert issubclass(popsim.RecoverableError, popsim.Error)
    assert issubclass(popsim.UnrecoverableError, popsim.Error)
    assert popsim.RecoverableError("x").recovery_action == ""
