"""Sizes torchvision's models for training at their standard input sizes, as
a user sizing their own model would (popsim.sizeJob, cost-only, one IPU of
a Bow, micro-batch 2 so that batch norm has more than one value per
channel): does each trace and compile, how long does sizing take on the
host, and does it fit one IPU?

Every model of torchvision's registry for classification, segmentation,
video and optical flow, each at its standard size: the crop (classification
and video) or resize (segmentation) of its default weights' transforms, so
224x224 for most, 299 for inception_v3, 240-600 for the EfficientNets, 256
for swin_v2, 384 for regnet_y_128gf, 518 for vit_h_14, 520x520 for
segmentation; video clips of 16 frames; optical flow (raft) on two frames of
368x496. Each model's loss is cross entropy on its main output (an L1 loss
on raft's last flow field).

    .venv/bin/python benchmarks/size_torchvision.py [--json FILE] [--models NAME ...]

Prints, per model, the host seconds sizing took, whether it fits, the
simulated items/s, or the error; --json FILE writes the same per model
({"model", "task", "seconds", "fits", "throughput", "error"}).
"""

import argparse
import json
import sys
import time
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

import torch
import torch.nn.functional as F
import torchvision
from torch import nn

import popsim


class Model(NamedTuple):
    name: str
    task: str
    inputs: Tuple[int, ...]  # one sample's shape


# torchvision's model registry, by task.
TASKS = {"classification": torchvision.models, "segmentation": torchvision.models.segmentation,
         "video": torchvision.models.video, "optical flow": torchvision.models.optical_flow}
# A clip's frames (torchvision's video classification reference trains on
# clips of 16) and raft's frames (FlyingChairs' 368x496 crops, where its
# training starts); every other size is the model's own (standard_size).
CLIP_FRAMES = 16
FLOW_SIZE = (368, 496)


def standard_size(name: str, task: str) -> Tuple[int, ...]:
    """One sample's shape at the size the model's default weights were trained
    and evaluated at: their transforms' crop (classification and video) or
    resize (segmentation)."""
    if task == "optical flow":
        return (3, *FLOW_SIZE)
    transforms = torchvision.models.get_model_weights(name).DEFAULT.transforms()
    side = transforms.resize_size if task == "segmentation" else transforms.crop_size
    height, width = (side[0], side[0]) if len(side) == 1 else tuple(side)
    return (3, CLIP_FRAMES, height, width) if task == "video" else (3, height, width)


MODELS: List[Model] = [Model(name, task, standard_size(name, task))
                       for task, module in TASKS.items()
                       for name in torchvision.models.list_models(module=module)]


class WithLoss(nn.Module):
    """The model and a loss on its main output, as a training model returns it."""

    def __init__(self, model: nn.Module, task: str) -> None:
        super().__init__()
        self.model = model
        self.task = task

    def forward(self, *inputs: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        if self.task == "optical flow":
            first, second, target = inputs
            flow = self.model(first, second)[-1]
            return flow, F.l1_loss(flow, target)
        images, labels = inputs
        output = self.model(images)
        if isinstance(output, dict):  # segmentation
            output = output["out"]
        elif not isinstance(output, torch.Tensor):  # inception_v3, googlenet in training
            output = output[0]
        return output, F.cross_entropy(output, labels)


def batch(model: Model, size: int = 2) -> Tuple[torch.Tensor, ...]:
    images = torch.randn(size, *model.inputs)
    if model.task == "optical flow":
        return images, torch.randn(size, *model.inputs), torch.randn(size, 2, *model.inputs[1:])
    if model.task == "segmentation":
        return images, torch.randint(0, 21, (size, *model.inputs[1:]))
    return images, torch.randint(0, 400 if model.task == "video" else 1000, (size,))


def build(model: Model) -> nn.Module:
    builder: Callable[..., nn.Module] = torchvision.models.get_model_builder(model.name)
    kwargs: Dict[str, Any] = {"weights": None}
    if model.task == "segmentation":
        kwargs["weights_backbone"] = None
    if model.name.startswith("vit_"):
        # A ViT's position embedding is built for one image size, which
        # torchvision takes from the weights (518 for vit_h_14's) when given them.
        kwargs["image_size"] = model.inputs[-1]
    return WithLoss(builder(**kwargs), model.task)


def size(model: Model) -> Dict[str, Any]:
    torch.manual_seed(0)
    start = time.perf_counter()
    result: Dict[str, Any] = {"model": model.name, "task": model.task, "fits": None,
                              "throughput": None, "error": None}
    try:
        network = build(model)
        options = popsim.Options()
        options.Simulator.ipuVersion("Bow")
        report = popsim.sizeJob(network, batch(model), options,
                                torch.optim.SGD(network.parameters(), lr=0.01))
        result["fits"] = report.fits
        result["throughput"] = report.throughput
    except Exception as error:  # noqa: BLE001 - what a user would meet, reported per model
        result["error"] = f"{type(error).__name__}: {error}".split("\n")[0][:300]
    result["seconds"] = time.perf_counter() - start
    return result


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--models", nargs="*", metavar="NAME", help="only these models")
    args = parser.parse_args(argv)
    models = [m for m in MODELS if not args.models or m.name in args.models]
    results = []
    print(f"{'model':28} {'task':14} {'host s':>7}  fits  {'items/s':>9}  error")
    for model in models:
        result = size(model)
        results.append(result)
        fits: Optional[bool] = result["fits"]
        throughput = result["throughput"]
        print(f"{model.name:28} {model.task:14} {result['seconds']:7.1f}  "
              f"{'-' if fits is None else ('yes' if fits else 'NO'):4}  "
              f"{'-' if throughput is None else format(throughput, ',.0f'):>9}  "
              f"{result['error'] or ''}", flush=True)
    failed = sum(1 for r in results if r["error"])
    slowest = max(results, key=lambda r: r["seconds"]) if results else None
    print(f"{len(results) - failed} of {len(results)} models sized; slowest "
          f"{slowest['model'] if slowest else '-'} in "
          f"{slowest['seconds'] if slowest else 0:.1f} s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(results, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
