"""Helpers the benchmarks share."""

import os
import statistics
import sys
import time

# --isa: the instruction set the benchmark runs with, as (ONEDNN_MAX_CPU_ISA,
# ATEN_CPU_CAPABILITY). oneDNN, popsim's own vectorised kernels (which follow
# oneDNN's cap) and eager PyTorch's ATen kernels are all capped, so both sides
# of a comparison run as on a CPU with that instruction set.
ISA_CAPS = {"native": None, "avx2": ("AVX2", "avx2"), "baseline": ("SSE41", "default")}


def cap_isa_from_argv():
    """Applies --isa before torch is imported: ATen reads ATEN_CPU_CAPABILITY when
    it loads, so the process re-executes itself with the variables set."""
    name = "native"
    for i, arg in enumerate(sys.argv):
        if arg == "--isa" and i + 1 < len(sys.argv):
            name = sys.argv[i + 1]
        elif arg.startswith("--isa="):
            name = arg.split("=", 1)[1]
    cap = ISA_CAPS.get(name)
    if cap is None:
        return  # native, or a wrong name that argparse reports
    wanted = {"ONEDNN_MAX_CPU_ISA": cap[0], "ATEN_CPU_CAPABILITY": cap[1]}
    if any(os.environ.get(key) != value for key, value in wanted.items()):
        os.execve(sys.executable, [sys.executable] + sys.argv, {**os.environ, **wanted})


def add_isa_argument(parser):
    parser.add_argument("--isa", choices=sorted(ISA_CAPS), default="native",
                        help="run popsim and eager PyTorch as on a CPU with this instruction "
                             "set (avx2: no AVX-512; baseline: SSE4.1); default: this CPU's")


def add_common_arguments(parser):
    """--threads, --json and --isa, which every benchmark takes."""
    parser.add_argument("--threads", type=int, default=None,
                        help="host threads for both (default: PyTorch's default)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    add_isa_argument(parser)


def parse_common(parser):
    """Parses the arguments and applies --threads (to eager PyTorch and popsim,
    which share the OpenMP thread pool)."""
    import torch

    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    return args


def isa_cap():
    """The ISA cap the kernels run with (ONEDNN_MAX_CPU_ISA), or "native"."""
    return os.environ.get("ONEDNN_MAX_CPU_ISA", "native")


def isa_description():
    """The instruction set the kernels run with, for the report."""
    return "this CPU's ISA" if isa_cap() == "native" else f"ISA capped at {isa_cap()}"


def median_seconds(fn, repeats):
    """Median wall time of `repeats` calls of fn, after one warm-up call."""
    fn()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


# The networks of bench_half.py (bench_inference.py and bench_training.py take the first two).
BENCHMARK_NETWORKS = ("mnist", "resnet18", "mixed_precision")


def benchmark_network(model, mnist_network):
    """(network, image shape, display name) for --model mnist, resnet18 or mixed_precision
    (the CNN of Graphcore's mixed-precision tutorial)."""
    if model == "mnist":
        return mnist_network(), (1, 28, 28), "MNIST network"
    if model == "mixed_precision":
        from mixed_precision_network import IMAGE_SHAPE, MixedPrecisionNetwork

        return MixedPrecisionNetwork(), IMAGE_SHAPE, "mixed-precision tutorial CNN"
    import torchvision  # only ResNet-18 needs it

    return torchvision.models.resnet18(num_classes=10), (3, 32, 32), "ResNet-18"
