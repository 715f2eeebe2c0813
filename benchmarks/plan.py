"""The pipeline planner (popsim.plan) against hand-written splits: per case,
the simulated items/s of the hand split and of the planner's plan, whether
the plan fits, and the planner's host seconds.

Cases:
- mnist-2ipu, mnist-4ipu: the pipelining tutorial's network and training job
  (micro-batch 40, gradient accumulation 10, device iterations 10, every
  micro-batch's output, AdamW); the hand splits are the tutorial's blocks
  B1..B4, one per IPU on 4 IPUs, two per IPU on 2.
- bert-base-4ipu, vit-b16-4ipu: the published jobs of
  ../shared/reference/published-ipu-results.md that pipeline
  (benchmarks/fidelity.py builds them), with Graphcore's layers_per_ipu as the
  hand split; the planner gets the same model without its split. BERT's MLM
  decoder is tied to the word embeddings, so its head runs on IPU 0 as a tail
  stage, as in Graphcore's example.
- bert-large-8ipu: BERT-Large SQuAD fine-tuning on 8 IPUs with Graphcore's
  layers [2, 3, 3, 3, 3, 3, 3, 4]: the planner's host time at scale.

Every figure is popsim's cost-only simulation (popsim.sizeJob); --json FILE
writes, per case, {"case", "ipus", "hand", "planned", "fits", "seconds"}.

With --jobs, the whole-job planner (popsim.planJob) instead plans each
published job of benchmarks/fidelity.py given only its model without the
split, an example micro-batch, its optimizer and other options, the POD's
IPUs and the published global batch; --json FILE writes, per job, {"case",
"ipus", "global_batch", "published_config", "planned_config", "published",
"planned", "fits", "seconds"}: the simulated items/s of Graphcore's
configuration and of the planner's, both popsim's.

    .venv/bin/python benchmarks/plan.py [--json FILE] [--cases ID ...] [--print-plans]
    .venv/bin/python benchmarks/plan.py --jobs [ID ...] [--json FILE] [--print-plans]
"""

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

import torch
import torch.nn as nn

import popsim
from popsim.models import BertConfig, BertSquad, squad_batch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tutorials" / "pipelining"))
import fidelity  # noqa: E402
import mnist_pipeline  # noqa: E402
from mnist_network import BLOCKS, BlockedNetwork, Network, TrainingModelWithLoss  # noqa: E402

Batch = Tuple[torch.Tensor, ...]


class Case(NamedTuple):
    id: str
    ipus: int
    # The hand split: (model, micro-batch, options, optimizer) as its authors run it.
    hand: Callable[[], Tuple[nn.Module, Batch, popsim.Options, Optional[torch.optim.Optimizer]]]
    # The planner's input: the same job without its split, and plan()'s keyword arguments.
    planned: Callable[[], Tuple[nn.Module, Batch, popsim.Options,
                                Optional[torch.optim.Optimizer], Dict[str, Any]]]


def _mnist_options() -> popsim.Options:
    """The tutorial's training options (mnist_pipeline.py's defaults: device
    iterations 10, gradient accumulation 10, every micro-batch's output)."""
    return mnist_pipeline.training_options(mnist_pipeline.parse_args([]))


def _mnist_batch() -> Batch:
    return torch.randn(40, 1, 28, 28), torch.randint(0, 10, (40,))


def _mnist_hand(ipus: int) -> Callable[[], Tuple[nn.Module, Batch, popsim.Options,
                                                  torch.optim.Optimizer]]:
    def build() -> Tuple[nn.Module, Batch, popsim.Options, torch.optim.Optimizer]:
        model = TrainingModelWithLoss(BlockedNetwork())
        per_ipu = len(BLOCKS) // ipus
        stages = [popsim.Stage(*BLOCKS[i * per_ipu:(i + 1) * per_ipu]).ipu(i)
                  for i in range(ipus)]
        opts = _mnist_options().setExecutionStrategy(popsim.PipelinedExecution(*stages))
        return model, _mnist_batch(), opts, popsim.optim.AdamW(model.parameters(), lr=1e-3)
    return build


def _mnist_planned() -> Tuple[nn.Module, Batch, popsim.Options, torch.optim.Optimizer,
                              Dict[str, Any]]:
    model = TrainingModelWithLoss(Network(), loss_block=None)
    candidates = [f"model.layer{i}" for i in range(1, 5)]
    return (model, _mnist_batch(), _mnist_options(),
            popsim.optim.AdamW(model.parameters(), lr=1e-3), {"candidates": candidates})


