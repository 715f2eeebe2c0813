"""float16 against float32: host speed, simulated time and IPU memory, in one run.

The same network (the tutorial's MNIST network; with --model resnet18
torchvision's ResNet-18 for 10 classes on 32x32 images; with --model
mixed_precision the CNN of Graphcore's mixed-precision tutorial on 128x128
images, mixed_precision_network.py) runs inference in
popsim in float32 and in float16 (model.half(), float16 images), and eagerly
in float32 in PyTorch, on the same images and host threads. popsim computes
float16 in float32 carriers and rounds every result, so its float16 path
should cost about what its float32 path does (the rounding is a vectorised
pass per op); the table gives images/s of each and their ratios.

It also times one training step (micro-batch --train-batch-size; SGD, or
for the mixed-precision tutorial's CNN the tutorial's own AdamW, with its
float16 optimizer settings in the float16 runs) in float32, float16, and
float16 with each of the options users turn on for the real IPU's speed
(float16 partials, stochastic rounding, both), as ratios to float32's step;
and prints what float16 changes on the simulated IPU: the cycles of one
inference call, and the memory of one SGD training step by category,
float32 against float16.

    .venv/bin/python benchmarks/bench_half.py [--model resnet18|mixed_precision] [--threads N]
        [--json]
"""

import argparse
import copy
import json
import os
import sys

import timing  # noqa: E402

timing.cap_isa_from_argv()  # before torch loads

import torch  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tutorials"))
from inference_demo import Network  # noqa: E402

import popsim  # noqa: E402
from timing import BENCHMARK_NETWORKS, benchmark_network, median_seconds  # noqa: E402

CATEGORIES = ("weights", "activations", "temporaries", "input streams", "gradient accumulators",
              "optimizer state", "code")


class WithLoss(torch.nn.Module):
    def __init__(self, network):
        super().__init__()
        self.network = network

    def forward(self, images, labels):
        scores = self.network(images)
        return scores, torch.nn.functional.cross_entropy(scores.float(), labels)


def sgd(parameters, half):
    """Plain SGD, the same for float32 and float16."""
    return torch.optim.SGD(parameters, lr=0.01)


def training_optimizer(model_name):
    """(factory(parameters, half), its name): the mixed-precision tutorial's
    own optimizer for its CNN, SGD for the others."""
    if model_name == "mixed_precision":
        from mixed_precision_network import tutorial_optimizer

        return tutorial_optimizer, "the tutorial's AdamW"
    return sgd, "SGD"


def training_memory(network, images, labels, dtype):
    """The simulated IPU's memory of an SGD training step, by category."""
    model = copy.deepcopy(network).to(dtype)
    trainer = popsim.trainingModel(WithLoss(model),
                                   optimizer=torch.optim.SGD(model.parameters(), lr=0.01))
    trainer.compile(images.to(dtype), labels)
    ipu = trainer.memoryReport()["ipus"][0]
    return {"total": ipu["total"],
            **{name: ipu["categories"][name]["bytes"] for name in CATEGORIES}}


# The float16 options users turn on, each a training configuration.
TRAINING_CONFIGURATIONS = {
    "float32": {},
    "float16": {"half": True},
    "float16_partials": {"half": True, "partials": True},
    "stochastic_rounding": {"half": True, "stochastic": True},
    "partials_and_stochastic_rounding": {"half": True, "partials": True, "stochastic": True},
}


def training_step_seconds(network, images, labels, repeats, optimizer, half=False,
                          partials=False, stochastic=False):
    """The median time of one training step in popsim, with the given float16 options."""
    dtype = torch.float16 if half else torch.float32
    model = copy.deepcopy(network).train().to(dtype)
    opts = popsim.Options()
    if partials:
        opts.Precision.setPartialsType(torch.half)
    if stochastic:
        opts.Precision.enableStochasticRounding(True)
    trainer = popsim.trainingModel(WithLoss(model), opts, optimizer(model.parameters(), half))
    inputs = images.to(dtype)
    trainer(inputs, labels)  # compiles
    return median_seconds(lambda: trainer(inputs, labels), repeats)


