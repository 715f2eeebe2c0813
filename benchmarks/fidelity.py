"""Simulated against published: each job of
../shared/reference/published-ipu-results.md (Graphcore's PopTorch training
throughputs on a Bow Pod16, with the configurations of its public examples)
built with popsim's reference models and sized cost-only (popsim.sizeJob).

Prints, per job, the published and simulated items/s, their ratio, whether
it fits each IPU's memory (and how full the fullest IPU is) and the host
seconds the sizing took; --json FILE also writes, per job,
{"id", "published", "simulated", "ratio", "fits", "seconds"} (plus each
IPU's memory). The simulated figures come from popsim's cost model alone
(csrc/costs, csrc/device/chip_spec.cpp): no factor per model or job.

    .venv/bin/python benchmarks/fidelity.py [--json FILE] [--jobs ID ...] [--report]
"""

import argparse
import json
import sys
import time
from typing import Any, Callable, Dict, List, NamedTuple, Tuple

import torch

import popsim
from popsim.models import (BertConfig, BertPretraining, ResNet50Training, ViTTraining,
                           image_batch, pretraining_batch)


class Job(NamedTuple):
    id: str
    published: float  # items/s, Graphcore's figure
    unit: str
    build: Callable[[], Tuple[torch.nn.Module, Tuple[torch.Tensor, ...], popsim.Options,
                              torch.optim.Optimizer]]


def _bow(replicas: int, accumulation: int, device_iterations: int = 1,
         processes: int = 1) -> popsim.Options:
    """Bow IPUs for a job of `replicas` replicas over `processes` host
    processes (PopRun instances), as the example's benchmark launches it:
    each process streams the inputs of its own replicas."""
    assert replicas % processes == 0, f"{replicas} replicas over {processes} processes"
    opts = popsim.Options().deviceIterations(device_iterations)
    opts.replicationFactor(replicas // processes)
    if processes > 1:  # sized as process 0; cost-only jobs need no other process
        opts.Distributed.configureProcessId(0, processes)
    opts.Training.gradientAccumulation(accumulation)
    opts.Simulator.ipuVersion("Bow")
    return opts


# Graphcore's ResNet-50 recomputation checkpoints (configs.yml): the residual
# additions of blocks 0-3, 5-7, 9, 11 and 12 (of 16), every convolution,
# batch norm and block of layer4, the pooling and the classifier. popsim
# checkpoints a block's output, its addition after the ReLU.
_RESNET50_CHECKPOINTS = (
    [f"layer{layer}.{block}" for layer, block in
     [(1, 0), (1, 1), (1, 2), (2, 0), (2, 2), (2, 3), (3, 0), (3, 2), (3, 4), (3, 5)]]
    + [f"layer4.{block}.{part}" for block in range(3)
       for part in ("conv1", "bn1", "conv2", "bn2", "conv3", "bn3")]
    + ["layer4.0.downsample.0", "layer4.0.downsample.1", "layer4.0", "layer4.1", "layer4.2",
       "avgpool", "fc"])


def resnet50_pod16() -> Tuple[torch.nn.Module, Tuple[torch.Tensor, ...], popsim.Options,
                              torch.optim.Optimizer]:
    """16 replicas of one IPU in 8 processes (the benchmark's
    `poprun --num-instances=8 --num-replicas=16`, vision/cnns/pytorch/train/
    benchmarks.yml), micro-batch 18, accumulation 57; float16 with half
    partials and stochastic rounding; recomputation between Graphcore's
    checkpoints; available memory proportion 0.16; SGD with momentum
    (combined accumulator), loss scaling 128; 8-bit images."""
    model = ResNet50Training(label_smoothing=0.1, checkpoints=_RESNET50_CHECKPOINTS).half()
    opts = _bow(replicas=16, accumulation=57, processes=8)
    opts.Precision.setPartialsType(torch.half)
    opts.Precision.enableStochasticRounding(True)
    opts.Training.recomputation(True)
    opts.setAvailableMemoryProportion({"IPU0": 0.16})
    optimizer = popsim.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4,
                                 loss_scaling=128.0, use_combined_accum=True)
    return model, image_batch(18), opts, optimizer


def bert_base_ph1_pod16() -> Tuple[torch.nn.Module, Tuple[torch.Tensor, ...], popsim.Options,
                                   torch.optim.Optimizer]:
    """4 replicas x 4 pipelined IPUs, layers [0, 4, 4, 4] (embeddings and the
    tied MLM head on IPU 0), micro-batch 32, accumulation 512; float16 with
    half partials; recomputation checkpoints at every layer; LAMB without
    bias correction, loss scaling 16,384; optimizer state off chip with
    replicated tensor sharding; available memory proportion 0.25. One
    process, as the benchmark runs run_pretraining.py without PopRun."""
    config = BertConfig.base(layer_norm_eps=1e-3, attention_dropout=0.0, hidden_dropout=0.1)
    model = BertPretraining(config, layers_per_ipu=[0, 4, 4, 4],
                            recompute_checkpoint_every_layer=True).half()
    opts = _bow(replicas=4, accumulation=512)
    opts.setExecutionStrategy(popsim.PipelinedExecution(popsim.AutoStage.AutoIncrement))
    opts.Precision.setPartialsType(torch.half)
    opts.Training.recomputation(True)
    opts.setAvailableMemoryProportion({f"IPU{ipu}": 0.25 for ipu in range(4)})
    opts.TensorLocations.setOptimizerLocation(
        popsim.TensorLocationSettings().useOnChipStorage(False).useReplicatedTensorSharding(True))
    optimizer = popsim.optim.LAMBNoBias(model.parameters(), lr=6e-3, weight_decay=0.01,
                                        loss_scaling=16384.0)
    return model, pretraining_batch(config, 32), opts, optimizer


