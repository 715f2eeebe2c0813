"""Train the tutorial's MNIST network split over four simulated IPUs, then test it.

The network's four layers are blocks B1..B4; each block is a stage on its own
IPU. With --strategy pipelined the four IPUs work on different micro-batches at
once; with --strategy sharded one IPU works at a time. The script prints a bar
per epoch with the loss and accuracy of every micro-batch (OutputMode.All), the
simulated IPU time and the memory on each IPU, and the test accuracy, measured
with an inference model of the trained network.

Written as PopTorch code: `import popsim as poptorch` is the only change.
See README.md in this folder for the walkthrough.
"""

import argparse
import json
import os
import time
from pathlib import Path

import torch
from tqdm import tqdm

import popsim as poptorch
from mnist_data import DATASETS, DataUnavailableError, default_data_dir, load_datasets
from mnist_network import BLOCKS, TrainingModelWithLoss, accuracy, new_network

# Inference takes 10 micro-batches per call: 10 x 8 = 80 images, which divides both test
# sets (2,000 offline digits, 10,000 images) so no test image is dropped. A pipeline of
# four stages needs at least four.
TEST_DEVICE_ITERATIONS = 10


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--batch-size", type=int, default=40, help="training micro-batch size")
    parser.add_argument("--device-iterations", type=int, default=10,
                        help="optimizer steps per call of the training model")
    parser.add_argument("--gradient-accumulation", type=int, default=10,
                        help="micro-batches per optimizer step (at least 7 when pipelined)")
    parser.add_argument("--test-batch-size", type=int, default=8, help="inference micro-batch size")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--learning-rate", type=float, default=0.001, help="AdamW learning rate")
    parser.add_argument("--strategy", choices=("pipelined", "sharded"), default="pipelined")
    parser.add_argument("--replicas", type=int, default=1,
                        help="replicas of the model (data parallelism); under torchrun, in "
                        "each process")
    parser.add_argument("--half", action="store_true",
                        help="train and test the network in float16 (weights and activations), "
                             "with loss scaling")
    parser.add_argument("--loss-scaling", type=float, default=None,
                        help="the optimizer's loss scaling (default: 1024 with --half, else 1)")
    parser.add_argument("--offload-optimiser", action="store_true",
                        help="keep the optimizer state off chip (streamed in for each update)")
    parser.add_argument("--profile", action="store_true",
                        help="write the execution trace and memory profile to --profile-dir")
    parser.add_argument("--profile-dir", type=Path, default=Path("profile"))
    parser.add_argument("--debug", action="store_true",
                        help="print the options, the pipeline timeline of one step and the "
                             "memory of each IPU by category")
    parser.add_argument("--dataset", choices=DATASETS, default="mnist")
    parser.add_argument("--data-dir", type=Path, default=default_data_dir())
    parser.add_argument("--seed", type=int, default=0,
                        help="seeds the weights, the data order and popsim")
    parser.add_argument("--save-weights", type=Path,
                        help="save the trained weights (state_dict) to this file")
    parser.add_argument("--summary-json", type=Path,
                        help="write the results (accuracies, times, memory) to this file")
    return parser.parse_args(argv)


def execution_strategy(name):
    """One stage per block, stage k on IPU k."""
    stages = [poptorch.Stage(block).ipu(ipu) for ipu, block in enumerate(BLOCKS)]
    if name == "pipelined":
        return poptorch.PipelinedExecution(*stages)
    return poptorch.ShardedExecution(*stages)


def common_options(args):
    opts = poptorch.Options()
    opts.randomSeed(args.seed)
    opts.replicationFactor(args.replicas)
    opts.setExecutionStrategy(execution_strategy(args.strategy))
    if args.profile:
        # Profiles land in profile_dir/training and profile_dir/inference.
        opts.enableProfiling(str(args.profile_dir))
    return opts


def training_options(args):
    opts = common_options(args)
    opts.deviceIterations(args.device_iterations)
    opts.Training.gradientAccumulation(args.gradient_accumulation)
    # Every micro-batch's output and loss, for the progress bar (costs host transfers).
    opts.outputMode(poptorch.OutputMode.All)
    if args.offload_optimiser:
        opts.TensorLocations.setOptimizerLocation(
            poptorch.TensorLocationSettings().useOnChipStorage(False))
    return opts


