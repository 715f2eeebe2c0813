"""Every op with a gradient rule: popsim's input and weight gradients against
torch.autograd on random shapes.

Each forward op case of test_ops.py is differentiated through the loss
sum(op(inputs) * R) for a fixed random R, with popsim's autodiff and backward
kernels (popsim.compile.gradients) and with autograd. Training-only forms (batch
norm with batch statistics) and the loss functions have their own cases.
"""

import random

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import binary_cases
import indexing_cases
import loss_cases
import pointwise_cases
import rearrangement_cases
import reduction_cases
import window_cases
import popsim
from conftest import assert_close
from popsim.compile.gradients import gradients
from test_ops import CASES, DRAWS

# Ops whose cases have no float input or parameter to differentiate, or that
# PyTorch has no derivative for.
NOT_DIFFERENTIABLE = ({f"binary_{name}" for name in binary_cases.NOT_DIFFERENTIABLE}
                      | {f"reduction_{name}" for name in reduction_cases.NOT_DIFFERENTIABLE}
                      | {f"indexing_{name}" for name in indexing_cases.NOT_DIFFERENTIABLE}
                      | {f"rearrangement_{name}"
                         for name in rearrangement_cases.NOT_DIFFERENTIABLE}
                      | {f"window_{name}" for name in window_cases.NOT_DIFFERENTIABLE}
                      | {f"loss_{name}" for name in loss_cases.NOT_DIFFERENTIABLE}
                      | {f"pointwise_{name}" for name in pointwise_cases.NOT_DIFFERENTIABLE})


class Projected(nn.Module):
    """loss = sum(module(inputs) * R): every output element gets its own weight."""

    def __init__(self, module, projection):
        super().__init__()
        self.inner = module
        self.projection = projection

    def forward(self, *inputs):
        return popsim.identity_loss((self.inner(*inputs) * self.projection).sum(), "none")


def autograd_gradients(model, inputs, training=False):
    model.train(training)
    leaves = [x.detach().clone().requires_grad_(x.is_floating_point()) for x in inputs]
    model.zero_grad()
    model(*leaves).backward()
    return leaves, {name: p.grad for name, p in model.named_parameters() if p.requires_grad}


def assert_gradient_close(actual, expected, rtol):
    """rtol relative per element, and the same fraction of the gradient's largest
    magnitude as absolute slack: elements near zero come from cancellations whose
    rounding (in PyTorch's float kernels as in popsim's) is relative to the
    terms, not to the small result."""
    scale = expected.abs().max().item() if expected.numel() else 0.0
    assert_close(actual, expected, rtol=rtol, atol=max(1e-6, rtol * scale))


def check(model, inputs, training=False, rtol=1e-5):
    input_grads, weight_grads = gradients(model, *inputs, training=training)
    leaves, expected_weights = autograd_gradients(model, inputs, training)
    float_leaves = [leaf for leaf in leaves if leaf.is_floating_point()]
    assert len(input_grads) == len(float_leaves)
    for actual, leaf in zip(input_grads.values(), float_leaves):
        expected = leaf.grad if leaf.grad is not None else torch.zeros_like(leaf)
        assert_gradient_close(actual, expected, rtol)
    assert set(weight_grads) == set(expected_weights)
    for name, expected in expected_weights.items():
        assert_gradient_close(weight_grads[name], expected if expected is not None else
                              torch.zeros_like(weight_grads[name]), rtol)


@pytest.mark.parametrize("draw", range(DRAWS))
@pytest.mark.parametrize("op", sorted(set(CASES) - NOT_DIFFERENTIABLE))
def test_op_gradients_match_autograd(op, draw):
    rng = random.Random(f"{op}-{draw}")
    torch.manual_seed(rng.randint(0, 2**31))
    module, inputs = CASES[op](rng)
    module.eval()
    with torch.no_grad():
        output = module(*inputs)
    model = Projected(module, torch.randn(output.shape))
    check(model, inputs)


@pytest.mark.parametrize("rank,affine", [(2, True), (4, True), (4, False), (3, True)])
def test_batch_norm_with_batch_statistics(rank, affine):
    channels = 3
    norm = (nn.BatchNorm2d if rank == 4 else nn.BatchNorm1d)(channels, affine=affine)
    if affine:
        with torch.no_grad():
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.uniform_(-1, 1)
    shape = [4, channels] + [5] * (rank - 2)
    x = torch.randn(*shape)
    model = Projected(norm, torch.randn(*shape))
    check(model, [x], training=True)


class LossModel(nn.Module):
    def __init__(self, loss, features=5):
        super().__init__()
        self.lin = nn.Linear(features, 4)
        self.loss = loss

    def forward(self, x, target):
        return self.loss(self.lin(x), target)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("name,make_target", [
    ("cross_entropy", lambda n: torch.randint(0, 4, (n,))),
    ("nll", lambda n: torch.randint(0, 4, (n,))),
    ("mse", lambda n: torch.randn(n, 4)),
    ("l1", lambda n: torch.randn(n, 4)),
    ("bce_with_logits", lambda n: torch.rand(n, 4)),
])
def test_loss_gradients_match_autograd(name, make_target, reduction):
    losses = {
        "cross_entropy": nn.CrossEntropyLoss(reduction=reduction),
        "nll": lambda out, t: F.nll_loss(F.log_softmax(out, 1), t, reduction=reduction),
        "mse": nn.MSELoss(reduction=reduction),
        "l1": nn.L1Loss(reduction=reduction),
        "bce_with_logits": nn.BCEWithLogitsLoss(reduction=reduction),
    }
    model = LossModel(losses[name])
    check(model, [torch.randn(6, 5), make_target(6)])


