"""The errors a training model gives, with the messages users see."""

import copy
import pickle
import re

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import popsim
from conftest import line_in
from models import WithLoss


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.head = nn.Linear(3, 2)

    def forward(self, x):
        return self.head(F.relu(self.fc(x)))


def data():
    return torch.randn(4, 4), torch.randint(0, 2, (4,))


def test_no_loss():
    trainer = popsim.trainingModel(Net())
    with pytest.raises(popsim.CompilationError,
                       match=r"^Couldn't find a loss in graph: the training model returns no "
                             r"loss\. Its forward\(\) must return the loss, or \(output, loss\), "
                             r"computed with a PyTorch loss function .* or marked with "
                             r"popsim\.identity_loss\(x, reduction\)"):
        trainer(torch.randn(4, 4))


def test_combined_losses_train():
    class Combined(WithLoss):
        def forward(self, x, labels):
            output = self.model(x)
            first = F.cross_entropy(output, labels)
            second = F.mse_loss(output, torch.zeros_like(output))
            return first, second, popsim.identity_loss(first + second, reduction="none")

    model = Combined(Net())
    eager = copy.deepcopy(model)
    trainer = popsim.trainingModel(model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1))
    x, labels = data()
    first, second, total = trainer(x, labels)
    optimizer = torch.optim.SGD(eager.parameters(), lr=0.1)
    eager_first, eager_second, eager_total = eager(x, labels)
    eager_total.backward()
    optimizer.step()
    torch.testing.assert_close(total, eager_total.detach())
    torch.testing.assert_close(model.model.fc.weight, eager.model.fc.weight)


def test_loss_that_is_not_a_scalar():
    class Unreduced(WithLoss):
        def forward(self, x, labels):
            return F.cross_entropy(self.model(x), labels, reduction="none")

    trainer = popsim.trainingModel(Unreduced(Net()))
    with pytest.raises(popsim.CompilationError,
                       match=r"The loss \(output 0, from nll_loss at .*\) is a f32\[4\] tensor, but a loss must be a "
                             r"float scalar"):
        trainer(*data())


def test_backward_inside_forward():
    class CallsBackward(WithLoss):
        def forward(self, x, labels):
            output, loss = super().forward(x, labels)
            loss.backward()
            return output, loss

    trainer = popsim.trainingModel(CallsBackward(Net()))
    with pytest.raises(popsim.CompilationError,
                       match=r"^The model's forward\(\) calls backward\(\)\. popsim training "
                             r"models compute the gradients of the returned loss"):
        trainer(*data())
    # torch's backward is itself again afterwards.
    leaf = torch.ones(2, requires_grad=True)
    (leaf * 3).sum().backward()
    assert leaf.grad.tolist() == [3.0, 3.0]


def test_gradient_hooks_are_refused_where_they_would_be_skipped():
    """popsim's backward pass would not run a Python hook on a gradient: a model with one
    would silently train as if it were not there, so each kind is refused, by name."""
    class HooksAGradient(WithLoss):
        def forward(self, x, labels):
            hidden = self.model.fc(x)
            hidden.register_hook(lambda grad: grad.clamp(-0.01, 0.01))  # hook: in forward
            output = self.model.head(F.relu(hidden))
            return output, F.cross_entropy(output, labels)

    with pytest.raises(popsim.CompilationError,
                       match=rf"^The model's forward\(\) registers a gradient hook "
                             rf"\(Tensor\.register_hook at {re.escape(__file__)}:"
                             rf"{line_in(__file__, 'hook: in forward')}\)\. popsim computes the gradients "
                             rf"on the device"):
        popsim.trainingModel(HooksAGradient(Net()))(*data())
    # Tensor.register_hook is itself again afterwards.
    leaf = torch.ones(2, requires_grad=True)
    leaf.register_hook(lambda grad: grad * 2)
    (leaf * 3).sum().backward()
    assert leaf.grad.tolist() == [6.0, 6.0]

    model = WithLoss(Net())
    model.model.fc.weight.register_hook(lambda grad: grad * 0)
    with pytest.raises(popsim.CompilationError,
                       match=r"^Parameter model\.fc\.weight has a gradient hook "
                             r"\(Tensor\.register_hook\)\. popsim computes the gradients on "
                             r"the device and cannot run a Python function on them: remove the "
                             r"hook\."):
        popsim.trainingModel(model)(*data())

    model = WithLoss(Net())
    model.model.head.register_full_backward_hook(lambda module, grad_in, grad_out: None)
    with pytest.raises(popsim.CompilationError,
                       match=r"^Module model\.head has a backward hook "
                             r"\(register_full_backward_hook or register_backward_hook\)"):
        popsim.trainingModel(model)(*data())


