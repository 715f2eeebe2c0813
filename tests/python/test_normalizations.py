"""Group and instance norm and batch norm of 2-D and 5-D inputs in training:
a network through them trains as in eager PyTorch (batch statistics and
running statistics included). Each op's forward, backward and NaN/Inf cases
are in normalization_cases.py. Batch norm with momentum=None (a cumulative
average of the running statistics) trains as eager too, and so does
spectral_norm with its power iteration."""

import torch
import torch.nn as nn
import torch.nn.functional as F

import popsim
from models import assert_sgd_steps_match_eager


class Normalized(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.group = nn.GroupNorm(4, 8)
        self.instance = nn.InstanceNorm2d(8, affine=True)
        self.volume = nn.BatchNorm3d(2)
        self.flat = nn.BatchNorm1d(8)
        self.head = nn.Linear(8, 3)

    def forward(self, x, target):
        h = torch.relu(self.group(self.conv(x)))
        h = self.instance(h)
        h = self.volume(h.reshape(h.shape[0], 2, 4, *h.shape[2:])).reshape(h.shape)
        out = self.head(self.flat(torch.relu(h.mean(dim=(2, 3)) + 0.3)))
        return out, popsim.identity_loss(((out - target) ** 2).mean(), "none")


def test_training_through_group_instance_and_batch_norms_matches_eager():
    torch.manual_seed(2)
    batches = [(torch.randn(4, 3, 6, 6), torch.randn(4, 3)) for _ in range(3)]
    assert_sgd_steps_match_eager(Normalized, batches)


class TrackedInstanceNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 1)
        self.norm = nn.InstanceNorm2d(4, affine=True, track_running_stats=True, momentum=0.3)
        self.sequence = nn.InstanceNorm1d(4, track_running_stats=True)

    def forward(self, x, target):
        h = self.norm(self.conv(x))
        out = self.sequence(h.flatten(2)).mean(dim=2)
        return out, popsim.identity_loss(((out - target) ** 2).mean(), "none")


def test_instance_norm_updates_its_running_statistics_as_eager():
    """InstanceNorm with track_running_stats=True trains on each sample's own
    statistics and moves its running mean and variance as PyTorch does (the
    mean over the samples of their means and unbiased variances)."""
    torch.manual_seed(3)
    batches = [(torch.randn(3, 3, 5, 4) * 2 + 1, torch.randn(3, 4)) for _ in range(3)]
    assert_sgd_steps_match_eager(TrackedInstanceNorm, batches)
    model = TrackedInstanceNorm()
    popsim.trainingModel(model, None, torch.optim.SGD(model.parameters(), lr=0.1))(*batches[0])
    assert not torch.equal(model.norm.running_var, torch.ones(4))  # they did move


class CumulativeAverage(nn.Module):
    """Batch norms with momentum=None: running statistics averaged over every batch so far."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.norm = nn.BatchNorm2d(4, momentum=None)
        self.flat = nn.BatchNorm1d(4, momentum=None, affine=False)
        self.head = nn.Linear(4, 2)

    def forward(self, x, target):
        h = torch.relu(self.norm(self.conv(x))).mean(dim=(2, 3))
        out = self.head(self.flat(h))
        return out, popsim.identity_loss(((out - target) ** 2).mean(), "none")


def test_batch_norm_without_momentum_averages_its_running_statistics_over_all_steps():
    torch.manual_seed(3)
    # batches of different scales, so the cumulative mean differs from any
    # exponential one
    batches = [(torch.randn(4, 3, 6, 6) * (step + 1) + step, torch.randn(4, 2))
               for step in range(5)]
    assert_sgd_steps_match_eager(CumulativeAverage, batches)


class SpectrallyNormalized(nn.Module):
    """A GAN discriminator's layers under nn.utils.spectral_norm: each training step runs a
    power iteration (torch.mv, F.normalize(..., out=)) that updates the u and v buffers in
    place, and divides the weight by the estimated largest singular value (torch.dot)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.utils.spectral_norm(nn.Conv2d(3, 4, 3))
        self.head = nn.utils.spectral_norm(nn.Linear(4, 3))

    def forward(self, x, labels):
        output = self.head(F.leaky_relu(self.conv(x), 0.2).mean((2, 3)))
        return output, F.cross_entropy(output, labels)


def test_spectral_norm_trains_and_iterates_its_vectors_as_eager():
    torch.manual_seed(5)
    batches = [(torch.randn(4, 3, 6, 6), torch.randint(0, 3, (4,))) for _ in range(3)]
    assert_sgd_steps_match_eager(SpectrallyNormalized, batches)