def _bert_base_planned() -> Tuple[nn.Module, Batch, popsim.Options, torch.optim.Optimizer,
                                  Dict[str, Any]]:
    job = next(job for job in fidelity.JOBS if job.id == "bert-base-ph1-pod16")
    model, batch, opts, optimizer = job.build(split=False)
    return model, batch, opts, optimizer, job.planner(model)


def _vit_planned() -> Tuple[nn.Module, Batch, popsim.Options, torch.optim.Optimizer,
                            Dict[str, Any]]:
    model, batch, opts, optimizer = fidelity.vit_b16_finetune_pod16(split=False)
    return model, batch, opts, optimizer, {}


_BERT_LARGE_LAYERS = [2, 3, 3, 3, 3, 3, 3, 4]


def _bert_large_options() -> popsim.Options:
    """Graphcore's BERT-Large SQuAD fine-tuning on 8 IPUs (one replica of its
    Pod16 job): micro-batch 2, gradient accumulation 32, float16 with half
    partials, recomputation at every layer, LAMB with its state off chip
    (on chip, its hand split does not fit popsim's IPUs)."""
    opts = popsim.Options()
    opts.Training.gradientAccumulation(32)
    opts.Simulator.ipuVersion("Bow")
    opts.Precision.setPartialsType(torch.half)
    opts.Training.recomputation(True)
    opts.TensorLocations.setOptimizerLocation(
        popsim.TensorLocationSettings().useOnChipStorage(False))
    return opts


def _bert_large_hand() -> Tuple[nn.Module, Batch, popsim.Options, torch.optim.Optimizer]:
    model = BertSquad(BertConfig.large(), layers_per_ipu=_BERT_LARGE_LAYERS,
                      recompute_checkpoint_every_layer=True).half()
    opts = _bert_large_options().setExecutionStrategy(
        popsim.PipelinedExecution(popsim.AutoStage.AutoIncrement))
    return (model, squad_batch(BertConfig.large(), 2), opts,
            popsim.optim.LAMB(model.parameters(), lr=1e-4, loss_scaling=512.0))


def _bert_large_planned() -> Tuple[nn.Module, Batch, popsim.Options, torch.optim.Optimizer,
                                   Dict[str, Any]]:
    config = BertConfig.large()
    model = BertSquad(config, recompute_checkpoint_every_layer=True).half()
    candidates = ["bert.embeddings"] + [f"bert.layers.{i}" for i in range(config.num_layers)]
    return (model, squad_batch(config, 2), _bert_large_options(),
            popsim.optim.LAMB(model.parameters(), lr=1e-4, loss_scaling=512.0),
            {"candidates": candidates})


CASES = [
    Case("mnist-2ipu", 2, _mnist_hand(2), _mnist_planned),
    Case("mnist-4ipu", 4, _mnist_hand(4), _mnist_planned),
    Case("bert-base-4ipu", 4, fidelity.bert_base_ph1_pod16, _bert_base_planned),
    Case("vit-b16-4ipu", 4, fidelity.vit_b16_finetune_pod16, _vit_planned),
    Case("bert-large-8ipu", 8, _bert_large_hand, _bert_large_planned),
]


def run(case: Case, print_plan: bool) -> Dict[str, Any]:
    torch.manual_seed(0)
    model, batch, opts, optimizer = case.hand()
    hand = popsim.sizeJob(model, batch, opts, optimizer)
    torch.manual_seed(0)
    model, batch, opts, optimizer, kwargs = case.planned()
    start = time.perf_counter()
    plan = popsim.plan(model, batch, opts, optimizer, ipus=case.ipus, **kwargs)
    seconds = time.perf_counter() - start
    if print_plan:
        print(plan, end="\n\n")
    return {"case": case.id, "ipus": case.ipus, "hand": hand.throughput,
            "hand_fits": hand.fits,
            "planned": plan.chosen.throughput if plan.chosen is not None else 0.0,
            "fits": plan.fits, "seconds": seconds,
            "layout": plan.chosen.layout if plan.chosen is not None else None,
            "settings": plan.chosen.settings() if plan.chosen is not None else None}


def _configuration(report: popsim.SizingReport, micro_batch: int) -> Dict[str, Any]:
    """A sized job's configuration, as planJob's JobCandidate.config() names it."""
    return {"replicas": report.replicas, "ipus_per_replica": report.ipus_per_replica,
            "micro_batch": micro_batch, "gradient_accumulation": report.micro_batches_per_step,
            "device_iterations": report.steps_per_call, "processes": report.processes}


