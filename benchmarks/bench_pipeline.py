"""Pipelined against sharded execution of the tutorial network.

1. Wall clock, 2 IPUs: training throughput (images/s) of the pipelining
   tutorial's network split over two simulated IPUs, pipelined and sharded.
   Each simulated IPU computes on one host thread, so on a 2-core host a
   pipeline keeps both cores busy while sharded execution keeps one. Two
   splits: by the tutorial's blocks (B1 | B2 B3 B4), and a balanced one in
   three stages on IPUs 0, 1, 0 (layer1 | layer2's convolution | the rest,
   AutoStage.AutoIncrement): layer2's convolution and its gradients are
   about 60% of a step, so no two-way split by blocks can balance it. Eager
   PyTorch's throughput on the same data is reported for scale.
2. Simulated clock, 4 IPUs: cycles of one training step pipelined and
   sharded, their ratio, and the pipelined step against the one-forward-
   one-backward formula (G + K - 1) x T + the transfers no other work hides
   (the call's first input and its outputs), T the slowest stage: an IPU's
   forward + backward cycles per micro-batch, or a host link's input
   transfer, which multibuffering makes a stage of its own (exact for stages
   of equal time; an upper bound otherwise, since ramp-up and ramp-down
   cycles then run shorter than T); and pipelined inference over 100
   micro-batches against (G + 4 - 1) x its slowest stage + the first input,
   a stage's time being, under SyncPattern.Full, the longest host exchange
   plus the longest other work of an IPU.
   The simulated runs multibuffer their inputs (prefetchDepth(MULTIBUFFERED)),
   so that each host link prepares the next micro-batch's inputs while the
   IPUs work; at the default depth 1 every micro-batch waits for them.

Micro-batches of 40 images, gradientAccumulation 10, deviceIterations 10
(the tutorial's defaults), AdamW. Median of --repeats timed calls after a
warm-up.

    .venv/bin/python benchmarks/bench_pipeline.py [--repeats 5] [--json]
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
from pipelining.mnist_network import (BlockedNetwork, Network,  # noqa: E402
                                      TrainingModelWithLoss)

import popsim  # noqa: E402
from timing import median_seconds  # noqa: E402

BATCH, ACCUMULATION, ITERATIONS = 40, 10, 10
TWO_IPUS = [popsim.Stage("B1").ipu(0), popsim.Stage("B2", "B3", "B4").ipu(1)]
FOUR_IPUS = [popsim.Stage(f"B{i}").ipu(i - 1) for i in range(1, 5)]


class WithLoss(Network):
    def forward(self, x, labels):
        x = super().forward(x)
        return x, nn.functional.cross_entropy(x, labels)


def balanced_network():
    """Stages layer1 (IPU 0), layer2's convolution (IPU 1), the rest (IPU 0)."""
    model = WithLoss()
    popsim.BeginBlock(model.layer1, "A", ipu_id=0)
    popsim.BeginBlock(model.layer2.conv, "B", ipu_id=1)
    popsim.BeginBlock(model.layer2.pool, "C", ipu_id=0)
    return model


# The buffering depth of the simulated 4-IPU runs: one micro-batch prepared ahead.
MULTIBUFFERED = 2


