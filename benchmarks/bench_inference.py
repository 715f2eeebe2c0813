"""Inference throughput: popsim against eager PyTorch, in the same process.

The pipelining tutorial's MNIST network (or, with --model resnet18,
torchvision's ResNet-18 for 10 classes on 32x32 images), micro-batches of 8
images, 100 device iterations per popsim call. Eager PyTorch runs the same 100
micro-batches one forward call at a time under torch.no_grad(), as a PyTorch
user would. Both use the same weights and inputs and the same host threads
(popsim's oneDNN kernels and PyTorch share the OpenMP thread pool).

Reports images/s for each and their ratio (median of --repeats timed runs
after a warm-up), and popsim's compile time: the first compile in the process
(which includes oneDNN's code generation) and the median of later ones.

    .venv/bin/python benchmarks/bench_inference.py [--model resnet18] [--threads N] [--json]
"""

import argparse
import json
import os
import statistics
import sys

import timing  # noqa: E402

timing.cap_isa_from_argv()  # before torch loads

import torch  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tutorials"))
from inference_demo import Network  # noqa: E402

import popsim  # noqa: E402
from timing import benchmark_network, median_seconds  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description="popsim vs eager PyTorch inference")
    parser.add_argument("--model", choices=["mnist", "resnet18"], default="mnist")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--device-iterations", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=None,
                        help="timed runs (default 30, or 5 for resnet18)")
    timing.add_common_arguments(parser)
    args = timing.parse_common(parser)

    torch.manual_seed(0)
    network, image_shape, name = benchmark_network(args.model, Network)
    network.eval()
    repeats = args.repeats or (30 if args.model == "mnist" else 5)
    iterations, batch = args.device_iterations, args.batch_size
    images = torch.randn(iterations * batch, *image_shape)
    micro_batches = list(images.split(batch))

    compile_times = []
    for _ in range(5):
        model = popsim.inferenceModel(network, popsim.Options().deviceIterations(iterations))
        model.compile(images)
        compile_times.append(model.compilationTime())

    def run_eager():
        with torch.no_grad():
            for micro_batch in micro_batches:
                network(micro_batch)

    eager_seconds = median_seconds(run_eager, repeats)
    popsim_seconds = median_seconds(lambda: model(images), repeats)
    with torch.no_grad():
        difference = (model(images) - network(images)).abs().max().item()

    results = {
        "model": name,
        "batch_size": batch,
        "device_iterations": iterations,
        "host_threads": torch.get_num_threads(),
        "isa_cap": timing.isa_cap(),
        "eager_images_per_second": iterations * batch / eager_seconds,
        "popsim_images_per_second": iterations * batch / popsim_seconds,
        "speedup": eager_seconds / popsim_seconds,
        "first_compile_seconds": compile_times[0],
        "compile_seconds_median_after_first": statistics.median(compile_times[1:]),
        "max_abs_difference": difference,
    }
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"{name}, batch {batch}, {iterations} device iterations, "
          f"{results['host_threads']} host thread(s), {timing.isa_description()}")
    print(f"  eager PyTorch: {results['eager_images_per_second']:>10,.0f} images/s")
    print(f"  popsim:        {results['popsim_images_per_second']:>10,.0f} images/s "
          f"({results['speedup']:.2f}x eager)")
    print(f"  compile: {results['first_compile_seconds'] * 1000:.0f} ms first, "
          f"{results['compile_seconds_median_after_first'] * 1000:.0f} ms after")
    print(f"  largest output difference: {difference:.1e}")


if __name__ == "__main__":
    main()