@pytest.mark.parametrize("loss", [F.l1_loss, F.mse_loss, F.smooth_l1_loss, F.huber_loss])
def test_an_integer_regression_target_has_the_float_targets_gradient(loss):
    """Eager's forward promotes an integer target; its backward refuses one, so popsim's
    gradient is checked against autograd's with the target converted to float."""
    model = LossModel(loss)
    x, target = torch.randn(6, 5), torch.randint(-2, 3, (6, 4))
    input_grads, weight_grads = gradients(model, x, target)
    leaves, expected = autograd_gradients(model, [x, target.float()])
    assert_gradient_close(input_grads[next(iter(input_grads))], leaves[0].grad, 1e-5)
    for name, gradient in expected.items():
        assert_gradient_close(weight_grads[name], gradient, 1e-5)


def test_cross_entropy_ignore_index_and_spatial_targets():
    class Segmentation(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(2, 4, 3, padding=1)

        def forward(self, x, target):
            return F.cross_entropy(self.conv(x), target, ignore_index=1)

    target = torch.randint(0, 4, (2, 5, 5))
    check(Segmentation(), [torch.randn(2, 2, 5, 5), target])


@pytest.mark.parametrize("reduction", ["sum", "mean"])
def test_identity_loss_reductions(reduction):
    class Custom(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            return popsim.identity_loss(self.lin(x).tanh(), reduction)

    check(Custom(), [torch.randn(4, 3)])


def test_shared_values_and_tied_weights_sum_their_gradients():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            h = self.lin(x)
            return popsim.identity_loss((self.lin(h) * h).sum(), "none")

    check(Tied(), [torch.randn(3, 4)])


class SquaredConvolution(nn.Module):
    def __init__(self, conv):
        super().__init__()
        self.conv = conv

    def forward(self, x):
        y = self.conv(x)
        return popsim.identity_loss(y * y, "sum")


@pytest.mark.parametrize("channels,kernel,stride,padding", [(16, 3, 1, 1), (16, 3, 2, 1),
                                                              (16, 1, 2, 0), (3, 7, 2, 3)])
def test_training_convolutions_are_bit_identical_to_eager(channels, kernel, stride, padding):
    # Training programs run the oneDNN kernels eager PyTorch runs (see
    # test_training.py for why parity over many steps depends on it).
    torch.manual_seed(0)
    conv = nn.Conv2d(channels, 32, kernel, stride, padding, bias=False)
    x = torch.randn(2, channels, 16, 16, requires_grad=True)
    input_grads, weight_grads = gradients(SquaredConvolution(conv), x)
    y = conv(x)
    (y * y).sum().backward()
    assert torch.equal(input_grads["x"], x.grad)
    assert torch.equal(weight_grads["conv.weight"], conv.weight.grad)


def test_gradients_restore_each_module_flag():
    model = SquaredConvolution(nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2)))
    model.conv[1].eval()  # frozen batch norm
    gradients(model, torch.randn(2, 1, 4, 4))
    assert model.training and model.conv[0].training and not model.conv[1].training


class WeightedPool(nn.Module):
    def __init__(self, pool):
        super().__init__()
        self.pool = pool

    def forward(self, x, weights):
        return popsim.identity_loss((self.pool(x) * weights).sum(), "none")


@pytest.mark.parametrize("kernel,stride,padding", [(2, 2, 0), (3, 2, 1), (3, 1, 1), (2, 3, 1)])
@pytest.mark.parametrize("ties", [False, True])
def test_max_pool_gradients_are_bit_identical_to_eager(kernel, stride, padding, ties):
    # Each gradient goes to the window's first maximum, and where windows
    # overlap the contributions add up in PyTorch's order.
    x = torch.randint(-2, 3, (2, 3, 11, 10)).float() if ties else torch.randn(2, 3, 11, 10)
    pool = nn.MaxPool2d(kernel, stride, padding)
    weights = torch.randn(pool(x).shape)
    input_grads, _ = gradients(WeightedPool(pool), x, weights)
    leaf = x.clone().requires_grad_()
    (pool(leaf) * weights).sum().backward()
    assert torch.equal(input_grads["x"], leaf.grad)


class WeightedActivation(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x, weights):
        return popsim.identity_loss((self.fn(x) * weights).sum(), "none")


@pytest.mark.parametrize("fn", [torch.relu, torch.abs], ids=["relu", "abs"])
def test_activation_gradients_are_bit_identical_to_eager(fn):
    # (Sigmoid's and tanh's use the forward output, which oneDNN computes
    # within an ulp of PyTorch's, so theirs match to fp32 tolerance.)
    x = torch.randn(64, 257)
    x[0, :8] = 0.0  # the kinks
    weights = torch.randn(64, 257)
    input_grads, _ = gradients(WeightedActivation(fn), x, weights)
    leaf = x.clone().requires_grad_()
    (fn(leaf) * weights).sum().backward()
    assert torch.equal(input_grads["x"], leaf.grad)
