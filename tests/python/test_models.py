"""Whole models through inferenceModel against eager PyTorch.

The tutorial's MNIST network and ResNet-18 run with deviceIterations=4 under
every output mode; an MLP and transformer encoder layers cover the other
supported ops in context.
"""

import dataclasses
from typing import NamedTuple, Optional

import pytest
import torch

import popsim
from conftest import assert_close
from models import Function, Mlp, MnistNetwork, TokenClassifier, resnet18

ITERATIONS = 4
MODES = [
    (popsim.OutputMode.All, None),
    (popsim.OutputMode.Final, None),
    (popsim.OutputMode.EveryN, 2),
    (popsim.OutputMode.Sum, None),
    (popsim.OutputMode.Default, None),
]


def expected_outputs(model, inputs, mode, period):
    """What each output mode returns, computed from eager PyTorch micro-batch by micro-batch."""
    with torch.no_grad():
        outputs = [model(chunk) for chunk in inputs.chunk(ITERATIONS)]
    if mode in (popsim.OutputMode.All, popsim.OutputMode.Default):
        return torch.cat(outputs)
    if mode == popsim.OutputMode.Final:
        return outputs[-1]
    if mode == popsim.OutputMode.EveryN:
        return torch.cat(outputs[period - 1::period])
    return torch.stack(outputs).sum(dim=0)


def run_modes(model, inputs, rtol=1e-5, atol=1e-6):
    model.eval()
    for mode, period in MODES:
        opts = popsim.Options().deviceIterations(ITERATIONS).outputMode(mode, period)
        actual = popsim.inferenceModel(model, opts)(inputs)
        assert_close(actual, expected_outputs(model, inputs, mode, period), rtol=rtol, atol=atol)


def test_mnist_network_every_output_mode():
    run_modes(MnistNetwork(), torch.randn(ITERATIONS * 8, 1, 28, 28))


def test_resnet18_every_output_mode():
    run_modes(resnet18(), torch.randn(ITERATIONS * 2, 3, 32, 32))


def test_mlp():
    run_modes(Mlp(), torch.randn(ITERATIONS * 3, 3, 4, 4))


@pytest.mark.parametrize("norm_first,activation,batch_first",
                         [(False, "relu", True), (True, "gelu", False)])
def test_transformer_encoder_layer(norm_first, activation, batch_first):
    model = TokenClassifier(norm_first, activation, batch_first)
    ids = torch.randint(0, 50, (ITERATIONS * 2, 6))
    model.eval()
    opts = popsim.Options().deviceIterations(ITERATIONS)
    actual = popsim.inferenceModel(model, opts)(ids)
    with torch.no_grad():
        expected = torch.cat([model(chunk) for chunk in ids.chunk(ITERATIONS)])
    assert_close(actual, expected)


def test_inference_follows_each_modules_flag_as_eager_pytorch_does():
    """As in eager PyTorch and PopTorch, the modules' train/eval flags decide: a batch norm
    in train mode normalises with the batch's statistics, one in eval mode with its running
    ones; the executor's train() / eval() set the flags and compile again."""
    model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4))
    with torch.no_grad():
        model[1].running_mean.uniform_(-1, 1)
        model[1].running_var.uniform_(0.5, 2)
    inputs = torch.randn(4, 3, 6, 6)
    with torch.no_grad():
        batch_statistics = model(inputs)  # (eager train mode: batch statistics)
        model.eval()
        running_statistics = model(inputs)
    inference = popsim.inferenceModel(model)  # in eval mode
    assert_close(inference(inputs), running_statistics)
    assert inference.train() is inference
    assert_close(inference(inputs), batch_statistics)
    assert model.training  # the flags are the user's module's, as train() set them
    inference.eval()
    assert_close(inference(inputs), running_statistics)
    model.train()  # set on the module directly: the model keeps the mode it compiled with
    assert_close(inference(inputs), running_statistics)
    assert_close(popsim.inferenceModel(model)(inputs), batch_statistics)


def test_nested_inputs_and_outputs():
    class Nested(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 3)

        def forward(self, pair, scale=2.0, *, extra):
            a, b = pair
            return {"sum": self.lin(a + b) * scale, "parts": (a.relu(), extra["bias"] - b)}

    model = Nested()
    a, b, bias = torch.randn(4, 4), torch.randn(4, 4), torch.randn(4, 4)
    popsim_model = popsim.inferenceModel(model, popsim.Options().deviceIterations(2))
    actual = popsim_model((a, b), extra={"bias": bias})
    with torch.no_grad():
        expected = {name: torch.cat([model((a[i:i + 2], b[i:i + 2]), extra={"bias": bias[i:i + 2]})[name]
                                     if name == "sum" else None for i in (0, 2)])
                    for name in ["sum"]}
    assert set(actual) == {"sum", "parts"}
    assert_close(actual["sum"], expected["sum"])
    assert_close(actual["parts"][0], a.relu())
    assert_close(actual["parts"][1], bias - b)


