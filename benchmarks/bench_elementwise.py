"""Elementwise ops: popsim's kernels against eager PyTorch, in the same process.

Each op runs on a million float32 elements (two operands of [1024, 1024], or
one broadcast row of [1024] where the op's name says so), as one popsim
inference call and as one eager call under torch.no_grad(), with the same
host threads. Reports the median time of each and popsim's time as a
multiple of eager's (lower is better; the call's fixed cost, about 0.1 ms,
is included).

    .venv/bin/python benchmarks/bench_elementwise.py [--threads N] [--isa avx2] [--json]
"""

import argparse
import json

import timing  # noqa: E402

timing.cap_isa_from_argv()  # before torch loads

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import popsim  # noqa: E402
from timing import median_seconds  # noqa: E402

OPS = {
    # pointwise functions (ir/pointwise_formulas.h)
    "sin": lambda a, b: torch.sin(a),
    "silu": lambda a, b: F.silu(a),
    "celu": lambda a, b: F.celu(a, 0.5),
    "softplus": lambda a, b: F.softplus(a),
    "hardswish": lambda a, b: F.hardswish(a),
    "clamp": lambda a, b: a.clamp(-0.5, 0.5),
    # binary functions (ir/binary_functions.cpp) and where
    "maximum": torch.maximum,
    "gt": lambda a, b: a > b,
    "remainder": torch.remainder,
    "where": lambda a, b: torch.where(a > 0, a, b),
    "masked_fill": lambda a, b: a.masked_fill(b > 0, 0.0),
    "maximum (broadcast row)": lambda a, b: torch.maximum(a, b[0]),
    # log_softmax (vector exp, one log per row): rows of 1024, and 1024 rows
    # along the first dim (gathered into contiguous rows)
    "log_softmax": lambda a, b: F.log_softmax(a, dim=1),
    "log_softmax (dim 0)": lambda a, b: F.log_softmax(a, dim=0),
    # oneDNN's binary primitive, for comparison
    "add": torch.add,
}


class Op(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, a, b):
        return self.fn(a, b)


def main():
    parser = argparse.ArgumentParser(description="popsim vs eager PyTorch elementwise ops")
    parser.add_argument("--repeats", type=int, default=30)
    timing.add_common_arguments(parser)
    args = timing.parse_common(parser)
    torch.manual_seed(0)
    a, b = torch.randn(1024, 1024), torch.randn(1024, 1024) + 0.5
    results = {}
    for name, fn in OPS.items():
        model = popsim.inferenceModel(Op(fn))
        model(a, b)  # compile
        popsim_seconds = median_seconds(lambda: model(a, b), args.repeats)
        with torch.no_grad():
            eager_seconds = median_seconds(lambda: fn(a, b), args.repeats)
        results[name] = {"popsim_ms": popsim_seconds * 1e3, "eager_ms": eager_seconds * 1e3,
                         "ratio": popsim_seconds / eager_seconds}
    if args.json:
        print(json.dumps({"isa": timing.isa_cap(), "threads": torch.get_num_threads(),
                          "ops": results}, indent=2))
        return
    print(f"1M-element ops, {torch.get_num_threads()} thread(s), {timing.isa_description()}")
    print(f"{'op':<26}{'popsim ms':>10}{'eager ms':>10}{'popsim/eager':>14}")
    for name, r in results.items():
        print(f"{name:<26}{r['popsim_ms']:>10.2f}{r['eager_ms']:>10.2f}{r['ratio']:>13.1f}x")


if __name__ == "__main__":
    main()
