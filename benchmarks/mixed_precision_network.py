"""The small CNN of Graphcore's mixed-precision tutorial (tutorials/pytorch/mixed_precision in
graphcore/examples), which trains it on FashionMNIST resized to 128x128, micro-batch 12, with
each of the float16 options: the network issue 52 timed them on.

Two convolutions (1 -> 5 channels 3x3, then 2x2 max pooling; 5 -> 12 channels 5x5, then group
normalisation over 3 groups), then 12 x 59 x 59 = 41,772 features -> 100 -> 10. Its scores are
log-probabilities over dimension 0, as the tutorial's are; the benchmarks add their own loss.
tutorial_optimizer is the tutorial's optimizer.
"""

import torch
from torch import nn

import popsim

IMAGE_SHAPE = (1, 128, 128)


class MixedPrecisionNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 5, 3)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(5, 12, 5)
        self.norm = nn.GroupNorm(3, 12)
        self.fc1 = nn.Linear(12 * 59 * 59, 100)
        self.fc2 = nn.Linear(100, 10)
        self.relu = nn.ReLU()

    def forward(self, images):
        x = self.pool(self.relu(self.conv1(images)))
        x = self.norm(self.relu(self.conv2(x)))
        x = self.relu(self.fc1(torch.flatten(x, start_dim=1)))
        return torch.log_softmax(self.fc2(x), dim=0)


def tutorial_optimizer(parameters, half: bool):
    """The tutorial's AdamW (lr 0.001): with its float16 optimizer option
    (--optimizer-half), float16 gradient accumulation and loss scaling 1,024;
    otherwise float32 accumulation."""
    if half:
        return popsim.optim.AdamW(parameters, lr=0.001, loss_scaling=1024,
                                  accum_type=torch.float16)
    return popsim.optim.AdamW(parameters, lr=0.001, accum_type=torch.float32)
