"""Anchored tensors, as PopTorch's Options.anchorTensor / getAnchoredTensor /
getTensorNames: a trained parameter's gradient ("Gradient___<name>", one per
micro-batch, returned in the model's output mode) and a variable's value
after the call ("UpdatedVar___<name>" or "<name>"), checked against eager
PyTorch."""

import copy

import pytest
import torch
import torch.nn as nn

import popsim
from conftest import assert_close


class Regression(nn.Module):
    def __init__(self):
        super().__init__()
        self.first = nn.Linear(4, 6)
        self.second = nn.Linear(6, 2)

    def forward(self, x, target):
        out = self.second(torch.tanh(self.first(x)))
        return out, nn.functional.mse_loss(out, target)


class TwoStages(Regression):
    def forward(self, x, target):
        with popsim.Block("B0", ipu_id=0):
            hidden = torch.tanh(self.first(x))
        with popsim.Block("B1", ipu_id=1):
            out = self.second(hidden)
            return out, nn.functional.mse_loss(out, target)


def eager_micro_batch_gradients(model, x, target, micro_batches, accumulation, lr):
    """Each micro-batch's gradient of first.weight, with SGD stepping on the
    mean of every `accumulation` micro-batches' gradients (popsim's default)."""
    model = copy.deepcopy(model)
    gradients = []
    for step in range(micro_batches // accumulation):
        step_gradients = []
        for index in range(step * accumulation, (step + 1) * accumulation):
            model.zero_grad()
            rows = slice(index * 2, index * 2 + 2)
            model(x[rows], target[rows])[1].backward()
            gradients.append(model.first.weight.grad.clone())
            step_gradients.append([p.grad.clone() for p in model.parameters()])
        with torch.no_grad():
            for position, parameter in enumerate(model.parameters()):
                mean = sum(g[position] for g in step_gradients) / accumulation
                parameter -= lr * mean
    return torch.stack(gradients)


@pytest.mark.parametrize("model_class", [Regression, TwoStages])
def test_gradients_of_every_micro_batch_match_eager(model_class):
    torch.manual_seed(0)
    model = model_class()
    initial = copy.deepcopy(model)
    options = popsim.Options().deviceIterations(2).outputMode(popsim.OutputMode.All)
    options.Training.gradientAccumulation(3)  # a two-stage pipeline needs 3
    options.anchorTensor("grad", "Gradient___first.weight")
    trainer = popsim.trainingModel(model, options, torch.optim.SGD(model.parameters(), lr=0.1))
    x, target = torch.randn(12, 4), torch.randn(12, 2)
    trainer(x, target)
    anchored = trainer.getAnchoredTensor("grad")
    assert anchored.shape == (6, 6, 4)  # every micro-batch, stacked
    assert_close(anchored, eager_micro_batch_gradients(initial, x, target, 6, 3, 0.1))


def test_by_default_a_training_model_returns_the_last_micro_batchs_gradient():
    torch.manual_seed(1)
    model = Regression()
    initial = copy.deepcopy(model)
    options = popsim.Options().deviceIterations(3)
    options.anchorTensor("bias_grad", "Gradient___second.bias")
    trainer = popsim.trainingModel(model, options, torch.optim.SGD(model.parameters(), lr=0.05))
    x, target = torch.randn(6, 4), torch.randn(6, 2)
    trainer(x, target)
    # The third step's gradient, at the weights two SGD steps made.
    eager = copy.deepcopy(initial)
    for step in range(3):
        eager.zero_grad()
        eager(x[step * 2:step * 2 + 2], target[step * 2:step * 2 + 2])[1].backward()
        if step < 2:
            with torch.no_grad():
                for parameter in eager.parameters():
                    parameter -= 0.05 * parameter.grad
    assert trainer.getAnchoredTensor("bias_grad").shape == (2,)
    assert_close(trainer.getAnchoredTensor("bias_grad"), eager.second.bias.grad)


def test_variables_are_their_values_after_the_call():
    torch.manual_seed(2)
    model = Regression()
    options = popsim.Options()
    options.anchorTensor("updated", "UpdatedVar___first.weight").anchorTensor("bias", "second.bias")
    trainer = popsim.trainingModel(model, options, torch.optim.Adam(model.parameters(), lr=0.01))
    before = model.first.weight.detach().clone()
    trainer(torch.randn(2, 4), torch.randn(2, 2))
    assert not torch.equal(trainer.getAnchoredTensor("updated"), before)
    assert torch.equal(trainer.getAnchoredTensor("updated"), model.first.weight)
    assert torch.equal(trainer.getAnchoredTensor("bias"), model.second.bias)
    inference = popsim.inferenceModel(model, popsim.Options().anchorTensor("w", "first.weight"))
    inference(torch.randn(2, 4), torch.randn(2, 2))
    assert torch.equal(inference.getAnchoredTensor("w"), model.first.weight)


def test_poptorchs_spelling_of_parameter_names_anchors_the_same_tensors():
    # PopTorch names parameters inside the module it wraps the user's model in: "model." first.
    torch.manual_seed(2)
    model = Regression()
    options = popsim.Options()
    options.anchorTensor("grad", "Gradient___second.bias")
    options.anchorTensor("poptorch_grad", "Gradient___model.second.bias")
    options.anchorTensor("weight", "UpdatedVar___model.first.weight")
    trainer = popsim.trainingModel(model, options, torch.optim.SGD(model.parameters(), lr=0.1))
    trainer(torch.randn(2, 4), torch.randn(2, 2))
    assert torch.equal(trainer.getAnchoredTensor("poptorch_grad"),
                       trainer.getAnchoredTensor("grad"))
    assert torch.equal(trainer.getAnchoredTensor("weight"), model.first.weight)


def test_getTensorNames_lists_what_can_be_anchored():
    trainer = popsim.trainingModel(Regression())
    # An InputError, and an AssertionError as PopTorch asserts there.
    for error in (popsim.NotCompiledError, popsim.InputError, AssertionError):
        with pytest.raises(error, match="Model must be compiled before calling getTensorNames"):
            trainer.getTensorNames()
    trainer.compile(torch.randn(2, 4), torch.randn(2, 2))
    names = trainer.getTensorNames()
    assert {"first.weight", "UpdatedVar___first.weight", "Gradient___first.weight",
            "Gradient___second.bias", "finalLossScale"} <= set(names)


def test_optimizer_state_anchors_by_poptorch_names():
    """getTensorNames also lists the optimizer's state and compound hyper-parameters by
    PopTorch's names (its state_dict()'s "ipu_state" and "ipu_param" keys, as PopART names
    them), and each anchors its value after the call."""
    torch.manual_seed(0)
    model = Regression()
    optimizer = popsim.optim.Adam(model.parameters(), lr=0.01)
    opts = popsim.Options()
    opts.anchorTensor("moment", "Accl1___model.first.bias")
    opts.anchorTensor("lr", "learningRate___specific___model.second.weight")
    trainer = popsim.trainingModel(model, opts, optimizer)
    x, target = torch.randn(2, 4), torch.randn(2, 2)
    trainer(x, target)
    first = trainer.getAnchoredTensor("moment").clone()
    trainer(x, target)
    state = optimizer.state_dict()
    names = trainer.getTensorNames()
    assert set(state["ipu_state"]) | set(state["ipu_param"]) <= set(names)
    assert "Accl2___model.second.weight" in names and "Step___model.first.bias" in names
    # The first moment after two steps, as the optimizer's state dict reads it.
    assert torch.equal(trainer.getAnchoredTensor("moment"),
                       state["ipu_state"]["Accl1___model.first.bias"])
    assert not torch.equal(first, trainer.getAnchoredTensor("moment"))
    assert trainer.getAnchoredTensor("lr").item() == pytest.approx(0.01)
    # SGD with PopTorch's constant momentum 0 (PopART's SGD0) has a scaled learning rate.
    sgd_model = Regression()
    sgd = popsim.trainingModel(sgd_model, optimizer=popsim.optim.SGD(sgd_model.parameters(),
                                                                     lr=0.1))
    sgd.compile(x, target)
    assert any(name.startswith("scaledLearningRate") for name in sgd.getTensorNames())


def test_optimizer_state_anchors_refuse_what_is_not_kept():
    x, target = torch.randn(2, 4), torch.randn(2, 2)
    model = Regression()
    with pytest.raises(popsim.OptionError,
                       match=r"^anchorTensor\('m', 'Accl3___model\.first\.bias'\): this model's "
                             r"optimizer does not keep it \(Adam keeps Accl3 only with amsgrad"):
        popsim.trainingModel(model, popsim.Options().anchorTensor("m", "Accl3___model.first.bias"),
                             popsim.optim.Adam(model.parameters())).compile(x, target)
    with pytest.raises(popsim.OptionError,
                       match=r"'Accl9___model\.first\.bias' is not a parameter or buffer of the "
                             r"model, or its optimizer's state\. Did you mean "
                             r"'Accl\d___model\.first\.bias'\?"):
        popsim.trainingModel(model, popsim.Options().anchorTensor("m", "Accl9___model.first.bias"),
                             popsim.optim.Adam(model.parameters())).compile(x, target)
    # An inference model has no optimizer.
    with pytest.raises(popsim.OptionError, match=r"is not a parameter or buffer of the model\."):
        popsim.inferenceModel(Regression(), popsim.Options().anchorTensor(
            "m", "Accl1___model.first.bias")).compile(x, target)
    # A value after the call, as a variable's: not after each of several device iterations.
    opts = popsim.Options().deviceIterations(2).outputMode(popsim.OutputMode.All)
    with pytest.raises(popsim.OptionError, match=r"returns a variable's value after the call"):
        popsim.trainingModel(model, opts.anchorTensor("m", "Accl1___model.first.bias"),
                             popsim.optim.Adam(model.parameters())).compile(
                                 torch.randn(4, 4), torch.randn(4, 2))


def test_final_loss_scale_follows_automatic_loss_scaling():
    """anchorTensor("finalLossScale"): the loss scaling factor after the call,
    doubled by automatic loss scaling while float16 gradients stay small; a
    constant factor is the optimizer's."""
    torch.manual_seed(0)
    opts = popsim.Options().anchorTensor("scale", "finalLossScale")
    opts.Training.setAutomaticLossScaling(True)
    model = Regression().half()
    trainer = popsim.trainingModel(model, opts, popsim.optim.SGD(
        model.parameters(), lr=0.01, loss_scaling=8.0))
    scales = []
    for _ in range(3):
        trainer(torch.randn(2, 4).half(), torch.randn(2, 2).half())
        scales.append(trainer.getAnchoredTensor("scale").item())
    assert scales == [16.0, 32.0, 64.0]
    fixed = Regression()
    constant = popsim.trainingModel(
        fixed, popsim.Options().anchorTensor("scale", "finalLossScale"),
        popsim.optim.SGD(fixed.parameters(), lr=0.01, loss_scaling=4.0))
    constant(torch.randn(2, 4), torch.randn(2, 2))
    assert constant.getAnchoredTensor("scale").item() == 4.0
    with pytest.raises(popsim.OptionError, match=r"the loss scaling factor belongs to training"):
        popsim.inferenceModel(Regression(), popsim.Options().anchorTensor(
            "scale", "finalLossScale"))(torch.randn(2, 4), torch.randn(2, 2))


@pytest.mark.parametrize("anchor,training,message", [
    (("g", "Gradient___first.weight"), False,
     r"'Gradient___first.weight' is a gradient, and an inference model computes none"),
    (("g", "Gradient___first.wieght"), True,
     r"'Gradient___first.wieght' is not the gradient of a parameter the optimizer trains\. "
     r"Did you mean 'Gradient___first.weight'\?"),
    (("v", "UpdatedVar___third.bias"), True, r"'UpdatedVar___third.bias' is not a parameter or "
     r"buffer of the model"),
    (("g", "Gradient___first.weight", popsim.OutputMode.All), True,
     r"popsim returns anchors in the model's output mode \(OutputMode.Final\)"),
])
def test_anchors_that_cannot_be_returned_are_refused_naming_them(anchor, training, message):
    options = popsim.Options().anchorTensor(*anchor)
    wrap = popsim.trainingModel if training else popsim.inferenceModel
    with pytest.raises(popsim.OptionError, match=message):
        wrap(Regression(), options)(torch.randn(2, 4), torch.randn(2, 2))


def test_a_variable_per_step_is_refused_with_several_steps_per_call():
    options = popsim.Options().deviceIterations(2).outputMode(popsim.OutputMode.All)
    options.anchorTensor("w", "UpdatedVar___first.weight")
    with pytest.raises(popsim.OptionError, match=r"not after each of its 2 steps"):
        popsim.trainingModel(Regression(), options)(torch.randn(4, 4), torch.randn(4, 2))


def test_getAnchoredTensor_says_what_is_missing():
    options = popsim.Options().anchorTensor("g", "Gradient___first.weight")
    trainer = popsim.trainingModel(Regression(), options)
    with pytest.raises(popsim.OptionError, match=r"No tensor with name g found: the model has "
                       r"not run since it compiled"):
        trainer.getAnchoredTensor("g")
    trainer(torch.randn(2, 4), torch.randn(2, 2))
    with pytest.raises(popsim.OptionError, match=r"No tensor with name h found: the options "
                       r"anchor \['g'\]"):
        trainer.getAnchoredTensor("h")


@pytest.mark.parametrize("arguments,message", [
    (("", "first.weight"), "non-empty string as short_name"),
    (("w", 3), "non-empty string as long_name"),
    (("w", "first.weight", "All"), "a popsim.OutputMode or None"),
    (("w", "first.weight", popsim.OutputMode.EveryN, 0), "output_return_period"),
])
def test_anchorTensor_checks_its_arguments(arguments, message):
    with pytest.raises(popsim.OptionError, match=message):
        popsim.Options().anchorTensor(*arguments)


def test_closest_name_is_difflibs():
    """The C++ host suggests the name Python's difflib would (its messages are both
    languages'): on random names, near misses, ties and long names (difflib's heuristic
    for sequences of 200 or more)."""
    import difflib
    import random

    rng = random.Random(0)
    alphabet = "ab.c_d1"
    for trial in range(400):
        length = rng.choice([3, 8, 20, 210 if trial % 40 == 0 else 12])
        word = "".join(rng.choice(alphabet) for _ in range(length))
        candidates = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, length + 3)))
                      for _ in range(rng.randint(0, 6))]
        candidates += [word[:-1], word[1:] + "x", "é" + word]  # near misses, non-ASCII
        expected = difflib.get_close_matches(word, candidates, n=1)
        assert popsim._C.closest_match(word, candidates) == (expected[0] if expected else ""), (
            word, candidates)