def trainer(model, strategy, prefetch_depth=1):
    opts = popsim.Options().deviceIterations(ITERATIONS).prefetchDepth(prefetch_depth)
    opts.Training.gradientAccumulation(ACCUMULATION)
    opts.setExecutionStrategy(strategy)
    opts.Simulator.threadsPerIpu(1)
    return popsim.trainingModel(model, opts, popsim.optim.AdamW(model.parameters(), lr=1e-3))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    timing.add_isa_argument(parser)
    args = parser.parse_args()

    torch.manual_seed(0)
    images = BATCH * ACCUMULATION * ITERATIONS
    x, labels = torch.randn(images, 1, 28, 28), torch.randint(0, 10, (images,))
    base = TrainingModelWithLoss(BlockedNetwork())  # blocks B1..B4, the loss in B4
    balanced = balanced_network()
    balanced.load_state_dict(base.model.state_dict())
    results = {"host_cores": os.cpu_count(), "images_per_call": images,
               "isa_cap": timing.isa_cap()}
    auto = popsim.AutoStage.AutoIncrement
    splits = {"blocks": (base, TWO_IPUS), "balanced": (balanced, [auto])}
    for split, (network, stages) in splits.items():
        for name, strategy in [("pipelined", popsim.PipelinedExecution(*stages)),
                               ("sharded", popsim.ShardedExecution(*stages))]:
            network_copy = copy.deepcopy(network)
            model = trainer(network_copy, strategy)
            results[f"2ipu_{split}_{name}_images_per_s"] = images / median_seconds(
                lambda: model(x, labels), args.repeats)
            model.destroy()
        results[f"2ipu_{split}_speedup"] = (results[f"2ipu_{split}_pipelined_images_per_s"]
                                            / results[f"2ipu_{split}_sharded_images_per_s"])

    eager = copy.deepcopy(base)
    optimizer = torch.optim.AdamW(eager.parameters(), lr=1e-3)

    def eager_call():
        for step in range(0, images, BATCH * ACCUMULATION):
            optimizer.zero_grad()
            for micro in range(step, step + BATCH * ACCUMULATION, BATCH):
                _, loss = eager(x[micro:micro + BATCH], labels[micro:micro + BATCH])
                (loss / ACCUMULATION).backward()
            optimizer.step()

    results["eager_images_per_s"] = images / median_seconds(eager_call, args.repeats)

    cycles = {}
    for name, strategy in [("pipelined", popsim.PipelinedExecution(*FOUR_IPUS)),
                           ("sharded", popsim.ShardedExecution(*FOUR_IPUS))]:
        model = trainer(copy.deepcopy(base), strategy, MULTIBUFFERED)
        model(x, labels)
        trace = model.executionTrace()
        cycles[name] = trace.total_cycles / ITERATIONS
        if name == "pipelined":
            per_ipu = trace.micro_batch_cycles()
            links = trace.host_link_cycles()
            results["4ipu_ipu_cycles_per_micro_batch"] = per_ipu
            results["4ipu_host_link_cycles_per_micro_batch"] = links
            update = max(e["end"] - e["start"] for e in trace.events if e["kind"] == "update")
            # OutputMode.Final: the call's last logits and loss go to the host once; the
            # first input of a call is the only one no earlier work hides.
            unhidden = (2 * 50_000 + max(links)) / ITERATIONS
            results["4ipu_formula_cycles_per_step"] = (
                (ACCUMULATION + 4 - 1) * max(per_ipu + links) + unhidden + update)
        model.destroy()
    # Inference: one stage per IPU, so the formula's stage time is one task.
    opts = popsim.Options().deviceIterations(ITERATIONS * ACCUMULATION)
    opts.prefetchDepth(MULTIBUFFERED).setExecutionStrategy(popsim.PipelinedExecution(*FOUR_IPUS))
    inference = popsim.inferenceModel(Network(), opts)
    for index, stage in enumerate(("layer1", "layer2", "layer3", "layer4")):
        popsim.BeginBlock(inference.model.get_submodule(stage), f"B{index + 1}")
    inference(x)
    trace = inference.executionTrace()
    # Per micro-batch, each IPU's host exchanges on its compute tiles and the rest of its
    # task: under SyncPattern.Full (the default) every IPU waits out the longest exchange,
    # so a stage's time is that exchange plus the longest other work.
    exchanges, work = {}, {}
    for event in trace.events:
        if trace.occupies_ipu(event):
            part = exchanges if event["kind"] in ("stream_copy", "host_output") else work
            key = (event["task"], event["micro_batch"])
            part[key] = part.get(key, 0) + event["end"] - event["start"]
    slowest = max(max(exchanges.values(), default=0) + max(work.values()),
                  max(trace.host_link_cycles()))
    formula = (ITERATIONS * ACCUMULATION + 4 - 1) * slowest + max(trace.host_link_cycles())
    results["4ipu_inference_pipelined_vs_formula"] = trace.total_cycles / formula
    results["4ipu_pipelined_cycles_per_step"] = cycles["pipelined"]
    results["4ipu_sharded_cycles_per_step"] = cycles["sharded"]
    results["4ipu_simulated_speedup"] = cycles["sharded"] / cycles["pipelined"]
    results["4ipu_pipelined_vs_formula"] = (cycles["pipelined"]
                                            / results["4ipu_formula_cycles_per_step"])

    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"host cores: {results['host_cores']}, {timing.isa_description()}, {images} images "
          f"per call, eager PyTorch "
          f"{results['eager_images_per_s']:.0f} images/s")
    for split in splits:
        print(f"2 IPUs ({split} split), wall clock: pipelined "
              f"{results[f'2ipu_{split}_pipelined_images_per_s']:.0f} images/s, sharded "
              f"{results[f'2ipu_{split}_sharded_images_per_s']:.0f} images/s, speed-up "
              f"{results[f'2ipu_{split}_speedup']:.2f}x")
    print(f"4 IPUs, simulated: pipelined {cycles['pipelined']:,.0f} cycles/step, sharded "
          f"{cycles['sharded']:,.0f}, speed-up {results['4ipu_simulated_speedup']:.2f}x; "
          f"training pipelined / formula = {results['4ipu_pipelined_vs_formula']:.3f} "
          f"(cycles per micro-batch on IPUs 0-3: "
          f"{', '.join(f'{c:,.0f}' for c in results['4ipu_ipu_cycles_per_micro_batch'])}; "
          f"host links: "
          f"{', '.join(f'{c:,.0f}' for c in results['4ipu_host_link_cycles_per_micro_batch'])}), "
          f"inference pipelined / formula = {results['4ipu_inference_pipelined_vs_formula']:.3f}")


if __name__ == "__main__":
    main()
