"""Helpers the benchmarks share."""

import statistics
import time


def median_seconds(fn, repeats):
    """Median wall time of `repeats` calls of fn, after one warm-up call."""
    fn()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def benchmark_network(model, mnist_network):
    """(network, image shape, display name) for --model mnist or resnet18."""
    if model == "mnist":
        return mnist_network(), (1, 28, 28), "MNIST network"
    import torchvision  # only ResNet-18 needs it

    return torchvision.models.resnet18(num_classes=10), (3, 32, 32), "ResNet-18"
