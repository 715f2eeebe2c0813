"""Models and data the guide's examples share (imported by their hidden ``testsetup`` blocks),
so that each example shows only what it is about and still runs under ``sphinx-build -b
doctest``."""

import torch

import popsim


class Network(torch.nn.Module):
    """A small MNIST network: two convolution blocks and two linear layers, in a Sequential
    whose children the pipeline planner can split."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = torch.nn.Sequential(
            torch.nn.Sequential(torch.nn.Conv2d(1, 8, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2)),
            torch.nn.Sequential(torch.nn.Conv2d(8, 16, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2)),
            torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16 * 5 * 5, 64),
                                torch.nn.ReLU()),
            torch.nn.Linear(64, 10))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.layers(images)


class TrainingModelWithLoss(torch.nn.Module):
    """A model that returns its output and its loss, as a training model does."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model
        self.loss = torch.nn.CrossEntropyLoss()

    def forward(self, images: torch.Tensor, labels: torch.Tensor):  # type: ignore[no-untyped-def]
        output = self.model(images)
        return output, self.loss(output.float(), labels)


class ThreeBlocks(torch.nn.Module):
    """Getting started's network with wider convolutions (so that compute, not the host
    link, sets the pace): two convolutions and a linear head, one block each."""

    def __init__(self) -> None:
        super().__init__()
        self.layer1 = torch.nn.Sequential(torch.nn.Conv2d(1, 64, 3), torch.nn.ReLU())
        self.layer2 = torch.nn.Sequential(torch.nn.Conv2d(64, 64, 3), torch.nn.ReLU())
        self.head = torch.nn.Linear(64 * 24 * 24, 10)

    def forward(self, x: torch.Tensor, labels: torch.Tensor):  # type: ignore[no-untyped-def]
        with popsim.Block("B1"):
            x = self.layer1(x)
        with popsim.Block("B2"):
            x = self.layer2(x)
        with popsim.Block("B3"):
            x = self.head(x.flatten(1))
            return x, torch.nn.functional.cross_entropy(x, labels)


def batch(samples: int):  # type: ignore[no-untyped-def]
    """Random MNIST-shaped images and their labels."""
    return torch.randn(samples, 1, 28, 28), torch.randint(0, 10, (samples,))
