"""Replication: training throughput and simulated step time.

The pipelining tutorial's network pipelined over 2 simulated IPUs per
replica (B1 | B2 B3 B4), micro-batches of 40 images, gradientAccumulation 8
(one optimizer step per call), AdamW.

1. Host wall clock, images per second: 1 replica, 2 replicas in one process
   (on host threads), and 2 processes of 1 replica each launched by torchrun
   on 127.0.0.1 (gradients summed with torch.distributed over Gloo); eager
   PyTorch training on the same number of images per step, for scale.
2. Simulated clock: one step's cycles with 1 and 2 replicas in one process
   and with 2 processes of 1 replica (process 0, sized cost-only; each
   process has a host thread of its own, where the replicas of one process
   take turns on its thread), what the gradient all-reduce adds (the busiest
   IPU's replica_all_reduce cycles) and its share of the step, and the
   simulated images per second; and 2 replicas with replicated tensor
   sharding of the weights (and so of their optimizer state): the step, the
   busiest IPU's collectives (the weights' gathers in every micro-batch, the
   gradients' reduce-scatter) and the weights and optimizer state each
   replica holds.

Median of --repeats timed calls after a warm-up.

    .venv/bin/python benchmarks/bench_replication.py [--repeats 5] [--json]
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile

import timing  # noqa: E402

timing.cap_isa_from_argv()  # before torch loads

import torch  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tutorials"))
from pipelining.mnist_network import TrainingModelWithLoss, new_network  # noqa: E402

import popsim  # noqa: E402
from popsim import _C  # noqa: E402
from timing import median_seconds  # noqa: E402

BATCH, ACCUMULATION = 40, 8
TWO_IPUS = [popsim.Stage("B1").ipu(0), popsim.Stage("B2", "B3", "B4").ipu(1)]


def images(count, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(count, 1, 28, 28, generator=generator),
            torch.randint(0, 10, (count,), generator=generator))


def trainer(replicas, sharded_weights=False, processes=1):
    """`replicas` replicas in this process; with `processes` > 1, process 0 of a job of
    that many, sized cost-only (Simulator.costOnly), so the others need not run."""
    model = new_network(0)
    opts = popsim.Options().replicationFactor(replicas)
    if processes > 1:
        opts.Distributed.configureProcessId(0, processes)
        opts.Simulator.costOnly()
    opts.Training.gradientAccumulation(ACCUMULATION)
    opts.setExecutionStrategy(popsim.PipelinedExecution(*TWO_IPUS))
    opts.TensorLocations.setWeightLocation(
        popsim.TensorLocationSettings().useReplicatedTensorSharding(sharded_weights))
    return popsim.trainingModel(TrainingModelWithLoss(model), opts,
                                popsim.optim.AdamW(model.parameters(), lr=1e-3))


def per_step(replicas):
    return BATCH * ACCUMULATION * replicas


def popsim_run(replicas, repeats):
    """(seconds per call, the trainer) for `replicas` replicas in this process."""
    model = trainer(replicas)
    x, labels = images(per_step(replicas))
    return median_seconds(lambda: model(x, labels), repeats), model


def eager_seconds(repeats, count):
    model = TrainingModelWithLoss(new_network(0))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, labels = images(count)

    def step():
        optimizer.zero_grad()
        model(x, labels)[1].backward()
        optimizer.step()

    return median_seconds(step, repeats)


def collective_cycles(model):
    """The busiest IPU's cycles in collectives across replicas in the last
    call (one step), counted as the profile counts them."""
    cycles = _C.replication_meta(model._executable.first,
                                 model.options.replication_factor)["collective_cycles"]
    return max(cycles.values(), default=0)


def held_bytes(model):
    """Weights and optimizer state one replica holds on its IPUs."""
    return sum(ipu["categories"][category]["bytes"] for ipu in model.memoryReport()["ipus"]
               for category in ("weights", "optimizer state"))


def sharded_step():
    """Simulated figures of one step of 2 replicas with sharded weights."""
    model = trainer(2, sharded_weights=True)
    model(*images(per_step(2)))
    return model


def two_process_step():
    """Simulated figures of one step of a job of 2 processes of 1 replica each (its
    process 0), where each replica has its process's host thread to itself."""
    model = trainer(1, processes=2)
    model(*images(per_step(1)))
    return model


def worker(repeats, report):
    """One process of the torchrun job: its replica's median seconds per call."""
    seconds, _ = popsim_run(1, repeats)
    if popsim.Options().Distributed.processId == 0:
        with open(report, "w") as out:
            json.dump({"seconds": seconds}, out)


