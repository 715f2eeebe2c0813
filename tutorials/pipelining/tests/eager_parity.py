"""Train the tutorial's network with popsim (mnist_pipeline.py) and with eager PyTorch on the
same data, and compare their test accuracies.

"The same" means: the same initial weights (one seed), the same sample order and the same
optimizer steps. popsim's combined batch (micro-batch x gradient accumulation x device
iterations = 4,000 images per call) is not the optimizer's batch: each call makes
`device iterations` AdamW steps, and each step averages the gradients of
`gradient accumulation` micro-batches. So the effective batch is micro-batch x gradient
accumulation (400 images). Eager PyTorch takes batches of 400 from a torch DataLoader
seeded like popsim's, splits each into micro-batches of 40 and accumulates their
gradients, each loss divided by 10 (the mean that popsim's default reduction takes), then
steps. The script checks that both saw the samples in the same order.

Prints a JSON summary; exits non-zero if the accuracies differ by more than --tolerance.

    python tutorials/pipelining/tests/eager_parity.py [mnist_pipeline.py flags]
"""

import json
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import popsim as poptorch  # noqa: E402
import mnist_pipeline  # noqa: E402
from mnist_data import load_datasets  # noqa: E402
from mnist_network import TrainingModelWithLoss, accuracy, new_network  # noqa: E402

TOLERANCE_POINTS = 1.0


def popsim_label_order(args, train_set):
    """Labels in the order the tutorial's DataLoader hands them to the model, every epoch."""
    loader = poptorch.DataLoader(mnist_pipeline.training_options(args), train_set,
                                 batch_size=args.batch_size, shuffle=True,
                                 mode=poptorch.DataLoaderMode.Async)
    order = [labels.clone() for _ in range(args.epochs) for _, labels in loader]
    loader.terminate()
    return torch.cat(order)


def train_eager(args, train_set, test_set):
    """Eager PyTorch, step for step what the tutorial's popsim model does."""
    model = new_network(args.seed)
    with_loss = TrainingModelWithLoss(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.learning_rate)
    step_batch = args.batch_size * args.gradient_accumulation
    # popsim.DataLoader seeds its shuffling like this (opts.randomSeed); the order does not
    # depend on the batch size.
    loader = torch.utils.data.DataLoader(
        train_set, batch_size=step_batch, shuffle=True, drop_last=True,
        generator=torch.Generator().manual_seed(args.seed))
    seen = []
    for _ in range(args.epochs):
        for images, labels in loader:
            seen.append(labels)
            optimizer.zero_grad()
            for micro_images, micro_labels in zip(images.split(args.batch_size),
                                                  labels.split(args.batch_size)):
                _, loss = with_loss(micro_images, micro_labels)
                (loss / args.gradient_accumulation).backward()
            optimizer.step()
    model.eval()
    with torch.no_grad():
        logits = torch.cat([model(images) for images, _ in
                            torch.utils.data.DataLoader(test_set, batch_size=500)])
    return model, accuracy(logits, test_set.tensors[1]), torch.cat(seen)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    args = mnist_pipeline.parse_args(argv)
    if args.profile or args.offload_optimiser:
        raise SystemExit("eager_parity.py compares plain training: drop --profile and "
                         "--offload-optimiser.")
    train_set, test_set, source = load_datasets(args.dataset, args.data_dir)

    eager_model, eager_accuracy, eager_order = train_eager(args, train_set, test_set)
    popsim_order = popsim_label_order(args, train_set)
    if not torch.equal(eager_order, popsim_order):
        raise SystemExit("eager_parity.py: eager PyTorch and popsim.DataLoader saw the samples "
                         f"in different orders ({len(eager_order)} and {len(popsim_order)} "
                         "labels): the comparison would not be like for like.")

    with tempfile.TemporaryDirectory() as scratch:
        weights = Path(scratch) / "popsim_weights.pt"
        summary = mnist_pipeline.main(argv + ["--save-weights", str(weights)])
        popsim_weights = torch.load(weights)
    eager_weights = eager_model.state_dict()
    largest = max((popsim_weights[name] - eager_weights[name]).abs().max().item()
                  for name in eager_weights)
    result = {"dataset": args.dataset, "source": source, "strategy": args.strategy,
              "train_images": len(train_set), "epochs": args.epochs,
              "optimizer_steps": len(eager_order) // (args.batch_size * args.gradient_accumulation),
              "effective_batch": args.batch_size * args.gradient_accumulation,
              "eager_test_accuracy": eager_accuracy,
              "popsim_test_accuracy": summary["test_accuracy"],
              "difference_points": abs(eager_accuracy - summary["test_accuracy"]),
              "largest_weight_difference": largest}
    print(json.dumps(result, indent=2))
    if result["difference_points"] > TOLERANCE_POINTS:
        raise SystemExit(f"Test accuracies differ by {result['difference_points']:.2f} points "
                         f"(eager {eager_accuracy:.2f}%, popsim {summary['test_accuracy']:.2f}%),"
                         f" more than {TOLERANCE_POINTS}.")
    return result


if __name__ == "__main__":
    main()
