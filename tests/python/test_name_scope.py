"""popsim.NameScope, as PopTorch's: the ops traced inside ``with NameScope(name):``
are named ``name/op`` (nested scopes join with ``/``), forward and backward; run
eagerly, the scope changes nothing. By default, as in PopTorch, every submodule
call is a scope of its attribute name too (Options.disableModuleNamescope)."""

import pytest
import torch
import torch.nn as nn

import popsim
from conftest import assert_close


class Scoped(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Linear(6, 8)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        with popsim.NameScope("encoder"):
            x = torch.relu(self.encoder(x))
            with popsim.NameScope("norm"):
                x = x / (x.norm(dim=1, keepdim=True) + 1.0)
        return self.head(x)


def names(executor):
    return [(step.op, step.name) for step in executor._executable.program()]


def without_module_scopes():
    return popsim.Options().disableModuleNamescope()


def test_ops_in_a_scope_are_named_with_its_path_and_others_keep_their_op_name():
    model = Scoped()
    x = torch.randn(4, 6)
    inference = popsim.inferenceModel(model, without_module_scopes())
    assert_close(inference(x), model(x))
    steps = names(inference)
    assert ("relu", "encoder/relu") in steps
    assert any(name.startswith("encoder/norm/") for _, name in steps)
    linears = [name for op, name in steps if op == "linear"]
    assert sorted(linears) == ["encoder/linear", "linear"]  # the head is outside any scope
    for op, name in steps:
        assert name == op or name.endswith("/" + op)


def test_gradients_of_scoped_ops_carry_the_scope():
    model = Scoped()
    x, target = torch.randn(4, 6), torch.randn(4, 3)

    class WithLoss(nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, x, target):
            out = self.model(x)
            return out, nn.functional.mse_loss(out, target)

    trainer = popsim.trainingModel(WithLoss(), without_module_scopes(),
                                   popsim.optim.SGD(model.parameters(), lr=0.1))
    trainer(x, target)
    steps = names(trainer)
    scoped_ops = {op for op, name in steps if name.startswith("encoder/")}
    assert "relu" in scoped_ops
    assert any(op.endswith("_grad") for op in scoped_ops), sorted(scoped_ops)


def test_run_eagerly_a_name_scope_changes_nothing():
    model = Scoped()
    x = torch.randn(2, 6)
    with torch.no_grad():
        expected = model.head(torch.relu(model.encoder(x)) /
                              (torch.relu(model.encoder(x)).norm(dim=1, keepdim=True) + 1.0))
    assert torch.equal(model(x), expected)


@pytest.mark.parametrize("name", ["", "a/b", 3, None])
def test_a_name_scope_needs_a_non_empty_name_without_a_slash(name):
    with pytest.raises(popsim.OptionError, match="NameScope expects a non-empty str"):
        popsim.NameScope(name)


def test_an_error_at_run_time_names_the_op_with_its_scope():
    class Window(nn.Module):
        def forward(self, x, start):
            with popsim.NameScope("window"):
                return popsim.dynamic_slice(x, 0, start, 2, 1)

    model = popsim.inferenceModel(Window(), without_module_scopes())
    model(torch.randn(5, 3), torch.tensor([1]))
    with pytest.raises(popsim.ExecutionError, match=r"window/\w+ at .*test_name_scope\.py:\d+"):
        model(torch.randn(5, 3), torch.tensor([4]))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x):
        return torch.tanh(self.linear(x))


class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(Block(), Block())
        self.shared = Block()

    def forward(self, x):
        x = self.layers(x)
        with popsim.NameScope("twice"):
            x = self.shared(self.shared(x))
        return self.layers[1](x)


def test_by_default_ops_are_named_after_the_submodules_that_run_them():
    model = Stack()
    x = torch.randn(3, 4)
    inference = popsim.inferenceModel(model)
    assert_close(inference(x), model(x))
    assert [name for _, name in names(inference)] == [
        "layers/0/linear/linear", "layers/0/tanh",
        "layers/1/linear/linear", "layers/1/tanh",
        "twice/shared/linear/linear", "twice/shared/tanh",  # a module called twice
        "twice/shared/linear/linear", "twice/shared/tanh",
        "1/linear/linear", "1/tanh",  # called directly: named as its own attribute
    ]


def test_disable_module_namescope_keeps_only_the_name_scopes():
    model = Stack()
    inference = popsim.inferenceModel(model, without_module_scopes())
    inference(torch.randn(3, 4))
    assert [name for _, name in names(inference)] == [
        "linear", "tanh", "linear", "tanh", "twice/linear", "twice/tanh", "twice/linear",
        "twice/tanh", "linear", "tanh"]
    assert popsim.Options().module_namescope
    assert not without_module_scopes().toDict()["module_namescope"]
