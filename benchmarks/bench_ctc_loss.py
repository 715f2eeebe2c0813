"""CTC loss: popsim's kernels against eager PyTorch, in the same process.

A linear layer, log_softmax and F.ctc_loss over 200 frames, 16 samples, 40
classes and targets of 30 labels (mean reduction), as one popsim inference
call and as one popsim training step (SGD), against the same eager forward
under torch.no_grad() and the same eager step (zero_grad, backward, step).
Reports median milliseconds and popsim's time as a multiple of eager's.

    .venv/bin/python benchmarks/bench_ctc_loss.py [--threads N] [--isa avx2|baseline] [--json]
"""

import argparse
import copy
import json

import timing  # noqa: E402

timing.cap_isa_from_argv()  # before torch loads

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import popsim  # noqa: E402
from timing import median_seconds  # noqa: E402

FRAMES, SAMPLES, CLASSES, LABELS = 200, 16, 40, 30


class CtcModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(CLASSES, CLASSES)

    def forward(self, x, targets, input_lengths, target_lengths):
        log_probs = F.log_softmax(self.linear(x), 2)
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths)


class Training(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, *inputs):
        return popsim.identity_loss(self.model(*inputs), reduction="none")


def main():
    parser = argparse.ArgumentParser(description="popsim vs eager PyTorch CTC loss")
    parser.add_argument("--repeats", type=int, default=20)
    timing.add_common_arguments(parser)
    args = timing.parse_common(parser)
    torch.manual_seed(0)
    inputs = (torch.randn(FRAMES, SAMPLES, CLASSES), torch.randint(1, CLASSES, (SAMPLES, LABELS)),
              torch.full((SAMPLES,), FRAMES, dtype=torch.long),
              torch.full((SAMPLES,), LABELS, dtype=torch.long))
    model = CtcModel()

    inference = popsim.inferenceModel(model)
    inference(*inputs)  # compile
    with torch.no_grad():
        eager_forward = median_seconds(lambda: model(*inputs), args.repeats)
    popsim_forward = median_seconds(lambda: inference(*inputs), args.repeats)

    trained = copy.deepcopy(model)
    training = popsim.trainingModel(Training(trained), popsim.Options(),
                                    popsim.optim.SGD(trained.parameters(), lr=0.0))
    training(*inputs)  # compile
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)

    def eager_step():
        optimizer.zero_grad()
        model(*inputs).backward()
        optimizer.step()

    eager_training = median_seconds(eager_step, args.repeats)
    popsim_training = median_seconds(lambda: training(*inputs), args.repeats)

    results = {
        "forward": {"popsim_ms": popsim_forward * 1e3, "eager_ms": eager_forward * 1e3,
                    "ratio": popsim_forward / eager_forward},
        "training step": {"popsim_ms": popsim_training * 1e3, "eager_ms": eager_training * 1e3,
                          "ratio": popsim_training / eager_training},
    }
    if args.json:
        print(json.dumps({"isa": timing.isa_cap(), "threads": torch.get_num_threads(),
                          "results": results}, indent=2))
        return
    print(f"CTC loss, {FRAMES} frames x {SAMPLES} samples x {CLASSES} classes, {LABELS} labels; "
          f"{torch.get_num_threads()} thread(s), {timing.isa_description()}")
    print(f"{'':<16}{'popsim ms':>10}{'eager ms':>10}{'popsim/eager':>14}")
    for name, r in results.items():
        print(f"{name:<16}{r['popsim_ms']:>10.2f}{r['eager_ms']:>10.2f}{r['ratio']:>13.2f}x")


if __name__ == "__main__":
    main()
