"""torchvision's efficientnet_b0 and convnext_tiny trained with their
stochastic depth and dropout on (torchvision's default probabilities), 10
classes on one fixed batch of 64x64 images, SGD with momentum: popsim draws
the masks on the device from randomSeed, eager PyTorch from its own
generator, so the runs differ step by step but both must fit the batch. Prints
the loss of every step for popsim and eager, and for popsim with another
seed (the masks, and so the losses, change with the seed).

    .venv/bin/python benchmarks/stochastic_depth_training.py [--steps 12]
"""

import argparse
import copy
import time

import torch
import torchvision

import popsim
from torchvision_coverage import WithLoss  # the model and its cross-entropy loss

MODELS = ["efficientnet_b0", "convnext_tiny"]
BATCH = 8


def random_layers(model):
    """How many stochastic depth and dropout layers the model has, and their largest p."""
    ps = [module.p for module in model.modules()
          if isinstance(module, (torch.nn.Dropout, torchvision.ops.StochasticDepth))]
    return len(ps), max(ps)


def optimizer_of(model):
    return torch.optim.SGD(model.parameters(), lr=0.002, momentum=0.9)


def popsim_losses(model, x, labels, steps, seed):
    trained = WithLoss(copy.deepcopy(model))
    trainer = popsim.trainingModel(trained, popsim.Options().randomSeed(seed),
                                   optimizer_of(trained))
    losses = [trainer(x, labels)[1].item() for _ in range(steps)]
    trainer.destroy()
    return losses


def eager_losses(model, x, labels, steps):
    trained = WithLoss(copy.deepcopy(model))
    trained.train()
    optimizer = optimizer_of(trained)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = trained(x, labels)[1]
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def row(losses):
    return " ".join(f"{loss:.3f}" for loss in losses)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--steps", type=int, default=12)
    args = parser.parse_args()
    for name in args.models.split(","):
        torch.manual_seed(0)
        model = getattr(torchvision.models, name)(num_classes=10)
        x = torch.randn(BATCH, 3, 64, 64)
        labels = torch.arange(BATCH) % 10
        start = time.perf_counter()
        ours = popsim_losses(model, x, labels, args.steps, seed=1)
        other_seed = popsim_losses(model, x, labels, args.steps, seed=2)
        seconds = time.perf_counter() - start
        eager = eager_losses(model, x, labels, args.steps)
        layers, largest = random_layers(model)
        print(f"{name} ({layers} stochastic depth and dropout layers, p up to {largest:.2g}), "
              f"loss per step:\n"
              f"  popsim seed 1: {row(ours)}\n  popsim seed 2: {row(other_seed)}\n"
              f"  eager:         {row(eager)}\n  [popsim {seconds:.0f} s for both seeds]",
              flush=True)


if __name__ == "__main__":
    main()
