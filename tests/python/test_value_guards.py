"""Python values forward() reads from tensors of the model's data (frontend/value_guards.py).

A trace keeps the compiling call's value of `if x.sum() > 0:`, `int(t)` or `t.item()`; popsim
checks at every call that the data still gives it, and stops with an ExecutionError naming
the line instead of silently following the compiling call's path. Values that cannot change
(from constants and shapes) are not checked, and compiling leaves torch.Tensor as it was."""

import re

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import popsim
from conftest import line_in
from models import Function


class SignBranch(nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # the read
            return x * 2
        return x * 3


def test_a_branch_on_the_data_runs_while_the_data_takes_it_and_stops_when_not():
    model = popsim.inferenceModel(SignBranch())
    for x in (torch.ones(4), torch.arange(1.0, 5.0)):
        assert torch.equal(model(x), SignBranch()(x))
    # The error's site is the line that read the value (the check is traced where forward()
    # returns).
    site = re.escape(f"check_range at {__file__}:{line_in(__file__, '# the read')} (forward, "
                     f"task F0 on IPU0, micro-batch 0 of the call): ")
    with pytest.raises(popsim.ExecutionError,
                       match=r"(?s)" + site + r"forward\(\) read a tensor "
                             r"computed from the model's data as a Python bool \(True when the "
                             r"model compiled\); the compiled program keeps that value, and this "
                             r"call's data gives another\. Branch on the device instead "
                             r"\(torch\.where, popsim\.cond\).* \(1 for True, 0 for False\): "
                             r"element 0 is 0"):
        model(-torch.ones(4))


def test_integers_and_floats_read_from_the_data_are_checked():
    def scaled(x, n):
        return x * int(n) + float(x.mean())

    model = popsim.inferenceModel(Function(scaled))
    x = torch.tensor([1.0, 3.0])
    assert torch.equal(model(x, torch.tensor(3)), scaled(x, torch.tensor(3)))
    with pytest.raises(popsim.ExecutionError, match=r"as a Python int \(3 when the model "
                                                    r"compiled\).*element 0 is 4"):
        model(x, torch.tensor(4))
    with pytest.raises(popsim.ExecutionError, match=r"as a Python float \(2\.0 when the model "
                                                    r"compiled\).*element 0 is 3"):
        model(x + 1, torch.tensor(3))


def test_an_assert_on_the_data_that_holds_costs_nothing_else():
    class NonNegative(nn.Module):
        def forward(self, x):
            assert (x >= 0).all(), "negative input"
            return x.sqrt()

    model = popsim.inferenceModel(NonNegative())
    for x in (torch.rand(5), torch.rand(5) * 9):
        torch.testing.assert_close(model(x), x.sqrt())
    with pytest.raises(popsim.ExecutionError, match=r"Python bool \(True when"):
        model(-torch.rand(5) - 0.1)


def test_values_from_constants_and_shapes_are_not_checked():
    def shaped(x):
        width = int(torch.tensor(x.shape[0]) * 2)  # a shape: fixed in a compiled program
        return x.repeat(width // x.shape[0]) * torch.tensor(3.0).item()

    model = popsim.inferenceModel(Function(shaped))
    for x in (torch.ones(3), -torch.arange(3.0)):
        assert torch.equal(model(x), shaped(x))


class TrainedBranch(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 3)

    def forward(self, x, target):
        out = self.linear(x)
        if x.mean() > 0:
            out = out * 2
        return out, F.mse_loss(out, target)


def test_a_training_model_checks_its_branches_in_every_step():
    torch.manual_seed(0)
    model = TrainedBranch()
    trainer = popsim.trainingModel(model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1))
    target = torch.zeros(2, 3)
    trainer(torch.ones(2, 3), target)
    trainer(torch.rand(2, 3) + 0.5, target)
    with pytest.raises(popsim.ExecutionError, match=r"Python bool \(True when"):
        trainer(-torch.ones(2, 3), target)


def test_a_pipelined_model_checks_a_read_in_another_block_than_its_output():
    class TwoBlocks(nn.Module):
        def forward(self, x):
            with popsim.Block("first", ipu_id=0):
                flag = x.max() > 1
                y = x + 1 if flag else x - 1
            with popsim.Block("second", ipu_id=1):
                return y * 2

    opts = popsim.Options().deviceIterations(2)
    opts.setExecutionStrategy(popsim.ShardedExecution())
    model = popsim.inferenceModel(TwoBlocks(), opts)
    x = torch.full((2, 3), 2.0)
    assert torch.equal(model(x), (x + 1) * 2)
    mixed = torch.cat([torch.full((1, 3), 2.0), torch.zeros(1, 3)])  # the second iteration
    with pytest.raises(popsim.ExecutionError, match=r"micro-batch 1 .*Python bool"):
        model(mixed)


def test_compiling_leaves_the_tensor_methods_as_torch_has_them():
    popsim.inferenceModel(SignBranch())(torch.ones(2))
    for name in ("__bool__", "__int__", "__float__", "item"):
        assert name not in vars(torch.Tensor)
    assert bool(torch.tensor(1.0)) and int(torch.tensor(3)) == 3
    assert torch.tensor([torch.tensor(2).item()]).tolist() == [2]
