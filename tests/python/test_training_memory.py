"""Memory of training programs: always-live gradient accumulators and
optimizer state next to the weights, activations kept for the backward pass,
and OutOfMemoryError when they do not fit."""

import re

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import popsim
from conftest import aligned
from models import WithLoss

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 8, 3)
        self.fc = nn.Linear(8 * 14 * 14, 10)

    def forward(self, x):
        return self.fc(F.relu(self.conv(x)).flatten(1))


def parameter_bytes(model):
    return sum(aligned(p.numel() * 4) for p in model.parameters())


def report(optimizer_factory, accumulation=1, memory=None):
    model = WithLoss(Net())
    opts = popsim.Options()
    opts.Training.gradientAccumulation(accumulation)
    if memory is not None:
        opts.Simulator.memoryPerIpu(memory)
    trainer = popsim.trainingModel(model, opts, optimizer_factory(model.parameters()))
    trainer.compile(torch.randn(4 * accumulation, 1, 16, 16),
                    torch.randint(0, 10, (4 * accumulation,)))
    categories = trainer.memoryReport()["ipus"][0]["categories"]
    return model, {name: entry["bytes"] for name, entry in categories.items()}


def test_accumulators_and_optimizer_state_are_counted_always_live():
    hyper_and_step = aligned(6 * 8) + aligned(8)  # Adam's six f64 hyper-parameters, its step
    model, sizes = report(lambda params: torch.optim.Adam(params), accumulation=4)
    assert sizes["weights"] == parameter_bytes(model)
    assert sizes["gradient accumulators"] == parameter_bytes(model)
    assert sizes["optimizer state"] == 2 * parameter_bytes(model) + hyper_and_step
    model, sizes = report(lambda params: torch.optim.SGD(params, lr=0.1))
    assert sizes["gradient accumulators"] == 0  # the step reads the gradients directly
    assert sizes["optimizer state"] == aligned(5 * 8)  # SGD without momentum: its hyper-parameters
    model, sizes = report(lambda params: torch.optim.SGD(params, lr=0.1, momentum=0.9))
    assert sizes["optimizer state"] == parameter_bytes(model) + aligned(5 * 8) + aligned(8)


def test_training_keeps_activations_for_the_backward_pass():
    x = torch.randn(4, 1, 16, 16)
    inference = popsim.inferenceModel(Net())
    inference.compile(x)
    inference_activations = inference.memoryReport()["ipus"][0]["categories"]["activations"]
    _, sizes = report(lambda params: torch.optim.SGD(params, lr=0.1))
    # At least the relu output (saved for the weight gradient of fc) and its gradient.
    relu_bytes = 4 * 8 * 14 * 14 * 4
    assert sizes["activations"] >= inference_activations["bytes"] + relu_bytes


def test_optimizer_state_can_run_out_of_memory():
    # What fits with SGD does not fit with Adam's two moments per parameter.
    _, sgd = report(lambda params: torch.optim.SGD(params, lr=0.1))
    budget = sum(sgd.values()) + 10_000
    report(lambda params: torch.optim.SGD(params, lr=0.1), memory=budget)
    with pytest.raises(popsim.OutOfMemoryError) as error:
        report(lambda params: torch.optim.Adam(params), memory=budget)
    message = str(error.value)
    assert re.search(r"optimizer state: [\d,]+ bytes .* \(always live\)", message), message
    assert "model.fc.weight/exp_avg (optimizer state) f32[10,1568]" in message


def test_a_matrix_shared_by_a_batch_gets_its_gradient_without_a_per_batch_product():
    """x[B, M, K] @ W[K, N]: dW sums over the batch inside one product, as
    PyTorch folds it, not through a [B, K, N] temporary; training matches eager."""
    class Shared(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(24, 40) / 5)

        def forward(self, x, target):
            out = x @ self.w
            return out, F.mse_loss(out, target)

    torch.manual_seed(0)
    model, eager = Shared(), Shared()
    eager.load_state_dict(model.state_dict())
    x, target = torch.randn(16, 5, 24), torch.randn(16, 5, 40)
    trainer = popsim.trainingModel(model, popsim.Options(),
                                   torch.optim.SGD(model.parameters(), lr=0.1))
    trainer(x, target)
    assert "f32[16,24,40]" not in trainer._debug_ir(optimized=True)
    optimizer = torch.optim.SGD(eager.parameters(), lr=0.1)
    F.mse_loss(x @ eager.w, target).backward()
    optimizer.step()
    trainer.copyWeightsToHost()
    torch.testing.assert_close(model.w, eager.w, rtol=1e-5, atol=1e-6)
