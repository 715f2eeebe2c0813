"""Group and instance norm and batch norm of 2-D and 5-D inputs in training:
a network through them trains as in eager PyTorch (batch statistics and
running statistics included). Each op's forward, backward and NaN/Inf cases
are in normalization_cases.py."""

import pytest
import torch
import torch.nn as nn

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
        self.conv = nn.Conv2d(3, 3, 1)
        self.norm = nn.InstanceNorm2d(3, track_running_stats=True)

    def forward(self, x):
        return popsim.identity_loss(self.norm(self.conv(x)).sum(), "none")


def test_instance_norm_updating_running_statistics_is_refused_with_the_fix():
    with pytest.raises(popsim.UnsupportedOperationError,
                       match=r"instance_norm updating running statistics \(InstanceNorm with "
                             r"track_running_stats=True in training\); use "
                             r"track_running_stats=False, or evaluate the model in eval\(\)"):
        popsim.trainingModel(TrackedInstanceNorm())(torch.randn(2, 3, 4, 4))
