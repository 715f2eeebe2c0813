"""A segmentation-style network, built from the window ops a real one uses
(max pooling that returns its indices, max_unpool2d, reflect and constant
F.pad, bilinear F.interpolate, adaptive pooling for a global context, and
per-pixel cross entropy with an ignored class), trains as eager PyTorch
does."""

import torch
import torch.nn as nn
import torch.nn.functional as F

from models import assert_sgd_steps_match_eager


class Segmenter(nn.Module):
    def __init__(self, classes=4):
        super().__init__()
        self.encode = nn.Conv2d(3, 6, 3, padding=1)
        self.middle = nn.Conv2d(6, 6, 3)
        self.context = nn.Linear(6, 6)
        self.decode = nn.Conv2d(12, classes, 3)

    def forward(self, x, target):
        features = F.relu(self.encode(x))                             # [N, 6, H, W]
        pooled, where = F.max_pool2d(features, 2, return_indices=True)
        middle = F.relu(self.middle(F.pad(pooled, (1, 1, 1, 1), mode="reflect")))
        context = self.context(F.adaptive_max_pool2d(middle, 1).flatten(1))
        middle = middle + context[:, :, None, None]
        upsampled = F.interpolate(middle, scale_factor=2, mode="bilinear", align_corners=False)
        skip = F.max_unpool2d(pooled, where, 2, output_size=features.shape[-2:])
        out = self.decode(F.pad(torch.cat([upsampled, skip], dim=1), (1, 1, 1, 1), value=0.5))
        return out, F.cross_entropy(out, target, ignore_index=0)


def test_a_segmentation_network_trains_as_eager():
    torch.manual_seed(0)
    batches = [(torch.randn(2, 3, 8, 10), torch.randint(0, 4, (2, 8, 10))) for _ in range(4)]
    assert_sgd_steps_match_eager(Segmenter, batches)
