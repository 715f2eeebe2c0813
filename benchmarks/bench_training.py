"""Training throughput: popsim against eager PyTorch, in the same process.

The pipelining tutorial's MNIST network (or, with --model resnet18,
torchvision's ResNet-18 for 10 classes on 32x32 images, batch norms in
training mode) with a cross-entropy loss, micro-batches of 40 images (16 for
ResNet-18), AdamW. Eager PyTorch runs the usual loop (zero_grad, forward,
backward, step) per micro-batch; popsim runs --device-iterations optimizer
steps per call, forward, backward and update all on the simulated device.
Both use the same weights, data and host threads.

Reports images/s for each and their ratio (median of --repeats timed runs
after a warm-up), and the compile time.

    .venv/bin/python benchmarks/bench_training.py [--model resnet18] [--threads N] [--json]
"""

import argparse
import copy
import json
import os
import sys

import timing  # noqa: E402

timing.cap_isa_from_argv()  # before torch loads

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tutorials"))
from inference_demo import Network  # noqa: E402

import popsim  # noqa: E402
from timing import benchmark_network, median_seconds  # noqa: E402


class WithLoss(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model
        self.loss = nn.CrossEntropyLoss()

    def forward(self, x, labels):
        output = self.model(x)
        return output, self.loss(output, labels)


def main():
    parser = argparse.ArgumentParser(description="popsim vs eager PyTorch training")
    parser.add_argument("--model", choices=["mnist", "resnet18"], default="mnist")
    parser.add_argument("--batch-size", type=int, default=None,
                        help="micro-batch size (default 40, or 16 for resnet18)")
    parser.add_argument("--device-iterations", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed runs (default 10, or 3 for resnet18)")
    timing.add_common_arguments(parser)
    args = timing.parse_common(parser)

    torch.manual_seed(0)
    network, image_shape, name = benchmark_network(args.model, Network)
    resnet = args.model == "resnet18"
    repeats = args.repeats or (3 if resnet else 10)
    eager = copy.deepcopy(network)
    batch, steps = args.batch_size or (16 if resnet else 40), args.device_iterations
    images = torch.randn(steps * batch, *image_shape)
    labels = torch.randint(0, 10, (steps * batch,))
    micro_batches = list(zip(images.split(batch), labels.split(batch)))

    opts = popsim.Options().deviceIterations(steps)
    model = popsim.trainingModel(WithLoss(network), opts,
                                 popsim.optim.AdamW(network.parameters(), lr=1e-3))
    model.compile(images, labels)
    optimizer = torch.optim.AdamW(eager.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()

    def run_eager():
        for x, y in micro_batches:
            optimizer.zero_grad()
            loss_fn(eager(x), y).backward()
            optimizer.step()

    eager_seconds = median_seconds(run_eager, repeats)
    popsim_seconds = median_seconds(lambda: model(images, labels), repeats)
    results = {
        "model": f"{name}, AdamW",
        "batch_size": batch,
        "steps_per_call": steps,
        "host_threads": torch.get_num_threads(),
        "isa_cap": timing.isa_cap(),
        "eager_images_per_second": steps * batch / eager_seconds,
        "popsim_images_per_second": steps * batch / popsim_seconds,
        "speedup": eager_seconds / popsim_seconds,
        "compile_seconds": model.compilationTime(),
    }
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"{name} training (AdamW), batch {batch}, {steps} steps per popsim call, "
          f"{results['host_threads']} host thread(s), {timing.isa_description()}")
    print(f"  eager PyTorch: {results['eager_images_per_second']:>10,.0f} images/s")
    print(f"  popsim:        {results['popsim_images_per_second']:>10,.0f} images/s "
          f"({results['speedup']:.2f}x eager)")
    print(f"  compile: {results['compile_seconds'] * 1000:.0f} ms")


if __name__ == "__main__":
    main()
