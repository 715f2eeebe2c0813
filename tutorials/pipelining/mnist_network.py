"""The pipelining tutorial's MNIST network, shared by the tutorial, the inference demo and
the tests.

`Network` is the plain network (one IPU). `BlockedNetwork` is the same network with its
four layers in blocks B1..B4, which an execution strategy places on IPUs; run eagerly, the
blocks do nothing, so it is also an ordinary PyTorch model. `TrainingModelWithLoss` adds the
cross-entropy loss, in block B4 beside the last layer.
"""

import torch
import torch.nn as nn

import popsim as poptorch

BLOCKS = ("B1", "B2", "B3", "B4")


class ConvLayer(nn.Module):
    """Convolution, max pooling and ReLU."""

    def __init__(self, in_channels, num_filters, kernel_size, pool_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, num_filters, kernel_size=kernel_size)
        self.pool = nn.MaxPool2d(kernel_size=pool_size)
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.relu(self.pool(self.conv(x)))


class Network(nn.Module):
    """Two convolution layers, then 320 -> 256 -> 10."""

    def __init__(self):
        super().__init__()
        self.layer1 = ConvLayer(1, 10, 5, 2)
        self.layer2 = ConvLayer(10, 20, 5, 2)
        self.layer3 = nn.Linear(320, 256)
        self.layer3_act = nn.ReLU()
        self.layer4 = nn.Linear(256, 10)

    def forward(self, x):
        x = self.layer1(x)
        x = self.layer2(x)
        x = x.view(-1, 320)
        x = self.layer3_act(self.layer3(x))
        return self.layer4(x)


class BlockedNetwork(Network):
    """The network with each layer in its own block, ready to be split over four IPUs."""

    def forward(self, x):
        with poptorch.Block("B1"):
            x = self.layer1(x)
        with poptorch.Block("B2"):
            x = self.layer2(x)
        with poptorch.Block("B3"):
            x = x.view(-1, 320)
            x = self.layer3_act(self.layer3(x))
        with poptorch.Block("B4"):
            return self.layer4(x)


class TrainingModelWithLoss(nn.Module):
    """The model's logits and their cross-entropy loss; without labels, the logits only.
    The loss runs in block `loss_block` (B4, beside the last layer), or in whichever block
    is running when `loss_block` is None (for a model whose blocks popsim.plan chooses)."""

    def __init__(self, model, loss_block="B4"):
        super().__init__()
        self.model = model
        self.loss = nn.CrossEntropyLoss()
        self.loss_block = loss_block

    def forward(self, images, labels=None):
        output = self.model(images)
        if labels is None:
            return output
        if self.loss_block is None:
            return output, self.loss(output, labels)
        with poptorch.Block(self.loss_block):
            loss = self.loss(output, labels)
        return output, loss


def accuracy(logits, labels):
    """Percentage of samples whose largest logit is their label."""
    return 100.0 * (logits.argmax(dim=1) == labels).sum().item() / len(labels)


def new_network(seed):
    """A BlockedNetwork initialised from `seed`, the same whichever model later trains it."""
    torch.manual_seed(seed)
    return BlockedNetwork()
