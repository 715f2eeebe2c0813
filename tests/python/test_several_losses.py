"""Training models that return several losses: the independent ones are
minimised as their sum, a loss computed from another returned one (a total
and its parts) is minimised once, and every loss comes back as it is."""

import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import popsim


class TwoHeads(nn.Module):
    """A trunk with a classification head and a regression head; `losses`
    decides what forward() returns."""

    def __init__(self, losses, blocks=False):
        super().__init__()
        self.trunk, self.classes, self.values = nn.Linear(6, 8), nn.Linear(8, 3), nn.Linear(8, 2)
        self.losses, self.blocks = losses, blocks
        self.regression_loss = F.mse_loss

    def forward(self, x, labels, targets):
        with popsim.Block("trunk", ipu_id=0) if self.blocks else _nothing():
            hidden = torch.tanh(self.trunk(x))
            classes = self.classes(hidden)
            classification = F.cross_entropy(classes, labels)
        with popsim.Block("values", ipu_id=1) if self.blocks else _nothing():
            regression = self.regression_loss(self.values(hidden), targets)
            return self.losses(classes, classification, regression)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def batch(size=4):
    torch.manual_seed(1)
    return torch.randn(size, 6), torch.randint(0, 3, (size,)), torch.randn(size, 2)


def eager_step(model, minimised, inputs, lr=0.1):
    """One SGD step of eager PyTorch on minimised(*forward outputs)."""
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    outputs = model(*inputs)
    minimised(outputs).backward()
    optimizer.step()
    return outputs


def popsim_step(model, inputs, options=None, lr=0.1):
    trainer = popsim.trainingModel(model, options,
                                   torch.optim.SGD(model.parameters(), lr=lr))
    outputs = trainer(*inputs)
    trainer.copyWeightsToHost()
    trainer.destroy()
    return outputs


CASES = {
    # returned next to the output, each loss from a PyTorch loss function
    "two loss functions": (lambda c, a, b: (c, a, b), lambda out: out[1] + out[2]),
    # identity_loss results (PopTorch's way of marking a custom loss)
    "two identity losses": (
        lambda c, a, b: (popsim.identity_loss(a * 2, "none"),
                         popsim.identity_loss(b.reshape(1), "sum")),
        lambda out: out[0] + out[1]),
    # a total and one of its parts: the part is shown, not minimised again
    "total and a part": (lambda c, a, b: (a + 0.5 * b, a), lambda out: out[0]),
    # PopTorch's non-final identity loss: a loss computed from another one
    "non-final identity loss": (
        lambda c, a, b: (popsim.identity_loss(a, "none"),
                         popsim.identity_loss(popsim.identity_loss(a, "none") * b, "mean")),
        lambda out: out[1]),
}


def assert_one_step_as_eager(returned, minimised, regression_loss=F.mse_loss):
    """One step of TwoHeads(returned) in popsim and of eager PyTorch minimising
    minimised(outputs): the same outputs and trained weights."""
    torch.manual_seed(0)
    model = TwoHeads(returned)
    model.regression_loss = regression_loss
    eager = copy.deepcopy(model)
    inputs = batch()
    expected = eager_step(eager, minimised, inputs)
    actual = popsim_step(model, inputs)
    for got, want in zip(actual, expected):
        torch.testing.assert_close(got, want.detach(), rtol=1e-5, atol=1e-6)
    for (name, got), want in zip(model.named_parameters(), eager.parameters()):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6, msg=name)


@pytest.mark.parametrize("case", CASES)
def test_losses_train_as_eager(case):
    assert_one_step_as_eager(*CASES[case])


# PyTorch's loss functions written in Python leave no loss op in a trace; popsim marks them
# while it traces (frontend/python_losses.py).
PYTHON_LOSSES = {
    "gaussian_nll_loss": lambda values, targets: nn.GaussianNLLLoss()(
        values[:, :1], targets[:, :1], F.softplus(values[:, 1:])),
    "multilabel_soft_margin_loss": lambda values, targets: nn.MultiLabelSoftMarginLoss(
        weight=torch.ones(2) + torch.eye(2)[1])(values, (targets > 0).float()),
    "triplet_margin_with_distance_loss": lambda values, targets: F.triplet_margin_with_distance_loss(
        values, targets, targets.flip(0), distance_function=nn.PairwiseDistance()),
}


@pytest.mark.parametrize("loss", PYTHON_LOSSES)
def test_losses_pytorch_writes_in_python_are_found_and_train_as_eager(loss):
    """Alone and next to a cross entropy (both minimised), as aten's losses are."""
    assert_one_step_as_eager(lambda c, a, b: (c, b), lambda out: out[1], PYTHON_LOSSES[loss])
    assert_one_step_as_eager(lambda c, a, b: (c, a, b), lambda out: out[1] + out[2],
                             PYTHON_LOSSES[loss])


def test_a_loss_function_returned_beside_identity_losses_is_named_as_not_minimised(capfd):
    """With identity_loss, only the marked losses are minimised; a PyTorch loss returned apart
    from them is named in a warning rather than left untrained silently."""
    torch.manual_seed(0)
    model = TwoHeads(lambda c, a, b: (c, a, popsim.identity_loss(b, "none")))
    eager = copy.deepcopy(model)
    inputs = batch()
    eager_step(eager, lambda out: out[2], inputs)
    popsim_step(model, inputs)
    for (name, got), want in zip(model.named_parameters(), eager.parameters()):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6, msg=name)
    assert ("The training model returns a loss that is not minimised: output 1 is a PyTorch "
            "loss function's result (" in capfd.readouterr().err)
    # A loss function's result that a marked loss is computed from is minimised through it.
    popsim_step(TwoHeads(lambda c, a, b: (c, a, popsim.identity_loss(a + b, "none"))), inputs)
    assert "not minimised" not in capfd.readouterr().err


def test_losses_of_two_pipeline_stages_train_as_one_ipu():
    """The regression loss is on IPU 1 and the classification loss on IPU 0:
    their sum is minimised across the pipeline as on one IPU."""
    returned, _ = CASES["two loss functions"]
    torch.manual_seed(0)
    pipelined, single = TwoHeads(returned, blocks=True), TwoHeads(returned, blocks=True)
    single.load_state_dict(pipelined.state_dict())
    inputs = batch(16)
    opts = popsim.Options()
    opts.Training.gradientAccumulation(4)
    outputs = popsim_step(pipelined, inputs, opts.clone().setExecutionStrategy(
        popsim.PipelinedExecution(popsim.Stage("trunk").ipu(0), popsim.Stage("values").ipu(1))))
    expected = popsim_step(single, inputs, opts.clone().setExecutionStrategy(
        popsim.PipelinedExecution(popsim.Stage("trunk", "values").ipu(0))))
    for got, want in zip(outputs, expected):
        torch.testing.assert_close(got, want, rtol=0, atol=0)
    for got, want in zip(pipelined.parameters(), single.parameters()):
        torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_a_loss_that_is_not_a_scalar_is_named():
    returned = lambda c, a, b: (a, F.mse_loss(c, torch.zeros_like(c), reduction="none"))  # noqa
    trainer = popsim.trainingModel(TwoHeads(returned))
    with pytest.raises(popsim.CompilationError,
                       match=r"^The loss \(output 1, from mul at .*test_several_losses\.py:\d+\) is a "
                             r"f32\[4,3\] tensor, "
                             r"but a loss must be a float scalar"):
        trainer(*batch())