def test_gradients_inside_forward_are_refused_with_the_line():
    class GradientPenalty(WithLoss):
        def forward(self, x, labels):
            x = x.clone().requires_grad_(True)
            output = self.model(x)
            slope, = torch.autograd.grad(output.sum(), x, create_graph=True)  # grad: inside
            loss = F.cross_entropy(output, labels) + (slope.norm(dim=1) - 1).pow(2).mean()
            return output, loss

    with pytest.raises(popsim.CompilationError,
                       match=rf"^The model's forward\(\) calls torch\.autograd\.grad \(at "
                             rf"{re.escape(__file__)}:{line_in(__file__, 'grad: inside')}\)\. popsim "
                             rf"differentiates only the loss a training model returns"):
        popsim.trainingModel(GradientPenalty(Net()))(*data())
    assert torch.autograd.grad((torch.ones(1, requires_grad=True) * 2).sum(),
                               torch.ones(1, requires_grad=True), allow_unused=True) == (None,)


def test_wrapping_a_model_twice_for_training():
    model = WithLoss(Net())
    trainer = popsim.trainingModel(model)
    message = (r"^This model is already wrapped by popsim\.trainingModel \(popsim training model "
               r"\(not compiled\) of WithLoss\)\. Call destroy\(\) on that wrapper before "
               r"wrapping the model for training again\.$")
    with pytest.raises(popsim.InputError, match=message):
        popsim.trainingModel(model)
    trainer.destroy()
    popsim.trainingModel(model)(*data())


def test_copies_of_a_model_in_training_are_independent():
    model = WithLoss(Net())
    trainer = popsim.trainingModel(model)
    assert b"popsim" not in pickle.dumps(model)  # wrapped, not compiled yet
    trainer(*data())
    assert b"popsim" not in pickle.dumps(model)  # pickles load without popsim
    copied = copy.deepcopy(model)
    assert type(copied) is WithLoss
    popsim.trainingModel(copied)(*data())  # not "already wrapped"
    restored = pickle.loads(pickle.dumps(model))
    torch.testing.assert_close(restored.model.fc.weight, model.model.fc.weight)


def test_unsupported_optimizers_and_changes():
    model = WithLoss(Net())
    with pytest.raises(popsim.OptionError,
                       match=r"^popsim trains with SGD, Adam, AdamW or RMSprop \(popsim\.optim or "
                             r"torch\.optim\) or LAMB \(popsim\.optim\), got Adagrad\.$"):
        popsim.trainingModel(model, optimizer=torch.optim.Adagrad(model.parameters()))
    trainer = popsim.trainingModel(model, optimizer=torch.optim.SGD(model.parameters(), lr=0.1))
    trainer(*data())
    with pytest.raises(popsim.OptionError,
                       match=r"^setOptimizer cannot change the optimizer from sgd to adam: the "
                             r"update rule is compiled into the program\. Call destroy\(\)"):
        trainer.setOptimizer(torch.optim.Adam(model.parameters()))
    with pytest.raises(popsim.OptionError, match=r"^setOptimizer can change numeric "
                                                 r"hyper-parameters"):
        trainer.setOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))


def test_optimizer_over_tensors_that_are_not_model_parameters():
    stray = nn.Parameter(torch.zeros(5, 5))
    model = WithLoss(Net())
    trainer = popsim.trainingModel(
        model, optimizer=torch.optim.SGD([*model.parameters(), stray], lr=0.1))
    with pytest.raises(popsim.OptionError,
                       match=r"^Parameter group 0 of the optimizer holds a tensor of shape \[5, 5\] "
                             r"that is not a parameter of the model\.$"):
        trainer(*data())


def test_set_optimizer_on_an_inference_model():
    model = Net()
    with pytest.raises(popsim.InputError, match=r"^setOptimizer\(\) is for training models\.$"):
        popsim.inferenceModel(model).setOptimizer(torch.optim.SGD(model.parameters(), lr=0.1))