def vit_b16_finetune_pod16() -> Tuple[torch.nn.Module, Tuple[torch.Tensor, ...],
                                      popsim.Options, torch.optim.Optimizer]:
    """4 replicas x 4 pipelined IPUs, layers [3, 3, 3, 3], micro-batch 17,
    accumulation 30, device iterations 8; precision 16.16 (float16 with half
    partials) and stochastic rounding; images streamed as float16 (the
    example's byteio is off); hidden dropout 0.1; recomputation checkpoints
    at every layer; SGD with momentum, float16 gradient accumulators and
    velocity (the example's accum_type and first_order_type), loss scaling
    0.25; optimizer state on chip with replicated tensor sharding; available
    memory proportion 0.3; prefetch depth 2 (vision/vit/pytorch/configs.yml,
    b16_imagenet1k). One process, as the benchmark runs finetune.py without
    PopRun (benchmarks.yml, pytorch_vit_finetune_gen_pod16)."""
    model = ViTTraining(layers_per_ipu=[3, 3, 3, 3], recompute_checkpoint_every_layer=True,
                        dropout=0.1, eight_bit_input=False).half()
    opts = _bow(replicas=4, accumulation=30, device_iterations=8)
    opts.setExecutionStrategy(popsim.PipelinedExecution(popsim.AutoStage.AutoIncrement))
    opts.Precision.setPartialsType(torch.half)
    opts.Precision.enableStochasticRounding(True)
    opts.Training.recomputation(True)
    opts.setAvailableMemoryProportion({f"IPU{ipu}": 0.3 for ipu in range(4)})
    opts.TensorLocations.setOptimizerLocation(
        popsim.TensorLocationSettings().useOnChipStorage(True).useReplicatedTensorSharding(True))
    opts.prefetchDepth(2)
    optimizer = popsim.optim.SGD(model.parameters(), lr=0.03, momentum=0.9, loss_scaling=0.25,
                                 accum_type=torch.float16, velocity_accum_type=torch.float16)
    images, labels = image_batch(17)
    return model, (images.half(), labels), opts, optimizer


JOBS = [
    Job("resnet50-pod16", 37061.0, "images/s", resnet50_pod16),
    Job("bert-base-ph1-pod16", 15911.0, "sequences/s", bert_base_ph1_pod16),
    Job("vit-b16-finetune-pod16", 7319.0, "images/s", vit_b16_finetune_pod16),
]


def size(job: Job, show_report: bool) -> Dict[str, Any]:
    torch.manual_seed(0)
    start = time.perf_counter()
    model, micro_batch, opts, optimizer = job.build()
    report = popsim.sizeJob(model, micro_batch, opts, optimizer)
    seconds = time.perf_counter() - start
    if show_report:
        print(report, end="\n\n")
    # items_per_call and replicas both count every process's replicas.
    micro_batch_size = report.items_per_call // (
        report.steps_per_call * report.micro_batches_per_step * report.replicas)
    processes = f" in {report.processes} processes" if report.processes > 1 else ""
    configuration = (f"{report.replicas} x {report.ipus_per_replica} IPU(s){processes}, "
                     f"micro-batch {micro_batch_size}, "
                     f"accumulation {report.micro_batches_per_step}, "
                     f"device iterations {report.steps_per_call}")
    return {"id": job.id, "configuration": configuration, "published": job.published,
            "simulated": report.throughput, "ratio": report.throughput / job.published,
            "fits": report.fits, "seconds": seconds,
            "fullest_ipu": max(ipu.memory_bytes / ipu.capacity_bytes for ipu in report.ipus),
            "memory": [{"ipu": ipu.ipu, "bytes": ipu.memory_bytes,
                        "capacity": ipu.capacity_bytes} for ipu in report.ipus],
            "time_shares": report.time_shares()}


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--jobs", nargs="*", metavar="ID", help="only these jobs")
    parser.add_argument("--report", action="store_true", help="print each job's sizing report")
    args = parser.parse_args(argv)
    jobs = [job for job in JOBS if not args.jobs or job.id in args.jobs]
    unknown = set(args.jobs or ()) - {job.id for job in JOBS}
    if unknown:
        parser.error(f"unknown job(s) {sorted(unknown)}; the jobs are "
                     f"{[job.id for job in JOBS]}")
    results = []
    print(f"{'job':24} {'published':>11} {'simulated':>11} {'ratio':>6}  fits  "
          f"{'fullest IPU':>12} {'host s':>7}")
    for job in jobs:
        result = size(job, args.report)
        results.append(result)
        fullest = result["fullest_ipu"]
        print(f"{job.id:24} {result['published']:>11,.0f} {result['simulated']:>11,.0f} "
              f"{result['ratio']:>6.2f}  {'yes' if result['fits'] else 'NO ':4}  "
              f"{fullest:>11.0%} {result['seconds']:>7.1f}", flush=True)
    print("Simulated items/s are popsim's simulated clock; published are Graphcore's "
          "measured Bow Pod16 throughputs.")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(results, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