def two_processes(repeats):
    """Median seconds per call of a job of 2 processes (1 replica each)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with tempfile.TemporaryDirectory() as directory:
        report = os.path.join(directory, "report.json")
        environment = dict(os.environ, OMP_NUM_THREADS="1")
        # Debian's torch 1.13 on Python 3.11 needs per-rank --redirects and --tee.
        command = [sys.executable, "-m", "torch.distributed.run", "--nnodes", "1",
                   "--nproc_per_node", "2", "--master_addr", "127.0.0.1", "--master_port",
                   str(port), "--redirects", "0:1,1:1", "--tee", "0:1,1:1", "--log_dir",
                   os.path.join(directory, "logs"), os.path.abspath(__file__),
                   "--worker", report, "--repeats", str(repeats)]
        subprocess.run(command, env=environment, check=True, timeout=900, capture_output=True)
        with open(report) as results:
            return json.load(results)["seconds"]


def main():
    parser = argparse.ArgumentParser(description="popsim replication throughput")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--worker", metavar="REPORT", help=argparse.SUPPRESS)
    timing.add_common_arguments(parser)
    args = timing.parse_common(parser)
    if args.worker:
        return worker(args.repeats, args.worker)
    one_seconds, one = popsim_run(1, args.repeats)
    two_seconds, two = popsim_run(2, args.repeats)
    processes_seconds = two_processes(args.repeats)
    eager_one = eager_seconds(args.repeats, per_step(1))
    eager_two = eager_seconds(args.repeats, per_step(2))
    ring = collective_cycles(two)
    sharded = sharded_step()
    processes = two_process_step()
    results = {
        "wall": {
            "1 replica": {"images_per_s": per_step(1) / one_seconds,
                          "eager_images_per_s": per_step(1) / eager_one},
            "2 replicas": {"images_per_s": per_step(2) / two_seconds,
                           "eager_images_per_s": per_step(2) / eager_two},
            "2 processes": {"images_per_s": per_step(2) / processes_seconds,
                            "eager_images_per_s": per_step(2) / eager_two},
        },
        "simulated": {
            "1 replica": {"step_cycles": one.cycleCount(),
                          "images_per_s": per_step(1) / one.simulatedTime()},
            "2 replicas": {"step_cycles": two.cycleCount(),
                           "images_per_s": per_step(2) / two.simulatedTime(),
                           "all_reduce_cycles": ring,
                           "all_reduce_share": ring / two.cycleCount(),
                           "held_bytes": held_bytes(two)},
            "2 processes of 1 replica": {
                "step_cycles": processes.cycleCount(),
                "images_per_s": per_step(2) / processes.simulatedTime(),
                "all_reduce_cycles": collective_cycles(processes),
                "all_reduce_share": collective_cycles(processes) / processes.cycleCount(),
                "held_bytes": held_bytes(processes)},
            "2 replicas, sharded weights": {
                "step_cycles": sharded.cycleCount(),
                "images_per_s": per_step(2) / sharded.simulatedTime(),
                "collective_cycles": collective_cycles(sharded),
                "held_bytes": held_bytes(sharded)},
        },
    }
    for row in results["wall"].values():
        row["ratio"] = row["eager_images_per_s"] / row["images_per_s"]
    if args.json:
        print(json.dumps({"isa": timing.isa_cap(), "threads": torch.get_num_threads(),
                          "results": results}, indent=2))
        return
    print(f"Tutorial network, 2 IPUs per replica, {BATCH} x {ACCUMULATION} images per replica "
          f"and step; {torch.get_num_threads()} thread(s), {timing.isa_description()}")
    print(f"{'host wall clock':<16}{'popsim img/s':>14}{'eager img/s':>13}{'popsim/eager':>14}")
    for name, row in results["wall"].items():
        print(f"{name:<16}{row['images_per_s']:>14.0f}{row['eager_images_per_s']:>13.0f}"
              f"{row['ratio']:>13.2f}x")
    print(f"{'simulated':<30}{'step cycles':>14}{'img/s':>13}{'weights+state':>15}")
    for name, row in results["simulated"].items():
        held = f"{row['held_bytes']:>15,}" if "held_bytes" in row else ""
        print(f"{name:<30}{row['step_cycles']:>14,}{row['images_per_s']:>13,.0f}{held}")
    print(f"The all-reduce adds {ring:,} cycles to the 2-replica step "
          f"({100 * ring / two.cycleCount():.1f}%); with sharded weights the collectives "
          f"take {collective_cycles(sharded):,}.")


if __name__ == "__main__":
    main()