def inference_options(args):
    return common_options(args).deviceIterations(TEST_DEVICE_ITERATIONS)


def build_training(args, train_set, opts=None):
    """A network initialised from args.seed, its training model (AdamW) and the DataLoader
    that feeds it, built with `opts` (default: training_options(args))."""
    opts = opts if opts is not None else training_options(args)
    model = new_network(args.seed)
    half = getattr(args, "half", False)
    if half:
        # float16 weights and activations; train() and test() feed the images as float16 too,
        # since a float32 input would make the first convolution compute in float32 (PopTorch's
        # default halfFloatCasting follows PyTorch's promotion).
        model.half()
    scaling = getattr(args, "loss_scaling", None)
    scaling = scaling if scaling is not None else (1024.0 if half else None)
    optimizer = poptorch.optim.AdamW(model.parameters(), lr=args.learning_rate,
                                     loss_scaling=scaling)
    trainer = poptorch.trainingModel(TrainingModelWithLoss(model), opts, optimizer)
    loader = poptorch.DataLoader(opts, train_set, batch_size=args.batch_size, shuffle=True,
                                 mode=poptorch.DataLoaderMode.Async)
    return model, trainer, loader


def build_inference(args, model, test_set):
    """An inference model of `model` and the DataLoader of the test set."""
    opts = inference_options(args)
    # The inference model reads the trained weights from `model`: no copy needed.
    tester = poptorch.inferenceModel(model.eval(), opts)
    return tester, poptorch.DataLoader(opts, test_set, batch_size=args.test_batch_size)


def _progress():
    """Whether to show progress bars: POPSIM_PROGRESS=0 hides them, as it hides popsim's own
    (the tests and the docs' executed notebook set it)."""
    return os.environ.get("POPSIM_PROGRESS", "").strip() != "0"


def train(trainer, loader, epochs, dtype=torch.float32):
    """Trains for `epochs` on images of `dtype`; returns per epoch its loss, accuracy, wall
    and simulated time."""
    history = []
    for epoch in range(1, epochs + 1):
        bar = tqdm(loader, desc=f"Epoch {epoch}/{epochs}", unit="call", disable=not _progress())
        losses, accuracies, simulated = [], [], 0.0
        start = time.perf_counter()
        for images, labels in bar:
            # One row per micro-batch (OutputMode.All). float16 images halve the host transfers.
            logits, loss = trainer(images.to(dtype), labels)
            simulated += trainer.simulatedTime()
            losses.append(loss.mean().item())
            accuracies.append(accuracy(logits, labels))
            bar.set_postfix_str(f"loss {losses[-1]:.4f} | accuracy {accuracies[-1]:.2f}%")
        # Every call has the same number of images, so the epoch's figures are plain means.
        history.append({"epoch": epoch, "loss": sum(losses) / len(losses),
                        "accuracy": sum(accuracies) / len(accuracies),
                        "wall_seconds": time.perf_counter() - start,
                        "simulated_seconds": simulated})
    return history


def test(model, loader, dtype=torch.float32):
    """Test accuracy (%) and the simulated IPU time of the whole test set."""
    correct, seen, simulated = 0, 0, 0.0
    for images, labels in tqdm(loader, desc="Test", unit="call", disable=not _progress()):
        logits = model(images.to(dtype))
        simulated += model.simulatedTime()
        correct += (logits.argmax(dim=1) == labels).sum().item()
        seen += len(labels)
    return 100.0 * correct / seen, simulated


def memory_per_ipu(model):
    return [{"ipu": ipu["ipu"], "total": ipu["total"], "capacity": ipu["capacity"],
             "categories": {name: c["bytes"] for name, c in ipu["categories"].items()},
             "off_chip": ipu["off_chip"]}
            for ipu in model.memoryReport()["ipus"]]