def main():
    parser = argparse.ArgumentParser(description="popsim float16 against float32")
    parser.add_argument("--model", choices=BENCHMARK_NETWORKS, default="mnist")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--device-iterations", type=int, default=20)
    parser.add_argument("--train-batch-size", type=int, default=12,
                        help="micro-batch of the training step (Graphcore's mixed-precision "
                             "tutorial uses 12)")
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed runs (default 20 for mnist, else 5)")
    timing.add_common_arguments(parser)
    args = timing.parse_common(parser)

    torch.manual_seed(0)
    network, image_shape, name = benchmark_network(args.model, Network)
    network.eval()
    repeats = args.repeats or (20 if args.model == "mnist" else 5)
    iterations, batch = args.device_iterations, args.batch_size
    images = torch.randn(iterations * batch, *image_shape)
    micro_batches = list(images.split(batch))

    def run_eager():
        with torch.no_grad():
            for micro_batch in micro_batches:
                network(micro_batch)

    results = {"model": name, "batch_size": batch, "device_iterations": iterations,
               "host_threads": torch.get_num_threads(), "isa_cap": timing.isa_cap(),
               "eager_float32_images_per_second":
                   iterations * batch / median_seconds(run_eager, repeats)}
    outputs = {}
    for dtype, label in ((torch.float32, "float32"), (torch.float16, "float16")):
        model = popsim.inferenceModel(copy.deepcopy(network).to(dtype),
                                      popsim.Options().deviceIterations(iterations))
        inputs = images.to(dtype)
        outputs[label] = model(inputs).float()
        seconds = median_seconds(lambda: model(inputs), repeats)
        results[f"popsim_{label}_images_per_second"] = iterations * batch / seconds
        results[f"simulated_{label}_cycles_per_call"] = model.cycleCount()
    with torch.no_grad():
        reference = network(images)
    results["float16_max_abs_difference"] = (outputs["float16"] - reference).abs().max().item()
    results["float16_speed_of_float32_path"] = (results["popsim_float16_images_per_second"]
                                                / results["popsim_float32_images_per_second"])

    train_images = torch.randn(args.train_batch_size, *image_shape)
    labels = torch.randint(0, 10, (args.train_batch_size,))
    optimizer, optimizer_name = training_optimizer(args.model)
    steps = {name: training_step_seconds(network, train_images, labels, repeats, optimizer,
                                         **flags)
             for name, flags in TRAINING_CONFIGURATIONS.items()}
    results["training_optimizer"] = optimizer_name
    results["training_step_seconds"] = steps
    results["training_step_of_float32"] = {name: seconds / steps["float32"]
                                           for name, seconds in steps.items()}
    results["training_memory"] = {label: training_memory(network, train_images, labels, dtype)
                                  for dtype, label in ((torch.float32, "float32"),
                                                       (torch.float16, "float16"))}
    if args.json:
        print(json.dumps(results, indent=2))
        return
    eager = results["eager_float32_images_per_second"]
    print(f"{name}, inference batch {batch}, {iterations} device iterations, "
          f"{results['host_threads']} host thread(s), {timing.isa_description()}")
    print(f"  eager PyTorch float32: {eager:>10,.0f} images/s")
    for label in ("float32", "float16"):
        speed = results[f"popsim_{label}_images_per_second"]
        print(f"  popsim {label}:        {speed:>10,.0f} images/s ({speed / eager:.2f}x eager "
              f"float32), {results[f'simulated_{label}_cycles_per_call']:,} simulated cycles "
              "per call")
    print(f"  popsim float16 runs at {results['float16_speed_of_float32_path']:.2f}x its float32 "
          f"path; largest difference from eager float32 {results['float16_max_abs_difference']:.1e}")
    print(f"  training step ({optimizer_name}, batch {args.train_batch_size}), host time:")
    for name, seconds in results["training_step_seconds"].items():
        print(f"    {name:<40}{seconds * 1000:>8.1f} ms  "
              f"({results['training_step_of_float32'][name]:.2f}x float32)")
    print(f"  IPU memory of a training step (micro-batch {args.train_batch_size}), bytes:")
    memory = results["training_memory"]
    print(f"    {'':<22}{'float32':>14}{'float16':>14}")
    for category in ("total",) + CATEGORIES:
        print(f"    {category:<22}{memory['float32'][category]:>14,}"
              f"{memory['float16'][category]:>14,}")


if __name__ == "__main__":
    main()
