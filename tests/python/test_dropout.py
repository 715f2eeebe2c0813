"""Dropout in training models: masks drawn on the device from a seed.

popsim's masks are not PyTorch's (they come from popsim's own counter-based
generator), so these tests check what a mask must be: elements kept with
probability 1 - p and scaled by 1 / (1 - p), the gradient through the same
mask, the same masks for the same seed, fresh masks for every micro-batch,
whole channels for nn.Dropout1d/2d/3d, no dropout in eval mode, and dropout
in an inference model whose dropout is in train mode, as eagerly.
"""

import pytest
import torch
import torch.nn as nn

import popsim
from conftest import assert_close


class Dropped(nn.Module):
    """y = dropout(x) * w, loss = sum(y): w's gradient is the column sums of dropout(x)."""

    def __init__(self, p, features):
        super().__init__()
        self.dropout = nn.Dropout(p)
        self.weight = nn.Parameter(torch.ones(features))

    def forward(self, x):
        y = self.dropout(x) * self.weight
        return y, popsim.identity_loss(y.sum(), "none")


def trainer(p=0.3, features=500, seed=7, iterations=1, accumulation=1):
    opts = popsim.Options().randomSeed(seed).deviceIterations(iterations)
    opts.outputMode(popsim.OutputMode.All).Training.gradientAccumulation(accumulation)
    model = Dropped(p, features)
    return model, popsim.trainingModel(model, opts, torch.optim.SGD(model.parameters(), lr=1.0))


def test_kept_elements_are_scaled_and_the_rate_is_one_minus_p():
    p = 0.3
    _, training = trainer(p)
    x = torch.rand(20, 500) + 0.5  # no zeros, so zeros in y are dropped elements
    y, _ = training(x)
    kept = y != 0
    assert_close(y[kept], x[kept] / (1 - p))
    # 10,000 Bernoulli draws: the kept fraction is within 5 standard deviations.
    deviation = (p * (1 - p) / kept.numel()) ** 0.5
    assert abs(kept.float().mean().item() - (1 - p)) < 5 * deviation


def test_gradient_flows_through_the_same_mask():
    model, training = trainer()
    x = torch.rand(20, 500) + 0.5
    y, _ = training(x)
    # SGD with lr 1 from w = 1: w' = 1 - column sums of dropout(x) = 1 - column sums of y.
    assert_close(model.weight.detach(), 1 - y.sum(0))


def test_same_seed_same_masks_and_another_seed_other_masks():
    x = torch.rand(8, 500) + 0.5
    first, _ = trainer(seed=3)[1](x)
    again, _ = trainer(seed=3)[1](x)
    other, _ = trainer(seed=4)[1](x)
    assert torch.equal(first != 0, again != 0)
    assert not torch.equal(first != 0, other != 0)


def test_seeds_of_64_bits_as_torch_initial_seed_gives_them_seed_the_masks():
    """randomSeed(torch.initial_seed()) is a common idiom, and an unseeded torch's initial
    seed takes all 64 bits: seeds from 2**63 up seed the masks as smaller ones do."""
    x = torch.rand(8, 500) + 0.5
    first, _ = trainer(seed=2**64 - 5)[1](x)
    again, _ = trainer(seed=2**64 - 5)[1](x)
    other, _ = trainer(seed=2**63 + 7)[1](x)
    assert torch.equal(first != 0, again != 0)
    assert not torch.equal(first != 0, other != 0)


@pytest.mark.parametrize("iterations,accumulation", [(3, 1), (1, 3), (2, 2)])
def test_every_micro_batch_gets_a_fresh_mask(iterations, accumulation):
    micro_batches = iterations * accumulation
    _, training = trainer(p=0.5, iterations=iterations, accumulation=accumulation)
    x = (torch.rand(1, 500) + 0.5).repeat(micro_batches, 1)  # the same sample each time
    masks = training(x)[0].reshape(micro_batches, 500) != 0
    second_call = training(x)[0].reshape(micro_batches, 500) != 0
    all_masks = torch.cat([masks, second_call])
    for i in range(len(all_masks)):
        for j in range(i):
            assert not torch.equal(all_masks[i], all_masks[j]), (i, j)


def test_eval_mode_dropout_does_not_drop_in_training_or_inference():
    model, training = trainer(p=0.5)
    model.dropout.eval()
    x = torch.rand(4, 500) + 0.5
    y, _ = training(x)
    assert_close(y, x)
    inference = popsim.inferenceModel(model.eval())
    assert_close(inference(x)[0], x * model.weight.detach())


def test_an_inference_model_drops_while_its_dropout_is_in_train_mode():
    # As eager PyTorch and PopTorch run it: the module's flag decides, not the wrapper.
    model = Dropped(0.5, 500).train()
    x = torch.rand(8, 500) + 0.5
    y = popsim.inferenceModel(model)(x)[0]
    kept = y != 0
    assert_close(y[kept], (x * model.weight.detach())[kept] / 0.5)
    deviation = (0.25 / kept.numel()) ** 0.5  # 4,000 draws: within 5 standard deviations
    assert abs(kept.float().mean().item() - 0.5) < 5 * deviation
    assert model.training  # the flag is the user's, left as it was


class ChannelDropped(nn.Module):
    """y = dropoutNd(x) * w with one weight per channel, loss = sum(y)."""

    def __init__(self, dropout, channels):
        super().__init__()
        self.dropout = dropout
        self.weight = nn.Parameter(torch.ones(channels))

    def forward(self, x):
        shape = (1, -1) + (1,) * (x.dim() - 2)
        y = self.dropout(x) * self.weight.reshape(shape)
        return y, popsim.identity_loss(y.sum(), "none")


@pytest.mark.parametrize("dropout,shape", [(nn.Dropout1d(0.4), (40, 6, 5)),
                                           (nn.Dropout2d(0.4), (40, 6, 3, 4)),
                                           (nn.Dropout3d(0.4), (40, 6, 2, 3, 2))])
def test_feature_dropout_drops_whole_channels_with_their_gradient(dropout, shape):
    model = ChannelDropped(dropout, shape[1])
    training = popsim.trainingModel(model, popsim.Options().randomSeed(5),
                                    torch.optim.SGD(model.parameters(), lr=1.0))
    x = torch.rand(*shape) + 0.5
    y, _ = training(x)
    channels = y.reshape(shape[0], shape[1], -1)
    kept = (channels != 0).all(-1)
    assert bool((kept | (channels == 0).all(-1)).all())  # each channel kept or dropped whole
    assert_close(y[kept], x[kept] / 0.6)
    deviation = (0.24 / kept.numel()) ** 0.5  # 240 draws: within 5 standard deviations
    assert abs(kept.float().mean().item() - 0.6) < 5 * deviation
    # SGD with lr 1 from w = 1: w' = 1 - each channel's sum of dropout(x), the same mask.
    assert_close(model.weight.detach(), 1 - channels.sum((0, 2)))
