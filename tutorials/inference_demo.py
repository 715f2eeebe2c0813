"""popsim inference demo: the pipelining tutorial's MNIST network on a simulated IPU.

Wraps the network with popsim.inferenceModel, compiles it for a simulated Mk2
IPU and runs batches of images through it, ten micro-batches per call. It
shows what popsim computed (the same numbers as PyTorch), the program it
compiled (popsim's IR), the memory it needs on the IPU and the simulated IPU
time beside the host's wall time.

The network is untrained and the images are random: the pipelining tutorial
(tutorials/pipelining/mnist_pipeline.py) trains it.

Run it with `.venv/bin/python tutorials/inference_demo.py`.
"""

import argparse
import time

import torch

import popsim
from pipelining.mnist_network import Network  # the tutorial's network


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch-size", type=int, default=8, help="micro-batch size (default 8)")
    parser.add_argument("--device-iterations", type=int, default=10,
                        help="micro-batches per call (default 10)")
    parser.add_argument("--calls", type=int, default=50, help="calls to time (default 50)")
    return parser.parse_args()


def main():
    args = parse_args()
    torch.manual_seed(0)
    network = Network().eval()
    opts = popsim.Options().deviceIterations(args.device_iterations)
    model = popsim.inferenceModel(network, opts)

    images = torch.randn(args.batch_size * args.device_iterations, 1, 28, 28)
    model.compile(images)
    print(f"Compiled for a simulated IPU in {model.compilationTime() * 1000:.0f} ms.\n")
    print("popsim IR of the network (each op with the line of Python it came from):")
    print(model._debug_ir())

    report = model.memoryReport()
    (ipu,) = report["ipus"]
    print(f"Memory on IPU 0 ({report['chip']}): {ipu['total']:,} of {ipu['capacity']:,} bytes")
    width = max(len(name) for name in ipu["categories"])
    for name, category in ipu["categories"].items():
        kind = "always live" if category["always_live"] else "peak"
        print(f"  {name:<{width}} {category['bytes']:>12,} bytes ({kind})")

    logits = model(images)
    with torch.no_grad():
        expected = network(images)
    difference = (logits - expected).abs().max().item()
    print(f"\nOutputs: {tuple(logits.shape)} logits, largest difference from PyTorch: "
          f"{difference:.2e}")
    print(f"Predicted classes of the first micro-batch: {logits[:args.batch_size].argmax(1).tolist()}")

    start = time.perf_counter()
    for _ in range(args.calls):
        model(images)
    elapsed = time.perf_counter() - start
    count = args.calls * images.shape[0]
    print(f"\n{args.calls} calls of {args.device_iterations} micro-batches of {args.batch_size}: "
          f"{count / elapsed:,.0f} images/s on this host; simulated IPU time "
          f"{model.simulatedTime() * 1e6:,.1f} us per call ({model.cycleCount():,} cycles).")


if __name__ == "__main__":
    main()