def first_step_timeline(trace):
    """The timeline of the call's first optimizer step (a whole call is too wide to read)."""
    events = [event for event in trace.events if event["step"] == 0]
    end = max(event["end"] for event in events)
    return str(type(trace)(events, end, trace.clock_hz, trace.pipeline))


def print_memory(title, memory, detailed):
    print(title)
    for ipu in memory:
        off_chip = (f", and {ipu['off_chip'] / 2**10:,.1f} KiB off chip in Streaming Memory"
                    if ipu["off_chip"] else "")
        print(f"  IPU{ipu['ipu']}: {ipu['total'] / 2**20:7.2f} MiB of "
              f"{ipu['capacity'] / 2**20:.0f} MiB{off_chip}")
        if detailed:
            for name, size in ipu["categories"].items():
                print(f"      {name:<22} {size:>12,} bytes")


def main(argv=None):
    args = parse_args(argv)
    try:
        train_set, test_set, source = load_datasets(args.dataset, args.data_dir)
    except DataUnavailableError as error:
        raise SystemExit(f"error: {error}")
    print(f"{args.dataset}: {len(train_set):,} training and {len(test_set):,} test images "
          f"from {source}")

    train_opts = training_options(args)
    model, trainer, train_loader = build_training(args, train_set, train_opts)
    replicas = (f" x {args.replicas} replicas" if args.replicas > 1 else "")
    processes = train_opts.Distributed.numProcesses
    job = (f" (process {train_opts.Distributed.processId} of {processes})"
           if processes > 1 else "")
    precision = " in float16" if args.half else ""
    print(f"Training {args.strategy}{precision} on {len(BLOCKS)} simulated IPUs{replicas}{job}: "
          f"{len(train_loader)} calls of {train_loader.combinedBatchSize} images per epoch "
          f"(micro-batch {args.batch_size} x gradient accumulation {args.gradient_accumulation} "
          f"x device iterations {args.device_iterations}{replicas}), {args.device_iterations} "
          "optimizer steps per call.")
    if args.debug:
        print(f"Training options: {train_opts}")
    dtype = torch.float16 if args.half else torch.float32
    history = train(trainer, train_loader, args.epochs, dtype)
    train_loader.terminate()
    for row in history:
        print(f"Epoch {row['epoch']}: loss {row['loss']:.4f}, accuracy {row['accuracy']:.2f}%, "
              f"{row['wall_seconds']:.2f} s on this host, {row['simulated_seconds'] * 1e3:.1f} ms "
              "simulated IPU time")
    training_memory = memory_per_ipu(trainer)
    print_memory("Memory per IPU (training):", training_memory, args.debug)
    if args.debug:
        print("Timeline of the last call's first optimizer step:")
        print(first_step_timeline(trainer.executionTrace()))

    tester, test_loader = build_inference(args, model, test_set)
    test_accuracy, test_simulated = test(tester, test_loader, dtype)
    tested = len(test_loader) * test_loader.combinedBatchSize  # this process's part
    print(f"Test accuracy: {test_accuracy:.2f}% ({tested:,} images, "
          f"{test_simulated * 1e3:.1f} ms simulated IPU time)")
    if args.debug:
        print_memory("Memory per IPU (inference):", memory_per_ipu(tester), True)

    if args.profile:
        print(f"Profiles: {args.profile_dir / 'training'} and {args.profile_dir / 'inference'}; "
              "open report.html in a browser (trace.json and memory.json hold the data).")
    if args.save_weights:
        torch.save(model.state_dict(), args.save_weights)
    summary = {"dataset": args.dataset, "source": source, "strategy": args.strategy,
               "replicas": args.replicas, "half": args.half,
               "train_images": len(train_set), "test_images": len(test_set),
               "compilation_seconds": trainer.compilationTime(), "epochs": history,
               "test_accuracy": test_accuracy, "test_simulated_seconds": test_simulated,
               "training_memory": training_memory}
    if args.summary_json:
        args.summary_json.write_text(json.dumps(summary, indent=2) + "\n")
    return summary


if __name__ == "__main__":  # the guard the asynchronous DataLoader's process needs
    main()
