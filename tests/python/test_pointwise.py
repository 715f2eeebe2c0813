"""The pointwise functions' table (csrc/ir/pointwise_functions.cpp) against its
tests (pointwise_cases.py, run forward by test_ops.py and backward by
test_gradients.py), and what the lowerings refuse."""

import pytest
import torch

import popsim
from models import Function
from pointwise_cases import POINTWISE


def test_every_pointwise_function_has_a_test_case():
    tested = {function for function, _ in POINTWISE.values()}
    assert tested == set(popsim._C.pointwise_functions())


def test_torchvisions_activations_run_as_pointwise_ops():
    """mobilenet_v2's ReLU6, mobilenet_v3's Hardswish and Hardsigmoid and
    efficientnet's SiLU (all in place) compile to pointwise ops."""
    model = torch.nn.Sequential(torch.nn.ReLU6(inplace=True), torch.nn.Hardswish(inplace=True),
                                torch.nn.Hardsigmoid(), torch.nn.SiLU(inplace=True))
    compiled = popsim.inferenceModel(model)
    x = torch.randn(4, 8) * 4
    torch.testing.assert_close(compiled(x.clone()), model(x.clone()), rtol=1e-5, atol=1e-6)
    text = compiled._debug_ir()
    for function in ("hardtanh", "hardswish", "hardsigmoid", "silu"):
        assert f'function="{function}"' in text


@pytest.mark.parametrize("function,message", [
    (lambda x: x.clamp(min=x.mean()), r"aten::clamp at .*: argument 'min' as a tensor computed at "
                                      r"runtime \(popsim takes a number here\)"),
    (lambda x: x ** x, r"aten::pow at .*: pow with a tensor exponent"),
])
def test_runtime_parameters_are_refused_with_the_argument(function, message):
    with pytest.raises(popsim.UnsupportedOperationError, match=message):
        popsim.inferenceModel(Function(function))(torch.rand(2, 3) + 0.5)


class Activations(torch.nn.Module):
    """A small network through several pointwise activations and a pow loss."""

    def __init__(self):
        super().__init__()
        self.first = torch.nn.Linear(6, 8)
        self.second = torch.nn.Linear(8, 8)
        self.third = torch.nn.Linear(8, 3)

    def forward(self, x, target):
        h = torch.nn.functional.silu(self.first(x))
        h = torch.nn.functional.hardswish(self.second(h)) + torch.nn.functional.elu(h, 0.5)
        out = torch.nn.functional.softplus(self.third(torch.nn.functional.mish(h)))
        return out, popsim.identity_loss(((out - target) ** 2).mean(), "none")


def test_training_through_pointwise_activations_matches_eager():
    torch.manual_seed(3)
    model = Activations()
    eager = Activations()
    eager.load_state_dict(model.state_dict())
    batches = [(torch.randn(5, 6), torch.randn(5, 3)) for _ in range(4)]
    optimizer = torch.optim.SGD(eager.parameters(), lr=0.1)
    for x, target in batches:
        optimizer.zero_grad()
        eager(x, target)[1].backward()
        optimizer.step()
    trainer = popsim.trainingModel(model, None, torch.optim.SGD(model.parameters(), lr=0.1))
    for x, target in batches:
        trainer(x, target)
    trainer.copyWeightsToHost()
    for name, value in eager.state_dict().items():
        torch.testing.assert_close(model.state_dict()[name], value, rtol=1e-5, atol=1e-6,
                                   msg=name)
