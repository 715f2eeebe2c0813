"""Training throughput with popsim.DataLoader in Sync and Async mode.

The tutorial network trains on MNIST-shaped images (micro-batch 16,
deviceIterations 10, AdamW) whose per-sample transform (pad, random crop,
blur, normalise) costs about as much host time as training on the sample.
In Sync mode the loop loads a batch, then trains on it; in Async mode a
background process loads the next batches while the model trains, so on a
host with two cores the two overlap. Reports images/s of both, their ratio,
and the measured cost of loading and of training per image.

    .venv/bin/python benchmarks/bench_dataloader.py [--epochs 2] [--repeats 3] [--json]
"""

import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch.utils.data import Dataset

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tutorials"))
from inference_demo import Network  # noqa: E402

import popsim  # noqa: E402

BATCH, ITERATIONS, SAMPLES = 16, 10, 4000


class WithLoss(Network):
    def forward(self, x, labels):
        x = super().forward(x)
        return x, F.cross_entropy(x, labels)


class AugmentedImages(Dataset):
    """Random 28x28 images, augmented per sample as a real input pipeline would."""

    def __init__(self, samples, blur_passes):
        generator = torch.Generator().manual_seed(0)
        self.images = torch.rand(samples, 1, 28, 28, generator=generator)
        self.labels = torch.randint(0, 10, (samples,), generator=generator)
        self.blur = torch.full((1, 1, 3, 3), 1 / 9)
        self.blur_passes = blur_passes

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, index):
        image = F.pad(self.images[index], (2, 2, 2, 2))
        top, left = torch.randint(0, 5, (2,)).tolist()
        image = image[:, top:top + 28, left:left + 28].unsqueeze(0)
        for _ in range(self.blur_passes):
            image = F.conv2d(image, self.blur, padding=1)
        return ((image[0] - 0.1307) / 0.3081), self.labels[index]


def train_epochs(loader, options, epochs, first_batch):
    """Seconds to train `epochs` passes over `loader` (compiled beforehand)."""
    torch.manual_seed(0)
    network = WithLoss()
    trainer = popsim.trainingModel(network, options,
                                   popsim.optim.AdamW(network.parameters(), lr=1e-3))
    trainer.compile(*first_batch)
    start = time.perf_counter()
    for _ in range(epochs):
        for images, labels in loader:
            trainer(images, labels)
    seconds = time.perf_counter() - start
    trainer.destroy()
    return seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--blur-passes", type=int, default=9,
                        help="cost of the per-sample transform")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()

    dataset = AugmentedImages(SAMPLES, args.blur_passes)
    opts = popsim.Options().deviceIterations(ITERATIONS).randomSeed(0)
    opts.Simulator.threadsPerIpu(1)
    results = {"host_cores": os.cpu_count(), "images_per_epoch": SAMPLES}

    # What each side costs alone.
    start = time.perf_counter()
    for index in range(SAMPLES):
        dataset[index]
    results["load_us_per_image"] = (time.perf_counter() - start) / SAMPLES * 1e6
    preloaded = list(popsim.DataLoader(opts, AugmentedImages(SAMPLES, 0), batch_size=BATCH))
    results["train_us_per_image"] = train_epochs(preloaded, opts, args.epochs, preloaded[0]) / (
        args.epochs * SAMPLES) * 1e6

    # Modes alternate, and each reports its median run, as this host's speed drifts.
    seconds = {mode: [] for mode in (popsim.DataLoaderMode.Sync, popsim.DataLoaderMode.Async)}
    for _ in range(args.repeats):
        for mode in seconds:
            loader = popsim.DataLoader(opts, dataset, batch_size=BATCH, shuffle=True, mode=mode)
            seconds[mode].append(train_epochs(loader, opts, args.epochs, preloaded[0]))
            loader.terminate()
    for mode, runs in seconds.items():
        results[f"{mode.name.lower()}_images_per_s"] = (
            args.epochs * SAMPLES / statistics.median(runs))
    results["async_vs_sync"] = results["async_images_per_s"] / results["sync_images_per_s"]

    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"host cores: {results['host_cores']}; per image: loading "
          f"{results['load_us_per_image']:.0f} us, training {results['train_us_per_image']:.0f} us")
    print(f"Sync: {results['sync_images_per_s']:.0f} images/s, Async: "
          f"{results['async_images_per_s']:.0f} images/s, Async / Sync = "
          f"{results['async_vs_sync']:.2f}x")


if __name__ == "__main__":
    main()