def _shape(config: Optional[Dict[str, Any]]) -> str:
    if config is None:
        return "-"
    processes = f" p{config['processes']}" if config["processes"] > 1 else ""
    return (f"{config['replicas']}x{config['ipus_per_replica']} mb {config['micro_batch']} "
            f"ga {config['gradient_accumulation']} di {config['device_iterations']}{processes}")


def run_job(job: fidelity.Job, print_plan: bool) -> Dict[str, Any]:
    """Graphcore's configuration of a published job against popsim.planJob's,
    given only the model (without its split), an example micro-batch, the
    optimizer, the job's other options, the POD's IPUs and the published global
    batch; both sized cost-only by popsim."""
    torch.manual_seed(0)
    model, batch, opts, optimizer = job.build()
    published = popsim.sizeJob(model, batch, opts, optimizer)
    micro_batch = batch[0].shape[0]
    published_config = _configuration(published, micro_batch)
    ipus = published.total_ipus
    global_batch = published.replicas * micro_batch * published.micro_batches_per_step
    del model, optimizer
    torch.manual_seed(0)
    model, batch, opts, optimizer = job.build(split=False)
    start = time.perf_counter()
    plan = popsim.planJob(model, batch, optimizer, ipus=ipus, global_batch=global_batch,
                          options=opts, progress=False, **job.planner(model))
    seconds = time.perf_counter() - start
    if print_plan:
        print(plan, end="\n\n")
    chosen = plan.chosen
    scale = job.items_per_sample
    return {"case": job.id, "ipus": ipus, "global_batch": global_batch,
            "published_config": published_config,
            "planned_config": chosen.config() if chosen is not None else None,
            "published": published.throughput * scale,
            "published_fits": published.fits,
            "planned": chosen.throughput * scale if chosen is not None else 0.0,
            "fits": plan.fits, "seconds": seconds, "simulated": len(plan.searched),
            "published_shape": _shape(published_config),
            "planned_shape": _shape(chosen.config() if chosen is not None else None)}


def main_jobs(ids: List[str], json_file: Optional[str], print_plans: bool) -> int:
    print(f"{'job':28} {'IPUs':>4} {'published cfg':>26} {'items/s':>9} {'planned cfg':>26} "
          f"{'items/s':>9} {'ratio':>6}  fits {'planner s':>9}")
    results = []
    for job in fidelity.JOBS:
        if ids and job.id not in ids:
            continue
        result = run_job(job, print_plans)
        results.append(result)
        print(f"{job.id:28} {result['ipus']:>4} {result['published_shape']:>26} "
              f"{result['published']:>9,.0f} {result['planned_shape']:>26} "
              f"{result['planned']:>9,.0f} {result['planned'] / result['published']:>6.3f}  "
              f"{'yes' if result['fits'] else 'NO ':4} {result['seconds']:>9.1f}", flush=True)
    if json_file:
        with open(json_file, "w", encoding="utf-8") as out:
            json.dump(results, out, indent=1)
    return 0


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--cases", nargs="*", metavar="ID", help="only these cases")
    parser.add_argument("--print-plans", action="store_true", help="print each plan")
    parser.add_argument("--jobs", nargs="*", metavar="ID",
                        help="plan the whole job of these published jobs (benchmarks/"
                        "fidelity.py's ids; none: all) with popsim.planJob instead")
    args = parser.parse_args(argv)
    if args.jobs is not None:
        unknown = set(args.jobs) - {job.id for job in fidelity.JOBS}
        if unknown:
            parser.error(f"unknown job(s) {sorted(unknown)}; the jobs are "
                         f"{[job.id for job in fidelity.JOBS]}")
        return main_jobs(args.jobs, args.json, args.print_plans)
    unknown = set(args.cases or ()) - {case.id for case in CASES}
    if unknown:
        parser.error(f"unknown case(s) {sorted(unknown)}; the cases are "
                     f"{[case.id for case in CASES]}")
    results = []
    print(f"{'case':16} {'IPUs':>4} {'hand items/s':>13} {'planned':>11} {'ratio':>6}  fits  "
          f"{'planner s':>9}  plan")
    for case in CASES:
        if args.cases and case.id not in args.cases:
            continue
        result = run(case, args.print_plans)
        results.append(result)
        print(f"{case.id:16} {case.ipus:>4} {result['hand']:>13,.0f} {result['planned']:>11,.0f} "
              f"{result['planned'] / result['hand']:>6.3f}  "
              f"{'yes' if result['fits'] else 'NO ':4}  {result['seconds']:>9.1f}  "
              f"{result['layout']} {result['settings'] or ''}", flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(results, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
