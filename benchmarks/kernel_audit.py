"""Which kernel runs each op: popsim's programs for the tutorial network,
torchvision's ResNet-18 and a transformer encoder layer, for inference and
training, listed per op with the implementation it got (oneDNN's name for
its primitive, popsim's vectorised kernels, or popsim's reference loops).

An op on one of oneDNN's reference implementations is a slow path: "ref"
(any primitive, e.g. "ref:any", "lnorm_ref:any"), "simple_nchw" and
"simple_nhwc" (pooling in plain C++) and "simple:any" (reorders). The audit
lists them and exits with status 1 if any is found. ("simple_layer_
normalization" is not one: it drives oneDNN's jit statistics and data
kernels.)

    .venv/bin/python benchmarks/kernel_audit.py [--isa avx2] [--markdown | --json]
"""

import argparse
import collections
import json
import os
import sys

import timing  # noqa: E402

timing.cap_isa_from_argv()  # before torch loads

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tutorials"))
from inference_demo import Network  # noqa: E402

import popsim  # noqa: E402
from bench_training import WithLoss  # noqa: E402


def is_slow(implementation):
    """True if any oneDNN part of the implementation is a reference one."""
    for part in implementation.split(" + "):
        name = part.removeprefix("onednn:") if part.startswith("onednn:") else None
        if name is not None and ("ref" in name.split(":")[0]
                                 or name.startswith(("simple_nchw", "simple_nhwc", "simple:"))):
            return True
    return False


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        return self.head(self.layer(x).mean(1))


class EveryOpFamily(nn.Module):
    """The op families the three networks leave out: activations, binary ops with
    broadcasting, average pooling, batch norm with batch statistics, embedding,
    dropout, reductions, and the elementwise tables' formulas."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(10, 8)
        self.conv = nn.Conv2d(1, 8, 3, padding=1)
        self.norm = nn.BatchNorm2d(8)
        self.pool = nn.AvgPool2d(2)
        self.drop = nn.Dropout(0.1)
        self.head = nn.Linear(8, 10)
        self.register_buffer("ids", torch.tensor([3, 1, 4, 1]))  # the audit's micro-batch is 4

    def forward(self, x):
        image = self.pool(self.norm(self.conv(x)))  # [N, 8, 14, 14]
        features = image.mean((2, 3)) + self.embedding(self.ids)
        a = torch.sigmoid(features) * torch.tanh(features) - F.gelu(features) / 2
        b = torch.exp(-features.abs()) + torch.sqrt(features.abs() + 1) + torch.log(a.abs() + 1)
        c = F.celu(a, 0.5) + torch.atan2(a, b)  # pointwise and binary_pointwise formulas
        return self.head(self.drop(a + b + c))


def programs():
    """(model name, mode, program) for every audited model."""
    import torchvision

    torch.manual_seed(0)
    cases = [("tutorial network", Network, (1, 28, 28), 8),
             ("ResNet-18", lambda: torchvision.models.resnet18(num_classes=10), (3, 32, 32), 4),
             ("transformer encoder layer", Encoder, (16, 32), 4),
             ("every other op family", EveryOpFamily, (1, 28, 28), 4)]
    for name, make, shape, batch in cases:
        x, labels = torch.randn(batch, *shape), torch.randint(0, 10, (batch,))
        inference = popsim.inferenceModel(make().eval())
        inference.compile(x)
        yield name, "inference", inference._executable.program()
        model = make()
        optimizer = (popsim.optim.SGD if name != "every other op family" else torch.optim.AdamW)(
            model.parameters(), lr=0.01)
        training = popsim.trainingModel(WithLoss(model), popsim.Options(), optimizer)
        training.compile(x, labels)
        yield name, "training", training._executable.program()
        training.destroy()


def audit():
    """{op: {implementation: set of (model, mode)}}."""
    table = collections.defaultdict(lambda: collections.defaultdict(set))
    for name, mode, program in programs():
        for step in program:
            if step.implementation in ("view", "ipu-link"):
                continue
            table[step.op][step.implementation].add(f"{name} ({mode})")
    return table


def main():
    parser = argparse.ArgumentParser(description="which kernel each op runs")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument("--json", action="store_true",
                        help="print {op: [implementations]} as JSON")
    timing.add_isa_argument(parser)
    args = parser.parse_args()

    table = audit()
    slow = [(op, impl) for op, impls in table.items() for impl in impls if is_slow(impl)]
    if args.json:
        print(json.dumps({"isa": timing.isa_cap(), "slow": [list(pair) for pair in slow],
                          "ops": {op: sorted(table[op]) for op in sorted(table)}}, indent=1))
        return 0  # the slow kernels are in the data; the table's readers judge them
    print(f"popsim kernels, {timing.isa_description()}")
    if args.markdown:
        print("| op | implementation |\n|---|---|")
        for op in sorted(table):
            print(f"| `{op}` | {'; '.join(f'`{impl}`' for impl in sorted(table[op]))} |")
    else:
        for op in sorted(table):
            for impl, where in sorted(table[op].items()):
                print(f"  {op:28} {impl:55} {', '.join(sorted(where))}")
    for op, impl in slow:
        print(f"SLOW: {op} runs oneDNN's reference implementation {impl}")
    return 1 if slow else 0


if __name__ == "__main__":
    sys.exit(main())