class Pair(NamedTuple):
    first: torch.Tensor
    second: torch.Tensor


@dataclasses.dataclass(frozen=True)
class Record:
    """A model output record (as Hugging Face models return), one field not a tensor."""
    logits: torch.Tensor
    hidden: Optional[torch.Tensor] = None
    note: str = "logits"


def test_named_tuples_and_dataclasses_go_in_and_come_out_as_themselves():
    class Recorded(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 3)

        def forward(self, pair):
            hidden = pair.first * pair.second
            return Record(self.lin(hidden), Pair(hidden, -hidden))

    model = Recorded()
    pair = Pair(torch.randn(4, 4), torch.randn(4, 4))
    actual = popsim.inferenceModel(model, popsim.Options().deviceIterations(2))(pair)
    with torch.no_grad():
        expected = model(pair)
    assert type(actual) is Record and type(actual.hidden) is Pair and actual.note == "logits"
    assert_close(actual.logits, expected.logits)
    assert_close(actual.hidden.first, expected.hidden.first)
    assert_close(actual.hidden.second, expected.hidden.second)


def test_an_output_that_is_not_a_tensor_is_refused_by_name():
    class ReturnsAString(torch.nn.Module):
        def forward(self, x):
            return x * 2, "x" * 200

    with pytest.raises(popsim.CompilationError,
                       match=r"^The model returns str 'x{76}\.\.\. as output\[1\]; popsim "
                             r"models return tensors \(or tuples, lists, dicts, NamedTuples "
                             r"and dataclasses of tensors\)\.$"):
        popsim.inferenceModel(ReturnsAString())(torch.randn(2, 3))


def test_weights_are_shared_with_the_host_model_and_copied_on_request():
    model = MnistNetwork().eval()
    inputs = torch.randn(8, 1, 28, 28)
    popsim_model = popsim.inferenceModel(model)
    before = popsim_model(inputs)
    with torch.no_grad():
        model.layer4.bias.add_(1.0)
        # Convolution kernels keep weights in oneDNN's blocked layout: the
        # copy must refresh them too.
        model.layer1.conv.weight.mul_(-1.0)
    # Host edits after compilation reach the device only when copied.
    assert_close(popsim_model(inputs), before)
    popsim_model.copyWeightsToDevice()
    with torch.no_grad():
        assert_close(popsim_model(inputs), model(inputs))


def test_compiling_leaves_torch_as_it_was():
    """Tracing may not change how torch behaves, inside forward() or after: a 0-d tensor (what
    x.numel() is while tracing) stays a number for torch.tensor, not a sequence."""
    class Counted(torch.nn.Module):
        def forward(self, x):
            return torch.cat((x.flatten(), torch.tensor([x.numel()], dtype=x.dtype)))

    x = torch.ones(2, 3)
    assert_close(popsim.inferenceModel(Counted())(x), Counted()(x))
    assert torch.tensor([torch.tensor(8)]).tolist() == [8]
    assert "__getitem__" not in torch.Tensor.__dict__


def test_sum_of_a_bool_output_is_any_and_says_so(capfd):
    """OutputMode.Sum adds each micro-batch's outputs; a bool cannot hold the count, so it
    comes back as whether any was True, with a warning saying how to count instead."""
    opts = popsim.Options().deviceIterations(ITERATIONS).outputMode(popsim.OutputMode.Sum)
    model = popsim.inferenceModel(Function(lambda x: (x > 0, (x > 0).int())), opts)
    x = torch.tensor([[1.0, -1.0], [-1.0, -1.0], [1.0, -1.0], [-1.0, -1.0]])
    flags, counts = model(x)
    assert torch.equal(flags, torch.tensor([[True, False]]))
    assert torch.equal(counts, torch.tensor([[2, 0]], dtype=torch.int32))
    assert ("OutputMode.Sum: output 0 is a bool tensor, which cannot hold a count, so the call "
            "returns whether any micro-batch's value was True. Return it as .int() or .long() "
            "to count the True values." in capfd.readouterr().err)
